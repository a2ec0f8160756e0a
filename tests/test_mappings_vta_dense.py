"""vta.dense: float dense on VTA's int8 GEMM through host quantisation, tiled into passes; the int8
core is exact, the result within the measured tolerance, bad data refused, seeded wrong variants
failed by simulation validation, and a float convolution offloaded through im2col co-simulates."""
import dataclasses

import numpy as np
import pytest

from mappings.base import MappingError, frobenius_relative_error
from mappings.registry import get
from mappings.vta import dense as D
from verify.simval import run_sim

M = get("vta.dense")


def test_quantiser_edges():
    q, s = D.quantize(np.zeros((2, 3)))
    assert s == 1.0 and not q.any()
    q, s = D.quantize(np.array([-2.0, 1.0, 2.0]))
    assert list(q) == [-127, 64, 127] and s == pytest.approx(2 / 127)
    with pytest.raises(MappingError, match="non-finite"):
        D.quantize(np.array([1.0, np.nan]))


def test_int8_core_is_exact_and_tiling_covers_every_output():
    shape = {"N": 300, "K": 40, "M": 200}            # several row blocks? and column blocks
    assert len(D.passes(shape)) >= 1
    wide = {"N": 3, "K": 16 * 300, "M": 64}           # 300 K blocks: 3 x 16 outputs per pass
    assert len({c.start for _, c in D.passes(wide)}) > 1
    tall = {"N": 700, "K": 144, "M": 16}              # 9 K blocks: 227 rows per pass
    assert len({r.start for r, _ in D.passes(tall)}) > 1
    rng = np.random.default_rng(0)
    for shp in (tall, {"N": 5, "K": 16 * 80, "M": 40}):
        x = M.random_inputs(shp, rng)
        qx, sx = D.quantize(x["x"])
        qw, sw = D.quantize(x["w"])
        want = ((qx @ qw.T) * (sx * sw)).astype(np.float32)
        got = M.run_accelerator(shp, x)
        assert np.array_equal(got, want)
        assert frobenius_relative_error(M.reference(shp, x), got) < M.tolerance


def test_nan_input_violates_the_data_condition():
    x = M.random_inputs(M.default_shape, np.random.default_rng(1))
    x["x"][0, 0] = np.nan
    with pytest.raises(MappingError, match="finite data"):
        M.check_data(M.default_shape, x)


@pytest.mark.parametrize("bug", ["scale of x only", "transposed weights"])
def test_seeded_wrong_variants_fail_simulation(bug):
    def wrong(shape, inputs):
        if bug == "scale of x only":
            _, sw = D.quantize(inputs["w"])
            return (D.MAPPING.run_accelerator(shape, inputs) / np.float32(sw)).astype(np.float32)
        w = np.asarray(inputs["w"])
        k = shape["K"]
        return D.MAPPING.run_accelerator(shape, {"x": inputs["x"], "w": w.reshape(-1)[::-1].reshape(w.shape)[:, :k]})
    m = dataclasses.replace(M, run_accelerator=wrong)
    assert not run_sim(m, shape={"N": 16, "K": 32, "M": 16}, samples=2, seed=3).passed


def test_float_convolution_offloads_to_vta_through_im2col(tmp_path):
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    from compile.rewrites import registry
    from compile.rewrites.certify import certify, record
    from compile.runtime import run
    from compile.runtime.cosim import cosimulate
    path = tmp_path / "l.json"
    cert = certify(registry()["conv2d_im2col"], samples=5)
    assert cert.result == "proved"
    record(cert, path=path)
    rng = np.random.default_rng(2)
    x = var("x", (1, 3, 6, 6))
    g = Graph([x], [call("nn.conv2d", x, const(rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
                         strides=(1, 1), padding=(1, 1))])
    assert compile_graph(g, ("vta",), ledger_path=path).counts() == {}          # exact: no dense to match
    res = compile_graph(g, ("vta",), matching="flexible", certify="sim", ledger_path=path)
    assert res.counts() == {"vta.dense": 1}
    (o,) = res.offloads
    assert "conv2d_im2col" in o.chain and o.shape == "36x27x4"
    inp = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    out = cosimulate(res, inp)
    (inv,) = out.invocations
    assert not inv.refused and 0 < inv.error < M.tolerance
    assert frobenius_relative_error(run(g, inp)[0], out.outputs[0]) < M.tolerance
