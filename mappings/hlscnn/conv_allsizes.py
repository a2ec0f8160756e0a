"""All-sizes phase proof of HLSCNN's convolution loop nest (issue 26, item 2): the loop of
``Accel_Conv_Child`` proved for one tracked output for every input size H x W, channel count C
and filter count O within the side conditions at once (CHC, sizes symbolic), at one kernel
configuration K x K, stride S, padding P (the configurations of the applications' offloads are
:data:`CONFIGS`; each is one proof, and ``python -m verify.mapping hlscnn.conv2d_nchw --method chc
--shape symbolic`` proves them all: :func:`composite`). Restriction of the claim: the padded image
at most :data:`HW_MAX` x :data:`HW_MAX` (the fields allow 1023), within which interval bounds show
that no address wraps around.

Sizes. The size symbols are the configuration register fields themselves, at their widths: C and
O (12 bits), the padded image Hp = H + 2P and Wp = W + 2P and the output OH and OW (10 bits), so
that the fields the trigger latches are the symbols (the generator's code builds the register
words from them). The side conditions (:func:`side_conditions`, the mapping's, as terms; products
in 64 bits so that none wraps) bound them, and OH = (Hp - K) / S + 1, OW = (Wp - K) / S + 1 as
the mapping computes them.

The stream is the generator's configuration tail run on those symbols (:func:`tail`: the code
``ila.models.hlscnn.driver.conv2d_program`` runs for the registers it writes after the data,
``conv_tail`` and ``cfg_write``, so a field the generator gets wrong at some sizes is wrong in the
proof's stream at those sizes); the data
transfers before it (the activation and weight images written to the SoC memory, the weight
pull into scratchpad 0), whose number depends on the sizes, are not in the stream: what they
leave is the hypothesis, regions ``assumed`` at the start of the stream (the declared input
placement: padded activation xpad[8 cb + i, y, x] at SoC byte ``2 (((cb Hp + y) Wp + x) 8 + i)
+ b``, weight w[o, 8 cb + i, ky, kx] at scratchpad-0 byte ``wb ((((o ncb + cb) K + ky) K + kx) 8 +
i) + b``, zero in every padding), which the fixed-shape proof's stream lemmas ``act`` and ``wgt``
prove per shape (:mod:`mappings.hlscnn.conv2d_nchw_chc`). The checks at sample shapes: the
generator's stream ends with that tail, command for command; the assumed
regions' addresses are the fixed-shape proof's lemma regions'; the term side conditions accept
exactly the shapes the mapping accepts; and the commands before the tail write only the SoC
memory, scratchpad 0 and the SoC-memory registers, which neither the tail nor the loop reads
(:func:`prefix_problems`).

Phase ``conv`` (model-loops, configuration-fields; the pieces are :func:`mappings.hlscnn.conv_loop.loop_parts`,
the fixed-shape proof's own, on the size terms): as the fixed-shape proof's, the tracked
output (fb, f, oy, ox) symbolic but for the filter lane f (one case per lane): its two bytes of
scratchpad 1 hold V(n) after n taps, V(ncb K K) after the loop, with V the partial-output
specification function (V(0) = 0, V(t + 1) = one more tap in the hardware's order, definitional
instances). The verdict: every output word the loop leaves is V(ncb K K) of its output, for all
sizes. That V unrolled is the declared numerics term, the generator's bytes and the read-back are
proved per shape (the fixed-shape proof).
"""
from __future__ import annotations

import numpy as np

from ila import FALSE, TRUE, BvSort, bv_const, concat, land, zext
from ila.simplify import Rewriter
from ila.unroll import symbol
from mappings.base import MappingError
from mappings.phases import Phase, PhaseProof, Region, Side

from .conv_loop import BLOCK, W32, loop_parts

# (K, S, P) of the applications' HLSCNN offloads (paper_results/campaigns/application_offloads.txt)
CONFIGS = ((1, 1, 0), (3, 1, 1), (3, 2, 1))
SMALL_SIZES = [(8,), (32,), (128,)]       # bounds on every size tried first for a countershape
# The claim's own restriction: the padded image at most 511 x 511 (the register fields allow 1023).
# Within it, interval bounds alone show that no address the loop computes wraps around 2**32 (the
# mixed-radix rewriting, verify.radix, needs that to split an address into its digits); the
# applications' images are at most 34 x 34.
HW_MAX = 511
_FIELDS = {"C": 12, "O": 12, "Hp": 10, "Wp": 10, "OH": 10, "OW": 10}


