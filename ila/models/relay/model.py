"""The compiler-IR ILA: one instruction per Relay operator, updating tensors in a memory.

Program state is one tensor memory ``tensor`` (Mem(32, E): element index -> E-bit element of the
chosen :mod:`~ila.models.relay.numerics` type, E = 32 for float32/int32) plus ``data_out``, loop
counters ``cnt_*`` and scalar registers ``acc``, ``acc_1``, ``acc_2`` (running sums, means, maxima). A command is
``func_id`` (8 bits) with ``addr_in``/``data_in`` for element stores and loads, and the operator
arguments ``arg_0..arg_7`` (32 bits each: base addresses of operand and result tensors, then
dimensions). Each operator instruction latches its arguments and starts a child ILA that walks the
operator's loop nest, one child instruction per innermost iteration (the operational semantics of
the operator, as relay-ila models it); tensors are row-major (C order) from their base address.

Operators (``func_id``: arguments):

* ``tensor_store`` (1: addr, data) and ``tensor_load`` (2: addr)
* ``nn.dense`` (16: a, w, out, N, K, M) — out[n, m] = sum_k a[n, k] * w[m, k]
* ``nn.bias_add`` (17: x, b, out, R, C, S) — x viewed as [R][C][S], out = x + b[c]
* ``add`` (18: a, b, out, n), ``multiply`` (19: a, b, out, n), ``nn.relu`` (20: x, out, n)
* ``reshape`` (21: x, out, n) — a copy; shapes are metadata
* ``transpose`` (22: x, out, R, C) — out[c, r] = x[r, c]
* ``nn.max_pool2d`` (23) and ``nn.avg_pool2d`` (24): x, out, P, H, W, (kh << 16 | kw),
  (sh << 16 | sw) over P planes of H x W, no padding; avg divides by kh * kw
* ``nn.conv2d`` (25: NCHW/OIHW, 26: NHWC/HWIO): x, w, out, C, H, W, O, (kh << 16 | kw | s << 24)
  with one stride s for both axes, batch 1, no padding
* ``nn.layer_norm`` (27), ``lstm_layer`` (28), ``nn.batch_matmul`` (29), ``nn.softmax`` (30),
  ``nn.lstm`` (31, ONNX's LSTM): see :mod:`~ila.models.relay.seq` (the sequence-model operators,
  FlexASR's LayerNorm/LSTM/attention)

Source of the semantics: TVM Relay operator definitions; relay-ila's loop-FSM modelling style.
"""
from __future__ import annotations

from typing import Callable

from ila import TRUE, Ila, bv_const, ite, land, load, store
from ila.expr import Expr
from ila.models.relay.numerics import NUMERICS, Numerics

W = 32
FUNC_IDS = {
    "tensor_store": 1, "tensor_load": 2, "nn.dense": 16, "nn.bias_add": 17, "add": 18, "multiply": 19,
    "nn.relu": 20, "reshape": 21, "transpose": 22, "nn.max_pool2d": 23, "nn.avg_pool2d": 24,
    "nn.conv2d_nchw": 25, "nn.conv2d_nhwc": 26, "nn.layer_norm": 27, "lstm_layer": 28, "nn.batch_matmul": 29,
    "nn.softmax": 30, "nn.lstm": 31,
}
N_ARGS = 8
N_COUNTERS = 6
TENSOR_ENTRIES = 1 << 22


class _Ctx:
    def __init__(self, m: Ila, num: Numerics):
        self.m, self.num = m, num
        self.func = m.input("func_id")
        self.args = [m.input(f"arg_{k}") for k in range(N_ARGS)]
        self.cfg = [m.state(f"cfg_{k}") for k in range(N_ARGS)]
        self.cnt = [m.state(f"cnt_{k}") for k in range(N_COUNTERS)]
        self.acc = m.state("acc")
        self.acc1, self.acc2 = m.state("acc_1"), m.state("acc_2")
        self.tensor = m.state("tensor")
        self.unsupported: list[str] = []

    def ld(self, addr: Expr) -> Expr:
        return load(self.tensor, addr)


