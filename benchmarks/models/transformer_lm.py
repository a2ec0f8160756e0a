"""Transformer word language model: the paper's Transformer (``torch.nn.Transformer``, 256 features,
8 heads, 6 encoder and 6 decoder layers, feed-forward 1024, post-norm, ReLU; the ``transformer``
application of :mod:`benchmarks.models.transformer`) between a token embedding and a linear decoder
over the vocabulary, so that it can be trained and evaluated on text (Table 4).

Input: tokens ``[SEQ, batch]`` int64 (sequence first, SEQ = 35 as LSTM-WLM); output: logits
``[SEQ, batch, vocab]`` float32, position t predicting token t + 1. The same window is the source and
the target sequence; the embedding is scaled by sqrt(features) and a fixed sinusoidal position code is
added (the "Attention is all you need" recipe). Every attention is causal -- the encoder's
self-attention, the decoder's self-attention and its attention to the encoder's output (memory) --
so position t sees tokens 0..t only: a language model, not a copy task. The masks are additive
float32 buffers (0 on and below the diagonal, -1e9 above; a large finite value rather than -inf, so
that no operator sees an infinity), sliced to the window's length.

Constructor parameters (``benchmarks/train.py``): ``vocab`` (the data set's vocabulary size),
``emb`` / ``hid`` (features; the Transformer has one width, so they must be equal) and ``dropout``
(inside the Transformer and on the embedding, only while training)."""
import math

import torch
from torch import nn

from benchmarks.models import transformer

VOCAB, FEATURES, SEQ = 10000, 256, 35


def _causal(n: int) -> torch.Tensor:
    return torch.triu(torch.full((n, n), -1e9), diagonal=1)


def _positions(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe[:, None, :]                                   # [n, 1, d]: sequence first, broadcast over batch


class TransformerLM(nn.Module):
    def __init__(self, vocab=VOCAB, emb=FEATURES, hid=FEATURES, dropout=0.0):
        super().__init__()
        if emb != hid:
            raise ValueError(f"TransformerLM has one width: emb ({emb}) and hid ({hid}) must be equal")
        self.features = emb
        self.encoder = nn.Embedding(vocab, emb)
        self.transformer = transformer.build(emb, float(dropout))
        self.decoder = nn.Linear(emb, vocab)
        self.dropout = nn.Dropout(float(dropout)) if dropout else None
        self.register_buffer("mask", _causal(SEQ), persistent=False)
        self.register_buffer("pe", _positions(SEQ, emb), persistent=False)

    def forward(self, tokens):                  # tokens: [T, batch] int64, T <= SEQ -> [T, batch, vocab] logits
        t = tokens.shape[0]
        x = self.encoder(tokens) * math.sqrt(self.features) + self.pe[:t]
        if self.dropout is not None:
            x = self.dropout(x)
        m = self.mask[:t, :t]
        # the masks are stated not to be "causal" hints (they are applied as given): left as None,
        # nn.Transformer compares them with its own -inf mask at run time, which torch.export refuses
        h = self.transformer(x, x, src_mask=m, tgt_mask=m, memory_mask=m, src_is_causal=False, tgt_is_causal=False,
                             memory_is_causal=False)
        return self.decoder(h)


def build(**kwargs):
    """The model; keyword arguments as :class:`TransformerLM`."""
    return TransformerLM(**kwargs)


def example_inputs(vocab=VOCAB):
    return (torch.randint(0, vocab, (SEQ, 1)),)
