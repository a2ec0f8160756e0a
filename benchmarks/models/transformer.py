"""Transformer as in the paper: ``torch.nn.Transformer`` with 8 heads, 6 encoder and 6 decoder
layers, 256 features (feed-forward 1024, post-norm, ReLU, no dropout at inference); source 35 and
target 20 positions, batch 1 (sequence-first layout)."""
import torch
from torch import nn


def build(d_model: int = 256, dropout: float = 0.0):
    """The paper's configuration (``d_model`` features, feed-forward 4 x ``d_model``); ``dropout``
    only for training (:mod:`benchmarks.models.transformer_lm`)."""
    return nn.Transformer(d_model=d_model, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                          dim_feedforward=4 * d_model, dropout=dropout)


def example_inputs():
    return (torch.randn(35, 1, 256), torch.randn(20, 1, 256))
