"""IR patterns of the registered mappings, parsed, and exact (syntactic) matching on IR graphs.

A mapping declares its IR pattern as an s-expression (``python -m verify.mapping --list``):
``(nn.bias_add (nn.dense ?x ?w) ?b)``, ``(nn.max_pool2d ?x (pool_size 2 1) (strides 2 1))``,
``(nn.conv2d ?x ?w (strides S S) (padding 0 0) (data_layout NHWC) (kernel_layout OHWI))``. A list
whose head is an operator of the IR (``compile.ir.ops``) or the compiler-IR ILA is an operator
pattern; its operands are ``?name`` variables (a repeated variable must bind the same value) or
operator patterns; a list whose head is not an operator is an attribute constraint: numbers must
equal the node's attribute (padding in Relay's 2- or 4-value forms), an upper-case word of one
letter (``S``) is an attribute variable (equal occurrences bind equal values), other words are
literal values. Attributes the IR does not carry take Relay's defaults (``data_layout`` NCHW,
``kernel_layout`` OIHW, ``out_dtype`` the node's dtype).

Patterns are **closed**: at every operator of a pattern, each attribute of that operator
(:data:`compile.ir.ops.OPS` ``attrs``) that the pattern does not state must have its default value
(dilation, groups, padding, ceil_mode, count_include_pad, layouts, ...), and every operator and
operand of the match must have the mapping's dtype (``Pattern.dtype``). A node with a non-default
value of an unstated attribute is not a match. Values are compared canonically: an axis as its
non-negative index, padding in its 4-value form, an empty transpose permutation as the reversed
axes.

The compiler's exact matching (the paper's "exact matching", TVM's ``annotate_exact_matches``) is
:func:`matches`: the nodes of a graph where a mapping's pattern matches syntactically, each with
its variable bindings. Patterns are derived from the registry, never written a second time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compile.errors import CompileError
from compile.ir import ops
from compile.ir.graph import Graph, Node, Value

_DEFAULTS = {"data_layout": "NCHW", "kernel_layout": "OIHW"}
# operators a pattern may name that are compiler-IR ILA instructions but not IR operators: none since
# lstm_layer became an IR operator (compile.ir.ops; the nn.lstm rewrite lstm_fold produces it)
_ILA_ONLY: frozenset = frozenset()


class PatternError(CompileError):
    """A malformed IR pattern (names the pattern and the position)."""


@dataclass(frozen=True)
class Pattern:
    op: str
    args: tuple            # Pattern or str ("?x")
    attrs: tuple           # (name, tuple of values)
    dtype: str | None = None   # the root's dtype (the mapping's ir_dtype); None: any


def _tokens(text: str) -> list[str]:
    return text.replace("(", " ( ").replace(")", " ) ").split()


def parse(text: str) -> Pattern:
    """The pattern of ``text``; PatternError naming the defect."""
    toks = _tokens(text)
    pos = 0

    def expr():
        nonlocal pos
        if pos >= len(toks):
            raise PatternError(f"pattern {text!r}: unexpected end")
        t = toks[pos]
        pos += 1
        if t == "(":
            items = []
            while pos < len(toks) and toks[pos] != ")":
                items.append(expr())
            if pos >= len(toks):
                raise PatternError(f"pattern {text!r}: missing ')'")
            pos += 1
            return items
        if t == ")":
            raise PatternError(f"pattern {text!r}: unexpected ')' at token {pos}")
        return t

    tree = expr()
    if pos != len(toks):
        raise PatternError(f"pattern {text!r}: text after the pattern")
    return _build(tree, text)


def _is_op(name) -> bool:
    return isinstance(name, str) and (name in ops.OPS or name in _ILA_ONLY)


def _build(tree, text: str) -> Pattern:
    if not (isinstance(tree, list) and tree and _is_op(tree[0])):
        raise PatternError(f"pattern {text!r}: {tree!r} is not an operator pattern")
    args, attrs = [], []
    for item in tree[1:]:
        if isinstance(item, str):
            if not item.startswith("?"):
                raise PatternError(f"pattern {text!r}: operand {item!r} is neither ?var nor a pattern")
            args.append(item)
        elif item and _is_op(item[0]):
            args.append(_build(item, text))
        elif item and isinstance(item[0], str) and all(isinstance(v, str) for v in item[1:]):
            attrs.append((item[0], tuple(item[1:])))
        else:
            raise PatternError(f"pattern {text!r}: {item!r} is neither an operand nor an attribute")
    return Pattern(tree[0], tuple(args), tuple(attrs))


def _value(tok: str):
    try:
        return int(tok)
    except ValueError:
        try:
            return float(tok)
        except ValueError:
            return tok


_AXIS_ATTRS = {("nn.bias_add", "axis"), ("nn.softmax", "axis"), ("nn.layer_norm", "axis"), ("concatenate", "axis")}


def _canon(node: Node, name: str, value):
    """``value`` of attribute ``name`` of ``node`` in canonical form (module docstring)."""
    if name == "padding":
        return tuple(ops._pads(value))
    if (node.op, name) in _AXIS_ATTRS and isinstance(value, (int, np.integer)):
        rank = len(node.shape) if node.op != "nn.bias_add" else len(node.args[0].shape)
        return int(value) % max(rank, 1)
    if node.op == "transpose" and name == "axes":
        return tuple(value) if tuple(value) else tuple(reversed(range(len(node.shape))))
    return tuple(value) if isinstance(value, list) else value


def _defaults_ok(node: Node, stated: set) -> bool:
    """Every attribute of ``node``'s operator that the pattern does not state has its default."""
    schema = ops.OPS.get(node.op)
    if schema is None:
        return False
    for name, default in schema.attrs.items():
        if name in stated:
            continue
        if _canon(node, name, node.attrs.get(name, default)) != _canon(node, name, default):
            return False
    return set(node.attrs) <= set(schema.attrs) | stated