def _size(name: str):
    return symbol(f"p.{name}", BvSort(_FIELDS[name]))


class Sizes:
    """The size symbols (field widths) and the 32-bit terms the model computes from them (the
    latched fields zero-extended, as ``ila.models.hlscnn.model`` does)."""

    def __init__(self, K: int, S: int, P: int):
        self.K, self.S, self.P = K, S, P
        self.sym = {n: _size(n) for n in _FIELDS}
        z = {n: zext(v, W32) for n, v in self.sym.items()}
        self.C, self.O, self.Hp, self.Wp, self.OH, self.OW = (z[n] for n in ("C", "O", "Hp", "Wp", "OH", "OW"))
        self.ncb = (self.C + (BLOCK - 1)).udiv(BLOCK)
        self.nfb = (self.O + (BLOCK - 1)).udiv(BLOCK)
        self.H, self.W = self.Hp - 2 * P, self.Wp - 2 * P

    def at(self, shape: dict) -> Rewriter:
        """The rewriter substituting ``shape``'s values (H, W, C, O; its K, S, P must be the
        proof's) for the size symbols."""
        from mappings.hlscnn import conv2d_nchw as M
        if (shape["K"], shape["S"], shape["P"]) != (self.K, self.S, self.P):
            raise MappingError(f"shape {shape} is not of the proof's configuration K={self.K} S={self.S} P={self.P}")
        oh, ow = M.out_hw(shape)
        vals = {"C": shape["C"], "O": shape["O"], "Hp": shape["H"] + 2 * self.P, "Wp": shape["W"] + 2 * self.P,
                "OH": oh, "OW": ow}
        return Rewriter({self.sym[n]: bv_const(v % (1 << _FIELDS[n]), _FIELDS[n]) for n, v in vals.items()})


def side_conditions(sz: Sizes, bits: int) -> list:
    """The mapping's side conditions (:func:`mappings.hlscnn.conv2d_nchw.side_conditions`) on the
    size symbols, and OH, OW as the mapping computes them. Byte counts are products of up to four
    sizes, so they are computed in 64 bits (no wrap-around)."""
    from ila.models.hlscnn.model import SPAD_BYTES, VIR_MEM_BYTES
    K, S, P = sz.K, sz.S, sz.P
    w64 = {n: zext(v, 64) for n, v in sz.sym.items()}
    ncb, nfb = (w64["C"] + 7).udiv(8), (w64["O"] + 7).udiv(8)
    wb = bits // 8
    act_bytes = ncb * w64["Hp"] * w64["Wp"] * 16
    w_bytes = nfb * ncb * (64 * K * K * wb)
    out_bytes = nfb * w64["OH"] * w64["OW"] * 16
    out = [sz.C.uge(1), sz.O.uge(1), sz.Hp.uge(2 * P + 1), sz.Wp.uge(2 * P + 1),    # H, W >= 1
           sz.Hp.uge(K), sz.Wp.uge(K),
           sz.OH.eq((sz.Hp - K).udiv(S) + 1), sz.OW.eq((sz.Wp - K).udiv(S) + 1),
           (act_bytes + w_bytes).ule(VIR_MEM_BYTES), w_bytes.ule(SPAD_BYTES), out_bytes.ule(SPAD_BYTES),
           # the claim's restriction (HW_MAX), and the bounds it implies on the outputs, as facts
           sz.Hp.ule(HW_MAX), sz.Wp.ule(HW_MAX), sz.OH.ule(HW_MAX), sz.OW.ule(HW_MAX)]
    if not (1 <= K < 256 and 1 <= S <= 255 and K >= 1 and P >= 0):
        out.append(bv_const(0, 1).eq(1))        # a configuration the mapping refuses: nothing holds
    return out


def tail(sz: Sizes) -> list:
    """The configuration registers ``conv2d_program`` writes after the data, in its order, as
    (register name, 32-bit value term): the generator's own
    :func:`ila.models.hlscnn.driver.conv_tail` run on the size symbols (zero-extended to 32 bits;
    the padded image, as the mapping hands it over), activations at the SoC memory's start, no
    bias, no ReLU, then the trigger."""
    from ila.models.hlscnn import driver
    from ila.models.hlscnn.model import VIR_MEM_BASE
    K, S = sz.K, sz.S
    regs = driver.conv_tail(sz.C, sz.Hp, sz.Wp, sz.O, sz.OH, sz.OW, K, K, S, act_base=VIR_MEM_BASE)
    rw = Rewriter()
    return [(r, as_fields(rw.one(v)) if not isinstance(v, int) else bv_const(v, W32)) for r, v in regs]


