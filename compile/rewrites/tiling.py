"""Tiling rewrites: a large convolution or dense layer as pieces an accelerator takes (issue 23).

Each rule halves one dimension of an operator (the first piece takes ``ceil(n / 2)``) and
recombines the pieces on the host:

* ``conv2d_tile_out`` — by output channels: ``concatenate([conv(x, w[:h]), conv(x, w[h:])], axis 1)``;
* ``conv2d_tile_in`` — by input channels, host accumulation: ``conv(x[:, :h], w[:, :h]) +
  conv(x[:, h:], w[:, h:])`` (float32 sums in another order: not bit-exact);
* ``conv2d_tile_rows`` — spatial tiles with halos (unpadded convolutions: after
  ``conv2d_explicit_pad``): output rows ``[0, h)`` read input rows ``[0, (h-1)s + KH)``, output rows
  ``[h, OH)`` read ``[hs, (OH-1)s + KH)``; ``concatenate`` along axis 2;
* ``dense_tile_rows`` / ``dense_tile_cols`` / ``dense_tile_k`` — ``x[N, K] @ w[M, K]^T`` by rows of
  x, by rows of w (result columns), and by K (host accumulation).

The slices of a constant weight are constants (evaluated when the program is built). Applied
repeatedly, the rules put every tiling down to the size bound into the e-graph, and extraction picks
the coarsest one whose pieces are offloaded (a call costs less than a host operator, and every
extra piece costs a call and data movement): extraction chooses the tile sizes.

**The size bound.** The compiler runs each rule with conditions appended (:func:`_bounded`): the
operator's weights, input and result hold more than :data:`TILE_LIMIT` elements together
(:data:`DENSE_LIMIT` for dense layers; smaller operators are not split further), and a policy gives each operator at most one split, so its tiles
form a tree whose levels extraction chooses from (without it every order of splits is another term
and the e-graph grows combinatorially: light resnet50 passed 99,000 e-nodes in four iterations). The
policy halves the largest tensors without host accumulation where it can: rows (input and result)
when the input holds at least as many elements as the weights, else output channels or columns
(weights and result); input channels or K (host accumulation) only where those cannot split (fewer
than 2 :data:`MIN_PIECE` output channels or columns, or a dense layer of one row). A padded
convolution is not split by rows: its unpadded form (``conv2d_explicit_pad``, in the same e-class)
is. The certification (:mod:`compile.rewrites.certify`) checks the rules without these conditions
(``Rewrite.checked``: the exact check needs small instances, and every halving is right at every
size) and checks structurally that the rules the compiler runs are exactly those with conditions
appended (``Rewrite.size_guard``): conjuncts only remove applications, so every application the
compiler makes is one the checks cover.

Source: the tiling of large operators into the sizes a fixed-function accelerator takes
(Glenside/3LA's flexible matching, paper §3; TVM's split schedules); the identities are those of
the convolution and matrix product over the reals, proved for int32 ring arithmetic by the exact
check as every other rewrite here.
"""
from __future__ import annotations

from compile.egraph import RuleSpec, Term, eq, int_vars, shape, term_vars, terms, vec, vec_vars
from compile.ir.graph import call, var
from compile.rewrites import rules as R
from compile.rewrites.base import Rewrite

TILE_LIMIT = 1 << 16     # elements (weights + input + result) above which a convolution is split again
DENSE_LIMIT = R.IM2COL_LIMIT  # ... a dense layer: 8x the convolutions', the largest im2col product the compiler
                         # forms (its input repeated KH*KW times), so no im2col product is tiled again as a dense layer
MIN_PIECE = 8            # the smallest channel / K piece a split makes (HLSCNN's 8-channel blocks)


def _slice(x, begin, end, axis: int):
    return Term.strided_slice(x, vec(begin), vec(end), vec(1), vec(axis))


def _conv(x, w, st, pd, dil):
    return Term.conv2d(x, w, st, pd, dil, 1, R.NCHW, R.OIHW)


def _numel4(s):
    return s[0] * s[1] * s[2] * s[3]


