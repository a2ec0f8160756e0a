"""The IR's text form, in Relay's style, and its parser (print -> parse -> print is the identity).

::

    def @main(%x: Tensor[(1, 3, 32, 32), float32]) {
      %c0 = const[(16, 3, 3, 3), float32] "<base64 of the little-endian bytes>";
      %1 = nn.conv2d(%x, %c0, strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1) /* conv1 */;
      %2 = nn.relu(%1) /* relu1 */;
      (%2)
    }

One statement per line: constants (``%cN``), then operator nodes (``%N``) in topological order,
each with every attribute (``name=value``: ints, floats, bools, None, tuples of them) and its
source location as a trailing comment; the last line lists the outputs.
"""
from __future__ import annotations

import ast
import base64
import re

import numpy as np

from compile.errors import TextFormatError
from compile.ir.graph import Const, Graph, Node, Var, call, const, to_text, var


_HEAD = re.compile(r"^def @(\w+)\((.*)\) \{$")
_INPUT = re.compile(r"%([\w.]+): Tensor\[(\(.*?\)), (\w+)\]")
_CONST = re.compile(r'^%(c\d+) = const\[(\(.*?\)), (\w+)\] "([A-Za-z0-9+/=]*)"(?: /\* (.*) \*/)?;$')
_NODE = re.compile(r"^%(\d+) = ([\w.]+)\((.*)\)(?: /\* (.*) \*/)?;$")


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse(text: str) -> Graph:
    """The graph of an IR text (:func:`to_text`'s format); TextFormatError naming the line."""
    lines = [ln.strip() for ln in text.strip().splitlines()]
    if not lines or not (m := _HEAD.match(lines[0])):
        raise TextFormatError("line 1: expected 'def @name(%input: Tensor[(shape), dtype], ...) {'")
    name, params = m.groups()
    env: dict[str, object] = {}
    inputs = []
    for iname, shp, dt in _INPUT.findall(params):
        v = var(iname, ast.literal_eval(shp), dt)
        env[iname] = v
        inputs.append(v)
    if lines[-1] != "}":
        raise TextFormatError(f"line {len(lines)}: expected '}}'")
    for no, ln in enumerate(lines[1:-2], 2):
        try:
            if (m := _CONST.match(ln)):
                key, shp, dt, data, src = m.groups()
                arr = np.frombuffer(base64.b64decode(data), dtype=np.dtype(dt).newbyteorder("<")).astype(dt)
                env[key] = const(arr.reshape(ast.literal_eval(shp)), source=src or "")
                continue
            if not (m := _NODE.match(ln)):
                raise TextFormatError(f"line {no}: not a statement: {ln[:80]!r}")
            key, op, argtext, src = m.groups()
            args, attrs = [], {}
            for a in _split_args(argtext):
                if a.startswith("%"):
                    if a[1:] not in env:
                        raise TextFormatError(f"line {no}: {a} is used before it is defined")
                    args.append(env[a[1:]])
                else:
                    k, _, v = a.partition("=")
                    attrs[k.strip()] = ast.literal_eval(v.strip())
            env[key] = call(op, *args, source=src or "", **attrs)
        except (ValueError, SyntaxError) as exc:
            raise TextFormatError(f"line {no}: {exc}") from None
    out = lines[-2]
    if not (out.startswith("(") and out.endswith(")")):
        raise TextFormatError(f"line {len(lines) - 1}: expected the output tuple '(%a, %b)'")
    outs = []
    for a in _split_args(out[1:-1]):
        if not a.startswith("%") or a[1:] not in env:
            raise TextFormatError(f"line {len(lines) - 1}: unknown output {a!r}")
        outs.append(env[a[1:]])
    return Graph(inputs, outs, name=name)


__all__ = ["to_text", "parse", "Var", "Const", "Node"]