def _field_parts(e) -> list | None:
    """``e`` as [(term, low bit)] when it is an OR of zero-extended terms, each shifted left by a
    constant (or not), else None."""
    from ila.ops import Op
    if e.op is Op.BVOR:
        a, b = (_field_parts(x) for x in e.args)
        return None if a is None or b is None else a + b
    k = 0
    if e.op is Op.SHL and e.args[1].op is Op.CONST:
        e, k = e.args[0], e.args[1].payload
    if e.op is Op.ZEXT:
        return [(e.args[0], k)]
    return None


def as_fields(e):
    """A 32-bit register word the generator builds as ``(x << k) | (y << j) | z`` from
    zero-extended fields, as the concatenation of the fields (and zeros between them) when their
    bit ranges are disjoint and inside the word: an identity of bit-vector arithmetic (each bit of
    the OR is the one field's bit there), which lets the trigger's extracted fields fold to the size
    symbols. Any other term (e.g. an ite a size-dependent bug leaves) is returned as it is."""
    parts = _field_parts(e)
    if not parts:
        return e
    spans = sorted(((k, k + t.sort.width - 1, t) for t, k in parts), key=lambda x: -x[0])
    if spans[0][1] > 31 or any(lo_a <= hi_b for (lo_a, _, _), (_, hi_b, _) in zip(spans, spans[1:])):
        return e
    pieces, top = [], 31
    for lo, hi, t in spans:
        if hi < top:
            pieces.append(bv_const(0, top - hi))
        pieces.append(t)
        top = lo - 1
    if top >= 0:
        pieces.append(bv_const(0, top + 1))
    return Rewriter().one(concat(*pieces))


def stream(sz: Sizes) -> list:
    """The tail as MMIO commands: the driver's ``cfg_write`` of each term."""
    from ila.models.hlscnn import driver
    return [driver.cfg_write(r, v) for r, v in tail(sz)]