def _conv_sizes(sx, sw, so):
    """(weights, input, output) element counts."""
    return _numel4(sw), _numel4(sx), _numel4(so)


def _bounded(where: list, sizes: tuple, policy: list, limit: int | None) -> tuple:
    """``where`` and, when ``limit`` is not None, the bound last: the operator's weights, input and
    result (``sizes``, element counts) hold more than ``limit`` elements together, and the
    ``policy`` conditions that give each operator one split (module docstring)."""
    if limit is None:
        return tuple(where)
    return tuple(where) + (sizes[0] + sizes[1] + sizes[2] > limit, *policy)


def conv2d_tile_out_rules(limit: int | None = TILE_LIMIT, cut=None, name: str = "conv2d_tile_out"):
    """By output channels (O >= 2 MIN_PIECE). ``cut`` / ``name``: a seeded variant's split point
    (a function of the i64 O) and name."""
    t, x, w, sx, sw, so, st, pd, dil, lhs, where = R._conv_lhs_vars()
    o, h = int_vars("o h")
    where += [eq(o).to(sw[0]), o >= 2 * MIN_PIECE, eq(h).to((o + 1) / 2 if cut is None else cut(o))]
    rhs = Term.concatenate(terms(_conv(x, _slice(w, 0, h, 0), st, pd, dil), _conv(x, _slice(w, h, o, 0), st, pd, dil)), 1)
    W, X, _ = sizes = _conv_sizes(sx, sw, so)
    return (RuleSpec(name, "nchw", t, lhs, _bounded(where, sizes, [X < W], limit), rhs),)


def conv2d_tile_in_rules(limit: int | None = TILE_LIMIT):
    """By input channels (C >= 2 MIN_PIECE), the partial results added on the host."""
    t, x, w, sx, sw, so, st, pd, dil, lhs, where = R._conv_lhs_vars()
    c, h = int_vars("c h")
    where += [eq(c).to(sw[1]), c >= 2 * MIN_PIECE, eq(h).to((c + 1) / 2)]
    rhs = Term.add(_conv(_slice(x, 0, h, 1), _slice(w, 0, h, 1), st, pd, dil),
                   _conv(_slice(x, h, c, 1), _slice(w, h, c, 1), st, pd, dil))
    W, X, _ = sizes = _conv_sizes(sx, sw, so)
    return (RuleSpec("conv2d_tile_in", "nchw", t, lhs, _bounded(where, sizes, [X < W, sw[0] < 2 * MIN_PIECE], limit),
                     rhs),)


def conv2d_tile_rows_rules(limit: int | None = TILE_LIMIT, shift: int = 0, name: str = "conv2d_tile_rows"):
    """Spatial tiles with halos: output rows halved (OH >= 2), no padding. ``shift`` / ``name``: the
    seeded variant whose second tile reads its input rows ``shift`` rows early."""
    t, x, w, sx, sw, so, st, pd, dil, lhs, where = R._conv_lhs_vars()
    oh, h, kh, s = int_vars("oh h kh s")
    where += [eq(pd).to(vec(*R.ZERO4)), eq(oh).to(so[2]), oh >= 2, eq(h).to((oh + 1) / 2), eq(kh).to(sw[2]),
              eq(s).to(st[0])]
    top = _conv(_slice(x, 0, (h - 1) * s + kh, 2), w, st, pd, dil)
    bottom = _conv(_slice(x, h * s - shift, (oh - 1) * s + kh - shift, 2), w, st, pd, dil)
    W, X, _ = sizes = _conv_sizes(sx, sw, so)
    return (RuleSpec(name, "nchw", t, lhs, _bounded(where, sizes, [X >= W], limit),
                     Term.concatenate(terms(top, bottom), 2)),)


def _dense_vars():
    t, x, w = term_vars("t x w")
    sx, sw = vec_vars("sx sw")
    n, k, m, h = int_vars("n k m h")
    where = [eq(sx).to(shape(x)), eq(sx.length()).to(2), eq(sw).to(shape(w)), eq(n).to(sx[0]), eq(k).to(sx[1]),
             eq(m).to(sw[0])]
    return t, x, w, (n, k, m, h), Term.dense(x, w), where


