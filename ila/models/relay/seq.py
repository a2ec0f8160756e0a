"""Sequence-model operators of the compiler-IR ILA (FlexASR's LayerNorm, LSTM and attention).

Same style as :mod:`ila.models.relay.model`: one top-level instruction per operator latching its
arguments, and a child ILA walking the loop nest with one STEP per innermost iteration. The
multi-pass operators iterate a *phase* loop level between the row loop and the element loop (the
passes a straightforward interpreter makes over each row); scalar registers ``acc``, ``acc_1``,
``acc_2`` carry the running reductions between steps.

Operators (``func_id``: arguments, tensors row-major from their base addresses):

* ``nn.layer_norm`` (27: x, gamma, beta, out, R, C, eps) — eps as the element's bit pattern;
  normalises each of the R rows of C values: loops (r, phase < 3, c): phase 0 sums x (``acc``),
  mean = sum / C (``acc_1``); phase 1 sums (x - mean)^2, rstd = rsqrt(var + eps) (``acc_2``);
  phase 2 stores (x - mean) * rstd * gamma[c] + beta[c].
* ``lstm_layer`` (28: x, w_ih, w_hh, b, out, scratch, T, I << 16 | H) — one LSTM layer with zero
  initial state, PyTorch gate order (i, f, g, o) in the 4H weight rows, bias b[4H]; out[T, H] is the
  hidden-state sequence; scratch[5H] holds the gate pre-activations (4H) and the cell state (H).
  Loops (t, phase < 2, j, k) with per-phase bounds: phase 0, j < 4H, k < I + H: gate pre-activation
  g[j] = sum_k W[j, k] * [x_t ; h_(t-1)][k] + b[j]; phase 1, j < H, k < 1: c = sigmoid(f) * c +
  sigmoid(i) * tanh(g), h = sigmoid(o) * tanh(c).
* ``nn.lstm`` (31: x, w, r, b, out, scratch, T, I << 16 | H) — ONNX's LSTM operator (forward,
  batch 1, zero initial state, default activations f = sigmoid, g = h = tanh), stated from the ONNX
  operator specification independently of ``lstm_layer``: ONNX gate order (i, o, f, c) in the 4H
  rows of w[4H, I] (W) and r[4H, H] (R), and the two bias vectors of b[8H] (Wb then Rb) added
  separately; out[T, H] is Y (ONNX's [T, 1, 1, H]); scratch[5H] holds the gate pre-activations
  (4H) and the cell state (H). Loops (t, phase < 3, j, k) with per-phase bounds: phase 0, j < 4H,
  k < I: s[j] = sum_k W[j, k] * x_t[k] + Wb[j]; phase 1, j < 4H, k < H: s[j] += sum_k R[j, k] *
  H_(t-1)[k] + Rb[j] (H_(-1) = 0); phase 2, j < H, k < 1: i = f(s[j]), o = f(s[H + j]),
  f_t = f(s[2H + j]), c = g(s[3H + j]); C_t = f_t * C_(t-1) + i * c (C_(-1) = 0), H_t = o * h(C_t).
* ``nn.batch_matmul`` (29: x, y, out, B, N, K, M) — out[b, n, m] = sum_k x[b, n, k] * y[b, m, k]
  (Relay's default transpose_b layout); loops (b, n, m, k).
* ``nn.softmax`` (30: x, out, R, C) — softmax over the last axis: loops (r, phase < 3, c): phase 0
  running max (``acc_1``); phase 1 sum of exp(x - max) (``acc_2``); phase 2 stores
  exp(x - max) / sum.

Source of the semantics: TVM Relay operator definitions (nn.layer_norm with axis=-1, nn.softmax
with axis=-1, nn.batch_matmul with transpose_b), PyTorch's LSTM cell equations (``lstm_layer``)
and the ONNX LSTM operator specification (``nn.lstm``).
"""
from __future__ import annotations

from ila import bv_const, ite, store

W = 32


