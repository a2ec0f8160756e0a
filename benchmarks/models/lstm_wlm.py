"""LSTM-WLM (the PyTorch word-language-model example, as in the paper's Appendix B): embedding,
one LSTM layer, linear decoder over the vocabulary; sequence length 35, batch 1. As in the paper,
only the sequence output is returned (not the final hidden and cell states). Sizes: vocabulary
10,000 (the order of WikiText-2's 33,278 scaled down for the host), 650 embedding and hidden
features as the example's medium model."""
import torch
from torch import nn

VOCAB, EMB, HID, SEQ = 10000, 650, 650, 35


class LSTMWLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, EMB)
        self.rnn = nn.LSTM(EMB, HID, 1)
        self.decoder = nn.Linear(HID, VOCAB)

    def forward(self, tokens):                      # tokens: [SEQ, 1] int64
        out, _ = self.rnn(self.encoder(tokens))
        return self.decoder(out)


def build():
    return LSTMWLM()


def example_inputs():
    return (torch.randint(0, VOCAB, (SEQ, 1)),)
