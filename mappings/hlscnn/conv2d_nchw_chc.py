"""Phase proof of ``hlscnn.conv2d_nchw`` / ``conv2d_nchw_w8`` (issue 26): HLSCNN's convolution
loop nest proved for one tracked output cell, so the proof's cost does not grow with the number of
outputs (:mod:`mappings.phases`, checked by :mod:`verify.phases`).

What is proved, at one shape H x W x C x O x K x S x P (any number of input channels), for ALL
16-bit activations x[C, H, W] (ACT raw), ALL weights w[O, C, K, K] (16-bit, or 8-bit for the
original design) and ALL interpretations of HLSCNN's datapath functions (``ConvMac``,
``ConvMacPsum2Act``, ``ActAdd2Psum``, ``Psum2Act``: uninterpreted, no axioms): every output the
mapping's read-back returns equals the declared numerics term, the IR's padded conv2d computed in
HLSCNN's order and rounding (:func:`mappings.hlscnn.conv2d_nchw_proof.padded_term`). The
accelerator side is the mapping's own program: its host layout (NCHW -> padded HWC, OIHW -> OHWI,
:func:`mappings.hlscnn.conv2d_nchw.build_job`) and the exact stream the HLSCNN driver emits for it
(SoC-memory images, the weight pull into scratchpad 0, the registers, the trigger, the
scratchpad-1 reads), run on the HLSCNN ILA the machine port runs (``build_hlscnn(bits,
*MACHINE_LANES)``: one child instruction computes one output pixel x 8 filters for one kernel tap
of one channel block), and the mapping's read-back (:func:`mappings.hlscnn.conv2d_nchw.readback`).

Pieces (checked by :mod:`verify.phases`):

* lemmas ``act`` and ``wgt`` (codegen bytes, order): when the trigger is written, SoC-memory byte
  ``2 (((cb Hp + y) Wp + x) 8 + i) + b`` holds byte b of the padded activation xpad[8 cb + i, y, x]
  (zero in the P-wide border and in the channel padding) and scratchpad-0 byte
  ``wb ((((o ncb + cb) K + ky) K + kx) 8 + i) + b`` byte b of w[o, 8 cb + i, ky, kx] (zero in the
  channel and filter padding), for every point, by executing the emitted writes (the pull copies
  included) through the model's own instructions;
* phase ``conv`` (the child loop ``Accel_Conv_Child``, model-loops, configuration-fields): for the
  tracked output (fb, f, oy, ox), symbolic but for the filter lane f (one case per lane, so the
  other lanes' stores differ from it syntactically), the two bytes of scratchpad 1 at
  ``2 (((fb OH + oy) OW + ox) 8 + f)`` hold V(n) after the loop has applied n of the
  ``ntaps = ncb K K`` taps to it (the loop visits the pixels innermost: at tap n, the pixels before
  the current one have had n + 1 taps), and V(ntaps) at the loop's end. V is a specification function
  constrained by its definitional instances: V(0) = 0 and
  V(t + 1) = Psum2Act(ActAdd2Psum(ConvMacPsum2Act(ConvMac(...ConvMac(0, w_0, a_0)..., w_7, a_7)), V(t)))
  over the 8 channels of tap t = (cb K + ky) K + kx (the hardware's tap order), a_i =
  xpad[8 cb + i, S oy + ky, S ox + kx], w_i = w[8 fb + f, 8 cb + i, ky, kx] (an 8-bit weight widened
  by a zero byte, as the datapath does);
* check ``term``: V, unrolled at every output of this shape, is syntactically the declared term
  (``padded_term``, built from the IR's definitions of padding and layout, not from this proof's
  regions);
* check ``read-back``: the mapping's read-back run on symbolic reads returns, for output
  out[o, oy, ox], the 16-bit little-endian word of the two scratchpad-1 bytes of the tracked cell
  (fb, f) = divmod(o, 8) read after the loop, with nothing written in between; and every read
  command is the model's ``SPAD1_DATA_RD`` of those 16 bytes (its update terms, substituted).

The tracked cell survives to the stream's end (no later command writes scratchpad 1), so every
result element is its output's V(ntaps), which is the declared term. The loop's proof is one case
per filter lane whatever the output's size; the lemmas, the term check and the read-back check
grow with the data (they are checked point by point, without a solver). Invariants are supplied
(``infer=False``) or inferred by Houdini from the same relational candidates.

Seeded bugs: :mod:`verify.mutations.hlscnn_nchw` (host layout, read-back) and the driver's
(:mod:`verify.mutations.hlscnn`); a failing piece is confirmed by BMC at the proof's small shapes.
"""
from __future__ import annotations

