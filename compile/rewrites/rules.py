"""The compiler-IR rewrites, each declared once as egglog rules (:class:`compile.egraph.RuleSpec`:
a left-hand-side pattern with attribute variables, the guard as egglog conditions on attributes and
shapes, the right-hand side) beside what certifies it: the instances of its left-hand side
(``lhs``), the small parameter space whose every combination the exact check runs (``space``), and
the random parameters of the property test, drawn without assuming the guard (``random_params``).
The compiler runs exactly these rules (:mod:`compile.compiler`), and so does the certification
(:mod:`compile.rewrites.certify`, through :func:`compile.egraph.apply_rules`).

Closed patterns: a rule matches an operator only when every attribute it does not handle has its
default (``tests/test_compile_rewrites.py`` enumerates them). Where the exact check cannot lower a
form to the compiler-IR ILA (a convolution with batch > 1, unequal strides, dilation or groups), the
guard refuses it, so a rule is used only within its certified space.

Sources: the paper's §3 and Figure 7 (zero-bias dense, add as bias_add, large max-pool windows as
stacked temporal pools with transposes), Glenside's im2col (conv2d as a matrix product), layout
algebra (transpose and reshape pairs), and the ONNX LSTM operator specification against PyTorch's
nn.LSTM equations (the front-ends' folded ``nn.lstm`` as the ``lstm_layer`` FlexASR runs, paper
§4.4.2).
"""
from __future__ import annotations

import numpy as np

from compile.egraph import (RuleSpec, Term, bool_vars, dtype, eq, false, int_vars, ne, shape,
                            str_vars, string, term_vars, terms, vec, vec_vars, zero_term)
from compile.ir.graph import call, const, var
from compile.rewrites.base import Rewrite

NCHW, OIHW = string("NCHW"), string("OIHW")
VECTOR = 16          # FlexASR's vector width: its pooling and linear layers take multiples of 16 columns
ZERO4 = (0, 0, 0, 0)


def _pool(x, ks, st):
    """A max-pool without padding, floor mode (the only pools the rules create)."""
    return Term.max_pool2d(x, ks, st, vec(*ZERO4), false())


# ----------------------------------------------------------------------------- dense and bias
def dense_zero_bias_rules():
    t, x, w = term_vars("t x w")
    (s,), (d,), (k, m) = vec_vars("s"), str_vars("d"), int_vars("k m")
    return (RuleSpec("dense_zero_bias", "any", t, Term.dense(x, w),
                     (eq(s).to(shape(t)), eq(d).to(dtype(t)), eq(k).to(s.length() - 1), k >= 0, eq(m).to(s[k])),
                     Term.bias_add(t, Term.zeros(vec(m), d), k)),)


def dense_flatten_rules(swap_leading: bool = False, name: str = "dense_flatten"):
    """nn.dense(x[d0, ..., K], w[M, K]) with x of rank 3..6 = reshape(nn.dense(reshape(x, [d0 * ... ,
    K]), w), [d0, ..., M]): the product of a rank-r input is that of its rows flattened, so the
    rank-2 forms (the dense tiling rules, the mappings' patterns) see every dense layer.
    ``swap_leading``: a seeded wrong variant that flattens x with its first two axes transposed."""
    out = []
    for r in range(3, 7):
        t, x, w = term_vars("t x w")
        (sx, so), (n, k) = vec_vars("sx so"), int_vars("n k")
        rows = sx[0]
        for i in range(1, r - 1):
            rows = rows * sx[i]
        where = [eq(so).to(shape(t)), eq(sx).to(shape(x)), eq(sx.length()).to(r), eq(k).to(sx[r - 1]),
                 eq(n).to(rows)]
        flat = Term.transpose(x, vec(1, 0, *range(2, r))) if swap_leading else x
        rhs = Term.reshape(Term.dense(Term.reshape(flat, vec(n, k)), w), so)
        out.append(RuleSpec(name, f"rank{r}", t, Term.dense(x, w), tuple(where), rhs))
    return tuple(out)


def add_bias_rules(check_bias: bool = True):
    """add(x, b) with b broadcast along axis 1 of x only: b[C, 1, ..., 1] (b[C] for 2-D x), x not
    broadcast, equal dtypes. ``check_bias=False``: the seeded variant without the guard on b."""
    out = []
    for r in range(2, 7):
        t, x, b = term_vars("t x b")
        (sx, sb), (c,), (d,) = vec_vars("sx sb"), int_vars("c"), str_vars("d")
        where = [eq(sx).to(shape(t)), eq(sx).to(shape(x)), eq(sx.length()).to(r), eq(c).to(sx[1]),
                 eq(sb).to(shape(b)), eq(d).to(dtype(x)), eq(d).to(dtype(b))]
        if check_bias:
            where.append(eq(sb).to(vec(c, *([1] * (r - 2)))))
        else:
            where.append(eq(sb.length()).to(r - 1))
        rhs = Term.bias_add(x, b if r == 2 else Term.reshape(b, vec(c)), 1)
        out.append(RuleSpec("add_bias" if check_bias else "unguarded_add_bias", f"rank{r}", t, Term.add(x, b),
                            tuple(where), rhs))
    return tuple(out)


