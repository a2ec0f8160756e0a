"""Closed patterns (issue 22 item 3): for every operator of every mapping's IR pattern and every
attribute of that operator (compile.ir.ops.OPS), a non-default value is refused by the pattern when
the pattern does not state the attribute (or states a literal), and handled by the mapping when the
pattern binds it to an attribute variable: the adapter refuses the value, or the whole call is
validated at it."""
import dataclasses

import numpy as np
import pytest

from compile.call import at_match
from compile.certify import validate
from compile.ir import ops
from compile.ir.graph import Node
from compile.patterns import Pattern, mapping_patterns, match, variables
from mappings.registry import get, names
from test_mappings_adapters import BUILD
from ledgers import with_rewrite_certificates

# values of each attribute the patterns' operators carry: the test takes the first that differs from
# the matched node's
OTHER = {"strides": [(2, 2), (1, 1)], "padding": [(1, 1, 1, 1), (0, 0, 0, 0)], "dilation": [(2, 2)], "groups": [2],
         "data_layout": ["NHWC", "NCHW"], "kernel_layout": ["OHWI", "OIHW"], "pool_size": [(3, 1), (2, 1)],
         "ceil_mode": [True], "count_include_pad": [True], "axis": [0, 1], "epsilon": [1e-3], "axes": [(0, 1)]}


def _pattern_nodes(p: Pattern):
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, Pattern):
            yield q
            stack.extend(q.args)


def _site(name):
    """The mapping's pattern, a graph node it matches (the adapter test's graph), and the IR node
    of each pattern node (same traversal)."""
    m = get(name)
    shape = dict(m.default_shape)
    g, _ = BUILD[name](shape, m.random_inputs(shape, np.random.default_rng(0)))
    pat = mapping_patterns([name])[name]
    root = g.outputs[0]
    assert match(pat, root) is not None
    pairs, stack = [], [(pat, root)]
    while stack:
        p, v = stack.pop()
        if isinstance(p, Pattern):
            pairs.append((p, v))
            stack.extend(zip(p.args, v.args))
    return m, pat, root, pairs


def _with(root, target, attr, value):
    """A copy of the term at ``root`` where node ``target`` has ``attr = value``."""
    memo = {}

    def copy(v):
        if v.uid in memo or not isinstance(v, Node):
            return memo.get(v.uid, v)
        attrs = dict(v.attrs)
        if v is target:
            attrs[attr] = value
        memo[v.uid] = Node(v.shape, v.dtype, v.source, op=v.op, args=tuple(copy(a) for a in v.args), attrs=attrs)
        return memo[v.uid]
    return copy(root)


CASES = [(n, p.op, a) for n in names() if n in BUILD for p in _pattern_nodes(mapping_patterns([n])[n])
         for a in ops.OPS[p.op].attrs]


@pytest.mark.parametrize("name,op,attr", CASES)
def test_a_non_default_attribute_is_refused_or_handled(name, op, attr):
    m, pat, root, pairs = _site(name)
    (p, node), = [(p, v) for p, v in pairs if p.op == op][:1] or pytest.skip("operator not in the graph")
    stated = dict(p.attrs)
    value = next(v for v in OTHER[attr] if v != node.attrs.get(attr))
    changed = _with(root, node, attr, value)
    env = match(pat, changed)
    if attr not in stated or not any(len(w) == 1 and w.isupper() and w.isalpha() for w in stated[attr]):
        assert env is None, f"{name}: {op} with {attr}={value!r} matches the pattern"
        return
    # an attribute variable: the adapter refuses the value, or the call is validated at it
    call = None if env is None else at_match(m, changed, env, variables(pat))
    if call is None:
        return
    try:
        rep = validate(call, samples=2)
    except Exception as exc:                   # the shape at this value violates a side condition
        from ila.errors import D2AError
        assert isinstance(exc, D2AError), exc
        return
    assert rep.passed or rep.failure, rep.summary()


@pytest.mark.slow
def test_the_dilated_convolution_of_the_issue_is_not_offloaded(tmp_path):
    """Kernel 2, dilation 2, stride 3 on a 12x12 input through the front-end's NCHW form and every
    certified rewrite: not offloaded to HLSCNN (closed patterns and guards), or, if offloaded,
    within the mapping's tolerance end to end."""
    from compile.compiler import compile_graph
    from compile.ir.graph import Graph, call, const, var
    from compile.runtime.cosim import against_host
    rng = np.random.default_rng(0)
    x = var("x", (1, 3, 12, 12))
    w = const((rng.standard_normal((8, 3, 2, 2)) * 0.3).astype(np.float32))
    g = Graph([x], [call("nn.conv2d", x, w, strides=(3, 3), dilation=(2, 2))])
    res = compile_graph(g, ("hlscnn",), matching="flexible", certify="sim",
                        ledger_path=with_rewrite_certificates(tmp_path / "l.json"), budget=300)
    if res.program.calls():
        out = against_host(res, {"x": rng.standard_normal((1, 3, 12, 12)).astype(np.float32)})
        assert out["error"] < 0.06, out["error"]
    else:
        assert res.counts() == {}