import numpy as np

from ila import FALSE, TRUE, BvSort, bv_const, concat, land, load
from ila.simplify import Rewriter
from ila.expr import Expr
from ila.unroll import symbol
from ila.walk import toposort
from mappings.base import MappingError
from mappings.phases import Lemma, Phase, PhaseProof, Side

from .conv_loop import BLOCK, W32, _c, loop_parts

def _reg_value(commands: list, reg: str) -> int:
    """The value of the last write of configuration register ``reg`` in ``commands``."""
    from ila.models.hlscnn.model import REG_ID, SLAVE_BASE
    addr = SLAVE_BASE + 4 * REG_ID[reg]
    hits = [c for c in commands if c.get("top_slave_if_wr") == 1 and int(c["top_slave_addr_in"]) == addr]
    if not hits:
        raise MappingError(f"hlscnn phase proof: the stream never writes {reg}")
    off = addr & 15
    return sum(int(hits[-1][f"top_slave_data_in_{off + k}"]) << (8 * k) for k in range(4))


def host_command(cmd: dict):
    """The runner's meaning of a scratchpad-1 read (the port observes the 16 read-data states):
    ``("read", [(scratch_pad_1, a + b) for b < 16])``; None for every other command."""
    from ila.models.hlscnn.model import SPAD1_BASE
    if cmd.get("top_slave_if_rd") == 1:
        a = (int(cmd["top_slave_addr_in"]) & 0xFFFFFF) - SPAD1_BASE
        return ("read", [("scratch_pad_1", a + b) for b in range(16)])
    return None


def read_problems(ila, commands: list) -> list[str]:
    """Every command :func:`host_command` treats as a read is the model's ``SPAD1_DATA_RD``, whose
    update of ``top_slave_rd_data_b`` is ``scratch_pad_1[a + b]`` (its terms, substituted). The
    decodes and updates are simplified once per group of reads alike but for the address, with the
    address a symbol, then the address substituted per read (simplification preserves meaning, so a
    decode that becomes true, or an update that becomes that load, is one for the read itself)."""
    from ila.simplify import Rewriter
    from ila.unroll import _env, _inputs_for
    state = {v.name: symbol(f"rd.{v.name}", v.sort) for v in ila.all_states()}
    mem = state["scratch_pad_1"]
    addr_sym = symbol("rd.addr", ila.input("top_slave_addr_in").sort)
    groups: dict = {}
    bad = []
    for n, cmd in enumerate(commands):
        h = host_command(cmd)
        if h is None:
            continue
        fields = {**{v.name: 0 for v in ila.all_inputs()}, **cmd}
        key = tuple(sorted((k, v) for k, v in fields.items() if k != "top_slave_addr_in"))
        g = groups.get(key)
        if g is None:
            rw = Rewriter(_env(ila, state, _inputs_for(ila, {**fields, "top_slave_addr_in": addr_sym}, 0, "rd.")))
            rd = [i for i in ila.instrs if i.name == "SPAD1_DATA_RD"]
            g = groups[key] = ([(i, rw.one(land(ila.valid, i.get_decode()))) for i in ila.instrs],
                               [rw.one(u) if (u := rd[0].get_update(ila.state(f"top_slave_rd_data_{b}"))) is not None
                                else None for b in range(16)] if rd else [None] * 16)
        decodes, updates = g
        at = Rewriter({addr_sym: bv_const(int(cmd["top_slave_addr_in"]), addr_sym.sort.width)})
        fired = [i for i, d in decodes if at.one(d) is TRUE]
        if [i.name for i in fired] != ["SPAD1_DATA_RD"]:
            bad.append(f"command {n}: a read that fires {[i.name for i in fired]}, not SPAD1_DATA_RD")
            continue
        for b, (m, a) in enumerate(h[1]):
            got = at.one(updates[b]) if updates[b] is not None else None
            if got is None:
                bad.append(f"command {n}: SPAD1_DATA_RD does not update read byte {b}")
                break
            if got is not Rewriter().one(load(mem, _c(a))):
                bad.append(f"command {n}: read byte {b} is {got.short()[:80]}, not scratch_pad_1[{a:#x}]")
                break
        if len(bad) >= 3:
            break
    return bad