def allsizes_proof(K: int, S: int, P: int, bits: int = 16, *, infer: bool = False) -> PhaseProof:
    """The all-sizes phase proof at kernel configuration (K, S, P) for ``bits``-bit weights
    (module docstring); ``infer``: Houdini instead of the supplied invariants. Raises MappingError
    for a configuration the mapping refuses."""
    from ila.models.hlscnn.model import MACHINE_LANES, VIR_MEM_BASE, build_hlscnn
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"
    if bits not in (8, 16):
        raise MappingError(f"{name}: weight width {bits!r}; HLSCNN has 8- and 16-bit weights")
    if not (1 <= K < 256 and 1 <= S <= 255 and P >= 0):
        raise MappingError(f"{name}: kernel configuration K={K} S={S} P={P} is outside the register fields")
    if tuple(MACHINE_LANES) != (1, 1):
        raise MappingError(f"{name} all-sizes proof: the invariant is stated for one output pixel per child "
                           f"step, the machine's model has {MACHINE_LANES} lanes")
    sz = Sizes(K, S, P)
    C, O, Hp, Wp, OH, OW, ncb, nfb = sz.C, sz.O, sz.Hp, sz.Wp, sz.OH, sz.OW, sz.ncb, sz.nfb
    H, W = sz.H, sz.W
    size_pre = land(*side_conditions(sz, bits))
    cmds = stream(sz)
    trig = len(cmds) - 1
    hl = build_hlscnn(bits, *MACHINE_LANES)
    L = loop_parts(dict(H=H, W=W, C=C, O=O, K=K, S=S, P=P, Hp=Hp, Wp=Wp, OH=OH, OW=OW, ncb=ncb, nfb=nfb), bits,
                   by=("assumed", "assumed"))
    V, o_, oy_, ox_, ntaps = L.V, L.o, L.oy, L.ox, L.ntaps
    pre = land(size_pre, L.pre)
    s = sz.sym
    fields = {"conv_in_chan": s["C"], "conv_in_rows": s["Hp"], "conv_in_cols": s["Wp"], "conv_out_chan": s["O"],
              "conv_out_rows": s["OH"], "conv_out_cols": s["OW"], "conv_stride": S, "conv_k_rows": K,
              "conv_k_cols": K, "conv_en_bias": 0, "conv_en_relu": 0, "conv_en_accum": 0,
              "conv_act_base": VIR_MEM_BASE, "conv_wgt_base": 0, "conv_out_base": 0}
    n_out = nfb * OH * OW * 16
    conv = Phase("conv", "acc", trig, "scratch_pad_1", (L.fb, L.f, oy_, ox_), pre, L.addrs,
                 write_region=lambda a: a.ult(n_out),
                 reads=("virtual_soc_memory", "scratch_pad_0"), facts=L.facts, axioms=L.axioms,
                 invariant=None if infer else L.inv, candidates=lambda P_: L.inv(P_, True),
                 post=lambda P_: concat(P_.cells[1], P_.cells[0]).eq(V(o_, oy_, ox_, ntaps)),
                 constants=fields, split=(L.f, range(BLOCK)))

    side = Side("acc", hl, cmds)
    return PhaseProof(
        scope="symbolic", sides={"acc": side}, params=(L.fb, L.f, oy_, ox_), pre=pre, phases=[conv], lemmas=[],
        final=lambda F: concat(F.cell("conv", 1), F.cell("conv", 0)).eq(V(o_, oy_, ox_, ntaps)),
        outputs=[("conv", 0), ("conv", 1)],
        checks=[("the generator's stream ends with its register tail (sample shapes)",
                 lambda: tail_problems(sz, cmds, bits)),
                ("the assumed regions are the fixed-shape proof's lemma regions (sample shapes)",
                 lambda: placement_problems(sz, L.r_act, L.r_wgt, bits)),
                ("the side conditions are the mapping's (a grid of sizes)",
                 lambda: condition_problems(sz, size_pre, bits)),
                ("the commands before the tail write only what the tail and the loop do not read (sample shapes)",
                 lambda: prefix_problems(sz, bits))],
        covers=("configuration-fields", "model-loops"), numerics="uf",
        notes=[f"all sizes H, W, C, O at K={K}, S={S}, P={P} with the padded image at most {HW_MAX} x {HW_MAX}: "
               f"the configuration fields from the generator's register tail on the size symbols and the convolution loop (every output word the loop leaves is "
               f"V(ncb K K), the hardware's tap order, datapath functions uninterpreted); that V unrolled is the "
               f"declared numerics term, the data bytes, the command order and the read-back are proved per shape "
               f"({name}'s fixed-shape phase proof)"],
        size_vars=list(sz.sym.values()), assumed=[L.r_act, L.r_wgt], small_sizes=SMALL_SIZES,
        shape_of=lambda v: shape_of(sz, v), cex_shapes=tuple(sample_shapes(sz)[:2]))


def composite(bits: int = 16, *, infer: bool = False):
    """``--method chc --shape symbolic`` of hlscnn.conv2d_nchw (``bits`` 16) or _w8 (8): the
    all-sizes proof at every kernel configuration of :data:`CONFIGS`, one piece each
    (:class:`mappings.phases.Composite`; the pieces are independent proofs)."""
    from mappings.phases import Composite
    pieces = {f"K{K}S{S}P{P}": (lambda K=K, S=S, P=P: allsizes_proof(K, S, P, bits, infer=infer))
              for K, S, P in CONFIGS}
    shown = ", ".join(f"K={K} S={S} P={P}" for K, S, P in CONFIGS)
    return Composite(scope="symbolic", pieces=pieces, checks=[], covers=("configuration-fields", "model-loops"),
                     numerics="uf",
                     notes=[f"all sizes H, W, C, O (padded image at most {HW_MAX} x {HW_MAX}) at each kernel "
                            f"configuration the applications use ({shown}); the data bytes, the command order, the "
                            f"declared numerics term and the read-back per shape (the fixed-shape phase proof)"])


def chc_spec(shape: dict | None, *, numerics: str = "uf", infer: bool = False, bits: int = 16):
    """``Proof.chc`` of hlscnn.conv2d_nchw: for ``shape`` None the all-sizes proof (:func:`composite`),
    else the fixed-shape phase proof (:func:`mappings.hlscnn.conv2d_nchw_chc.chc_spec`). Raises
    MappingError for numerics other than 'uf'."""
    from mappings.hlscnn.conv2d_nchw_chc import chc_spec as fixed
    if shape is not None:
        return fixed(shape, numerics=numerics, infer=infer, bits=bits)
    if numerics != "uf":
        raise MappingError(f"hlscnn all-sizes proof: numerics {numerics!r} is not available for proofs (use 'uf')")
    return composite(bits, infer=infer)


