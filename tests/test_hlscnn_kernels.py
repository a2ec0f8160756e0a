"""The compiled inner product of HLSCNN's convolution summary equals the numpy formulation (random
and extreme signed 16-bit operands, 8-bit weights shifted by 8), and both equal the per-product
definition ``sum_i floor(w_i * a_i / 32)`` computed in Python integers."""
import numpy as np
import pytest

from ila.models.hlscnn import kernels


def _operands(seed, O=5, taps=4, P=7):
    rng = np.random.default_rng(seed)
    W = rng.integers(-32768, 32768, (O, taps, 8)).astype(np.int32)
    A = rng.integers(-32768, 32768, (taps, P, 8)).astype(np.int32)
    W[0, 0, :], A[0, 0, :] = -32768, -32768                      # the largest products
    W[1, 0, :], A[0, 1, :] = 32767, -32768
    W[2] = (rng.integers(-128, 128, (taps, 8)) << 8)              # an 8-bit weight, shifted
    return W, A


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_compiled_kernel_equals_numpy_and_the_definition(seed):
    W, A = _operands(seed)
    want = np.array([[[sum((int(W[o, t, i]) * int(A[t, p, i])) // 32 for i in range(8)) for p in range(A.shape[1])]
                      for t in range(W.shape[1])] for o in range(W.shape[0])])
    assert np.array_equal(kernels.tap_psums_numpy(W, A), want)
    got = kernels.tap_psums(W, A)
    assert got.dtype == np.int32 and np.array_equal(got, want)