TERM_WALK = True       # the term check's top-down walk (False: unroll V at every output; tests compare the two)
WALK_BUGS = ("activations_unchecked",)      # seeded bugs of the walk (_TermWalk), for its differential test
WALK_BUG: str | None = None
LEAF_BUG: str | None = None     # "address_shifted" (every data element read one further, cyclically): a seeded bug of leaf_uids


def _substitution(arrays: dict):
    """``e`` with every ``load(A, const i)`` of a data array ``A`` (uid -> list of data symbols)
    replaced by ``A``'s i-th symbol, rebuilt bottom-up (memoised across calls)."""
    from ila.ops import Op
    from ila.simplify import Rewriter
    from ila.walk import toposort
    rw, memo = Rewriter(), {}

    def subst(e):
        for n in toposort([e]):
            if n.uid in memo:
                continue
            if n.op is Op.LOAD and n.args[0].uid in arrays and n.args[1].op is Op.CONST:
                memo[n.uid] = arrays[n.args[0].uid][n.args[1].payload]
            elif n.args and not n.sort.is_mem:
                memo[n.uid] = rw.build(n.op, n.sort, tuple(memo.get(a.uid, a) for a in n.args), n.payload)
            else:
                memo[n.uid] = n
        return memo[e.uid]
    return subst


_NP_OPS = {"ADD": lambda a, b, m: (a + b) & m, "SUB": lambda a, b, m: (a - b) & m,
           "MUL": lambda a, b, m: (a * b) & m, "ULT": lambda a, b, m: a < b, "ULE": lambda a, b, m: a <= b,
           "UGT": lambda a, b, m: a > b, "UGE": lambda a, b, m: a >= b, "EQ": lambda a, b, m: a == b,
           "SHL": lambda a, b, m: np.where(b < 64, np.left_shift(a, np.minimum(b, np.uint64(63))), 0) & m}


def _np_eval(e, env: dict, n: int):
    """The value of the index term ``e`` (32-bit arithmetic and comparisons over the variables of
    ``env``: uid -> uint64 array of ``n`` points) at every point, modulo 2**width as the term's
    bit-vector semantics; None for an operator outside +, -, *, <<, comparisons, and, not, constants."""
    from ila.ops import Op
    memo: dict = {}
    for t in toposort([e]):
        if t.op is Op.VAR:
            if t.uid not in env:
                return None
            memo[t.uid] = env[t.uid]
        elif t.op is Op.CONST:
            boolean = t.sort == TRUE.sort
            memo[t.uid] = np.full(n, bool(t.payload) if boolean else int(t.payload), dtype=bool if boolean else np.uint64)
        elif t.op.name in _NP_OPS and len(t.args) == 2:
            a, b = memo[t.args[0].uid], memo[t.args[1].uid]
            m = np.uint64((1 << t.args[0].sort.width) - 1) if t.args[0].sort.is_bv else None
            memo[t.uid] = _NP_OPS[t.op.name](a, b, m)
        elif t.op is Op.AND:
            memo[t.uid] = np.logical_and.reduce([memo[a.uid] for a in t.args])
        elif t.op is Op.NOT:
            memo[t.uid] = ~memo[t.args[0].uid]
        else:
            return None
    return memo[e.uid]