# ----------------------------------------------------------------------------- convolution
def _conv_lhs_vars(certified: bool = True):
    """Variables and conditions of a convolution the exact check can lower: batch 1, groups 1, no
    dilation, equal strides, NCHW/OIHW (``certified=False`` drops the dilation condition)."""
    t, x, w = term_vars("t x w")
    sx, sw, so, st, pd, dil = vec_vars("sx sw so st pd dil")
    (g,) = int_vars("g")
    lhs = Term.conv2d(x, w, st, pd, dil, g, NCHW, OIHW)
    where = [eq(g).to(1), eq(sx).to(shape(x)), eq(sx.length()).to(4), eq(sx[0]).to(1), eq(sw).to(shape(w)),
             eq(so).to(shape(t)), eq(st[0]).to(st[1])]
    if certified:
        where.append(eq(dil).to(vec(1, 1)))
    return t, x, w, sx, sw, so, st, pd, dil, lhs, where


IM2COL_LIMIT = 1 << 19    # elements of an im2col product (columns + weights + result) the compiler forms at most


def conv2d_im2col_rules(kernel_axes=(0, 1, 2, 3), certified: bool = True, name: str = "conv2d_im2col",
                        limit: int | None = None):
    """conv2d(x, w) = transpose(reshape(dense(im2col(x), reshape(w, [O, C*KH*KW])), [1, OH, OW, O]),
    (0, 3, 1, 2)). ``kernel_axes`` / ``certified`` exist for the seeded wrong variants (a permuted
    kernel; the dilation condition dropped: im2col without dilation). ``limit`` (elements): the
    size bound appended last, the product's columns (OH*OW x C*KH*KW), weights and result hold at
    most ``limit`` elements together: a larger convolution is tiled as a convolution
    (:mod:`compile.rewrites.tiling`) before its tiles become matrix products, so no im2col product
    is tiled again as a dense layer (an e-graph of every level of both was too large for VGG-19)."""
    t, x, w, sx, sw, so, st, pd, dil, lhs, where = _conv_lhs_vars(certified)
    o, c, kh, kw, oh, ow = int_vars("o c kh kw oh ow")
    where += [eq(o).to(sw[0]), eq(c).to(sw[1]), eq(kh).to(sw[2]), eq(kw).to(sw[3]), eq(oh).to(so[2]),
              eq(ow).to(so[3])]
    if kernel_axes != (0, 1, 2, 3):
        where.append(eq(kh).to(kw))
    wk = w if kernel_axes == (0, 1, 2, 3) else Term.transpose(w, vec(*kernel_axes))
    cols = Term.im2col(x, vec(kh, kw), st, pd, vec(1, 1))
    mat = Term.dense(cols, Term.reshape(wk, vec(o, c * kh * kw)))
    rhs = Term.transpose(Term.reshape(mat, vec(1, oh, ow, o)), vec(0, 3, 1, 2))
    if limit is not None:
        k = c * kh * kw
        where.append(oh * ow * k + o * k + oh * ow * o <= limit)
    return (RuleSpec(name, "nchw", t, lhs, tuple(where), rhs),)


def conv2d_explicit_pad_rules():
    """A padded convolution as zero padding (nn.pad) followed by an unpadded one."""
    t, x, w, sx, sw, so, st, pd, dil, lhs, where = _conv_lhs_vars()
    where += [ne(pd).to(vec(*ZERO4))]
    padded = Term.pad(x, vec(0, 0, 0, 0, pd[0], pd[2], pd[1], pd[3]), 0.0, string("constant"))
    rhs = Term.conv2d(padded, w, st, vec(*ZERO4), dil, 1, NCHW, OIHW)
    return (RuleSpec("conv2d_explicit_pad", "nchw", t, lhs, tuple(where), rhs),)


def conv2d_nhwc_rules():
    """An NCHW/OIHW convolution as an NHWC/OHWI one between transposes (HLSCNN's layout)."""
    t, x, w, sx, sw, so, st, pd, dil, lhs, where = _conv_lhs_vars()
    y = Term.conv2d(Term.transpose(x, vec(0, 2, 3, 1)), Term.transpose(w, vec(0, 2, 3, 1)), st, pd, dil, 1,
                    string("NHWC"), string("OHWI"))
    return (RuleSpec("conv2d_nhwc", "nchw", t, lhs, tuple(where), Term.transpose(y, vec(0, 3, 1, 2))),)