def _dense_sizes(n, k, m):
    """(weights, input, result) element counts."""
    return m * k, n * k, n * m


def dense_tile_rows_rules(limit: int | None = DENSE_LIMIT):
    """By rows of x[N, K] (N >= 2)."""
    t, x, w, (n, k, m, h), lhs, where = _dense_vars()
    where += [n >= 2, eq(h).to((n + 1) / 2)]
    rhs = Term.concatenate(terms(Term.dense(_slice(x, 0, h, 0), w), Term.dense(_slice(x, h, n, 0), w)), 0)
    W, X, _ = sizes = _dense_sizes(n, k, m)
    return (RuleSpec("dense_tile_rows", "rank2", t, lhs, _bounded(where, sizes, [X >= W], limit), rhs),)


def dense_tile_cols_rules(limit: int | None = DENSE_LIMIT):
    """By rows of w[M, K] (M >= 2 MIN_PIECE): the result's columns."""
    t, x, w, (n, k, m, h), lhs, where = _dense_vars()
    where += [m >= 2 * MIN_PIECE, eq(h).to((m + 1) / 2)]
    rhs = Term.concatenate(terms(Term.dense(x, _slice(w, 0, h, 0)), Term.dense(x, _slice(w, h, m, 0))), 1)
    W, X, _ = sizes = _dense_sizes(n, k, m)
    return (RuleSpec("dense_tile_cols", "rank2", t, lhs, _bounded(where, sizes, [X < W], limit), rhs),)


def dense_tile_k_rules(limit: int | None = DENSE_LIMIT):
    """By K (K >= 2 MIN_PIECE), the partial products added on the host. Two rules, one per case of
    the policy (the weights dominate but M is too small to split, or the input does but N is 1); the
    same rule twice without the bound."""
    out = []
    for label in ("weights", "rows"):
        t, x, w, (n, k, m, h), lhs, where = _dense_vars()
        where += [k >= 2 * MIN_PIECE, eq(h).to((k + 1) / 2)]
        rhs = Term.add(Term.dense(_slice(x, 0, h, 1), _slice(w, 0, h, 1)),
                       Term.dense(_slice(x, h, k, 1), _slice(w, h, k, 1)))
        W, X, _ = sizes = _dense_sizes(n, k, m)
        policy = [X < W, m < 2 * MIN_PIECE] if label == "weights" else [X >= W, n < 2]
        out.append(RuleSpec("dense_tile_k", label, t, lhs, _bounded(where, sizes, policy, limit), rhs))
    return tuple(out)


# ----------------------------------------------------------------------------- certification instances
def slice_compose_rules(shift: int = 0, name: str = "slice_compose"):
    """A slice of a slice along the same axis (stride 1) as one slice of the operand: rows
    ``[b2, e2)`` of rows ``[b1, e1)`` of x are rows ``[b1 + b2, b1 + e2)`` of x (both slices inside
    their operand: e1 <= x's extent, e2 <= e1 - b1). Nested tiles of a tiled operator read their
    input through one slice each (without it a tile k levels deep reads through k slices, and
    extraction found VGG-19's 224-row tiles dearer than the host operator). ``shift`` / ``name``:
    the seeded variant whose composed slice starts ``shift`` rows late."""
    t, x = term_vars("t x")
    sx, bg1, en1, bg2, en2, ax = vec_vars("sx bg1 en1 bg2 en2 ax")
    b1, e1, b2, e2, a = int_vars("b1 e1 b2 e2 a")
    lhs = Term.strided_slice(Term.strided_slice(x, bg1, en1, vec(1), ax), bg2, en2, vec(1), ax)
    where = (eq(ax.length()).to(1), eq(a).to(ax[0]), eq(bg1.length()).to(1), eq(b1).to(bg1[0]),
             eq(en1.length()).to(1), eq(e1).to(en1[0]), eq(bg2.length()).to(1), eq(b2).to(bg2[0]),
             eq(en2.length()).to(1), eq(e2).to(en2[0]), eq(sx).to(shape(x)), a >= 0, a < sx.length(), b1 >= 0,
             b2 >= 0, e1 <= sx[a], b1 < e1, b2 < e2, e2 <= e1 - b1)
    rhs = Term.strided_slice(x, vec(b1 + b2 + shift), vec(b1 + e2 + shift), vec(1), ax)
    return (RuleSpec(name, "axis", t, lhs, where, rhs),)