def leaf_uids(fn, points: np.ndarray, arrays: dict, uid, per_point) -> np.ndarray:
    """``uid(leaf)`` for ``fn``'s leaf at every row of ``points`` (n x arity ints), where the leaf at a
    point is ``fn``'s term there with the data substituted (what ``per_point(*row)`` computes one
    point at a time). ``fn`` is applied once, to symbolic indices: when its term reads one data
    element ``load(A, addr)`` (``arrays``: uid of ``A`` -> its data symbols) and the indices occur
    only in ``addr`` and in conditions of ``ite`` nodes, ``addr`` and the conditions are evaluated
    for all points with numpy, and the leaf is built once per distinct (conditions, element); any
    other form is computed point by point."""
    from ila.ops import Op
    from ila.simplify import Rewriter, replace_nodes
    points = np.asarray(points, dtype=np.int64)
    n, arity = points.shape
    syms = [symbol(f"leaf.i{k}", BvSort(W32)) for k in range(arity)]
    idx = {x.uid for x in syms}
    t = Rewriter().one(fn(*syms))

    def slow():
        return np.array([uid(per_point(*map(int, row))) for row in points], dtype=np.int64).reshape(n)
    loads = [x for x in toposort([t]) if x.op is Op.LOAD]
    if len(loads) != 1 or loads[0].args[0].uid not in arrays:
        return slow()
    ld = loads[0]
    hole = symbol("leaf.hole", ld.sort)
    (body,) = replace_nodes([t], {ld.uid: hole})
    conds = list({x.args[0].uid: x.args[0] for x in toposort([body]) if x.op is Op.ITE
                  and any(v.uid in idx for v in toposort([x.args[0]]))}.values())
    env = {s.uid: points[:, k].astype(np.uint64) for k, s in enumerate(syms)}
    bits = [_np_eval(c, env, n) for c in conds]
    addr = _np_eval(ld.args[1], env, n)
    if addr is None or any(b is None for b in bits):
        return slow()
    data, shapes, leaves = arrays[ld.args[0].uid], {}, {}
    if LEAF_BUG == "address_shifted":
        addr = (addr + np.uint64(1)) % np.uint64(len(data))
    keys = np.stack([b.astype(np.int64) for b in bits] + [addr.astype(np.int64)], axis=1) if bits else \
        addr.astype(np.int64)[:, None]
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    out = np.empty(len(uniq), dtype=np.int64)
    for k, key in enumerate(uniq.tolist()):
        pattern, a = tuple(key[:-1]), key[-1]
        shape_ = shapes.get(pattern)
        if shape_ is None:
            (shape_,) = replace_nodes([body], {c.uid: (TRUE if v else FALSE) for c, v in zip(conds, pattern)})
            if any(x.op is Op.VAR and x.uid in idx for x in toposort([shape_])):
                return slow()               # the indices reach the leaf outside the load and the conditions
            shapes[pattern] = shape_
        if any(x is hole for x in toposort([shape_])):
            if a >= len(data):
                return slow()
            got = leaves.get((pattern, a))
            if got is None:
                got = leaves[(pattern, a)] = uid(Rewriter({hole: data[a]}).one(shape_))
        else:
            got = uid(shape_)
        out[k] = got
    return out[inverse.reshape(-1)]


