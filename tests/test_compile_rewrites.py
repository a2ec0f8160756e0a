"""Compiler-IR rewrites: every rule certified (exact BMC through the compiler-IR ILA at every
combination of its parameter space + float32 property test on parameters drawn without assuming
the guard), every seeded wrong rule refuted (wrong right-hand sides and dropped guards), closed
patterns (every attribute of every operator a rewrite matches: refused or handled), the lowering
equal to the host runtime, certificates in the ledger with a digest over their closure, the CLI."""
import subprocess
import sys

import numpy as np
import pytest

from compile.ir import ops
from compile.ir.graph import Graph, call, var
from compile.rewrites import registry
from compile.rewrites.broken import BROKEN
from compile.rewrites.certify import certify, exact_check, property_check, record
from compile.rewrites.lower import LoweringError, lower
from compile.runtime import run
from ila.verdict import Counterexample, Proved

FAST = ("dense_zero_bias", "reshape_pair")


@pytest.mark.parametrize("name", FAST)
def test_rewrite_is_certified(name):
    cert = certify(registry()[name], samples=10)
    assert cert.result == "proved", cert.summary()
    assert cert.exact and all(isinstance(v, Proved) for _, v in cert.exact)
    assert len(cert.exact) == len(registry()[name].small) == cert.combinations


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in registry() if n not in FAST])
def test_every_rewrite_is_certified(name):
    cert = certify(registry()[name], samples=10)
    assert cert.result == "proved", cert.summary()
    assert all(isinstance(v, Proved) for _, v in cert.exact)
    rw = registry()[name]
    assert len(cert.exact) == len(rw.small) > 0


# the seeded rewrites whose wrong cases the ILA expresses: BMC finds a replayed counterexample
BMC_REFUTES = {"conv2d_im2col_transposed_kernel", "maxpool_split_wrong_stride", "lstm_fold_swapped_gates",
               "lstm_fold_dropped_bias", "unguarded_transpose_pair", "lstm_unroll_swapped_gates",
               "lstm_unroll_no_recurrence"}


SLOW_BROKEN = {"lstm_fold_swapped_gates", "lstm_fold_dropped_bias", "unguarded_maxpool_halve", "unguarded_lstm_fold",
               "lstm_unroll_swapped_gates", "lstm_unroll_no_recurrence", "unguarded_lstm_unroll"}


@pytest.mark.parametrize("rw", [pytest.param(r, marks=pytest.mark.slow) if r.name in SLOW_BROKEN else r for r in BROKEN],
                         ids=lambda r: r.name)
def test_seeded_wrong_rewrites_are_refuted(rw):
    cert = certify(rw, "compile.rewrites.broken", samples=5)
    assert cert.result == "refuted" and cert.property_failures, cert.summary()
    if rw.name in BMC_REFUTES:
        bad = [v for _, v in cert.exact if not isinstance(v, Proved)]
        assert bad and isinstance(bad[0], Counterexample) and bad[0].replayed, cert.summary()


def test_guard_dropped_variants_exist_for_the_guards_that_matter():
    names = {r.name for r in BROKEN}
    assert {"unguarded_conv2d_im2col", "unguarded_maxpool_halve", "unguarded_maxpool_windows", "unguarded_pool_pad_columns",
            "unguarded_transpose_pair", "unguarded_add_bias", "unguarded_lstm_fold", "unguarded_lstm_unroll"} <= names


def test_random_parameters_do_not_assume_the_guard():
    """For every rewrite with a guard, the property test's draws include cases the guard refuses
    and cases it accepts (the generator does not assume the guard)."""
    unguarded = {"dense_zero_bias", "transpose_pair", "reshape_pair"}
    for name, rw in registry().items():
        stats = {}
        checked, bad = property_check(rw, samples=3, stats=stats)
        assert checked == 3 and not bad, (name, bad)
        assert (stats["refused"] > 0) == (name not in unguarded), (name, stats)


# non-default values of every attribute of the operators the rewrites match (compile.ir.ops OPS)
NON_DEFAULT = {
    "strides": [(2, 2), (1, 2)], "padding": [(1, 1, 1, 1), (0, 1, 0, 0)], "dilation": [(2, 2), (1, 2)],
    "groups": [2], "data_layout": ["NHWC"], "kernel_layout": ["OHWI", "HWIO"], "pool_size": [(3, 1), (2, 2)],
    "ceil_mode": [True], "axes": [(1, 0, 2)], "newshape": [(-1,)], "begin": [(0,), (1,)], "end": [(2,), (100,)],
}