def _attr_ok(node: Node, name: str, want: tuple, env: dict) -> bool:
    if name in node.attrs:
        have = node.attrs[name]
        if name == "padding":
            have = ops._pads(have)
            want = tuple(want) * (4 // len(want)) if len(want) in (1, 2) else want
        elif (node.op, name) in _AXIS_ATTRS:
            have = _canon(node, name, have)
            want = tuple(str(_canon(node, name, int(w))) if w.lstrip("-").isdigit() else w for w in want)
    elif name in _DEFAULTS:
        have = _DEFAULTS[name]
    elif name == "out_dtype":
        have = node.dtype
    else:
        return False
    have = tuple(have) if isinstance(have, (tuple, list)) else (have,)
    if len(have) != len(want):
        return False
    for h, w in zip(have, want):
        if len(w) == 1 and w.isupper() and w.isalpha():          # attribute variable
            if env.setdefault(("attr", w), h) != h:
                return False
        elif _value(w) != (h if not isinstance(h, str) else h) and str(h) != w:
            return False
    return True


def node_matches(p: Pattern, node: Node, env: dict, dtype: str | None = None) -> bool:
    """Whether operator pattern ``p`` matches ``node`` itself (operator, arity, stated attributes
    binding attribute variables in ``env``, unstated ones at their defaults, ``dtype``), operands
    not looked at: the single-node test of :func:`match` and of the compiler's e-matching."""
    if not isinstance(node, Node) or node.op != p.op or len(node.args) != len(p.args):
        return False
    if dtype is not None and node.dtype != dtype:
        return False
    if not _defaults_ok(node, {n for n, _ in p.attrs}):
        return False
    return all(_attr_ok(node, n, w, env) for n, w in p.attrs)


def match(pattern: Pattern, value: Value, env: dict | None = None) -> dict | None:
    """Bindings (``?name`` -> Value, attribute variables) if the closed ``pattern`` matches at
    ``value`` (module docstring)."""
    env = {} if env is None else env
    stack = [(pattern, value)]
    while stack:
        p, v = stack.pop()
        if isinstance(p, str):
            if pattern.dtype is not None and v.dtype != pattern.dtype:
                return None
            if env.setdefault(p, v) is not v:
                return None
            continue
        if not node_matches(p, v, env, pattern.dtype):
            return None
        stack.extend(zip(p.args, v.args))
    return env


def variables(pattern: Pattern) -> list[str]:
    """The pattern's ``?variables`` in order of first appearance (depth first, left to right): the
    order of the operands handed to a mapping's ``bind_operands``."""
    out, stack = [], [pattern]
    while stack:
        p = stack.pop(0)
        if isinstance(p, str):
            if p not in out:
                out.append(p)
        else:
            stack[0:0] = list(p.args)
    return out


def matches(graph: Graph, pattern: Pattern) -> list[tuple[Node, dict]]:
    """Every node of ``graph`` where ``pattern`` matches (topological order), with bindings."""
    out = []
    for n in graph.nodes:
        env = match(pattern, n)
        if env is not None:
            out.append((n, env))
    return out


def mapping_patterns(names=None) -> dict[str, Pattern]:
    """The parsed IR patterns of the registered mappings (``names``, or all that the compiler
    matches: not the chain mappings, ``Mapping.fuses``, which certify fusion in compile.chains)."""
    from mappings.registry import get, names as all_names
    import dataclasses
    names = names or [n for n in all_names() if not get(n).fuses]
    return {n: dataclasses.replace(parse(get(n).ir_pattern), dtype=get(n).ir_dtype) for n in names}


def exact_counts(graph: Graph, targets=None) -> dict[str, int]:
    """Exact-matching sites per mapping (patterns may overlap; the compiler picks a cover)."""
    pats = mapping_patterns()
    keep = {n: p for n, p in pats.items() if targets is None or n.split(".")[0] in targets}
    return {n: len(matches(graph, p)) for n, p in keep.items()}