# ----------------------------------------------------------------------------- pooling (Figure 7)
def _pool_vars():
    """A plain max-pool (no padding, floor mode) with its window (kh, kw) and strides (sh, sw)."""
    t, x = term_vars("t x")
    ks, st, pd = vec_vars("ks st pd")
    (ceil,) = bool_vars("ceil")
    kh, kw, sh, sw = int_vars("kh kw sh sw")
    where = [eq(pd).to(vec(*ZERO4)), eq(ceil).to(false()), eq(kh).to(ks[0]), eq(kw).to(ks[1]), eq(sh).to(st[0]),
             eq(sw).to(st[1])]
    return t, x, Term.max_pool2d(x, ks, st, pd, ceil), where, (kh, kw, sh, sw)


def maxpool_split_rules():
    """A window of a*b rows at stride a (a > 1, b > 1) = an (a,1)/(a,1) pool, then a (b,kw)/(1,sw) pool."""
    t, x, lhs, where, (kh, kw, a, sw) = _pool_vars()
    (b,) = int_vars("b")
    where += [a >= 2, eq(kh % a).to(0), eq(b).to(kh / a), b >= 2]
    rhs = _pool(_pool(x, vec(a, 1), vec(a, 1)), vec(b, kw), vec(1, sw))
    return (RuleSpec("maxpool_split", "any", t, lhs, tuple(where), rhs),)


def maxpool_transpose_rules():
    """Pooling along W as pooling along H between transposes (windows wider than tall, or as wide
    with a larger column stride)."""
    out = []
    for label in ("wider", "strided"):
        t, x, lhs, where, (kh, kw, sh, sw) = _pool_vars()
        where += [kw > kh] if label == "wider" else [eq(kw).to(kh), sw > sh]
        inner = _pool(Term.transpose(x, vec(0, 1, 3, 2)), vec(kw, kh), vec(sw, sh))
        out.append(RuleSpec("maxpool_transpose", label, t, lhs, tuple(where), Term.transpose(inner, vec(0, 1, 3, 2))))
    return tuple(out)


def maxpool_windows_rules(check_batch: bool = True):
    """Figure 7 (c): a 2-D max-pool (batch 1) as one temporal pool over its flattened windows:
    (kh, kw >= 2) the K = kh*kw elements of every window (nn.im2col, per channel) become the rows of
    a [1, 1, K, C*L] matrix (L windows per channel), pooled by a (K, 1)/(K, 1) window, reshaped back.
    ``check_batch=False``: the seeded variant without the batch-1 condition."""
    t, x, lhs, where, (kh, kw, sh, sw) = _pool_vars()
    (so,) = vec_vars("so")
    n, c, oh, ow = int_vars("n c oh ow")
    where += [kh >= 2, kw >= 2, eq(so).to(shape(t)), eq(so.length()).to(4), eq(n).to(so[0]), eq(c).to(so[1]),
              eq(oh).to(so[2]), eq(ow).to(so[3])]
    if check_batch:
        where.append(eq(n).to(1))
    k, L = kh * kw, oh * ow
    cols = Term.im2col(x, vec(kh, kw), vec(sh, sw), vec(*ZERO4), vec(1, 1))
    rows = Term.transpose(Term.reshape(cols, vec(L, c, k)), vec(2, 1, 0))
    pooled = _pool(Term.reshape(rows, vec(1, 1, k, c * L)), vec(k, 1), vec(k, 1))
    return (RuleSpec("maxpool_windows" if check_batch else "unguarded_maxpool_windows", "nchw", t, lhs,
                     tuple(where), Term.reshape(pooled, vec(1, c, oh, ow))),)


def maxpool_halve_rules(check_tiling: bool = True):
    """A pool whose windows tile the rows (kh = sh, kh even, kh >= 4) as a (2,1)/(2,1) pool then a
    (kh/2, kw)/(kh/2, sw) pool (Figure 7 (c): 16 rows as four stacked temporal pools).
    ``check_tiling=False``: the seeded variant without kh = sh."""
    t, x, lhs, where, (kh, kw, sh, sw) = _pool_vars()
    (h,) = int_vars("h")
    where += [eq(kh % 2).to(0), kh >= 4, eq(h).to(kh / 2)]
    if check_tiling:
        where.append(eq(kh).to(sh))
    rhs = _pool(_pool(x, vec(2, 1), vec(2, 1)), vec(h, kw), vec(h, sw))
    return (RuleSpec("maxpool_halve" if check_tiling else "unguarded_maxpool_halve", "any", t, lhs, tuple(where), rhs),)


