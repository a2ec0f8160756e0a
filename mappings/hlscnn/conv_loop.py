"""The convolution loop nest of HLSCNN's phase proofs, for one tracked output (issue 26): the
pieces shared by the fixed-shape proof (:mod:`mappings.hlscnn.conv2d_nchw_chc`, sizes ints) and the
all-sizes proof (:mod:`mappings.hlscnn.conv_allsizes`, sizes terms of the size symbols): the
operands as the IR defines them, the specification function V of the partial outputs, the input
regions, the tracked output word, and the phase's facts, axioms and invariant (the loop of
``Accel_Conv_Child`` in the model ``ila.models.hlscnn.model``, one output pixel per child step).
"""
from __future__ import annotations

from ila import BvSort, FuncRef, bv_const, concat, extract, implies, ite, land, load, zext
from ila.expr import Expr
from ila.sorts import MemSort
from ila.unroll import symbol
from mappings.phases import Region

W32 = 32
BLOCK = 8                     # CHANNEL_BLOCK


def _p(name):
    return symbol(f"p.{name}", BvSort(W32))


def _c(v):
    return bv_const(int(v), W32)


def _byte(v16, b):
    """Byte ``b`` (a 32-bit term, 0 or 1) of the 16-bit ``v16``: the low byte at 0 (little-endian)."""
    return ite(b.eq(0), extract(v16, 7, 0), extract(v16, 15, 8))