def add_sequence_ops(ctx, loop_op) -> None:
    """Declare the five operators on the compiler-IR ILA under construction (``ctx`` and
    ``loop_op`` from :mod:`ila.models.relay.model`)."""
    num, t = ctx.num, ctx.tensor
    zero = num.const(num.zero)
    ld = ctx.ld

    def three_phase(a):
        return [a[0], bv_const(3, W), a[1]]

    # ------------------------------------------------------------------ nn.layer_norm
    def layer_norm(cfg, c, *_):
        r, ph, col = c
        x_b, g_b, b_b, out_b, _, C, eps = cfg[:7]
        x = ld(x_b + r * C + col)
        first, last = col.eq(0), col.eq(C - 1)
        cen = num.sub(x, ctx.acc1)
        term = ite(ph.eq(0), x, num.mul(cen, cen))
        acc = num.add(ite(first, zero, ctx.acc), term)
        mean = num.div(acc, num.from_int(C))
        y = num.add(num.mul(num.mul(cen, ctx.acc2), ld(g_b + col)), ld(b_b + col))
        return {ctx.acc: acc,
                ctx.acc1: ite(ph.eq(0) & last, mean, ctx.acc1),
                ctx.acc2: ite(ph.eq(1) & last, num.rsqrt(num.add(mean, eps)), ctx.acc2),
                t: ite(ph.eq(2), store(t, out_b + r * C + col, y), t)}
    loop_op(ctx, "nn.layer_norm", lambda a: three_phase([a[4], a[5]]), layer_norm)

    # ------------------------------------------------------------------ nn.softmax
    def softmax(cfg, c, *_):
        r, ph, col = c
        x_b, out_b, _, C = cfg[:4]
        x = ld(x_b + r * C + col)
        first, last = col.eq(0), col.eq(C - 1)
        e = num.exp(num.sub(x, ctx.acc1))
        acc = num.add(ite(first, zero, ctx.acc), e)
        return {ctx.acc: acc,
                ctx.acc1: ite(ph.eq(0), ite(first, x, num.max(ctx.acc1, x)), ctx.acc1),
                ctx.acc2: ite(ph.eq(1) & last, acc, ctx.acc2),
                t: ite(ph.eq(2), store(t, out_b + r * C + col, num.div(e, ctx.acc2)), t)}
    loop_op(ctx, "nn.softmax", lambda a: three_phase([a[2], a[3]]), softmax)

    # ------------------------------------------------------------------ nn.batch_matmul
    def batch_matmul(cfg, c, *_):
        b, n, m, k = c
        x_b, y_b, out_b, _, N, K, M = cfg[:7]
        prod = num.mul(ld(x_b + (b * N + n) * K + k), ld(y_b + (b * M + m) * K + k))
        acc = num.add(ite(k.eq(0), zero, ctx.acc), prod)
        return {ctx.acc: acc, t: ite(k.eq(K - 1), store(t, out_b + (b * N + n) * M + m, acc), t)}
    loop_op(ctx, "nn.batch_matmul", lambda a: [a[3], a[4], a[6], a[5]], batch_matmul)

    # ------------------------------------------------------------------ lstm_layer
    def lstm_dims(a, c):
        I, H = a[7].lshr(16), a[7] & 0xFFFF
        p0 = c[1].eq(0)
        return [a[6], bv_const(2, W), ite(p0, H * 4, H), ite(p0, I + H, bv_const(1, W))]

    def lstm(cfg, c, *_):
        step, ph, j, k = c
        x_b, wi_b, wh_b, b_b, out_b, s_b = cfg[:6]
        I, H = cfg[7].lshr(16), cfg[7] & 0xFFFF
        # phase 0: one multiply-accumulate of gate row j (addresses chosen first: every load is in range)
        is_x = k.ult(I)
        w = ld(ite(is_x, wi_b + j * I + k, wh_b + j * H + (k - I)))
        no_h = step.eq(0) & ~is_x
        v = ld(ite(is_x | step.eq(0), x_b + step * I + ite(is_x, k, bv_const(0, W)),
                   out_b + (step - 1) * H + (k - I)))
        acc = num.add(ite(k.eq(0), zero, ctx.acc), ite(no_h, zero, num.mul(w, v)))
        last_k = k.eq(I + H - 1)
        pre = num.add(acc, ld(b_b + j))
        # phase 1: cell update of hidden unit j (j < H in this phase; clamped so phase-0 steps stay in range)
        h = ite(ph.eq(1), j, bv_const(0, W))
        gi, gf, gg, go = (ld(s_b + q * H + h) for q in range(4))
        c_old = ite(step.eq(0), zero, ld(s_b + 4 * H + h))
        c_new = num.add(num.mul(num.sigmoid(gf), c_old), num.mul(num.sigmoid(gi), num.tanh(gg)))
        h_new = num.mul(num.sigmoid(go), num.tanh(c_new))
        cell = store(store(t, s_b + 4 * H + h, c_new), out_b + step * H + h, h_new)
        return {ctx.acc: acc,
                t: ite(ph.eq(0), ite(last_k, store(t, s_b + j, pre), t), cell)}
    loop_op(ctx, "lstm_layer", lstm_dims, lstm, nested=True)

    # ------------------------------------------------------------------ nn.lstm (ONNX LSTM)
    def onnx_lstm_dims(a, c):
        I, H = a[7].lshr(16), a[7] & 0xFFFF
        ph = c[1]
        return [a[6], bv_const(3, W), ite(ph.eq(2), H, H * 4), ite(ph.eq(0), I, ite(ph.eq(1), H, bv_const(1, W)))]

    def onnx_lstm(cfg, c, *_):
        step, ph, j, k = c
        x_b, w_b, r_b, b_b, out_b, s_b = cfg[:6]
        I, H = cfg[7].lshr(16), cfg[7] & 0xFFFF
        first = step.eq(0)
        # phases 0 and 1: one multiply-accumulate of gate row j (addresses clamped into the operands)
        in_x = ph.eq(0)
        wt = ld(ite(in_x, w_b + j * I + k, r_b + j * H + k))
        v = ld(ite(in_x | first, x_b + step * I + ite(in_x, k, bv_const(0, W)), out_b + (step - 1) * H + k))
        term = ite(ph.eq(1) & first, zero, num.mul(wt, v))
        acc = num.add(ite(k.eq(0), zero, ctx.acc), term)
        last_x, last_h = k.eq(I - 1), k.eq(H - 1)
        gate = ite(ph.eq(2), bv_const(0, W), j)
        x_part = num.add(acc, ld(b_b + gate))                                   # X_t W^T + Wb
        h_part = num.add(ld(s_b + gate), num.add(acc, ld(b_b + 4 * H + gate)))   # + (H_(t-1) R^T + Rb)
        # phase 2: ONNX's cell equations for hidden unit j, gates (i, o, f, c)
        u = ite(ph.eq(2), j, bv_const(0, W))
        i_t = num.sigmoid(ld(s_b + u))
        o_t = num.sigmoid(ld(s_b + H + u))
        f_t = num.sigmoid(ld(s_b + 2 * H + u))
        c_t = num.tanh(ld(s_b + 3 * H + u))
        c_prev = ite(first, zero, ld(s_b + 4 * H + u))
        C = num.add(num.mul(f_t, c_prev), num.mul(i_t, c_t))
        Hn = num.mul(o_t, num.tanh(C))
        cell = store(store(t, s_b + 4 * H + u, C), out_b + step * H + u, Hn)
        return {ctx.acc: acc,
                t: ite(ph.eq(0), ite(last_x, store(t, s_b + j, x_part), t),
                       ite(ph.eq(1), ite(last_h, store(t, s_b + j, h_part), t), cell))}
    loop_op(ctx, "nn.lstm", onnx_lstm_dims, onnx_lstm, nested=True)