def pool_pad_columns_rules(check_rows: bool = True):
    """A pool along rows only (window (k,1), stride (k,1)) of a [1, 1, R, C] matrix whose C is not a
    multiple of :data:`VECTOR`: pad the columns (zeros) to the next multiple, pool, slice the C
    columns back (the padding never reaches a kept column). ``check_rows=False``: the seeded
    variant without the row-pool condition."""
    t, x, lhs, where, (kh, kw, sh, sw) = _pool_vars()
    (sx,) = vec_vars("sx")
    c, p = int_vars("c p")
    where += [eq(sx).to(shape(x)), eq(sx.length()).to(4), eq(sx[0]).to(1), eq(sx[1]).to(1), eq(c).to(sx[3]),
              ne(c % VECTOR).to(0), eq(p).to(VECTOR - c % VECTOR)]
    if check_rows:
        where += [eq(kw).to(1), eq(sw).to(1)]
    pad = Term.pad(x, vec(0, 0, 0, 0, 0, 0, 0, p), 0.0, string("constant"))
    pooled = _pool(pad, vec(kh, 1), vec(sh, 1))
    rhs = Term.strided_slice(pooled, vec(0), vec(c), vec(1), vec(3))
    return (RuleSpec("pool_pad_columns" if check_rows else "unguarded_pool_pad_columns", "any", t, lhs, tuple(where),
                     rhs),)


# ----------------------------------------------------------------------------- layout algebra
def transpose_pair_rules(check_identity: bool = True):
    """transpose(transpose(x, p), q) = transpose(x, p∘q), or x when p∘q is the identity (one rule
    per rank and case). ``check_identity=False``: the seeded variant that returns x whatever p∘q."""
    out = []
    for r in range(1, 7):
        for label in ("identity", "composed"):
            if label == "composed" and not check_identity:
                continue
            t, x = term_vars("t x")
            p, q, both = vec_vars("p q both")
            where = [eq(p.length()).to(r), eq(q.length()).to(r), eq(both).to(vec(*[p[q[i]] for i in range(r)]))]
            if check_identity:
                where.append(eq(both).to(vec(*range(r))) if label == "identity" else ne(both).to(vec(*range(r))))
            rhs = x if label == "identity" else Term.transpose(x, both)
            out.append(RuleSpec("transpose_pair" if check_identity else "unguarded_transpose_pair", f"rank{r}-{label}",
                                t, Term.transpose(Term.transpose(x, p), q), tuple(where), rhs))
    return tuple(out)


def reshape_pair_rules():
    """reshape(reshape(x, s1), s2) = reshape(x, s2), or x when s2 is x's shape."""
    out = []
    for label in ("identity", "composed"):
        t, x = term_vars("t x")
        s1, s2, sx, so = vec_vars("s1 s2 sx so")
        where = [eq(so).to(shape(t)), eq(sx).to(shape(x)), eq(so).to(sx) if label == "identity" else ne(so).to(sx)]
        rhs = x if label == "identity" else Term.reshape(x, so)
        out.append(RuleSpec("reshape_pair", label, t, Term.reshape(Term.reshape(x, s1), s2), tuple(where), rhs))
    return tuple(out)


# ----------------------------------------------------------------------------- recurrent (paper §4.4.2)
ONNX_TO_TORCH = (0, 2, 3, 1)   # PyTorch's gate q (i, f, g, o) is ONNX's gate ONNX_TO_TORCH[q] of (i, o, f, c)


def _gates(v, H, order, offset=0):
    """The 4H gate rows of ``v`` along axis 1 (from ``offset``) reordered: block q of the result is
    block ``order[q]`` of ``v`` (strided_slice + concatenate, data movement only)."""
    return Term.concatenate(terms(*[Term.strided_slice(v, vec(offset + q * H), vec(offset + (q + 1) * H), vec(1),
                                                       vec(1)) for q in order]), 1)


