"""The egglog adapter (compile.egraph): the only module that imports egglog; the format of the one
private egglog call it makes (EGraph._serialize) pinned; every attribute of a typed operator an
egglog value; a rewrite whose two sides disagree on shape or dtype refused naming it; saturation's
stop reasons; extraction on DAGs whose tree costs overflow 64 bits."""
import pathlib
import re

import numpy as np
import pytest

from compile.egraph import (TYPED, EGraphError, ENode, RuleSpec, Session, Term, apply_rules, dtype, enode_to_ir, eq,
                            float_vars, int_vars, shape, str_vars, term_vars, vec, vec_vars)
from compile.ir import ops
from compile.ir.graph import Graph, call, const, var

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_no_egglog_outside_the_adapter():
    """egglog is imported, and egglog objects' attributes used, only in compile/egraph.py."""
    bad = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("compile/egraph.py", "tests/test_compile_egraph.py") or rel.startswith((".", "build/")):
            continue
        text = path.read_text(errors="replace")
        if re.search(r"^\s*(import egglog|from egglog)", text, re.M) or "_serialize(" in text or "._eg." in text:
            bad.append(rel)
    assert bad == [], bad


def test_typed_constructors_carry_every_attribute():
    for op, (_, _, attrs) in TYPED.items():
        assert {a for a, _ in attrs} == set(ops.OPS[op].attrs), op


NON_DEFAULT = [
    lambda x, w: call("nn.conv2d", x, w, strides=(2, 1), padding=(1, 0, 2, 1), dilation=(2, 1), groups=1),
    lambda x, w: call("nn.conv2d", call("transpose", x, axes=(0, 2, 3, 1)), call("transpose", w, axes=(0, 2, 3, 1)),
                      data_layout="NHWC", kernel_layout="OHWI"),
    lambda x, w: call("nn.max_pool2d", x, pool_size=(3, 2), strides=(2, 1), padding=(1, 1, 0, 0), ceil_mode=True),
    lambda x, w: call("nn.pad", x, pad_width=((0, 0), (1, 0), (0, 2), (1, 1)), pad_value=-1.5, pad_mode="edge"),
    lambda x, w: call("nn.im2col", x, kernel_size=(2, 2), strides=(1, 2), padding=(1, 0, 0, 1), dilation=(2, 1)),
    lambda x, w: call("strided_slice", x, begin=(1, 0), end=(4, 2), strides=(2, 1), axes=(2, 3)),
    lambda x, w: call("concatenate", x, x, axis=-1),
    lambda x, w: call("transpose", x, axes=()),
    lambda x, w: call("reshape", x, newshape=(2, -1)),
    lambda x, w: call("nn.bias_add", x, const(np.ones(5, np.float32)), axis=-1),
    lambda x, w: call("nn.relu", x),
]


@pytest.mark.parametrize("k", range(len(NON_DEFAULT)))
def test_attributes_round_trip_through_the_view(k):
    """A node with non-default attributes: its e-node in the view has the same attributes
    (canonical), shape and dtype, and rebuilding it gives the same node."""
    x, w = var("x", (1, 2, 5, 5)), var("w", (3, 2, 2, 2))
    n = NON_DEFAULT[k](x, w)
    with Session() as s:
        s.add_graph([n])
        view = s.view()
    c = view.class_of(n)
    (e,) = view.classes[c].nodes
    assert e.op == n.op and view.classes[c].shape == n.shape and view.classes[c].dtype == n.dtype
    again = enode_to_ir(e, list(n.args))
    assert again.op == n.op and again.shape == n.shape
    assert ops._pads(again.attrs.get("padding", (0,))) == ops._pads(n.attrs.get("padding", (0,)))
    for name, value in n.attrs.items():
        if name != "padding":
            assert again.attrs[name] == value or tuple(np.ravel(again.attrs[name])) == tuple(np.ravel(value)), name


