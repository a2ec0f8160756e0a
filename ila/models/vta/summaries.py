"""Tensor-level summaries of the VTA child loops (simulator only; :meth:`ila.model.Ila.set_summary`).

The VTA ILA (:mod:`ila.models.vta.model`) runs every LOAD, STORE, GEMM and ALU instruction as a
loop of ``vta_child`` instructions, one SRAM row per step. :func:`loop_summary` returns the
summary registered on ``vta_child``: when the loop of one instruction starts, it brings the
state to the loop's quiescent state at once with numpy, and reports the number of child
instructions it stands for. Semantics are the child instructions' (the model's docstring;
``SEEDS_NOTES.md`` §1.3, tvm-vta ``sim_driver.cc``), restated per unit below. Every unit is checked
bit-exact against the loop (every state and memory entry) by ``tests/test_vta_summaries.py`` on
random programs and edge cases, and each seeded bug of :data:`SUMMARY_BUGS` must be caught there.
``Simulator(summaries=False)``, ``record_trace=True``, the SMT lowering and BMC (and its
counterexample replay) never use it.

Notation: buffers are the flat element-lane memories of the model (``vta_<buf>_mem``, row ``r``,
lane ``l`` at entry ``r * lanes + l``); ``M32`` is 32-bit index arithmetic, ``M48`` the 48-bit
DRAM byte-address arithmetic of the model. Loop nests run ``for i < iter_out: for j < iter_in:
for u in [uop_bgn, uop_end)`` with ``dst = uop.dst_idx + i*dst_factor_out + j*dst_factor_in``
(same for ``src`` and ``wgt``; M32).

* **LOAD** (``vta_load_<buf>_elem``; ``buf`` uop, wgt, inp, acc): for the ``ytot * xtot``
  elements (``xtot = x_size + x_pad_0 + x_pad_1``, ``ytot`` likewise) in row-major order, SRAM
  row ``sram_idx + k`` gets DRAM element ``dram_base + (y - y_pad_0) * x_stride + (x - x_pad_0)``
  (``elem_bytes(buf)`` bytes at ``elem * elem_bytes``, each lane's ``width/8`` bytes
  little-endian) inside the padding window, else zeros. Ends with ``sram_idx += ytot*xtot``,
  ``cnt_x = 0``, ``cnt_y = ytot``.
* **STORE** (``vta_store_elem``): for ``y < y_size, x < x_size`` in order, DRAM element
  ``dram_base + y * x_stride + x`` (``BATCH*BLOCK_OUT * out_width/8`` bytes) gets the low
  ``out_width`` bits of each lane of accumulator row ``sram_base + y * x_size + x``
  (two's-complement truncation, little-endian); a later element overwrites an earlier one where
  they overlap (``x_stride < x_size``). Ends with ``cnt_x = 0``, ``cnt_y = y_size``.
* **GEMM** reset (``vta_gemm_reset_elem``): every ``acc[dst]`` row of the nest becomes 0.
* **GEMM** (``vta_gemm_elem``): ``acc[dst][b*BO + o] += sum_k sext(inp[src][b*BI + k]) *
  sext(wgt[wgt][o*BI + k])`` (``acc_width``-bit wrapping; additions commute, so the nest is one
  integer matrix product per distinct uop ``dst_idx`` when the source row depends on ``(u, i)``
  and the weight tile on ``(u, j)``, the layout of the driver's dense programs, and batched
  gathers otherwise).
* **ALU** (``vta_alu_<op>_elem``): ``acc[dst] = f(acc[dst], y)`` per lane in program order, ``y``
  the sign-extended 16-bit ``imm`` (``use_imm``) or ``acc[src]``; ``f`` is signed MIN, signed MAX,
  ADD, MUL (wrapping) or SHR (``y >= 0``: arithmetic right shift, all sign bits from ``y >=
  acc_width`` on; else left shift by ``-y``, 0 from ``acc_width`` on). The steps run as
  vectorised segments in which no step reads or writes a row an earlier step of the segment
  wrote, so each segment equals its steps in order.

Every GEMM/ALU loop ends with ``upc = uop_bgn``, ``cnt_j = 0``, ``cnt_i = iter_out``; every loop
with ``vta_child_op = 0``. The summary declines (None: the simulator runs the loop) unless the
loop starts at its first step (counters 0, ``upc = uop_bgn``), its extents are non-zero, its
steps fit ``budget``, and every SRAM row and DRAM byte it touches lies in its memory without
index wrap-around (so the loop would neither raise nor wrap).
"""
from __future__ import annotations