def lstm_fold_rules(order=ONNX_TO_TORCH, halves=(True, True), check_state: bool = True, name: str = "lstm_fold"):
    """ONNX's folded LSTM (``nn.lstm``: x[T, 1, I], w[1, 4H, I], r[1, 4H, H], b[1, 8H] = Wb then Rb,
    gates (i, o, f, c); batch 1; initial states absent or constant zeros) as FlexASR's LSTM layer
    (``lstm_layer``: PyTorch gates (i, f, g, o), one bias b_ih + b_hh, zero initial state):
    ``reshape(lstm_layer(reshape(x, [T, I]), W', R', Wb' + Rb'), [T, 1, 1, H])`` where ' reorders
    the gate blocks (ONNX c is PyTorch g; strided_slice + concatenate + reshape). One rule per
    operand count (3: no bias, 4: bias, 5 and 6: initial states). The bias sum of a constant b is an
    ``add`` of constants, which extraction treats as free and the program evaluates at compile time
    with the IR ``add``'s own semantics. ``order`` / ``halves`` / ``check_state`` exist for the
    seeded wrong variants (:mod:`compile.rewrites.broken`)."""
    out = []
    for arity in (3, 4, 5, 6):
        t, x, w, r, b, h0, c0 = term_vars("t x w r b h0 c0")
        sx, sr, sb = vec_vars("sx sr sb")
        T, I, H = int_vars("T I H")
        (d,) = str_vars("d")
        ops = [x, w, r, b, h0, c0][:arity]
        where = [eq(sx).to(shape(x)), eq(sx.length()).to(3), eq(sx[1]).to(1), eq(T).to(sx[0]), eq(I).to(sx[2]),
                 eq(sr).to(shape(r)), eq(sr.length()).to(3), eq(H).to(sr[2]), eq(d).to(dtype(x))]
        if arity >= 4:
            where += [eq(sb).to(shape(b)), eq(sb).to(vec(1, H * 8))]
        if check_state:
            where += [zero_term(s) for s in ops[4:]]
        W = Term.reshape(_gates(w, H, order), vec(H * 4, I))
        R = Term.reshape(_gates(r, H, order), vec(H * 4, H))
        if arity == 3:
            bsum = Term.zeros(vec(H * 4), d)
        else:
            wb, rb = (Term.reshape(_gates(b, H, order, off), vec(H * 4)) for off in (0, H * 4))
            bsum = Term.add(wb, rb) if all(halves) else (wb if halves[0] else rb)
        y = Term.lstm_layer(Term.reshape(x, vec(T, I)), W, R, bsum)
        out.append(RuleSpec(name, f"{arity}-operands", t, Term.lstm(terms(*ops)), tuple(where),
                            Term.reshape(y, vec(T, 1, 1, H))))
    return tuple(out)


# ----------------------------------------------------------------------------- instances for the checks
def _dims(rng, n, lo=1, hi=5):
    return [int(v) for v in rng.integers(lo, hi + 1, n)]


def _pick(rng, values):
    return values[int(rng.integers(len(values)))]


def _dense_lhs(p):
    x, w = var("x", (p["N"],) * (p["R"] - 1) + (p["K"],)), var("w", (p["M"], p["K"]))
    return [x, w], call("nn.dense", x, w)


def _add_lhs(p):
    r2 = p["rank2"]
    x = var("x", (p["N"], p["C"]) + (p["H"],) * r2)
    b = var("b", {"channel": (p["C"],) + (1,) * r2, "ones": (1,) + (1,) * r2,
                  "full": (p["C"],) + (p["H"],) * r2}[p["b"]])
    return [x, b], call("add", x, b)


def _rand_add(rng):
    N, C, H = _dims(rng, 3, 1, 4)
    return dict(N=N, C=C, H=H, rank2=int(rng.integers(0, 3)), b=_pick(rng, ("channel", "ones", "full")))