def _slice_lhs(p):
    x = var("x", tuple(p["S"]))
    inner = call("strided_slice", x, begin=(p["b1"],), end=(p["e1"],), strides=(1,), axes=(p["A"],))
    return [x], call("strided_slice", inner, begin=(p["b2"],), end=(p["e2"],), strides=(1,),
                     axes=(p.get("A2", p["A"]),))


def _rand_slice(rng):
    """Nested slices, not assuming the guard: ends beyond the operand (clamped), and now and then
    the outer slice on another axis."""
    S = tuple(int(v) for v in rng.integers(1, 9, size=int(rng.integers(1, 5))))
    A = int(rng.integers(0, len(S)))
    b1 = int(rng.integers(0, S[A]))
    e1 = int(rng.integers(b1 + 1, S[A] + 3))
    A2 = int(rng.integers(0, len(S))) if rng.random() < 0.25 else A
    n2 = (min(e1, S[A]) - b1) if A2 == A else S[A2]
    b2 = int(rng.integers(0, n2))
    e2 = int(rng.integers(b2 + 1, n2 + 3))
    return dict(S=S, A=A, b1=b1, e1=e1, A2=A2, b2=b2, e2=e2)


def _slice_space():
    """Every (b1, e1, b2, e2) inside a 5-element axis, on the axis of a rank-2 operand and the
    last axis of a rank-3 one."""
    out = []
    for S, A in (((5, 2), 0), ((2, 1, 5), 2)):
        n = S[A]
        out += [dict(S=S, A=A, b1=b1, e1=e1, b2=b2, e2=e2) for b1 in range(n) for e1 in range(b1 + 1, n + 1)
                for b2 in range(e1 - b1) for e2 in range(b2 + 1, e1 - b1 + 1)]
    return out


def _rand_conv_tile(rng):
    """A convolution (any stride, padding, dilation, groups, batch: the guard filters) with channel
    counts around the split minimum."""
    p = R._rand_conv(rng)
    p["O"] = p["O"] * int(rng.integers(1, 12))
    p["C"] = p["C"] * int(rng.integers(1, 12))          # both stay multiples of the groups
    p["H"] += int(rng.integers(0, 4))
    return p


def _dense_tile_lhs(p):
    x, w = var("x", (p["N"],) * (p["R"] - 1) + (p["K"],)), var("w", (p["M"], p["K"]))
    return [x, w], call("nn.dense", x, w)


def _rand_dense_tile(rng):
    return dict(N=int(rng.integers(1, 6)), K=int(rng.integers(1, 40)), M=int(rng.integers(1, 40)),
                R=int(rng.choice([2, 2, 2, 3])))


# measured float32 error of the host-accumulating tilings (property test, standard-normal data): the
# two partial sums are rounded to float32 before their float32 add; relative Frobenius error ~1e-8 to
# 1e-7. 1e-5 is two orders above, far below a dropped or repeated slice (relative errors 0.3 .. 1).
ACC_RTOL = 1e-5

BOUND = ("weights + input + result > TILE_LIMIT (dense: DENSE_LIMIT) elements, and one split per operator: rows when the input holds "
         "at least as many elements as the weights, else output channels (columns); input channels (K) only where "
         "those cannot split")
_CONV = dict(KW=(1,), S=(1, 2), P=(0, 1), H=(3,), W=(2,), D=(1,), G=(1,), N=(1,))