import numpy as np

from ila.models.vta.isa import ALU_ADD, ALU_MAX, ALU_MIN, ALU_MUL, ALU_SHR, DEFAULT_CONFIG, VtaConfig, uop_layout

M32 = (1 << 32) - 1
M48 = (1 << 48) - 1
CNT_Y_MASK = (1 << 18) - 1      # widths of vta_cnt_y / vta_cnt_i and vta_upc (model.py)
CNT_I_MASK = (1 << 14) - 1
UPC_MASK = (1 << 15) - 1

# seeded bugs (one unit each), for the differential tests: each must be reported by them
SUMMARY_BUGS = (
    "load_pad_keeps_old",      # LOAD: padding elements keep the SRAM's previous contents
    "load_ignores_stride",     # LOAD: DRAM rows x_size elements apart instead of x_stride
    "store_saturates",         # STORE: int32 -> int8 by saturation instead of truncation
    "store_first_wins",        # STORE: where DRAM elements overlap, the first write stays
    "gemm_tile_transposed",    # GEMM: weight tile read [in][out] instead of [out][in]
    "gemm_saturates",          # GEMM: the accumulator saturates instead of wrapping
    "gemm_drops_last_uop",     # GEMM (and reset): the last uop of the range is skipped
    "alu_imm_zero_extended",   # ALU: the 16-bit immediate zero- instead of sign-extended
    "alu_minmax_unsigned",     # ALU: MIN/MAX compare unsigned
    "alu_shr_negative",        # ALU: SHR by a negative amount shifts right by its magnitude
    "alu_ignores_order",       # ALU: all steps read the accumulator as it was before the loop
)


def _signed(a: np.ndarray, w: int) -> np.ndarray:
    """Unsigned ``w``-bit patterns as signed int64."""
    a = a.astype(np.int64)
    return a - ((a >> (w - 1)) & 1) * (1 << w)


def _sext32(a: np.ndarray, w: int) -> np.ndarray:
    """Unsigned ``w``-bit patterns (``w <= 32``) sign-extended to 32-bit patterns (uint32). An
    unsigned array of exactly ``w`` bits per element (the SRAMs' own dtype) is read as signed and
    widened in one conversion."""
    if a.dtype.kind == "u" and a.dtype.itemsize * 8 == w:
        return a.view(f"i{a.dtype.itemsize}").astype(np.int32).view(np.uint32)
    return (_signed(a, w) & M32).astype(np.uint32)