def _conv_lhs(p):
    """nn.conv2d over x[N, C, H, W], w[O, C/G, KH, KW] with strides (S, S2), padding P, dilation D,
    groups G (defaults: N 1, S2 = S, D 1, G 1)."""
    N, G, D = p.get("N", 1), p.get("G", 1), p.get("D", 1)
    x = var("x", (N, p["C"], p["H"], p["W"]))
    w = var("w", (p["O"], p["C"] // G, p["KH"], p["KW"]))
    P = p["P"]
    return [x, w], call("nn.conv2d", x, w, strides=(p["S"], p.get("S2", p["S"])), padding=(P, P, P, P),
                        dilation=(D, D), groups=G)


def _rand_conv(rng):
    C, O, KH, KW = _dims(rng, 4, 1, 3)
    G = _pick(rng, (1, 1, 1, 2))
    C, O = C * G, O * G
    S, P = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    D = _pick(rng, (1, 1, 1, 2))
    return dict(C=C, O=O, KH=KH, KW=KW, S=S, S2=_pick(rng, (S, S, S, 3 - S)), P=P, D=D, G=G,
                N=_pick(rng, (1, 1, 1, 2)), H=D * (KH - 1) + 1 + int(rng.integers(0, 5)),
                W=D * (KW - 1) + 1 + int(rng.integers(0, 5)))


CONV_SPACE = dict(C=(1, 2), O=(1, 2), KH=(1, 2), KW=(2,), S=(1, 2), P=(0, 1), H=(3,), W=(3,), D=(1, 2), G=(1, 2),
                  N=(1, 2))


def _pool_lhs(p):
    x = var("x", (p["N"], p["C"], p["H"], p["W"]))
    P = p.get("P", 0)
    return [x], call("nn.max_pool2d", x, pool_size=(p["kh"], p["kw"]), strides=(p["sh"], p["sw"]),
                     padding=(P, P, P, P), ceil_mode=p.get("ceil", False))


def _rand_pool(rng, hi=6):
    kh, kw, sh, sw = _dims(rng, 4, 1, hi)
    N, C = _dims(rng, 2, 1, 2)
    return dict(kh=kh, kw=kw, sh=sh, sw=sw, N=N, C=C, H=kh + int(rng.integers(0, 7)), W=kw + int(rng.integers(0, 7)),
                P=_pick(rng, (0, 0, 0, 1)), ceil=bool(rng.random() < 0.2))


def _rand_pool_rows(rng):
    """A pool whose window is a column of rows more often than not (the shapes Figure 7's rules
    take), its other parameters as :func:`_rand_pool` (independent of any guard)."""
    p = _rand_pool(rng, 8)
    if rng.random() < 0.5:
        p.update(N=1, C=1, kw=1, sw=int(rng.integers(1, 3)), W=int(rng.integers(1, 40)))
    return p


def _transposes_lhs(p):
    x = var("x", p["shape"])
    return [x], call("transpose", call("transpose", x, axes=p["p1"]), axes=p["p2"])


def _rand_perms(rng):
    r = int(rng.integers(1, 5))
    return dict(shape=tuple(_dims(rng, r, 1, 3)), p1=tuple(int(v) for v in rng.permutation(r)),
                p2=tuple(int(v) for v in rng.permutation(r)))


def _perm_space():
    import itertools
    out = []
    for shp in ((2, 3), (2, 3, 2)):
        perms = list(itertools.permutations(range(len(shp))))
        out += [dict(shape=shp, p1=a, p2=b) for a in perms for b in perms]
    return out


def _reshapes_lhs(p):
    x = var("x", p["shape"])
    return [x], call("reshape", call("reshape", x, newshape=p["s1"]), newshape=p["s2"])


def _rand_reshapes(rng):
    a, b, c = _dims(rng, 3, 1, 4)
    return dict(shape=(a, b, c), s1=_pick(rng, ((a * b, c), (a, b * c), (a * b * c,))),
                s2=_pick(rng, ((a, b * c), (a, b, c), (c, a * b), (a * b * c, 1))))


def _reshape_space():
    return [dict(shape=(2, 3, 2), s1=s1, s2=s2) for s1 in ((6, 2), (12,), (2, 6)) for s2 in ((2, 6), (2, 3, 2), (12,))]


def _lstm_lhs(p):
    """nn.lstm over x[T, B, I], w[1, 4H, I], r[1, 4H, H]; ``bias``: 'input' (b[1, 8H] an input),
    'const' (a constant b: standard normal from ``seed``, rounded to integers with ``ints`` for the
    exact check) or 'none'; ``state``: 'absent', 'zeros' (constant zero h0 and c0), 'input' (h0 an
    input) or 'ones' (constant non-zero h0 and c0): the rewrite must not apply to the last two."""
    T, B, I, H = p["T"], p.get("B", 1), p["I"], p["H"]
    x, w, r = var("x", (T, B, I)), var("w", (1, 4 * H, I)), var("r", (1, 4 * H, H))
    ins, args = [x, w, r], [x, w, r]
    if p["bias"] != "none" or p["state"] != "absent":
        if p["bias"] == "input":
            b = var("b", (1, 8 * H))
            ins.append(b)
        else:
            v = np.random.default_rng(p.get("seed", 0)).standard_normal((1, 8 * H)) * (4 if p.get("ints") else 1)
            v = np.round(v) if p.get("ints") else v
            b = const((v if p["bias"] == "const" else np.zeros((1, 8 * H))).astype(np.float32))
        args.append(b)
    if p["state"] == "zeros":
        args += [const(np.zeros((1, B, H), np.float32))] * 2
    elif p["state"] == "ones":
        args += [const(np.ones((1, B, H), np.float32))] * 2
    elif p["state"] == "input":
        h0 = var("h0", (1, B, H))
        ins.append(h0)
        args.append(h0)
    return ins, call("nn.lstm", *args)


def _rand_lstm(rng):
    T, I, H = int(rng.integers(1, 7)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
    return dict(T=T, I=I, H=H, B=_pick(rng, (1, 1, 1, 2)), bias=_pick(rng, ("input", "input", "const", "none")),
                state=_pick(rng, ("absent", "zeros", "zeros", "input", "ones")), seed=int(rng.integers(1 << 30)))


LSTM_SPACE = dict(T=(2,), I=(1, 2), H=(1, 2), B=(1, 2), bias=("input", "const", "none"),
                  state=("absent", "zeros", "input", "ones"), ints=(True,))


# Property-test tolerance of lstm_fold, measured (seeds 1 and 100..104, 2000 random parameter sets
# of the former generator each, 10,809 where the rewrite applies; standard-normal float32 data):
# relative Frobenius error median 1.2e-8, 99.9th percentile below 8.5e-7, largest 2.2e-6. Its only
# source is the rewritten side's float32 ``add`` of the two bias halves (the left side sums them in
# float64; everything else is the same float64 arithmetic in the same order): an absolute error of
# 2^-24 |Wb + Rb| per pre-activation, relatively larger where cancellation makes the outputs small
# (T = 1, H = 1 cases). 1e-5: ~4.5x the largest seen, four orders below a wrong gate order or a
# dropped bias (relative errors 0.1 .. 2).
LSTM_RTOL = 1e-5

RULES = (
    Rewrite("dense_zero_bias", "nn.dense(x, w) => nn.bias_add(nn.dense(x, w), zeros[M])  (paper §3: MobileNet-V2)",
            dense_zero_bias_rules(), _dense_lhs,
            lambda rng: dict(zip("NKM", _dims(rng, 3)), R=int(rng.integers(2, 4))),
            dict(R=(2, 3), N=(1, 2), K=(1, 3), M=(2,))),
    Rewrite("dense_flatten", "nn.dense(x[d0,...,K], w[M,K]) => reshape(nn.dense(reshape(x, [d0*...*d(r-2), K]), w), "
            "[d0,...,M])  (rank 3..6: the rank-2 tiling rules and patterns see every dense layer)",
            dense_flatten_rules(), _dense_lhs,
            lambda rng: dict(zip("NKM", _dims(rng, 3)), R=int(rng.integers(2, 6))),
            dict(R=(3, 4), N=(1, 2), K=(1, 3), M=(2,))),
    Rewrite("add_bias", "add(x[N,C,...], b[C,1,...]) => nn.bias_add(x, reshape(b, [C]), axis=1)",
            add_bias_rules(), _add_lhs, _rand_add,
            dict(N=(1, 2), C=(1, 2), H=(2,), rank2=(0, 1, 2), b=("channel", "ones", "full"))),
    Rewrite("conv2d_im2col", "nn.conv2d(x, w) => transpose(reshape(nn.dense(nn.im2col(x), reshape(w, [O, C*KH*KW])), "
            "[1, OH, OW, O]), (0, 3, 1, 2))  (batch 1, groups 1, no dilation, equal strides; Glenside's im2col)",
            conv2d_im2col_rules(limit=IM2COL_LIMIT), _conv_lhs, _rand_conv, CONV_SPACE,
            checked=conv2d_im2col_rules(), size_guard="columns + weights + result <= IM2COL_LIMIT elements"),
    Rewrite("conv2d_explicit_pad", "nn.conv2d(x, w, padding p) => nn.conv2d(nn.pad(x, p), w, padding 0)  "
            "(batch 1, groups 1, no dilation, equal strides)",
            conv2d_explicit_pad_rules(), _conv_lhs, _rand_conv, CONV_SPACE),
    Rewrite("conv2d_nhwc", "nn.conv2d(x, w) [NCHW/OIHW] => transpose(nn.conv2d(transpose(x, (0, 2, 3, 1)), "
            "transpose(w, (0, 2, 3, 1)), NHWC/OHWI), (0, 3, 1, 2))  (HLSCNN's layout; batch 1, groups 1, no "
            "dilation, equal strides)",
            conv2d_nhwc_rules(), _conv_lhs, _rand_conv, CONV_SPACE),
    Rewrite("maxpool_split", "nn.max_pool2d(x, (a*b, kw), (a, sw)) => nn.max_pool2d(nn.max_pool2d(x, (a, 1), (a, 1)), "
            "(b, kw), (1, sw))  (Figure 7: large windows as stacked temporal pools)",
            maxpool_split_rules(), _pool_lhs, _rand_pool,
            dict(kh=(4, 6), kw=(1, 2), sh=(2, 3), sw=(1,), N=(1,), C=(1,), H=(6, 7), W=(2,), P=(0, 1), ceil=(False, True))),
    Rewrite("maxpool_transpose", "nn.max_pool2d(x, (kh, kw), (sh, sw)) => transpose(nn.max_pool2d(transpose(x, "
            "(0, 1, 3, 2)), (kw, kh), (sw, sh)), (0, 1, 3, 2))  (Figure 7: pooling along W as pooling along H)",
            maxpool_transpose_rules(), _pool_lhs, _rand_pool,
            dict(kh=(1, 2), kw=(1, 2), sh=(1, 2), sw=(1, 2), N=(1,), C=(1,), H=(3,), W=(4,), P=(0, 1),
                 ceil=(False, True))),
    Rewrite("maxpool_windows", "nn.max_pool2d(x[1,C,H,W], (kh, kw), (sh, sw)) => reshape(nn.max_pool2d(reshape("
            "transpose(reshape(nn.im2col(x), [L, C, K]), (2, 1, 0)), [1, 1, K, C*L]), (K, 1), (K, 1)), [1, C, OH, OW])  "
            "(Figure 7 (c): the flattened windows)",
            maxpool_windows_rules(), _pool_lhs, _rand_pool,
            dict(kh=(1, 2), kw=(2, 3), sh=(1, 2), sw=(2,), N=(1, 2), C=(1, 2), H=(3,), W=(4,), P=(0, 1),
                 ceil=(False, True))),
    Rewrite("maxpool_halve", "nn.max_pool2d(x, (k, kw), (k, sw)) => nn.max_pool2d(nn.max_pool2d(x, (2, 1), (2, 1)), "
            "(k/2, kw), (k/2, sw))  (k even, k >= 4)",
            maxpool_halve_rules(), _pool_lhs, _rand_pool_rows,
            dict(kh=(4, 6), kw=(1, 2), sh=(2, 4, 6), sw=(1,), N=(1,), C=(1,), H=(6, 9), W=(2,), P=(0, 1),
                 ceil=(False, True))),
    Rewrite("pool_pad_columns", "nn.max_pool2d(x[1,1,R,C], (k, 1), (k, 1)) => strided_slice(nn.max_pool2d(nn.pad(x, "
            "columns to a multiple of 16), (k, 1), (k, 1)), columns 0..C)",
            pool_pad_columns_rules(), _pool_lhs, _rand_pool_rows,
            dict(kh=(1, 2), kw=(1, 2), sh=(1, 2), sw=(1, 2), N=(1, 2), C=(1,), H=(4,), W=(3, 5, 16), P=(0, 1),
                 ceil=(False, True))),
    Rewrite("transpose_pair", "transpose(transpose(x, p), q) => transpose(x, p∘q), or x when p∘q is the identity",
            transpose_pair_rules(), _transposes_lhs, _rand_perms, _perm_space()),
    Rewrite("reshape_pair", "reshape(reshape(x, s1), s2) => reshape(x, s2), or x when s2 is x's shape",
            reshape_pair_rules(), _reshapes_lhs, _rand_reshapes, _reshape_space()),
    Rewrite("lstm_fold", "nn.lstm(x[T,1,I], w, r, b, h0=0, c0=0) [ONNX gates i,o,f,c] => reshape(lstm_layer("
            "reshape(x, [T, I]), W[i,f,c,o], R[i,f,c,o], Wb[i,f,c,o] + Rb[i,f,c,o]), [T, 1, 1, H])  "
            "(PyTorch gates i,f,g,o; paper §4.4.2: the LSTM layer FlexASR runs)",
            lstm_fold_rules(), _lstm_lhs, _rand_lstm, LSTM_SPACE, bit_exact=False, rtol=LSTM_RTOL),
)


def _registered(name: str) -> Rewrite:
    return next(r for r in RULES if r.name == name)


# thin wrappers: the rewrite's egglog rules run on one IR node (None where they do not apply)
def dense_zero_bias(n):
    return _registered("dense_zero_bias").apply(n)


def dense_flatten(n):
    return _registered("dense_flatten").apply(n)


def add_bias(n):
    return _registered("add_bias").apply(n)


def conv2d_im2col(n):
    return _registered("conv2d_im2col").apply(n)


def conv2d_explicit_pad(n):
    return _registered("conv2d_explicit_pad").apply(n)


def conv2d_nhwc(n):
    return _registered("conv2d_nhwc").apply(n)


def maxpool_split(n):
    return _registered("maxpool_split").apply(n)


def maxpool_transpose(n):
    return _registered("maxpool_transpose").apply(n)


def maxpool_windows(n):
    return _registered("maxpool_windows").apply(n)


def maxpool_halve(n):
    return _registered("maxpool_halve").apply(n)


def pool_pad_columns(n):
    return _registered("pool_pad_columns").apply(n)


def transpose_pair(n):
    return _registered("transpose_pair").apply(n)


def reshape_pair(n):
    return _registered("reshape_pair").apply(n)


def lstm_fold(n):
    return _registered("lstm_fold").apply(n)