def chc_spec_w8(shape: dict | None, *, numerics: str = "uf", infer: bool = False):
    """``Proof.chc`` of hlscnn.conv2d_nchw_w8 (8-bit weights)."""
    return chc_spec(shape, numerics=numerics, infer=infer, bits=8)


# ----------------------------------------------------------------------------- checks at sample shapes
def sample_shapes(sz: Sizes) -> list[dict]:
    """Shapes of the proof's configuration: one and two channel and filter blocks (and a partial
    one), inputs from the kernel's size up."""
    K, S, P = sz.K, sz.S, sz.P
    h0 = max(1, K - 2 * P)
    return [{"H": h, "W": w, "C": c, "O": o, "K": K, "S": S, "P": P}
            for h, w, c, o in ((h0, h0 + 1, 1, 1), (h0 + 3, h0 + 2, 9, 10), (h0 + 5, h0 + 4, 16, 8))]


def shape_of(sz: Sizes, values: dict) -> dict:
    """A counterexample's sizes (symbol name -> int) as a mapping shape."""
    g = {n: int(values.get(f"p.{n}", 0)) for n in _FIELDS}
    return {"H": g["Hp"] - 2 * sz.P, "W": g["Wp"] - 2 * sz.P, "C": g["C"], "O": g["O"], "K": sz.K, "S": sz.S,
            "P": sz.P}


def _value(rw: Rewriter, e) -> int | None:
    v = rw.one(e) if not isinstance(e, int) else e
    return v if isinstance(v, int) else (v.payload if v.op.name == "CONST" else None)


def _job(shape: dict, bits: int):
    from mappings.hlscnn import conv2d_nchw as M
    x = np.zeros((shape["C"], shape["H"], shape["W"]), np.int64)
    w = np.zeros((shape["O"], shape["C"], shape["K"], shape["K"]), np.int64)
    return M.build_job(x, w, shape, bits)


def tail_problems(sz: Sizes, cmds: list, bits: int) -> list[str]:
    """At :func:`sample_shapes`: the symbolic tail, sizes substituted, is the last ``len(cmds)``
    commands of the generator's stream (every field of every command)."""
    bad = []
    for shape in sample_shapes(sz):
        rw = sz.at(shape)
        want = _job(shape, bits).commands[-len(cmds):]
        for k, (c, d) in enumerate(zip(cmds, want)):
            got = {f: _value(rw, v) for f, v in c.items()}
            exp = {f: int(v) for f, v in d.items()}
            if got != exp:
                bad.append(f"at {shape}: tail command {k} is {got}, the generator's {exp}")
                break
    return bad


def placement_problems(sz: Sizes, r_act: Region, r_wgt: Region, bits: int) -> list[str]:
    """At :func:`sample_shapes`: the assumed regions' addresses and domains, sizes substituted, are
    those of the fixed-shape proof's lemma regions ``act`` and ``wgt`` at that shape (the driver's
    placement the lemmas prove), compared at every point of the domain's box."""
    from mappings.hlscnn.conv2d_nchw_chc import phase_proof
    bad = []
    for shape in sample_shapes(sz):
        rw = sz.at(shape)
        fixed = {lem.name: lem for lem in phase_proof(shape, bits).lemmas}
        for mine, lem in ((r_act, fixed["act"]), (r_wgt, fixed["wgt"])):
            theirs = lem.region
            for point in np.ndindex(*[len(r) for r in lem.box]):
                vals = [bv_const(int(r[k]), W32) for r, k in zip(lem.box, point)]
                a = Rewriter(dict(zip(mine.params, vals)))
                b = Rewriter(dict(zip(theirs.params, vals)))
                dom_m, dom_t = _value(rw, a.one(mine.dom)), _value(rw, b.one(theirs.dom))
                if bool(dom_m) != bool(dom_t):
                    bad.append(f"{mine.name} at {shape}, point {point}: domain {dom_m}, the lemma's {dom_t}")
                    break
                if not dom_m:
                    continue
                got, exp = _value(rw, a.one(mine.addr)), _value(rw, b.one(theirs.addr))
                if got is None or got != exp:
                    bad.append(f"{mine.name} at {shape}, point {point}: address {got}, the lemma's {exp}")
                    break
    return bad