def _loop_op(ctx: _Ctx, name: str, bounds: Callable[..., list[Expr]],
             body: Callable[[list[Expr], list[Expr], Expr, Expr], dict], *, nested: bool = False) -> None:
    """Declare operator ``name``: a top-level instruction latching the arguments, and a child ILA
    iterating ``bounds(cfg)`` (outermost first) with one STEP per innermost iteration.

    ``body(cfg, counters, first_inner, last_inner)`` gives the STEP's updates (state -> Expr);
    ``first_inner``/``last_inner`` say whether the innermost reduction loops are at their start/end.
    ``nested``: ``bounds(cfg, counters)`` may use the outer counters (a loop level's bound that
    depends on an outer level, e.g. per-phase trip counts); it is called with zero counters at start.
    """
    m, fid = ctx.m, FUNC_IDS[name]
    n_levels = len(bounds(ctx.cfg, ctx.cnt) if nested else bounds(ctx.cfg))
    cnts = ctx.cnt[:n_levels]
    dims = bounds(ctx.cfg, cnts) if nested else bounds(ctx.cfg)
    try:
        updates = body(ctx.cfg, cnts, None, None)
    except NotImplementedError:
        ctx.unsupported.append(name)        # the element type lacks an operator this op needs
        return
    busy = m.new_bool_state(f"{name}.busy")
    top = m.new_instr(name)
    top.set_decode(ctx.func.eq(fid))
    dims_now = bounds(ctx.args, [bv_const(0, W)] * n_levels) if nested else bounds(ctx.args)
    for c, a in zip(ctx.cfg, ctx.args):
        top.set_update(c, a)
    for c in ctx.cnt:
        top.set_update(c, bv_const(0, W))
    top.set_update(busy, land(*[d.ne(0) for d in dims_now]))
    child = m.new_child(f"{name}.loop")
    child.set_valid(busy)
    step = child.new_instr(f"{name}.step")
    last = [c.eq(d - 1) for c, d in zip(cnts, dims)]
    for s, v in updates.items():
        step.set_update(s, v)
    carry = TRUE
    for k in reversed(range(len(dims))):
        step.set_update(cnts[k], ite(carry, ite(last[k], bv_const(0, W), cnts[k] + 1), cnts[k]))
        carry = land(carry, last[k])
    step.set_update(busy, ~carry)


def _elementwise(ctx: _Ctx, name: str, fn: Callable[[Expr, Expr], Expr], binary: bool) -> None:
    def body(cfg, c, *_):
        i = c[0]
        if binary:
            val = fn(ctx.ld(cfg[0] + i), ctx.ld(cfg[1] + i))
            out = cfg[2]
        else:
            val = fn(ctx.ld(cfg[0] + i), None)
            out = cfg[1]
        return {ctx.tensor: store(ctx.tensor, out + i, val)}
    _loop_op(ctx, name, lambda a: [a[3] if binary else a[2]], body)


