"""LSTM-WLM (the PyTorch word-language-model example, as in the paper's Appendix B): embedding,
one LSTM layer, linear decoder over the vocabulary; sequence length 35, batch 1. As in the paper,
only the sequence output is returned (not the final hidden and cell states). Sizes: vocabulary
10,000 (the order of WikiText-2's 33,278 scaled down for the host), 650 embedding and hidden
features as the example's medium model.

Optional constructor parameters for training on a data set (``benchmarks/train.py``): ``vocab``
(the data set's vocabulary size), ``emb`` / ``hid`` (features) and ``dropout`` (on the embedding
and on the LSTM output, as the PyTorch example; only while training, absent from the module when
0). The defaults build exactly the model above (``build()``, the ``lstm_wlm`` entry point)."""
import torch
from torch import nn
from torch.nn import functional as F

VOCAB, EMB, HID, SEQ = 10000, 650, 650, 35


class LSTMWLM(nn.Module):
    def __init__(self, vocab=VOCAB, emb=EMB, hid=HID, dropout=0.0):
        super().__init__()
        self.encoder = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hid, 1)
        self.decoder = nn.Linear(hid, vocab)
        self.dropout = float(dropout)

    def forward(self, tokens):                      # tokens: [SEQ, batch] int64 -> [SEQ, batch, vocab] logits
        x = self.encoder(tokens)
        if self.dropout:
            x = F.dropout(x, self.dropout, self.training)
        out, _ = self.rnn(x)
        if self.dropout:
            out = F.dropout(out, self.dropout, self.training)
        return self.decoder(out)


def build(**kwargs):
    """The model; keyword arguments as :class:`LSTMWLM` (none: the paper's configuration)."""
    return LSTMWLM(**kwargs)


def example_inputs(vocab=VOCAB):
    return (torch.randint(0, vocab, (SEQ, 1)),)