def condition_problems(sz: Sizes, size_pre, bits: int, limit: int = 3) -> list[str]:
    """The term side conditions accept exactly the shapes the mapping accepts whose padded image is
    at most :data:`HW_MAX` square, on a grid of sizes around the field limits, the restriction and
    the buffer capacities."""
    from mappings.base import MappingError as ME
    from mappings.hlscnn import conv2d_nchw as M
    m = M.make(bits)
    bad = []
    grid = [(H, W, C, O) for H in (1, 2, 3, 4, 16, 32, 33, 40, 45, 64, 91, 92, 110, 128, 200, 509, 510, 511, 1021,
                                   1022, 1023)
            for W in sorted({H, max(1, H - 1), 1}) for C in (1, 8, 9, 16, 64, 65, 512, 4095)
            for O in (1, 8, 9, 64, 65, 512, 4095)]
    for H, W, C, O in grid:
        shape = {"H": H, "W": W, "C": C, "O": O, "K": sz.K, "S": sz.S, "P": sz.P}
        try:
            m.check_shape(shape)
            want = True
        except ME:
            want = False
        want = want and max(H, W) + 2 * sz.P <= HW_MAX          # the claim's restriction
        if max(H, W) + 2 * sz.P >= 1024:
            got = False                       # Hp or Wp does not fit its 10-bit symbol: refused
        else:
            got = bool(_value(sz.at(shape), size_pre))
        if got != want:
            bad.append(f"{shape}: the mapping {'accepts' if want else 'refuses'} it, the terms "
                       f"{'accept' if got else 'refuse'} it")
            if len(bad) >= limit:
                return bad
    return bad


def prefix_problems(sz: Sizes, bits: int) -> list[str]:
    """At :func:`sample_shapes`: every command before the tail fires one instruction of the model
    that writes only the SoC memory, scratchpad 0, the SoC-memory registers and the master's read
    address; and no instruction of the tail's or of the convolution child reads those registers."""
    from ila.models.hlscnn.model import MACHINE_LANES, build_hlscnn, reg_state
    from ila.ops import Op
    from ila.unroll import _env, _inputs_for
    from ila.walk import toposort
    hl = build_hlscnn(bits, *MACHINE_LANES)
    allowed = {"virtual_soc_memory", "scratch_pad_0", reg_state("SocMemBaseAddr"), reg_state("SocMemRdWrLength"),
               "top_master_rd_addr_out"}
    regs = allowed - {"virtual_soc_memory", "scratch_pad_0"}
    bad = []
    state = {v.name: symbol(f"pre.{v.name}", v.sort) for v in hl.all_states()}
    ntail = len(tail(sz))
    for shape in sample_shapes(sz):
        prefix = _job(shape, bits).commands[:-ntail]
        seen = {}
        for n, cmd in enumerate(prefix):
            key = (int(cmd["top_slave_addr_in"]) >> 4, int(cmd.get("top_slave_if_wr", 0)))
            if key in seen:
                continue
            fields = {**{v.name: 0 for v in hl.all_inputs()}, **{k: int(v) for k, v in cmd.items()}}
            rw = Rewriter(_env(hl, state, _inputs_for(hl, fields, 0, "pre.")))
            decodes = [(i, rw.one(land(hl.valid, i.get_decode()))) for i in hl.instrs]
            open_ = [i.name for i, d in decodes if d is not TRUE and d is not FALSE]
            fired = [i for i, d in decodes if d is TRUE]
            seen[key] = fired
            if open_ or len(fired) != 1:
                bad.append(f"at {shape}: command {n} fires {[i.name for i in fired]}"
                           + (f"; the decodes of {open_} depend on the state" if open_ else ""))
                return bad
            writes = {s.name for s, u in fired[0].updates.items() if u is not s}
            if not writes <= allowed:
                bad.append(f"at {shape}: command {n} ({fired[0].name}) writes {sorted(writes - allowed)}")
                return bad
    readers = [i for i in hl.instrs if i.name.startswith("CFG_WR_") or i.name == "ACCEL_CONV_TRIGGER"]
    readers += [i for c in hl.walk() if c is not hl for i in c.instrs]
    for i in readers:
        terms = [i.get_decode(), *i.updates.values()]
        names = {v.name for v in toposort(terms) if v.op is Op.VAR}
        if names & regs:
            bad.append(f"{i.name} reads {sorted(names & regs)}")
    return bad