def relay_ila(numerics: str | Numerics = "float32", *, tensor_entries: int = TENSOR_ENTRIES) -> Ila:
    """Build the compiler-IR ILA for ``numerics`` ('float32' or 'int32')."""
    num = NUMERICS[numerics] if isinstance(numerics, str) else numerics
    m = Ila(f"relay_{num.name}")
    E = num.width
    m.new_bv_input("func_id", 8)
    addr_in, data_in = m.new_bv_input("addr_in", W), m.new_bv_input("data_in", E)
    for k in range(N_ARGS):
        m.new_bv_input(f"arg_{k}", W)
        m.new_bv_state(f"cfg_{k}", W)
    for k in range(N_COUNTERS):
        m.new_bv_state(f"cnt_{k}", W)
    m.new_bv_state("acc", E)
    m.new_bv_state("acc_1", E)
    m.new_bv_state("acc_2", E)
    m.new_mem_state("tensor", W, E, size=tensor_entries)
    data_out = m.new_bv_state("data_out", E)
    ctx = _Ctx(m, num)
    t = ctx.tensor
    m.set_valid(ctx.func.ne(0))

    st = m.new_instr("tensor_store")
    st.set_decode(ctx.func.eq(FUNC_IDS["tensor_store"]))
    st.set_update(t, store(t, addr_in, data_in))
    ld = m.new_instr("tensor_load")
    ld.set_decode(ctx.func.eq(FUNC_IDS["tensor_load"]))
    ld.set_update(data_out, load(t, addr_in))

    zero = num.const(num.zero)

    # nn.dense: loops (n, m, k)
    def dense(cfg, c, *_):
        n, mm, k = c
        a_base, w_base, out_base, _, K, M = cfg[:6]
        prod = num.mul(ctx.ld(a_base + n * K + k), ctx.ld(w_base + mm * K + k))
        acc = num.add(ite(k.eq(0), zero, ctx.acc), prod)
        return {ctx.acc: acc, t: ite(k.eq(K - 1), store(t, out_base + n * M + mm, acc), t)}
    _loop_op(ctx, "nn.dense", lambda a: [a[3], a[5], a[4]], dense)

    def bias_add(cfg, c, *_):
        r, ch, s = c
        C, S = cfg[4], cfg[5]
        idx = (r * C + ch) * S + s
        return {t: store(t, cfg[2] + idx, num.add(ctx.ld(cfg[0] + idx), ctx.ld(cfg[1] + ch)))}
    _loop_op(ctx, "nn.bias_add", lambda a: [a[3], a[4], a[5]], bias_add)

    _elementwise(ctx, "add", num.add, True)
    _elementwise(ctx, "multiply", num.mul, True)
    _elementwise(ctx, "nn.relu", lambda x, _: num.max(x, zero), False)
    _elementwise(ctx, "reshape", lambda x, _: x, False)

    def transpose(cfg, c, *_):
        r, col = c
        R, C = cfg[2], cfg[3]
        return {t: store(t, cfg[1] + col * R + r, ctx.ld(cfg[0] + r * C + col))}
    _loop_op(ctx, "transpose", lambda a: [a[2], a[3]], transpose)

    def pool_dims(a):
        kh, kw = a[5].lshr(16), a[5] & 0xFFFF
        sh, sw = a[6].lshr(16), a[6] & 0xFFFF
        oh = ite(a[3].ult(kh) | sh.eq(0), bv_const(0, W), (a[3] - kh).udiv(sh) + 1)
        ow = ite(a[4].ult(kw) | sw.eq(0), bv_const(0, W), (a[4] - kw).udiv(sw) + 1)
        return [a[2], oh, ow, kh, kw]

    def pool(avg: bool):
        def body(cfg, c, *_):
            p, oy, ox, wy, wx = c
            P, oh, ow, kh, kw = pool_dims(cfg)
            sh, sw = cfg[6].lshr(16), cfg[6] & 0xFFFF
            H, Wd = cfg[3], cfg[4]
            x = ctx.ld(cfg[0] + (p * H + oy * sh + wy) * Wd + ox * sw + wx)
            first = wy.eq(0) & wx.eq(0)
            lastw = wy.eq(kh - 1) & wx.eq(kw - 1)
            if avg:
                acc = ite(first, x, num.add(ctx.acc, x))
                res = num.div(acc, num.from_int(kh * kw))
            else:
                acc = ite(first, x, num.max(ctx.acc, x))
                res = acc
            out = cfg[1] + (p * oh + oy) * ow + ox
            return {ctx.acc: acc, t: ite(lastw, store(t, out, res), t)}
        return body
    _loop_op(ctx, "nn.max_pool2d", pool_dims, pool(False))
    _loop_op(ctx, "nn.avg_pool2d", pool_dims, pool(True))

    def conv_dims(a):
        kh, kw, s = (a[7].lshr(8)) & 0xFF, a[7] & 0xFF, a[7].lshr(24)
        oh = ite(a[4].ult(kh) | s.eq(0), bv_const(0, W), (a[4] - kh).udiv(s) + 1)
        ow = ite(a[5].ult(kw) | s.eq(0), bv_const(0, W), (a[5] - kw).udiv(s) + 1)
        return [a[6], oh, ow, a[3], kh, kw]

    def conv(nhwc: bool):
        def body(cfg, c, *_):
            o, oy, ox, ci, ky, kx = c
            O, oh, ow, C, kh, kw = conv_dims(cfg)
            s = cfg[7].lshr(24)
            H, Wd = cfg[4], cfg[5]
            y, x = oy * s + ky, ox * s + kx
            if nhwc:
                xa = (y * Wd + x) * C + ci
                wa = ((ky * kw + kx) * C + ci) * O + o
                oa = (oy * ow + ox) * O + o
            else:
                xa = (ci * H + y) * Wd + x
                wa = ((o * C + ci) * kh + ky) * kw + kx
                oa = (o * oh + oy) * ow + ox
            first = ci.eq(0) & ky.eq(0) & kx.eq(0)
            last = ci.eq(C - 1) & ky.eq(kh - 1) & kx.eq(kw - 1)
            acc = num.add(ite(first, zero, ctx.acc), num.mul(ctx.ld(cfg[0] + xa), ctx.ld(cfg[1] + wa)))
            return {ctx.acc: acc, t: ite(last, store(t, cfg[2] + oa, acc), t)}
        return body
    _loop_op(ctx, "nn.conv2d_nchw", conv_dims, conv(False))
    _loop_op(ctx, "nn.conv2d_nhwc", conv_dims, conv(True))
    from ila.models.relay.seq import add_sequence_ops
    add_sequence_ops(ctx, _loop_op)
    m.unsupported_ops = tuple(ctx.unsupported)
    return m



class RelayMachine:
    """Convenience driver of the compiler-IR ILA in the simulator: place tensors, run operators.

    Tensors are numpy arrays converted to element bit patterns by the numerics; ``run(op, *args)``
    issues the operator command (arguments as in the module docstring) and runs its loop.
    """

    def __init__(self, numerics: str = "float32", tensor_entries: int = 1 << 16):
        from ila.sim import Simulator
        self.num = NUMERICS[numerics]
        self.ila = relay_ila(numerics, tensor_entries=tensor_entries)
        self.sim = Simulator(self.ila)

    def put(self, base: int, array) -> None:
        import numpy as np
        flat = self.num.from_float(np.asarray(array).ravel())
        mem = self.sim.memory("tensor")
        if base + flat.size > mem.shape[0]:
            from ila.errors import SimulationError
            raise SimulationError(f"tensor of {flat.size} elements at {base} exceeds the {mem.shape[0]}-entry memory")
        mem[base:base + flat.size] = flat

    def get(self, base: int, shape):
        import numpy as np
        n = int(np.prod(shape))
        return self.num.to_float(self.sim.memory("tensor")[base:base + n].astype(np.uint64)).reshape(shape)

    def run(self, op: str, *args: int) -> None:
        cmd = {"func_id": FUNC_IDS[op]}
        cmd.update({f"arg_{k}": int(a) for k, a in enumerate(args)})
        self.sim.step(cmd)