def loop_parts(dims: dict, bits: int, *, by: tuple, act_base=None, wgt_base=None, pixel_base=None):
    """The pieces of the convolution loop's phase proof for one tracked output, shared by the
    fixed-shape proof (:func:`phase_proof`: ``dims`` ints) and the all-sizes one
    (:mod:`mappings.hlscnn.conv_allsizes`: ``dims`` 32-bit terms of the size symbols). ``dims``:
    H, W, C, O, K, S, P and the derived Hp, Wp, OH, OW, ncb, nfb; ``by``: the names of what
    establishes the two input regions (lemmas, or ``"assumed"``); ``act_base``, ``wgt_base``: byte
    offsets added to the regions' addresses (None: none); ``pixel_base``: the output base in
    16-byte pixels added to the tracked address (None: none, the base 0). Returns a namespace: the
    data arrays X, Wt; xpad, wraw, w16 (the operands as the IR defines them); V and ``step`` (the
    specification function and one tap of it); the regions r_act, r_wgt; the tracked output's
    parameters fb, f, oy, ox, o = 8 fb + f, their condition ``pre`` and the tracked ``addrs``
    (scratchpad-1 bytes of the output word); ``ntaps``; and the phase's ``facts``, ``axioms`` and
    invariant ``inv(P, relational_only)`` (module docstring)."""
    from types import SimpleNamespace
    from ila.models.hlscnn.numerics import ACT_ADD_PSUM, CONV_MAC, PSUM_TO_ACT_RND, PSUM_TO_ACT_TRN
    H, W, C, O, K, S, P = (dims[d] for d in ("H", "W", "C", "O", "K", "S", "P"))
    Hp, Wp, OH, OW, ncb, nfb = (dims[d] for d in ("Hp", "Wp", "OH", "OW", "ncb", "nfb"))
    wb = bits // 8
    X = symbol("data.x", MemSort(W32, 16))
    Wt = symbol("data.w", MemSort(W32, bits))
    z16, z32 = bv_const(0, 16), bv_const(0, W32)

    def term(v):
        return v if isinstance(v, Expr) else _c(v)

    def based(addr, base):
        return addr if base is None else addr + base

    # ------------------------------------------------------------------ the data, from the IR's definitions
    def xpad(c, y, x):
        """xpad[c, y, x]: x[c, y - P, x - P] inside, 0 in the border and the channel padding."""
        inside = land(c.ult(C), (y - P).ult(H), (x - P).ult(W))
        return ite(inside, load(X, (c * H + (y - P)) * W + (x - P)), z16)

    def wraw(o, c, ky, kx):
        """w[o, c, ky, kx] in the weight format (0 in the channel and filter padding)."""
        return ite(land(o.ult(O), c.ult(C)), load(Wt, ((o * C + c) * K + ky) * K + kx), bv_const(0, bits))

    def w16(o, c, ky, kx):
        v = wraw(o, c, ky, kx)
        return v if bits == 16 else concat(v, bv_const(0, 8))      # the datapath widens an 8-bit weight

    V = FuncRef(f"hlscnn_conv_partial_w{bits}", BvSort(16), [BvSort(W32)] * 4)

    def step(o, oy, ox, cb, ky, kx, prev, wa=w16, xa=xpad):
        """The partial output after one more tap (cb, ky, kx) from ``prev`` (the hardware's order);
        the indices are terms, or ints with ``wa`` / ``xa`` the leaves' values at those points."""
        psum = z32
        for i in range(BLOCK):
            c = cb * BLOCK + i
            psum = CONV_MAC(psum, wa(o, c, ky, kx), xa(c, oy * S + ky, ox * S + kx))
        return PSUM_TO_ACT_TRN(ACT_ADD_PSUM(PSUM_TO_ACT_RND(psum), prev))

    def tap_of(cb, ky, kx):
        return (cb * K + ky) * K + kx

    # ------------------------------------------------------------------ the input regions: SoC memory, scratchpad 0
    acb, ay, ax, ai, ab = (_p(f"act.{n}") for n in ("cb", "y", "x", "i", "b"))
    r_act = Region("act", "acc", "virtual_soc_memory", by[0], (acb, ay, ax, ai, ab),
                   land(acb.ult(ncb), ay.ult(Hp), ax.ult(Wp), ai.ult(BLOCK), ab.ult(2)),
                   based((((acb * Hp + ay) * Wp + ax) * BLOCK + ai) * 2 + ab, act_base),
                   _byte(xpad(acb * BLOCK + ai, ay, ax), ab))
    wo, wcb, wky, wkx, wi, wbb = (_p(f"wgt.{n}") for n in ("o", "cb", "ky", "kx", "i", "b"))
    wbyte = (wraw(wo, wcb * BLOCK + wi, wky, wkx) if bits == 8 else
             _byte(wraw(wo, wcb * BLOCK + wi, wky, wkx), wbb))
    r_wgt = Region("wgt", "acc", "scratch_pad_0", by[1], (wo, wcb, wky, wkx, wi, wbb),
                   land(wo.ult(nfb * BLOCK), wcb.ult(ncb), wky.ult(K), wkx.ult(K), wi.ult(BLOCK), wbb.ult(wb)),
                   based(((((wo * ncb + wcb) * K + wky) * K + wkx) * BLOCK + wi) * wb + wbb, wgt_base), wbyte)

    # ------------------------------------------------------------------ the tracked output
    # filter block fb, filter lane f (one case each), pixel (oy, ox), all symbolic but f
    fb_, f_, oy_, ox_ = _p("fb"), _p("f"), _p("oy"), _p("ox")
    o_ = fb_ * BLOCK + f_
    pre = land(fb_.ult(nfb), f_.ult(BLOCK), oy_.ult(OH), ox_.ult(OW), o_.ult(O))
    # the word's address in the model's form (pixel * 16 + a constant below 16), so that the stores of
    # the other filter lanes and bytes of a step differ from it syntactically (verify.phases._low)
    rest = (fb_ * OH + oy_) * OW + ox_
    pixel = ((rest if pixel_base is None else _c(pixel_base) + rest) << 4)
    addrs = [pixel + (f_ * 2), pixel + (f_ * 2 + 1)]
    ntaps = term(ncb * (K * K))

    def counters(Pv):
        return [zext(Pv.state(n), W32) for n in ("conv_child_filter_blk", "conv_child_chan_blk", "conv_child_k_row",
                                                  "conv_child_k_col", "conv_child_row_tile", "conv_child_col_tile")]

    def facts(Pv):
        """The data of the current step's pixel and filter lane f (the step's own reads, so that
        every read of the step resolves to a fact by arithmetic alone)."""
        fb, cb, ky, kx, row, col = counters(Pv)
        vir, sp0 = Pv.array("virtual_soc_memory"), Pv.array("scratch_pad_0")
        out = []
        for i in range(BLOCK):
            for b in range(2):
                out.append((r_act, vir, (cb, row * S + ky, col * S + kx, _c(i), _c(b))))
            for b in range(wb):
                out.append((r_wgt, sp0, (fb * BLOCK + f_, cb, ky, kx, _c(i), _c(b))))
        return out

    def axioms(Pv):
        _, cb, ky, kx, _, _ = counters(Pv)
        t = tap_of(cb, ky, kx)
        ok = land(cb.ult(ncb), ky.ult(K), kx.ult(K))
        return [V(o_, oy_, ox_, z32).eq(z16),
                implies(ok, V(o_, oy_, ox_, t + 1).eq(step(o_, oy_, ox_, cb, ky, kx, V(o_, oy_, ox_, t))))]

    def inv(Pv, relational_only=False):
        busy = Pv.state("accel_conv_child_valid")
        fb, cb, ky, kx, row, col = counters(Pv)
        cell = concat(Pv.cells[1], Pv.cells[0])
        start = concat(load(Pv.array("scratch_pad_1"), addrs[1]), load(Pv.array("scratch_pad_1"), addrs[0]))
        # the loop visits the pixels (row, col) innermost, then the taps, then the filter blocks: at
        # tap n of the tracked block, the pixels before (row, col) have had n + 1 taps, the others n
        n = tap_of(cb, ky, kx)
        done_here = oy_.ult(row) | oy_.eq(row) & ox_.ult(col)
        here = busy & fb.eq(fb_)
        rel = [implies(busy & fb.ult(fb_) | here & n.eq(0) & ~done_here, cell.eq(start)),
               implies(here & done_here, cell.eq(V(o_, oy_, ox_, n + 1))),
               implies(here & n.ne(0) & ~done_here, cell.eq(V(o_, oy_, ox_, n))),
               implies(~busy | busy & fb_.ult(fb), cell.eq(V(o_, oy_, ox_, ntaps)))]
        if relational_only:
            return rel
        bounds = land(fb.ult(nfb), cb.ult(ncb), ky.ult(K), kx.ult(K), row.ult(OH), col.ult(OW))
        idle = land(*[v.eq(0) for v in counters(Pv)])
        # the bounds hold idle too (every counter 0, every limit at least 1): stated unconditionally,
        # they are facts of every clause (an all-sizes proof's interval bounds read them)
        return land(bounds, implies(~busy, idle), *rel)
    return SimpleNamespace(X=X, Wt=Wt, xpad=xpad, wraw=wraw, w16=w16, V=V, step=step, tap_of=tap_of, r_act=r_act,
                           r_wgt=r_wgt, fb=fb_, f=f_, oy=oy_, ox=ox_, o=o_, pre=pre, addrs=addrs, ntaps=ntaps,
                           facts=facts, axioms=axioms, inv=inv)
