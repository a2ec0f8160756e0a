"""One meaning per operator: the compiler IR's numpy semantics (compile.ir.ops) against the
compiler-IR ILA (ila.models.relay, run in the simulator) on random shapes and data.

Where both sides round the same float32 operations (elementwise, layout, max-pool, bias_add) any
data must agree bit for bit. Where they sum in a different order (dense, conv2d, batch_matmul,
avg-pool: the ILA accumulates in float32 one product per step, the IR in float64 and rounds once)
the data are small integers, whose sums are exact in both, so they must agree bit for bit too.
The transcendental multi-pass operators (layer norm, softmax, LSTM) agree within float32 rounding.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compile.ir.ops import evaluate, normalise_attrs
from ila.models.relay.model import RelayMachine

RM = RelayMachine("float32")
dims = st.integers(1, 4)
seeds = st.integers(0, 2**31)
FEW = settings(max_examples=12, deadline=None)


def _ir(op, *args, **attrs):
    return evaluate(op, [np.asarray(a, np.float32) for a in args], normalise_attrs(op, attrs))


def _ila(op, inputs, out_shape, *dims_args, extra=()):
    """Place ``inputs`` one after another, run ``op`` with their bases, the output base, ``extra``
    bases, then ``dims_args``; return the output tensor."""
    bases, at = [], 0
    for a in inputs:
        RM.put(at, a)
        bases.append(at)
        at += int(np.size(a))
    out = at
    at += int(np.prod(out_shape))
    RM.run(op, *bases, out, *[at + 64 * k for k in range(len(extra))], *dims_args)
    return RM.get(out, out_shape)


def _floats(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _ints(rng, *shape):
    return rng.integers(-8, 9, shape).astype(np.float32)


def _same_bits(got, want):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), np.abs(got - want).max()


@FEW
@given(st.integers(1, 24), seeds)
def test_elementwise(n, seed):
    rng = np.random.default_rng(seed)
    a, b = _floats(rng, n), _floats(rng, n)
    for op in ("add", "multiply"):
        _same_bits(_ila(op, [a, b], (n,), n), _ir(op, a, b))
    _same_bits(_ila("nn.relu", [a], (n,), n), _ir("nn.relu", a))
    _same_bits(_ila("reshape", [a], (n,), n), _ir("reshape", a, newshape=(n,)))


@FEW
@given(dims, dims, dims, seeds)
def test_bias_add_and_transpose(r, c, s, seed):
    rng = np.random.default_rng(seed)
    x, b = _floats(rng, r, c, s), _floats(rng, c)
    _same_bits(_ila("nn.bias_add", [x, b], (r, c, s), r, c, s), _ir("nn.bias_add", x, b, axis=1))
    m = x.reshape(r, c * s)
    _same_bits(_ila("transpose", [m], (c * s, r), r, c * s), _ir("transpose", m, axes=(1, 0)))


@FEW
@given(dims, dims, dims, seeds)
def test_dense_and_batch_matmul(n, k, m, seed):
    rng = np.random.default_rng(seed)
    a, w = _ints(rng, n, k), _ints(rng, m, k)
    _same_bits(_ila("nn.dense", [a, w], (n, m), n, k, m), _ir("nn.dense", a, w))
    bt = 1 + seed % 3
    x, y = _ints(rng, bt, n, k), _ints(rng, bt, m, k)
    _same_bits(_ila("nn.batch_matmul", [x, y], (bt, n, m), bt, n, k, m),
               _ir("nn.batch_matmul", x, y, transpose_b=True))


@FEW
@given(dims, st.integers(2, 7), st.integers(2, 7), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 3), st.integers(1, 3), seeds)
def test_pools(p, h, w, kh, kw, sh, sw, seed):
    kh, kw = min(kh, h), min(kw, w)
    rng = np.random.default_rng(seed)
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    args = (p, h, w, (kh << 16) | kw, (sh << 16) | sw)
    attrs = dict(pool_size=(kh, kw), strides=(sh, sw))
    x = _floats(rng, p, h, w)
    _same_bits(_ila("nn.max_pool2d", [x], (p, oh, ow), *args), _ir("nn.max_pool2d", x[None], **attrs)[0])
    xi = _ints(rng, p, h, w)
    _same_bits(_ila("nn.avg_pool2d", [xi], (p, oh, ow), *args), _ir("nn.avg_pool2d", xi[None], **attrs)[0])


@FEW
@given(dims, st.integers(3, 6), st.integers(3, 6), dims, st.integers(1, 3), st.integers(1, 2), seeds)
def test_conv2d_both_layouts(c, h, w, o, k, s, seed):
    rng = np.random.default_rng(seed)
    x, wt = _ints(rng, c, h, w), _ints(rng, o, c, k, k)
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    want = _ir("nn.conv2d", x[None], wt, strides=(s, s))[0]
    cfg = (s << 24) | (k << 8) | k
    _same_bits(_ila("nn.conv2d_nchw", [x, wt], (o, oh, ow), c, h, w, o, cfg), want)
    got = _ila("nn.conv2d_nhwc", [x.transpose(1, 2, 0), wt.transpose(2, 3, 1, 0)], (oh, ow, o), c, h, w, o, cfg)
    _same_bits(got.transpose(2, 0, 1), want)


@FEW
@given(dims, st.integers(2, 8), seeds)
def test_layer_norm_and_softmax(r, c, seed):
    rng = np.random.default_rng(seed)
    x, g, b = _floats(rng, r, c), _floats(rng, c), _floats(rng, c)
    eps = np.float32(1e-5)
    got = _ila("nn.layer_norm", [x, g, b], (r, c), r, c, int(eps.view(np.uint32)))
    np.testing.assert_allclose(got, _ir("nn.layer_norm", x, g, b, epsilon=float(eps)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_ila("nn.softmax", [x], (r, c), r, c), _ir("nn.softmax", x), rtol=1e-5, atol=1e-7)


@FEW
@given(st.integers(1, 4), dims, dims, seeds)
def test_lstm_layer_against_nn_lstm(T, I, H, seed):
    """The ILA's lstm_layer (PyTorch gate order i, f, g, o; zero initial state) is the IR's nn.lstm
    (ONNX gate order i, o, f, c) with the weight blocks reordered."""
    rng = np.random.default_rng(seed)
    x, wi, wh, b = _floats(rng, T, I), _floats(rng, 4 * H, I) / 2, _floats(rng, 4 * H, H) / 2, _floats(rng, 4 * H) / 2
    got = _ila("lstm_layer", [x, wi, wh, b], (T, H), T, (I << 16) | H, extra=("scratch",))
    order = np.concatenate([np.arange(H) + H * blk for blk in (0, 3, 1, 2)])
    onnx_b = np.concatenate([b[order], np.zeros(4 * H, np.float32)])[None]
    want = _ir("nn.lstm", x[:, None], wi[order][None], wh[order][None], onnx_b)[:, 0, 0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