def _instances(rw):
    """A few left-hand-side instances where the rewrite applies (from its parameter space)."""
    out = []
    for p in rw.small[:: max(1, len(rw.small) // 4)]:
        out.append(rw.lhs(p))
    return out


def _variant(node, name, value):
    """``node`` with attribute ``name`` set to ``value`` (the operands adapted to a layout change);
    None where the IR refuses the combination."""
    from compile.errors import CompileError
    args = list(node.args)
    attrs = {**node.attrs, name: value}
    if name == "data_layout":
        attrs["kernel_layout"] = "OHWI"
        args = [call("transpose", args[0], axes=(0, 2, 3, 1)), call("transpose", args[1], axes=(0, 2, 3, 1))]
    if name == "groups":
        args[1] = var("w2", (args[1].shape[0], args[1].shape[1] // value) + tuple(args[1].shape[2:]))
    try:
        return call(node.op, *args, **attrs)
    except CompileError:
        return None


@pytest.mark.parametrize("name", list(registry()))
def test_closed_patterns_every_attribute_refused_or_handled(name):
    """Every attribute of the operator a rewrite matches, set to a non-default value on an instance
    where the rewrite applies: the rewrite refuses it, or its right-hand side computes the same
    values (float32 host runtime)."""
    rw = registry()[name]
    covered, inexpressible = set(), set()
    op = rw.lhs(rw.small[0])[1].op
    for inputs, lhs in _instances(rw):
        for attr in ops.OPS[lhs.op].attrs:
            for value in NON_DEFAULT.get(attr, []):
                n = _variant(lhs, attr, value)
                if n is None:                                   # the IR itself refuses this value here
                    inexpressible.add(attr)
                    continue
                if n.attrs == lhs.attrs and n.args == lhs.args:
                    continue
                covered.add(attr)
                rhs = rw.apply(n)
                if rhs is None:
                    continue                                    # refused
                ins = [v for v in Graph(inputs, [n]).values() if v.__class__.__name__ == "Var"]
                feeds = {v.name: np.random.default_rng(len(covered)).standard_normal(v.shape).astype(np.float32)
                         for v in ins}
                a = run(Graph(ins, [n]), feeds)[0]
                b = run(Graph(ins, [rhs]), feeds)[0]
                assert a.shape == b.shape and np.allclose(a, b, rtol=rw.rtol, atol=1e-6), (name, attr, value)
    # every attribute was tried at a non-default value, or no non-default value of it is an IR node here
    assert set(ops.OPS[op].attrs) <= covered | inexpressible, (name, set(ops.OPS[op].attrs) - covered)


def test_the_dilated_convolution_of_issue_22_is_not_rewritten():
    """Kernel 2, dilation 2, stride 3, 12x12 input: no convolution rewrite applies (their guards
    refuse dilation), so nothing takes it to HLSCNN's layout as if undilated."""
    x, w = var("x", (1, 2, 12, 12)), var("w", (3, 2, 2, 2))
    n = call("nn.conv2d", x, w, strides=(3, 3), dilation=(2, 2))
    for name in ("conv2d_im2col", "conv2d_explicit_pad", "conv2d_nhwc"):
        assert registry()[name].apply(n) is None, name


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
    with pytest.raises(LoweringError, match="exp .* has no compiler-IR ILA lowering"):
        lower([call("exp", x)], {x.uid: [0] * 6})
    y = var("y", (1, 1, 4, 4))
    with pytest.raises(LoweringError, match="only constant padding with 0"):
        lower([call("nn.pad", y, pad_width=((0, 0), (0, 0), (1, 1), (1, 1)), pad_value=1.0)], {y.uid: [0] * 16})


def test_a_rewrite_whose_sides_differ_in_shape_is_refuted():
    """The e-graph refuses to unite sides of different shapes (compile.egraph); the certification
    counts that as a refutation."""
    from compile.egraph import RuleSpec, Term, eq, term_vars, vec, vec_vars
    from compile.rewrites.base import Rewrite
    t, x = term_vars("t x")
    (s,) = vec_vars("s")
    spec = RuleSpec("shape_bug", "any", t, Term.transpose(x, s), (eq(s).to(vec(1, 0)),), Term.reshape(t, vec(6)))
    bad = Rewrite("shape_bug", "", (spec,), lambda p: ([y := var("x", (2, 3))], call("transpose", y, axes=(1, 0))),
                  lambda rng: {}, [{}])
    cert = certify(bad, "tests", samples=2)
    assert cert.result == "refuted" and "differ in shape ((3, 2) vs (6,))" in cert.property_failures[0]
    assert exact_check.__doc__


def test_certificates_go_to_the_ledger_with_a_closure_digest(tmp_path):
    from verify import ledger
    path = tmp_path / "ledger.json"
    entry = record(certify(registry()["reshape_pair"], samples=3), path=path)
    assert entry["result"] == "proved" and entry["module"] == "compile.rewrites.rules"
    assert entry["scope"] == "parameter-space+random"
    assert [e["mapping"] for e in ledger.current(ledger.load(path))] == ["rewrite.reshape_pair"]
    from verify.closure import closure, import_graph
    mods = closure(["compile.rewrites.rules", "compile.rewrites.certify"], import_graph())
    assert {"compile.rewrites.lower", "compile.ir.ops", "ila.models.relay.model", "verify.bmc", "compile.egraph"} <= mods


def test_cli_refuses_bad_input_in_process(capsys):
    from compile.rewrites.__main__ import main
    assert main(["nope"]) == 2 and "unknown rewrite" in capsys.readouterr().err
    assert main(["--samples", "0"]) == 2 and "--samples 0: must be" in capsys.readouterr().err
    assert main(["--broken", "--list"]) == 0 and "unguarded_lstm_fold" in capsys.readouterr().out


@pytest.mark.slow
def test_cli(tmp_path):
    env = {"D2A_LEDGER": str(tmp_path / "l.json"), "PATH": "/usr/bin:/bin"}
    import os
    env = {**os.environ, **env}
    ok = subprocess.run([sys.executable, "-m", "compile.rewrites", "dense_zero_bias", "--samples", "3"], env=env,
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "dense_zero_bias: PROVED" in ok.stdout, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "compile.rewrites", "--broken", "--samples", "3",
                          "unguarded_transpose_pair", "unguarded_add_bias"], env=env, capture_output=True, text=True)
    assert bad.returncode == 0 and bad.stdout.count("REFUTED") == 2, bad.stdout + bad.stderr
    for argv, says in ((["nope"], "unknown rewrite"), (["--samples", "0"], "--samples 0: must be")):
        r = subprocess.run([sys.executable, "-m", "compile.rewrites", *argv], env=env, capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