TILING = (
    Rewrite("conv2d_tile_out", "nn.conv2d(x, w[O]) => concatenate([nn.conv2d(x, w[:h]), nn.conv2d(x, w[h:])], "
            "axis 1), h = ceil(O/2)  (O >= 16; size-bounded)",
            conv2d_tile_out_rules(), R._conv_lhs, _rand_conv_tile,
            dict(C=(1,), O=(16, 17), KH=(1, 2), **_CONV),
            checked=conv2d_tile_out_rules(None), size_guard=BOUND),
    Rewrite("conv2d_tile_in", "nn.conv2d(x[C], w[:, C]) => add(nn.conv2d(x[:, :h], w[:, :h]), nn.conv2d(x[:, h:], "
            "w[:, h:])), h = ceil(C/2)  (C >= 16; host accumulation; size-bounded)",
            conv2d_tile_in_rules(), R._conv_lhs, _rand_conv_tile,
            dict(C=(16, 17), O=(1, 2), KH=(1, 2), **_CONV),
            bit_exact=False, rtol=ACC_RTOL, checked=conv2d_tile_in_rules(None),
            size_guard=BOUND),
    Rewrite("conv2d_tile_rows", "nn.conv2d(x, w) [no padding] => concatenate([nn.conv2d(x[rows of outputs 0..h), "
            "w), nn.conv2d(x[rows of outputs h..OH), w)], axis 2), halo KH - s rows  (size-bounded)",
            conv2d_tile_rows_rules(), R._conv_lhs, _rand_conv_tile,
            dict(C=(1,), O=(1, 2), KH=(1, 2, 3), KW=(2,), S=(1, 2), P=(0, 1), H=(5, 6), W=(2,), D=(1,), G=(1,),
                 N=(1,)),
            checked=conv2d_tile_rows_rules(None), size_guard=BOUND),
    Rewrite("slice_compose", "strided_slice(strided_slice(x, [b1], [e1], axis a), [b2], [e2], axis a) => "
            "strided_slice(x, [b1 + b2], [b1 + e2], axis a)  (stride 1, both slices inside their operand)",
            slice_compose_rules(), _slice_lhs, _rand_slice, _slice_space()),
    Rewrite("dense_tile_rows", "nn.dense(x[N, K], w) => concatenate([nn.dense(x[:h], w), nn.dense(x[h:], w)], "
            "axis 0), h = ceil(N/2)  (size-bounded)",
            dense_tile_rows_rules(), _dense_tile_lhs, _rand_dense_tile,
            dict(N=(1, 2, 3), K=(1, 2), M=(2,), R=(2, 3)),
            checked=dense_tile_rows_rules(None), size_guard=BOUND),
    Rewrite("dense_tile_cols", "nn.dense(x, w[M, K]) => concatenate([nn.dense(x, w[:h]), nn.dense(x, w[h:])], "
            "axis 1), h = ceil(M/2)  (M >= 16; size-bounded)",
            dense_tile_cols_rules(), _dense_tile_lhs, _rand_dense_tile,
            dict(N=(1, 2), K=(1, 2), M=(16, 17), R=(2, 3)),
            checked=dense_tile_cols_rules(None), size_guard=BOUND),
    Rewrite("dense_tile_k", "nn.dense(x[N, K], w[M, K]) => add(nn.dense(x[:, :h], w[:, :h]), nn.dense(x[:, h:], "
            "w[:, h:])), h = ceil(K/2)  (K >= 16; host accumulation; size-bounded)",
            dense_tile_k_rules(), _dense_tile_lhs, _rand_dense_tile,
            dict(N=(1, 2), K=(16, 17), M=(1, 2), R=(2, 3)),
            bit_exact=False, rtol=ACC_RTOL, checked=dense_tile_k_rules(None),
            size_guard=BOUND),
)

__all__ = ["TILING", "TILE_LIMIT", "DENSE_LIMIT", "MIN_PIECE", "conv2d_tile_out_rules", "conv2d_tile_in_rules",
           "conv2d_tile_rows_rules", "slice_compose_rules", "dense_tile_rows_rules", "dense_tile_cols_rules", "dense_tile_k_rules"]
