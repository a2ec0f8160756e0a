"""Compiler-IR rewrites: every rule certified (exact BMC through the compiler-IR ILA + float32
property test), every seeded wrong rule refuted with a replayed counterexample, the lowering equal
to the host runtime, certificates in the ledger with a digest over their closure, the CLI."""
import subprocess
import sys

import numpy as np
import pytest

from compile.ir.graph import Graph, call, var
from compile.rewrites import registry
from compile.rewrites.broken import BROKEN
from compile.rewrites.certify import certify, exact_check, record
from compile.rewrites.lower import LoweringError, lower
from compile.runtime import run
from ila.verdict import Counterexample, Proved


@pytest.mark.parametrize("name", list(registry()))
def test_every_rewrite_is_certified(name):
    cert = certify(registry()[name], samples=10)
    assert cert.result == "proved", cert.summary()
    assert all(isinstance(v, Proved) for _, v in cert.exact)


@pytest.mark.parametrize("rw", BROKEN, ids=lambda r: r.name)
def test_seeded_wrong_rewrites_are_refuted(rw):
    cert = certify(rw, "compile.rewrites.broken", samples=10)
    assert cert.result == "refuted" and cert.property_failures
    v = cert.exact[0][1]
    assert isinstance(v, Counterexample) and v.replayed, v


def _simulate(outputs, inputs, data):
    """Run the lowered fragment on concrete int32 data in the compiler-IR ILA simulator."""
    from ila.models.relay.model import RelayMachine
    elems = {v.uid: [int(x) & 0xFFFFFFFF for x in data[v.name].ravel()] for v in inputs}
    frag = lower(outputs, elems)
    rm = RelayMachine("int32", tensor_entries=1 << 12)
    for cmd in frag.commands:
        rm.sim.step(cmd)
    return [rm.get(frag.base[o.uid], o.shape) for o in outputs]


CASES = [
    lambda x: call("transpose", x, axes=(0, 2, 3, 1)),
    lambda x: call("reshape", x, newshape=(2, 12)),
    lambda x: call("nn.im2col", x, kernel_size=(2, 2), strides=(1, 2), padding=(1, 0, 0, 1)),
    lambda x: call("strided_slice", x, begin=(1,), end=(3,), axes=(2,)),
    lambda x: call("concatenate", x, x, axis=3),
    lambda x: call("nn.pad", x, pad_width=((0, 0), (1, 0), (0, 2), (1, 1))),
    lambda x: call("nn.max_pool2d", x, pool_size=(2, 1), strides=(2, 1)),
    lambda x: call("nn.relu", x),
    lambda x: call("add", x, call("reshape", call("strided_slice", x, begin=(0,), end=(1,), axes=(3,)),
                                  newshape=(1, 2, 3, 1))),
    lambda x: call("nn.bias_add", x, call("reshape", call("strided_slice", x, begin=(0, 0), end=(1, 1),
                                                          axes=(2, 3)), newshape=(2,)), axis=1),
    lambda x: call("nn.conv2d", x, call("concatenate", x, x, axis=0), padding=(1, 1, 1, 1)),
    lambda x: call("nn.dense", call("reshape", x, newshape=(6, 4)), call("reshape", x, newshape=(6, 4))),
    lambda x: call("nn.conv2d", call("transpose", x, axes=(0, 2, 3, 1)),
                   call("strided_slice", call("transpose", call("concatenate", x, x, axis=0), axes=(0, 2, 3, 1)),
                        begin=(0, 0), end=(2, 2), axes=(1, 2)),
                   padding=(1, 0, 1, 1), data_layout="NHWC", kernel_layout="OHWI"),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_lowering_equals_the_host_runtime(k):
    x = var("x", (1, 2, 3, 4))
    out = CASES[k](x)
    data = {"x": np.random.default_rng(k).integers(-9, 10, (1, 2, 3, 4)).astype(np.float32)}
    want = run(Graph([x], [out]), data)[0]
    got = _simulate([out], [x], data)[0]
    assert np.array_equal(got, want.astype(np.int64)), (got, want)


def test_unsupported_operators_are_refused_by_name():
    x = var("x", (2, 3))
    with pytest.raises(LoweringError, match="sigmoid .* has no compiler-IR ILA lowering"):
        lower([call("sigmoid", x)], {x.uid: [0] * 6})
    y = var("y", (1, 1, 4, 4))
    with pytest.raises(LoweringError, match="only constant padding with 0"):
        lower([call("nn.pad", y, pad_width=((0, 0), (0, 0), (1, 1), (1, 1)), pad_value=1.0)], {y.uid: [0] * 16})


def test_exact_check_refuses_sides_of_different_shapes():
    from compile.errors import CompileError
    from compile.rewrites.base import Rewrite
    bad = Rewrite("shape_bug", "", lambda n: call("reshape", n, newshape=(4,)),
                  lambda p: ([x := var("x", (2, 2))], call("nn.relu", x)), lambda rng: {}, ({},))
    with pytest.raises(CompileError, match="shapes differ"):
        exact_check(bad, {})


def test_certificates_go_to_the_ledger_with_a_closure_digest(tmp_path):
    from verify import ledger
    path = tmp_path / "ledger.json"
    entry = record(certify(registry()["reshape_pair"], samples=3), path=path)
    assert entry["result"] == "proved" and entry["module"] == "compile.rewrites.rules"
    assert [e["mapping"] for e in ledger.current(ledger.load(path))] == ["rewrite.reshape_pair"]
    from verify.closure import closure, import_graph
    mods = closure(["compile.rewrites.rules", "compile.rewrites.certify"], import_graph())
    assert {"compile.rewrites.lower", "compile.ir.ops", "ila.models.relay.model", "verify.bmc"} <= mods


def test_cli(tmp_path):
    env = {"D2A_LEDGER": str(tmp_path / "l.json"), "PATH": "/usr/bin:/bin"}
    import os
    env = {**os.environ, **env}
    ok = subprocess.run([sys.executable, "-m", "compile.rewrites", "add_bias", "--samples", "3"], env=env,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "add_bias: PROVED" in ok.stdout, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "compile.rewrites", "--broken", "--samples", "3"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 0 and bad.stdout.count("REFUTED") == len(BROKEN)
    for argv, says in ((["nope"], "unknown rewrite"), (["--samples", "0"], "--samples must be")):
        r = subprocess.run([sys.executable, "-m", "compile.rewrites", *argv], env=env, capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