class _TermWalk:
    """Matches the declared term built as one tree over operand arrays (``numerics_term`` with
    ``tree=True``: tuples ``(function, arguments)``, leaves arrays read at each output's index, see
    :func:`mappings.hlscnn.conv2d_proof.read_at`) against a chain of V's steps, for every output at
    once, building no term. The template is ``step(0, 0, 0, 0, 0, 0, prev)`` with placeholder
    leaves (lane i's weight and activation) and a placeholder ``prev``: a template node without
    placeholders must be the tree's node itself; any other is an application, matched by a tuple of
    the same function (so of the same sort) and arity, argument by argument. A leaf bound to a
    weight or activation placeholder is compared output by output (as the uids of its normalised
    terms, read at each output's index) with V's leaf there. ``bug`` seeds a deliberate error
    (:data:`WALK_BUGS`), to show that the differential test against the slow comparison catches it."""

    def __init__(self, step, rw, bug: str | None = None):
        from ila.ops import Op
        if bug is not None and bug not in WALK_BUGS:
            raise ValueError(f"unknown seeded bug {bug!r}; one of {WALK_BUGS}")
        self.rw, self.norm, self.bug = rw, {}, bug
        self.prev = symbol("tmpl.prev", BvSort(16))
        self.w = [symbol(f"tmpl.w{i}", BvSort(16)) for i in range(BLOCK)]
        self.x = [symbol(f"tmpl.x{i}", BvSort(16)) for i in range(BLOCK)]
        self.tmpl = step(0, 0, 0, 0, 0, 0, self.prev, lambda o, c, ky, kx: self.w[c], lambda c, y, x: self.x[c])
        holes = {h.uid for h in (self.prev, *self.w, *self.x)}
        self.holes, self.ground, nodes = holes, {}, toposort([self.tmpl])
        for n in nodes:
            self.ground[n.uid] = n.uid not in holes and all(self.ground[a.uid] for a in n.args)
            if not self.ground[n.uid] and n.uid not in holes and n.op is not Op.APPLY:
                raise MappingError(f"hlscnn phase proof: the step template has a {n.op} node above a placeholder")
        if sum(1 for n in nodes if n.uid in holes) != len(holes):
            raise MappingError("hlscnn phase proof: the step template does not use every placeholder once")

    def _match(self, t, n, bound: dict) -> bool:
        if t.uid in self.holes:
            bound[t.uid] = n
            return True
        if self.ground[t.uid]:
            return n is t or isinstance(n, np.ndarray) and n.dtype == object and all(e is t for e in n.flat)
        if type(n) is not tuple or len(n) != 2 or n[0] is not t.payload or len(n[1]) != len(t.args):
            return False
        for a, b in zip(t.args, n[1]):
            if not self._match(a, b, bound):
                return False
        return True

    def uid(self, e) -> int:
        """The uid of ``e`` normalised (-1 for anything but a term)."""
        if not isinstance(e, Expr):
            return -1
        g = self.norm.get(e.uid)
        if g is None:
            g = self.norm[e.uid] = self.rw.one(e).uid
        return g

    def _uids(self, leaf, index: tuple) -> np.ndarray:
        """The normalised uids of ``leaf`` (a term or an array of terms) at every output's ``index``."""
        from mappings.hlscnn.conv2d_proof import read_at
        if isinstance(leaf, np.ndarray) and leaf.dtype == object:
            u = np.fromiter((self.uid(e) for e in leaf.flat), np.int64, leaf.size).reshape(leaf.shape)
            return np.broadcast_to(read_at(u, index), index[0].shape)
        return np.full(index[0].shape, self.uid(leaf))

    def mismatches(self, tree: np.ndarray, expect, zero) -> np.ndarray:
        """The outputs (a boolean mask of ``tree``'s shape) where the walk does not show the term to
        be V's unrolling. ``tree``'s elements are ``(root, index)`` of one shared root; ``expect``
        yields, from the last tap to the first, the (weights, activations) of the 8 lanes as arrays
        of the uids of V's normalised leaves, broadcast to ``tree``'s shape; the chain must end in
        ``zero`` (V(0))."""
        every = np.ones(tree.shape, dtype=bool)
        flat = list(tree.flat)
        if not flat or any(type(t) is not tuple or len(t) != 2 or t[0] is not flat[0][0] for t in flat):
            return every
        try:
            index = tuple(np.array(k, dtype=np.int64).reshape(tree.shape) for k in zip(*(t[1] for t in flat)))
        except (TypeError, ValueError):
            return every
        bad = np.zeros(tree.shape, dtype=bool)
        node = flat[0][0]
        try:
            for ws, xs in expect:
                bound = {}
                if not self._match(self.tmpl, node, bound):
                    return every
                for h, e in zip(self.w, ws):
                    bad |= self._uids(bound[h.uid], index) != e
                if self.bug != "activations_unchecked":
                    for h, e in zip(self.x, xs):
                        bad |= self._uids(bound[h.uid], index) != e
                node = bound[self.prev.uid]
            bad |= self._uids(node, index) != self.uid(zero)
        except IndexError:
            return every
        return bad