def test_serialized_format_is_pinned():
    """The format of egglog's serialized e-graph that compile.egraph.parse_serialized reads."""
    x, w = var("x", (1, 2, 4, 4)), var("w", (3, 2, 2, 2))
    conv = call("nn.conv2d", x, w, padding=(1, 1, 1, 1))
    pool = call("nn.max_pool2d", conv, pool_size=(2, 2), ceil_mode=True)
    y = call("nn.pad", call("exp", pool), pad_width=((0, 0),) * 4, pad_value=0.5)
    z = call("transpose", y, axes=())
    with Session() as s:
        s.add_graph([z])
        data = s._serialized()
    assert set(data) >= {"nodes", "class_data"}
    nodes = data["nodes"]
    assert all(set(n) >= {"op", "children", "eclass"} for n in nodes.values())
    by_op = {}
    for nid, n in nodes.items():
        by_op.setdefault(n["op"], []).append((nid, n))
    ops_seen = set(by_op)
    assert {"Term.leaf", "Term.conv2d", "Term.max_pool2d", "Term.pad", "Term.transpose", "Term.host1", "shape", "dtype",
            "seed", "Vec"} <= ops_seen, ops_seen
    (nid, cv), = by_op["Term.conv2d"]
    kids = [nodes[k] for k in cv["children"]]
    assert [k["op"] for k in kids[:2]] == ["Term.leaf", "Term.leaf"]
    strides = kids[2]
    assert strides["op"] == "Vec" and [nodes[k]["op"] for k in strides["children"]] == ["1", "1"]
    assert kids[5]["op"] == "1" and data["class_data"][kids[5]["eclass"]]["type"] == "i64"
    assert kids[6]["op"] == '"NCHW"' and data["class_data"][kids[6]["eclass"]]["type"] == "String"
    assert data["class_data"][strides["eclass"]]["type"].startswith("egglog.builtins.Vec")
    (_, mp), = by_op["Term.max_pool2d"]
    assert nodes[mp["children"][-1]]["op"] == "true" and data["class_data"][nodes[mp["children"][-1]]["eclass"]]["type"] == "bool"
    (_, pd), = by_op["Term.pad"]
    assert nodes[pd["children"][2]]["op"] == "0.5" and data["class_data"][nodes[pd["children"][2]]["eclass"]]["type"] == "f64"
    (_, tr), = by_op["Term.transpose"]
    assert nodes[tr["children"][1]]["op"] == "Vec" and nodes[tr["children"][1]]["children"] == []     # the empty Vec
    for _, row in by_op["shape"]:                # a function row: its operand e-node, its value's e-class
        (term,) = row["children"]
        assert nodes[term]["op"].startswith("Term.")
        assert any(n["op"] == "Vec" and n["eclass"] == row["eclass"] for n in nodes.values())
    (_, h), = by_op["Term.host1"]
    assert nodes[h["children"][0]]["op"].startswith('"exp[')
    # and the view read from it
    with Session() as s:
        s.add_graph([z])
        view = s.view()
    c = view.class_of(pool)
    (e,) = view.classes[c].nodes
    assert e == ENode("nn.max_pool2d", (("ceil_mode", True), ("padding", (0, 0, 0, 0)), ("pool_size", (2, 2)),
                                        ("strides", (1, 1))), (view.class_of(conv),))
    assert view.classes[c].shape == pool.shape and view.classes[c].dtype == "float32"
    assert view.classes[view.class_of(x)].nodes == [ENode("leaf", (), (), x.uid)]


def _bad_rule(name, rhs_of):
    t, x, w = term_vars("t x w")
    (s,), (d,) = vec_vars("s"), str_vars("d")
    return RuleSpec(name, "any", t, Term.dense(x, w), (eq(s).to(shape(t)), eq(d).to(dtype(t))), rhs_of(t, x, w, s, d))


def test_a_rewrite_whose_sides_differ_in_shape_is_refused_naming_it():
    x, w = var("x", (2, 3)), var("w", (4, 3))
    n = call("nn.dense", x, w)
    bad = _bad_rule("transposes_its_output", lambda t, x, w, s, d: Term.transpose(t, vec(1, 0)))
    with pytest.raises(EGraphError, match=r"transposes_its_output: the two sides .* differ in shape \(\(2, 4\) vs \(4, 2\)\)"):
        apply_rules([bad], [n])
    bad = _bad_rule("int_zeros", lambda t, x, w, s, d: Term.zeros(s, "int32"))
    with pytest.raises(EGraphError, match=r"int_zeros: .* differ in dtype \(float32 vs int32\)"):
        apply_rules([bad], [n])
    bad = _bad_rule("wrong_reshape", lambda t, x, w, s, d: Term.reshape(t, vec(7)))
    with pytest.raises(EGraphError, match="wrong_reshape: a right-hand side whose shape or dtype the analysis cannot"):
        apply_rules([bad], [n])
    ok = _bad_rule("double_transpose", lambda t, x, w, s, d: Term.transpose(Term.transpose(t, vec(1, 0)), vec(1, 0)))
    (rhs,) = apply_rules([ok], [n])
    assert rhs.op == "transpose" and rhs.shape == (2, 4) and rhs.args[0].args[0] is n


def _grow_rule():
    """pad(x, (0, k)) = strided_slice(pad(x, (0, k + 1)), 0..n) (x of rank 1): true, and each right-hand
    side holds a new pad it applies to again, so saturation never ends."""
    t, x = term_vars("t x")
    pw, s = vec_vars("pw s")
    k, n = int_vars("k n")
    (m,) = str_vars("m")
    (v,) = float_vars("v")
    return RuleSpec("pad_forever", "any", t, Term.pad(x, pw, v, m),
                    (eq(pw.length()).to(2), eq(pw[0]).to(0), eq(k).to(pw[1]), eq(s).to(shape(t)), eq(n).to(s[0])),
                    Term.strided_slice(Term.pad(x, vec(0, k + 1), v, m), vec(0), vec(n), vec(1), vec(0)))


