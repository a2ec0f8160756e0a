"""Seeded wrong rewrites: the certification must refute each (compile.rewrites.certify)."""
from __future__ import annotations

from compile.ir.graph import call, var
from compile.rewrites import rules
from compile.rewrites.base import Rewrite


def _pool_wrong_stride(n):
    """A (2a,1)/(a,1) window as an (a,1)/(1,1) pool then a (2,1)/(a,1) pool: the first pool's
    stride is wrong (windows of a + 1 rows, not 2a)."""
    if not rules._plain_pool(n):
        return None
    (kh, kw), (a, sw) = n.attrs["pool_size"], n.attrs["strides"]
    if kh != 2 * a or kw != 1:
        return None
    first = call("nn.max_pool2d", n.args[0], pool_size=(a, 1), strides=(1, 1))
    return call("nn.max_pool2d", first, pool_size=(2, 1), strides=(a, 1))


def _pool_lhs(p):
    x = var("x", (1, 1, p["H"], 1))
    return [x], call("nn.max_pool2d", x, pool_size=(2 * p["a"], 1), strides=(p["a"], 1))


# one small instance: T = 2 so the forget gate (multiplying the cell state of step 0) matters; the
# BMC counterexample takes ~2 s here, ~8 s at I = H = 2
_LSTM_SMALL = (dict(T=2, I=1, H=1, bias="input", state="zeros"),)

BROKEN = (
    Rewrite("conv2d_im2col_transposed_kernel", "im2col with the kernel's KH and KW axes swapped",
            lambda n: rules.conv2d_im2col(n, kernel_axes=(0, 1, 3, 2)) if n.args[1].shape[2] == n.args[1].shape[3]
            else None, rules._conv_lhs,
            lambda rng: dict(C=2, O=2, KH=2, KW=2, S=1, P=0, H=int(rng.integers(2, 6)), W=int(rng.integers(2, 6))),
            (dict(C=1, O=1, KH=2, KW=2, S=1, P=0, H=2, W=2),)),
    Rewrite("maxpool_split_wrong_stride", "a (2a,1)/(a,1) pool split with the first pool at stride 1",
            _pool_wrong_stride, _pool_lhs, lambda rng: dict(a=2, H=2 * int(rng.integers(2, 6))), (dict(a=2, H=6),)),
    Rewrite("lstm_fold_swapped_gates", "lstm_fold with ONNX's o and f gates taken for PyTorch's f and o (the "
            "permutation (i, o, c, f) instead of (i, f, c, o))",
            lambda n: rules.lstm_fold(n, order=(0, 1, 3, 2)), rules._lstm_lhs, rules._rand_lstm, _LSTM_SMALL,
            bit_exact=False, rtol=rules.LSTM_RTOL),
    Rewrite("lstm_fold_dropped_bias", "lstm_fold summing only the input bias Wb (the recurrence bias Rb dropped)",
            lambda n: rules.lstm_fold(n, halves=(True, False)), rules._lstm_lhs, rules._rand_lstm, _LSTM_SMALL,
            bit_exact=False, rtol=rules.LSTM_RTOL),
)