def loop_summary(cfg: VtaConfig = DEFAULT_CONFIG, *, bug: str | None = None):
    """The summary of ``vta_child`` for configuration ``cfg`` (module docstring): ``fn(S, budget)``
    -> number of child instructions, or None to decline. ``bug`` (one of :data:`SUMMARY_BUGS`)
    seeds a deliberate error, to show the differential tests catch it."""
    from ila.models.vta.codes import BUF_OF, C_ALU, C_GEMM, C_GEMM_RESET, C_LOAD, C_STORE, MEM_STATE
    if bug is not None and bug not in SUMMARY_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {SUMMARY_BUGS}")
    widths = {"uop": 32, "inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width}
    load_buf = {C_LOAD[mt]: buf for mt, buf in BUF_OF.items()}
    alu_op = {code: aop for aop, code in C_ALU.items()}
    aw, ow = cfg.acc_width, cfg.out_width
    amask = (1 << aw) - 1
    la, li, lw = cfg.lanes("acc"), cfg.lanes("inp"), cfg.lanes("wgt")
    nbat, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    ufields = [(f.lo, (1 << f.width) - 1) for f in (uop_layout(cfg)[n] for n in ("dst_idx", "src_idx", "wgt_idx"))]

    # ------------------------------------------------------------------ LOAD
    def load(S, budget, buf):
        if S["vta_cnt_y"] or S["vta_cnt_x"]:
            return None
        xs, ys, stride = S["vta_x_size"], S["vta_y_size"], S["vta_x_stride"]
        xp0, xp1, yp0, yp1 = (S[f"vta_{n}"] for n in ("x_pad_0", "x_pad_1", "y_pad_0", "y_pad_1"))
        xt, yt = xs + xp0 + xp1, ys + yp0 + yp1
        n = xt * yt
        if n == 0 or n > budget or xt > CNT_Y_MASK or yt > CNT_Y_MASK:
            return None
        lanes, nb, eb = cfg.lanes(buf), widths[buf] // 8, cfg.elem_bytes(buf)
        mem, dram = S[MEM_STATE[buf]], S["vta_dram"]
        base = S["vta_sram_idx"]
        if (base + n) * lanes > mem.shape[0] or eb > dram.shape[0]:
            return None
        y, x = np.arange(yt, dtype=np.int64)[:, None], np.arange(xt, dtype=np.int64)[None, :]
        inside = ((y >= yp0) & (y < yp0 + ys) & (x >= xp0) & (x < xp0 + xs)).ravel()
        pitch = xs if bug == "load_ignores_stride" else stride
        elem = ((S["vta_dram_base"] + (((y - yp0) * pitch) & M32) + ((x - xp0) & M32)) & M48).ravel()[inside]
        if elem.size and int(elem.max()) >= dram.shape[0] // eb:
            return None
        raw = dram[:dram.shape[0] // eb * eb].reshape(-1, eb)[elem]
        vals = raw.view(f"<u{nb}") if nb > 1 else raw
        region = mem[base * lanes:(base + n) * lanes].reshape(n, lanes)
        if bug == "load_pad_keeps_old":
            region[inside] = vals
        else:
            rows = np.zeros((n, lanes), mem.dtype)
            rows[inside] = vals
            region[...] = rows
        S["vta_sram_idx"] = (base + n) & M32
        S["vta_cnt_x"], S["vta_cnt_y"], S["vta_child_op"] = 0, yt & CNT_Y_MASK, 0
        return n

    # ------------------------------------------------------------------ STORE
    ob = ow // 8
    ebo = la * ob

    def store(S, budget):
        if S["vta_cnt_y"] or S["vta_cnt_x"]:
            return None
        xs, ys, stride = S["vta_x_size"], S["vta_y_size"], S["vta_x_stride"]
        n = xs * ys
        if n == 0 or n > budget or ys > CNT_Y_MASK:
            return None
        acc, dram = S["vta_acc_mem"], S["vta_dram"]
        src0 = S["vta_sram_base"]
        if (src0 + n) * la > acc.shape[0]:
            return None
        y, x = np.arange(ys, dtype=np.int64)[:, None], np.arange(xs, dtype=np.int64)[None, :]
        elem = ((S["vta_dram_base"] + ((y * stride + x) & M32)) & M48).ravel()
        if int(elem.max()) >= dram.shape[0] // ebo:
            return None
        vals = acc[src0 * la:(src0 + n) * la].reshape(n, la)
        if bug == "store_saturates":
            lo, hi = -(1 << (ow - 1)), (1 << (ow - 1)) - 1
            vals = np.clip(_signed(vals, aw), lo, hi)
        low = (vals.astype(np.int64) & ((1 << ow) - 1)).astype(f"<u{ob}")
        data = low.view(np.uint8).reshape(n, ebo)
        if np.unique(elem).size != n:          # overlapping elements: program order, the last write stays
            if bug == "store_first_wins":
                _, keep = np.unique(elem, return_index=True)
            else:
                _, rev = np.unique(elem[::-1], return_index=True)
                keep = n - 1 - rev
            elem, data = elem[keep], data[keep]
        dram[:dram.shape[0] // ebo * ebo].reshape(-1, ebo)[elem] = data
        S["vta_cnt_x"], S["vta_cnt_y"], S["vta_child_op"] = 0, ys & CNT_Y_MASK, 0
        return n

    # ------------------------------------------------------------------ GEMM / ALU loop nests
    def nest(S, budget):
        """(uop fields (dst, src, wgt) as int64 arrays over the uop range, I, J, steps) or None."""
        if S["vta_cnt_i"] or S["vta_cnt_j"] or S["vta_upc"] != S["vta_uop_bgn"]:
            return None
        bgn, end, I, J = S["vta_uop_bgn"], S["vta_uop_end"], S["vta_iter_out"], S["vta_iter_in"]
        uop = S["vta_uop_mem"]
        if not (I and J and bgn < end <= uop.shape[0]):
            return None
        n = I * J * (end - bgn)
        if n > budget:
            return None
        words = uop[bgn:end].astype(np.int64)
        fields = [(words >> lo) & m for lo, m in ufields]
        return fields, I, J, n

    def grid(base, fo, fi, I, J):
        """Index of every step, shape (I, J, U) (program order when raveled), M32."""
        i = np.arange(I, dtype=np.int64)[:, None, None]
        j = np.arange(J, dtype=np.int64)[None, :, None]
        return (base[None, None, :] + i * fo + j * fi) & M32

    def finish_nest(S, I):
        S["vta_upc"] = S["vta_uop_bgn"] & UPC_MASK
        S["vta_cnt_j"], S["vta_cnt_i"], S["vta_child_op"] = 0, I & CNT_I_MASK, 0

    def factors(S, name):
        return S[f"vta_{name}_factor_out"], S[f"vta_{name}_factor_in"]

    def gemm(S, budget, reset):
        got = nest(S, budget)
        if got is None:
            return None
        (D, Sx, Wx), I, J, n = got
        acc = S["vta_acc_mem"]
        depth = acc.shape[0] // la
        if bug == "gemm_drops_last_uop":
            D, Sx, Wx = D[:-1], Sx[:-1], Wx[:-1]
        d = grid(D, *factors(S, "dst"), I, J)
        if d.size and int(d.max()) >= depth:
            return None
        acc2 = acc[:depth * la].reshape(depth, la)
        if reset:
            acc2[d.ravel()] = 0
            finish_nest(S, I)
            return n
        inp, wgt = S["vta_inp_mem"], S["vta_wgt_mem"]
        (sfo, sfi), (wfo, wfi) = factors(S, "src"), factors(S, "wgt")
        s, w = grid(Sx, sfo, sfi, I, J), grid(Wx, wfo, wfi, I, J)
        if s.size and (int(s.max()) >= inp.shape[0] // li or int(w.max()) >= wgt.shape[0] // lw):
            return None
        inp2, wgt2 = inp[:inp.shape[0] // li * li].reshape(-1, li), wgt[:wgt.shape[0] // lw * lw].reshape(-1, lw)

        def tiles(idx):                   # weight tiles [.., out, in], sign-extended to 32 bits
            t = _sext32(wgt2[idx], cfg.wgt_width).reshape(idx.shape + (bo, bi))
            return t.swapaxes(-1, -2) if bug == "gemm_tile_transposed" else t

        # products and sums in uint32, which wraps mod 2**32 (acc_width <= 32 divides it), with
        # einsum's own loops (no threaded BLAS: its thread start-up dominates products this size);
        # only the accumulator rows the nest writes (``rows``; the sum of row ``rows[k]`` in tot[k])
        rows = np.unique(d)
        tot = np.zeros((rows.size, la), np.uint32)
        if D.size and sfi == 0 and wfo == 0:
            # source rows depend on (i, u), weight tiles on (j, u): one product per distinct dst_idx
            for dv in np.unique(D):
                g = np.nonzero(D == dv)[0]
                X = _sext32(inp2[s[:, 0][:, g]], cfg.inp_width)                  # (I, G, BATCH*BI)
                X = X.reshape(I, g.size, nbat, bi).transpose(0, 2, 1, 3).reshape(I * nbat, g.size * bi)
                Wt = tiles(w[0][:, g]).transpose(0, 2, 1, 3).reshape(J * bo, g.size * bi)
                C = np.einsum("ik,jk->ij", X, Wt, optimize=False)
                C = C.reshape(I, nbat, J, bo).transpose(0, 2, 1, 3).reshape(I * J, la)
                np.add.at(tot, np.searchsorted(rows, d[:, :, g[0]].ravel()), C)
        elif D.size:
            dd, ss, ww = d.ravel(), s.ravel(), w.ravel()
            for k in range(0, dd.size, 4096):
                sl = slice(k, k + 4096)
                X = _sext32(inp2[ss[sl]], cfg.inp_width).reshape(-1, nbat, bi)
                C = np.einsum("nbk,nok->nbo", X, tiles(ww[sl]), optimize=False)
                np.add.at(tot, np.searchsorted(rows, dd[sl]), C.reshape(-1, la))
        old = acc2[rows]
        if bug == "gemm_saturates":
            new = np.clip(_signed(old, aw) + _signed(tot & amask, aw), -(1 << (aw - 1)), (1 << (aw - 1)) - 1)
        else:
            new = old.astype(np.uint32) + tot
        acc2[rows] = (new & amask).astype(acc.dtype)
        finish_nest(S, I)
        return n

    def alu_fn(aop, x, y):
        if aop == ALU_MIN or aop == ALU_MAX:
            if bug == "alu_minmax_unsigned":
                xu, yu = x & amask, y & amask
                pick = (xu < yu) if aop == ALU_MIN else (xu > yu)
            else:
                pick = (x < y) if aop == ALU_MIN else (x > y)
            return np.where(pick, x, y)
        if aop == ALU_ADD:
            return x + y
        if aop == ALU_MUL:
            return x * y
        if aop == ALU_SHR:
            right = x >> np.minimum(np.maximum(y, 0), 63)          # sign fill from acc_width on
            amt = -y
            if bug == "alu_shr_negative":
                return np.where(y >= 0, right, x >> np.clip(amt, 0, 63))
            left = np.where(amt >= aw, 0, ((x & amask) << np.clip(amt, 0, aw - 1)) & amask)
            return np.where(y >= 0, right, left)
        raise ValueError(f"unknown ALU opcode {aop}")

    def alu(S, budget, aop):
        got = nest(S, budget)
        if got is None:
            return None
        (D, Sx, _), I, J, n = got
        acc = S["vta_acc_mem"]
        depth = acc.shape[0] // la
        use_imm = S["vta_use_imm"] == 1
        d = grid(D, *factors(S, "dst"), I, J).ravel()
        s = d if use_imm else grid(Sx, *factors(S, "src"), I, J).ravel()
        if int(d.max()) >= depth or int(s.max()) >= depth:
            return None
        acc2 = acc[:depth * la].reshape(depth, la)
        if use_imm:
            iw = cfg.imm_bits
            imm = S["vta_imm"] if bug == "alu_imm_zero_extended" else int(_signed(np.array(S["vta_imm"]), iw))
            imm = int(_signed(np.array(imm & amask), aw))
        for a, b in ([(0, n)] if bug == "alu_ignores_order" else _segments(d, s, use_imm, depth)):
            dd = d[a:b]
            x = _signed(acc2[dd], aw)
            y = np.full_like(x, imm) if use_imm else _signed(acc2[s[a:b]], aw)
            acc2[dd] = (alu_fn(aop, x, y) & amask).astype(acc.dtype)
        finish_nest(S, I)
        return n

    def vta_loops(S, budget):
        op = S["vta_child_op"]
        if op in load_buf:
            return load(S, budget, load_buf[op])
        if op == C_STORE:
            return store(S, budget)
        if op == C_GEMM_RESET or op == C_GEMM:
            return gemm(S, budget, op == C_GEMM_RESET)
        if op in alu_op:
            return alu(S, budget, alu_op[op])
        return None

    return vta_loops


def _segments(d: np.ndarray, s: np.ndarray, use_imm: bool, depth: int) -> list[tuple[int, int]]:
    """Split the ALU steps (destination rows ``d``, source rows ``s``, program order) into
    consecutive ranges in which no step writes a row written earlier in its range, nor (a register
    operand) reads a row written earlier in its range: each range then equals its steps run in
    order, all reading the accumulator as the range found it."""
    n = d.size
    first = np.full(depth, n, np.int64)
    rows, at = np.unique(d, return_index=True)
    first[rows] = at                                    # first step writing each row
    t = np.arange(n)
    if np.array_equal(first[d], t) and (use_imm or bool((first[s] >= t).all())):
        return [(0, n)]
    out, start, written = [], 0, set()
    for k, (dk, sk) in enumerate(zip(d.tolist(), s.tolist())):
        if dk in written or (not use_imm and sk in written):
            out.append((start, k))
            start, written = k, set()
        written.add(dk)
    out.append((start, n))
    return out


__all__ = ["loop_summary", "SUMMARY_BUGS"]