def test_stop_reasons():
    x = var("x", (3,))
    g = call("nn.pad", x, pad_width=((0, 1),))
    with Session([_grow_rule()]) as s:
        s.add_graph([g])
        got = s.saturate(max_iters=3)
        assert got["stop"] == "iterations" and got["iterations"] == 3
        view = s.view()
        assert view.applied == {"pad_forever": 3}
        assert view.classes[view.class_of(g)].shape == (4,)
    with Session([_grow_rule()]) as s:
        s.add_graph([g])
        got = s.saturate(max_iters=1000, max_enodes=60)
        assert got["stop"] == "e-nodes" and got["enodes"] >= 60
    with Session([_grow_rule()]) as s:
        s.add_graph([g])
        assert s.saturate(max_iters=10 ** 6, time_limit=0.3, max_enodes=10 ** 9)["stop"] == "time"
    from compile.rewrites import registry
    with Session(registry()["transpose_pair"].rules) as s:
        y = var("y", (2, 3))
        s.add_graph([call("transpose", call("transpose", y, axes=(1, 0)), axes=(1, 0))])
        got = s.saturate()
        assert got["stop"] == "saturated" and got["iterations"] <= 3
    with Session() as s:
        s.add_graph([g])
        assert s.saturate()["stop"] == "none"


def test_extraction_on_a_dag_whose_tree_cost_overflows():
    """80 residual doublings (2^80 paths): egglog's 64-bit tree cost would saturate; cut values are
    extracted on their own, and a call offered deep in the DAG is chosen."""
    x = var("x", (4, 4))
    v = x
    relus = []
    for _ in range(80):
        r = call("nn.relu", v)
        relus.append(r)
        v = call("add", r, v)
    with Session() as s:
        s.add_graph([v])
        view = s.view()
        target = view.class_of(relus[40])
        s.add_call(target, [view.class_of(relus[40].args[0])])
        choice, roots = s.extract()
    assert roots == (view.class_of(v),)
    assert choice[target].op == "call"
    assert sum(1 for e in choice.values() if e.op == "nn.relu") == 79
    assert sum(1 for e in choice.values() if e.op == "add") == 80


def test_apply_rules_reads_the_right_hand_side_back_as_ir():
    from compile.rewrites import registry
    x, w = var("x", (2, 3)), const(np.ones((4, 3), np.float32))
    n = call("nn.dense", x, w)
    (rhs,) = apply_rules(registry()["dense_zero_bias"].rules, [n])
    assert rhs.op == "nn.bias_add" and rhs.args[0] is n and rhs.attrs["axis"] == 1
    assert rhs.args[1].shape == (4,) and not np.any(rhs.args[1].value)
    assert apply_rules(registry()["dense_zero_bias"].rules, [call("nn.relu", x)]) == [None]
    y = call("transpose", call("transpose", x, axes=(1, 0)), axes=(1, 0))
    assert apply_rules(registry()["transpose_pair"].rules, [y]) == [x]
    from compile.runtime import run
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    assert np.array_equal(run(Graph([x], [rhs]), feeds)[0], run(Graph([x], [n]), feeds)[0])


def test_call_costs_steer_egglogs_extractor():
    """Static costs: a call beats the host operator it matches; per-node costs (set_cost, the
    data-movement objective's transfers): of two calls in one e-class the cheaper is chosen, and a
    call dearer than the host operator loses."""
    from compile.egraph import CALL, HOST, TRANSFER
    x = var("x", (4, 4))
    r = call("nn.relu", x)
    for costs, want in (((CALL, CALL + 2 * TRANSFER), 0), ((CALL + 2 * TRANSFER, CALL), 1), ((HOST * 2, HOST * 3), None)):
        with Session() as s:
            s.add_graph([r])
            view = s.view()
            c = view.class_of(r)
            ids = s.add_calls([(c, [view.class_of(x)], k) for k in costs])
            choice, _ = s.extract()
        if want is None:
            assert choice[c].op == "nn.relu"
        else:
            assert choice[c] == ENode("call", (), (view.class_of(x),), ids[want])


def test_two_equal_computed_dense_operands_extract_as_one_value():
    """Two separately built but equal computed weights (one e-class, both cut as dense operands):
    the second's extracted term is the first's ref, which names its e-class (it once failed with
    'extracted value ... as another e-class's term')."""
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    w = const(np.arange(48, dtype=np.float32).reshape(1, 8, 6))
    x1, x2 = var("x1", (2, 6)), var("x2", (2, 6))
    y1 = call("nn.dense", x1, call("reshape", w, newshape=(8, 6)))
    y2 = call("nn.dense", x2, call("reshape", w, newshape=(8, 6)))
    out = compile_graph(Graph([x1, x2], [y1, y2]), ("hlscnn",), matching="exact")
    assert [s.value.op for s in out.program.steps if s.kind == "host"].count("nn.dense") == 2