def phase_proof(shape: dict, bits: int = 16, *, infer: bool = False) -> PhaseProof:
    """The phase proof at ``shape`` (module docstring). Raises MappingError for a shape the
    mapping refuses."""
    from ila.models.hlscnn.model import MACHINE_LANES, REG_ID, SLAVE_BASE, VIR_MEM_BASE, build_hlscnn
    from mappings.hlscnn import conv2d_nchw as M
    from mappings.hlscnn.conv2d_nchw_proof import symbolic_job
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"
    M.make(bits).check_shape(shape)
    if tuple(MACHINE_LANES) != (1, 1):
        raise MappingError(f"{name} phase proof: the invariant is stated for one output pixel per child step, "
                           f"the machine's model has {MACHINE_LANES} lanes")
    H, W, C, O, K, S, P = (shape[d] for d in M.SHAPE_DIMS)
    Hp, Wp = H + 2 * P, W + 2 * P
    OH, OW = M.out_hw(shape)
    ncb, nfb = -(-C // BLOCK), -(-O // BLOCK)
    ntaps = ncb * K * K
    wb = bits // 8
    nx = C * H * W
    data, x_raw, w_raw, job = symbolic_job(shape, bits)
    cmds = list(job.commands) + list(job.read_commands)
    trig_addr = SLAVE_BASE + 4 * REG_ID["AccelConvTrigger"]
    trig = [k for k, c in enumerate(cmds) if c.get("top_slave_if_wr") == 1 and int(c["top_slave_addr_in"]) == trig_addr]
    if len(trig) != 1:
        raise MappingError(f"{name} phase proof: the stream writes the trigger {len(trig)} times, not once")
    trig = trig[0]
    act_base = (_reg_value(cmds, "AccelConvActivationBaseAddr") - VIR_MEM_BASE) & 0xFFFFFFFF
    wgt_base = _reg_value(cmds, "AccelConvWeightsBaseAddr")
    out_base = _reg_value(cmds, "AccelConvOutputsBaseAddr")
    hl = build_hlscnn(bits, *MACHINE_LANES)
    if out_base % 16:
        raise MappingError(f"{name} phase proof: the output base {out_base:#x} is not 16-byte aligned")
    L = loop_parts(dict(H=H, W=W, C=C, O=O, K=K, S=S, P=P, Hp=Hp, Wp=Wp, OH=OH, OW=OW, ncb=ncb, nfb=nfb), bits,
                   by=("act", "wgt"), act_base=act_base, wgt_base=wgt_base, pixel_base=out_base // 16)
    X, Wt, V, step, xpad, w16, r_act, r_wgt = L.X, L.Wt, L.V, L.step, L.xpad, L.w16, L.r_act, L.r_wgt
    fb_, f_, oy_, ox_, o_ = L.fb, L.f, L.oy, L.ox, L.o
    z16 = bv_const(0, 16)
    lemmas = [Lemma("act", "acc", trig, r_act, (range(ncb), range(Hp), range(Wp), range(BLOCK), range(2)),
                    {X: data[:nx]}),
              Lemma("wgt", "acc", trig, r_wgt, (range(nfb * BLOCK), range(ncb), range(K), range(K), range(BLOCK),
                                                range(wb)), {Wt: data[nx:]})]
    pre = L.pre
    addrs = L.addrs
    n_out = nfb * OH * OW * 16
    fields = {"conv_in_chan": C, "conv_in_rows": Hp, "conv_in_cols": Wp, "conv_out_chan": O, "conv_out_rows": OH,
              "conv_out_cols": OW, "conv_stride": S, "conv_k_rows": K, "conv_k_cols": K, "conv_en_bias": 0,
              "conv_en_relu": 0, "conv_en_accum": 0, "conv_act_base": act_base + VIR_MEM_BASE,
              "conv_wgt_base": wgt_base, "conv_out_base": out_base}
    conv = Phase("conv", "acc", trig, "scratch_pad_1", (fb_, f_, oy_, ox_), pre, addrs,
                 write_region=lambda a: land(a.uge(out_base), a.ult(out_base + n_out)),
                 reads=("virtual_soc_memory", "scratch_pad_0"), facts=L.facts, axioms=L.axioms,
                 invariant=None if infer else L.inv, candidates=lambda P: L.inv(P, True),
                 post=lambda P: concat(P.cells[1], P.cells[0]).eq(V(o_, oy_, ox_, _c(ntaps))),
                 constants=fields, split=(f_, range(BLOCK)))

    # ------------------------------------------------------------------ checks: the term, the read-back
    def term_problems():
        """V unrolled at every output is the declared term. The declared term, built for all
        outputs at once as one tree of tuples over operand arrays (``padded_term`` with
        ``tree=True``: the same term, no expression nodes), is walked top-down, tap by tap from the
        last, against a template: one step of V built by :func:`step` itself from placeholder
        leaves and a placeholder ``prev`` (so the walk checks V's own definition); each leaf array
        the walk binds, read at every output's index, must be V's leaf at that output (the data
        substituted, both sides normalised, compared as uids with numpy), and the chain must end in
        V(0) = 0. An output where the walk fails is compared the slow way (V unrolled by
        :func:`step` and the declared term as expressions, both normalised), which reports;
        ``TERM_WALK = False`` compares every output that way (the differential test)."""
        from mappings.hlscnn.conv2d_nchw_proof import padded_term
        rw, subst = Rewriter(), _substitution({X.uid: data[:nx], Wt.uid: data[nx:]})

        def leaf(fn, *idx):
            """``fn``'s term at an int point, simplified with the data substituted; step's index
            arithmetic on ints is its arithmetic on the 32-bit terms, no index here reaching 2**32."""
            return subst(rw.one(fn(*(_c(i) for i in idx))))
        cache: dict = {}

        def wa(*idx):
            got = cache.get(("w",) + idx)
            if got is None:
                got = cache[("w",) + idx] = leaf(w16, *idx)
            return got

        def xa(*idx):
            got = cache.get(("x",) + idx)
            if got is None:
                got = cache[("x",) + idx] = leaf(xpad, *idx)
            return got
        declared = []

        def slow(o, oy, ox):
            if not declared:
                declared.append(padded_term(x_raw, w_raw, shape, bits))
            v = z16
            for cb in range(ncb):
                for ky in range(K):
                    for kx in range(K):
                        v = step(o, oy, ox, cb, ky, kx, v, wa, xa)
            goal = rw.one(declared[0][o, oy, ox])
            # terms are hash-consed: the same term is the same node (normalised only to confirm a difference)
            return v is goal or rw.one(v) is goal
        taps = [(cb, ky, kx) for cb in range(ncb) for ky in range(K) for kx in range(K)]
        mask = np.ones((O, OH, OW), dtype=bool)
        if TERM_WALK:
            walk = _TermWalk(step, rw, WALK_BUG)
            tree = padded_term(x_raw, w_raw, shape, bits, tree=True)
            # V's leaves as uids of their normalised terms: weights [O, tap, lane], activations
            # [channel block, padded row, padded column, lane]
            arrays = {X.uid: data[:nx], Wt.uid: data[nx:]}
            tp = np.array(taps, dtype=np.int64).reshape(-1, 3)
            o_, t_, i_ = (g.ravel() for g in np.meshgrid(np.arange(O), np.arange(len(taps)), np.arange(BLOCK),
                                                         indexing="ij"))
            wl = leaf_uids(w16, np.stack([o_, tp[t_, 0] * BLOCK + i_, tp[t_, 1], tp[t_, 2]], axis=1), arrays,
                           walk.uid, wa).reshape(O, len(taps), BLOCK)
            b_, y_, x_, i_ = (g.ravel() for g in np.meshgrid(np.arange(ncb), np.arange(Hp), np.arange(Wp),
                                                             np.arange(BLOCK), indexing="ij"))
            xl = leaf_uids(xpad, np.stack([b_ * BLOCK + i_, y_, x_], axis=1), arrays, walk.uid,
                           xa).reshape(ncb, Hp, Wp, BLOCK)
            oys, oxs = np.arange(OH)[:, None] * S, np.arange(OW)[None, :] * S

            def expect():
                """Per tap from the last: lane i's weight at out[o, oy, ox] is w16(o, 8 cb + i, ky, kx),
                its activation xpad(8 cb + i, S oy + ky, S ox + kx) (as in :func:`step`)."""
                for t in range(len(taps) - 1, -1, -1):
                    cb, ky, kx = taps[t]
                    yield ([wl[:, t, i][:, None, None] for i in range(BLOCK)],
                           [xl[cb, oys + ky, oxs + kx, i][None] for i in range(BLOCK)])
            if tree.shape == mask.shape:
                mask = walk.mismatches(tree, expect(), z16)
        bad = []
        for o, oy, ox in zip(*np.nonzero(mask)):
            if slow(int(o), int(oy), int(ox)):
                continue
            bad.append(f"out[{o}, {oy}, {ox}]: the specification's unrolling is not the declared term")
            if len(bad) >= 3:
                return bad
        return bad

    def readback_problems():
        """The read-back on symbolic reads gives each output the word of its tracked cell's two bytes,
        read after the loop with no write to scratchpad 1 in between; every read is SPAD1_DATA_RD."""
        from ila.simplify import Rewriter
        bad = read_problems(hl, cmds)
        reads, origin = [], {}
        for q, cmd in enumerate(cmds):
            h = host_command(cmd)
            if h is None:
                if q > trig and cmd.get("top_slave_if_wr") == 1:
                    bad.append(f"command {q} writes after the trigger")
                continue
            if q < trig:
                bad.append(f"command {q} reads before the trigger")
            row = [symbol(f"read{q}.{a:#x}", BvSort(8)) for _, a in h[1]]
            for s, (_, a) in zip(row, h[1]):
                origin[a] = s
            reads.append(np.array(row, dtype=object))
        got = np.asarray(M.readback(job, reads), dtype=object)
        if got.shape != (O, OH, OW):
            return bad + [f"the read-back returns shape {got.shape}, not {(O, OH, OW)}"]
        rw = Rewriter()
        for o in range(O):
            for oy in range(OH):
                for ox in range(OW):
                    a = (((o // BLOCK) * OH + oy) * OW + ox) * 16 + (o % BLOCK) * 2 + out_base
                    lo, hi = origin.get(a), origin.get(a + 1)
                    if lo is None or hi is None or rw.one(got[o, oy, ox]) is not rw.one(concat(hi, lo)):
                        bad.append(f"out[{o}, {oy}, {ox}] is not the word of scratch_pad_1[{a:#x}..{a + 1:#x}]")
                    if len(bad) >= 3:
                        return bad
        return bad

    scope = "x".join(str(shape[d]) for d in M.SHAPE_DIMS)
    side = Side("acc", hl, cmds, host=host_command)
    return PhaseProof(
        scope=scope, sides={"acc": side}, params=(fb_, f_, oy_, ox_), pre=pre, phases=[conv], lemmas=lemmas,
        final=lambda F: concat(F.cell("conv", 1), F.cell("conv", 0)).eq(V(o_, oy_, ox_, _c(ntaps))),
        outputs=[("conv", 0), ("conv", 1)],
        checks=[("term: the specification unrolled at every output is the declared numerics term", term_problems),
                ("read-back: every output is the word of its tracked cell, read after the loop", readback_problems)],
        covers=("codegen-bytes", "order", "configuration-fields", "model-loops", "read-back"), numerics="uf",
        notes=[f"declared numerics: conv2d in HLSCNN's order and rounding (the term of --method bmc), "
               f"{ntaps} taps per output, {nfb * ncb * K * K * OH * OW} child steps; " + gap(shape, bits)],
        cex_shapes=({"H": 3, "W": 3, "C": 1, "O": 2, "K": 2, "S": 1, "P": 1},
                    {"H": 3, "W": 3, "C": 9, "O": 2, "K": 2, "S": 1, "P": 1}))


def gap(shape: dict, bits: int, samples: int = 3, seed: int = 0) -> str:
    """The declared term's distance to the float32 IR operator, measured by simulation: the emitted
    program on the ILA simulator (which the proof shows computes exactly the term) against the
    mapping's float32 reference, on its seeded random inputs (Frobenius relative error)."""
    from mappings.base import frobenius_relative_error
    from mappings.hlscnn import conv2d_nchw as M
    m = M.make(bits)
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(samples):
        inputs = m.random_inputs(shape, rng)
        errs.append(frobenius_relative_error(m.reference(shape, inputs), m.run_accelerator(shape, inputs)))
    return (f"that term vs the float32 conv2d, by simulation of the proved program: Frobenius relative error "
            f"max {100 * max(errs):.2f} % over {samples} random inputs (tolerance {100 * m.tolerance_at(shape):g} %)")


def chc_spec(shape: dict | None, *, numerics: str = "uf", infer: bool = False, bits: int = 16) -> PhaseProof:
    """The phase proof at ``shape`` (``numerics`` must be 'uf'); the mapping's ``Proof.chc`` is
    :func:`mappings.hlscnn.conv_allsizes.chc_spec`, which takes ``shape`` None (all sizes)."""
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"
    if shape is None:
        raise MappingError(f"{name}: the fixed-shape phase proof needs a shape")
    if numerics != "uf":
        raise MappingError(f"{name}: numerics {numerics!r} is not available for proofs (use 'uf')")
    return phase_proof(shape, bits, infer=infer)


def chc_spec_w8(shape: dict | None, *, numerics: str = "uf", infer: bool = False) -> PhaseProof:
    """``Proof.chc`` of hlscnn.conv2d_nchw_w8 (8-bit weights)."""
    return chc_spec(shape, numerics=numerics, infer=infer, bits=8)
