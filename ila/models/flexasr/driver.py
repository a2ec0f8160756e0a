"""End-to-end FlexASR operations: float32 tensors -> AdaptivFloat quantisation -> tensor assembly ->
program fragment -> MMIO commands -> ILA simulator -> read back -> float32.

Exponent biases (the 3-bit registers) are chosen on the host from max|x| of every input tensor
(:func:`~ila.numerics.adaptivfloat.choose_bias_reg`). The accelerator also needs the bias of its
*outputs* before running; like the 3LA drivers we pick it from a float32 evaluation of the
operation on the host (an ``out_bias`` argument overrides it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ila.commands import CommandTable
from ila.errors import D2AError
from ila.errors import SimulationError
from ila.numerics import adaptivfloat as af
from ila.sim import Simulator
from ila.models.flexasr import reference as ref
from ila.models.flexasr import constants as C
from ila.models.flexasr import programs  # noqa: F401  (registers the expanders)
from ila.models.flexasr.isa import (ShapeError, _check_hidden, _check_ts, _Alloc, assemble, ila_to_fragment,
                                    mmio_table, tensor_to_ila, tiled_bytes)
from ila.models.port import AccProgram


class FlexASRError(D2AError, RuntimeError):
    """A program the FlexASR model rejects at run time (e.g. an unmapped MMIO address)."""


class Program:
    """A FlexASR program as it ran: tensor assembly ``prog`` over the data library ``lib``. Its
    program fragment (the 3LA JSON object) is built on first use (:attr:`fragment`)."""

    def __init__(self, prog: list[dict], lib: dict):
        self.prog, self.lib = prog, lib
        self._fragment = None

    @property
    def fragment(self) -> dict:
        if self._fragment is None:
            self._fragment = ila_to_fragment(tensor_to_ila(self.prog, self.lib))
        return self._fragment


@dataclass
class Result:
    out: np.ndarray                  # float32 result read back
    codes: np.ndarray                # AdaptivFloat codes read back
    bias_reg: int                    # bias register of the result
    program: Program                 # the program that ran (tensor assembly and data library)
    inputs: dict = field(default_factory=dict)   # name -> (codes, bias_reg) of quantised inputs
    child_steps: int = 0
    clamped: bool = False            # an input's exponent-bias register was clamped (values saturated/flushed)

    @property
    def fragment(self) -> dict:
        """The program fragment that ran (3LA JSON object)."""
        return self.program.fragment


def _modes(cmds: list[dict]) -> list[str]:
    return ["Q" if c.get("wait_irq") else "R" if c.get("if_axi_rd") else "W" for c in cmds]


class Runner:
    """A simulator of the FlexASR model executing MMIO command streams."""

    def __init__(self, model=None):
        from ila.models.flexasr import shared_model
        self.model = model or shared_model()
        self.sim = Simulator(self.model)

    def execute(self, cmds, modes=None) -> list[np.ndarray]:
        """Run commands (a list of dicts from :func:`~ila.models.flexasr.isa.fragment_to_mmio`, or a
        :class:`~ila.commands.CommandTable` with its ``modes`` from
        :func:`~ila.models.flexasr.isa.mmio_table`); return the 16 data bytes of every read
        (:func:`execute`)."""
        return execute(self.sim, cmds, modes)

    def run(self, prog, lib) -> tuple[Program, list[np.ndarray]]:
        """Run tensor assembly ``prog`` over numeric data library ``lib`` (MMIO commands from
        :func:`~ila.models.flexasr.isa.mmio_table`) from the reset state, as every program runs;
        return the program and the read data."""
        self.sim.reset()
        cmds, modes = mmio_table(prog, lib)
        before = self.sim.child_steps
        reads = self.execute(cmds, modes)
        self.last_child_steps = self.sim.child_steps - before
        return Program(prog, lib), reads


def modes_of(cmds) -> list[str] | np.ndarray:
    """The fragment mode ("W", "R" or "Q") of every command: a list of dicts (``wait_irq`` marks a
    "Q"), or a CommandTable (a row that neither writes nor reads is a "Q")."""
    if isinstance(cmds, CommandTable):
        wr = np.asarray(cmds.columns.get("if_axi_wr", np.zeros(len(cmds), np.int64)))
        rd = np.asarray(cmds.columns.get("if_axi_rd", np.zeros(len(cmds), np.int64)))
        return np.where(rd != 0, "R", np.where(wr != 0, "W", "Q"))
    return _modes(cmds)


def execute(sim: Simulator, cmds, modes=None) -> list[np.ndarray]:
    """Run a FlexASR command stream on ``sim`` (from its current state); return the 16 data bytes of
    every read, in order. ``modes`` (see :func:`modes_of`, computed when None) groups the commands
    into runs of writes and reads executed as batches; a ``wait_irq`` command ("Q") checks the
    interrupt. In a CommandTable, runs of buffer stores and of global-buffer loads are applied at
    once (:mod:`ila.models.flexasr.beats`, checked equal to stepping them). Raises FlexASRError for
    a command no instruction decodes (an unmapped address, a unit started unconfigured) or a wait
    on an interrupt that did not come."""
    from ila.models.flexasr.beats import STORE_WINDOWS, load_reads, locate, store_writes
    modes = np.asarray(modes_of(cmds) if modes is None else modes)
    total = len(cmds)
    reads = []
    cuts = [0, *(np.flatnonzero(modes[1:] != modes[:-1]) + 1).tolist(), total] if total else [0]
    table = isinstance(cmds, CommandTable)
    if table:
        addr = np.asarray(cmds.columns.get("addr_in", np.zeros(total, np.int64)), np.int64)
        stored = locate(addr, STORE_WINDOWS)[0] >= 0
    for n, end in zip(cuts, cuts[1:]):
        kind = modes[n]
        if kind == "Q":
            for k in range(n, end):
                if sim.state["top_interrupt_request"] != 1:
                    raise FlexASRError(f"command {k}: waiting for the interrupt, but the operation did not finish")
            continue
        before = sim.steps
        try:
            if kind == "R":
                got = load_reads(sim, cmds[n:end]) if table else None
                if got is None:
                    _, seen = sim.run(cmds[n:end], observe=READ_DATA)
                    got = [np.array(v, dtype=np.uint8) for v in seen]
                reads += got
            elif table:
                sub = [n, *(n + 1 + np.flatnonzero(stored[n + 1:end] != stored[n:end - 1])).tolist(), end]
                for i, j in zip(sub, sub[1:]):
                    done = store_writes(sim, cmds[i:j]) if stored[i] else 0
                    if i + done < j:
                        sim.run(cmds[i + done:j])
            else:
                sim.run(cmds[n:end])
        except SimulationError as e:
            if "no instruction" in str(e):
                _unmapped(cmds, n + sim.steps - before, e)
            raise
    return reads


def _unmapped(cmds, n: int, e: Exception):
    cmd = cmds[n]                  # the command no instruction decodes (it did not count)
    a = cmd.get("addr_in", 0)
    kind = "write to" if cmd.get("if_axi_wr") else "read from"
    from ila.models.flexasr.isa import START_ADDR
    if cmd.get("if_axi_wr") and a in START_ADDR.values():
        unit = {C.START_GB_CONTROL: "GB control", C.START_LAYER_REDUCE: "LayerReduce",
                C.START_LAYER_NORM: "LayerNorm", C.START_ZERO_PADDING: "zero padding",
                C.START_ATTENTION: "attention"}.get(a, f"unit at {a:#010x}")
        raise FlexASRError(f"command {n}: start of the {unit} unit at {a:#010x}, which is not "
                           f"configured (write its configuration with is_valid = 1 first)") from e
    raise FlexASRError(f"command {n}: MMIO {kind} unmapped address {a:#010x} "
                       f"(no FlexASR instruction decodes it)") from e


_RUNNER: Runner | None = None


def runner() -> Runner:
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = Runner()
    return _RUNNER


def _q(x, bias=None, flags: list | None = None):
    """AdaptivFloat codes and bias register of float tensor ``x`` (``bias`` None: chosen from its
    range); appends to ``flags`` whether the register was clamped (values saturated or flushed;
    an AdaptivFloatClampWarning is also issued). NumericsError for NaN/inf."""
    from ila.models.flexasr.quantcache import quantize
    codes, br, clamped = quantize(x, bias)          # memoised by content (weights recur call after call)
    if flags is not None:
        flags.append(clamped)
    return codes, br


READ_DATA = tuple(f"data_out_{k}" for k in range(16))   # the states holding an MMIO read's 16 bytes


def read_word(state) -> np.ndarray:
    """The 16 data bytes of the MMIO read that just executed, from the model state (a mapping of
    state names to ints in the simulator, or to terms in symbolic execution)."""
    return np.array([state[name] for name in READ_DATA], dtype=object)


def readback(reads, T, nv) -> np.ndarray:
    """The [T, 16 nv] result tensor from the reads of a ``load_act`` of T timesteps and nv vectors,
    in the order they were emitted (timestep-major, 16 bytes each). Elements are ints (uint8
    codes) or terms (proofs)."""
    out = np.concatenate([np.asarray(r) for r in reads]).reshape(T, nv * 16)
    return out if out.dtype == object else out.astype(np.uint8)


def _readback(reads, T, nv):
    return readback(reads, T, nv)


def _finish(r: Runner, program: Program, reads, T, nv, br, inputs, clamped: bool = False) -> Result:
    codes = _readback(reads, T, nv)
    return Result(af.dequantize(codes, br), codes, br, program, inputs, r.last_child_steps, clamped)


@dataclass
class Parts:
    """One FlexASR operation as its driver builds it: tensor assembly ``prog`` over the data library
    ``lib`` (uint8 codes), and what its read-back needs: the result's ``T`` timesteps and ``nv``
    vectors (of the last ``load_act``), its exponent-bias register ``bias_reg``, the quantised
    ``inputs`` (name -> (codes, bias register)), whether an input's register was ``clamped``, and
    for operations whose result is not one ``load_act`` a custom ``out(reads)``."""
    prog: list
    lib: dict
    T: int
    nv: int
    bias_reg: int
    inputs: dict
    clamped: bool = False
    out: object = None

    def result(self, reads) -> np.ndarray:
        """The float32 result from the data of the stream's reads, in order."""
        if self.out is not None:
            return self.out(reads)
        return af.dequantize(_readback(reads, self.T, self.nv), self.bias_reg)

    def program(self) -> AccProgram:
        """The emitted stream (the vectorised builder :func:`~ila.models.flexasr.isa.mmio_table`) with
        its read-back; ``canonical`` builds the same stream through the element path the proofs run
        (tensor assembly -> ILA assembly -> fragment -> commands)."""
        cmds, _ = mmio_table(self.prog, self.lib)
        prog, lib = self.prog, self.lib
        return AccProgram(cmds, self.result, canonical=lambda: assemble(prog, lib)[1],
                          info={"bias_reg": self.bias_reg, "clamped": self.clamped, "parts": self})

    def run(self, r: "Runner | None" = None) -> Result:
        """Run on ``r`` (default: the shared runner, from the reset state) and read back."""
        r = r or runner()
        program, reads = r.run(self.prog, self.lib)
        res = _finish(r, program, reads, self.T, self.nv, self.bias_reg, self.inputs, self.clamped)
        if self.out is not None:
            res.out = self.out(reads)
        return res


# ----------------------------------------------------------------------------- pooling
def pool_program(T, nv, mode: str = "max", *, transfers: bool = True) -> list[dict]:
    """Tensor assembly of temporal pooling over the [T, 16 nv] tensor ``x`` of the data library:
    store x (tiled, GB memory index 0 at base 0), LayerReduce in place, read back the T/2 result
    timesteps. ``transfers=False``: the configuration and start only (proofs over symbolic sizes,
    where T and nv are terms)."""
    op = {"max": "maxp", "mean": "meanp"}[mode]
    pool = {"name": op, "num_ts": T, "num_v": nv, "base": 0}
    if not transfers:
        return [pool]
    return [{"name": "store_act", "tensor": "x", "base": 0}, pool,
            {"name": "load_act", "num_ts": T // 2, "num_v": nv, "base": 0}]


def pool_chain_program(T, nv, k: int, mode: str = "max") -> list[dict]:
    """Tensor assembly of ``k`` temporal poolings in a row over the [T, 16 nv] tensor ``x`` with
    the data left in the global buffer between them (paper Figure 7 (f)): one store, k LayerReduce
    runs in place (timesteps T, T/2, ..., each result over the first half of its input, in the
    same tiled layout, whose offsets do not depend on T), one read-back of the T / 2^k result
    timesteps. ``k = 1`` is :func:`pool_program`."""
    op = {"max": "maxp", "mean": "meanp"}[mode]
    prog = [{"name": "store_act", "tensor": "x", "base": 0}]
    for j in range(k):
        prog.append({"name": op, "num_ts": T >> j, "num_v": nv, "base": 0})
    return prog + [{"name": "load_act", "num_ts": T >> k, "num_v": nv, "base": 0}]


def _pool_operand(x, k: int, mode: str, codes, bias_reg, flags: list):
    """The checked operand of ``k`` temporal poolings: (codes [T, H] uint8, bias register, T,
    nv = H/16). ShapeError for a non-matrix, a hidden size or T the unit cannot take, T not
    divisible by 2^k, or a tensor overflowing the 1 MiB GB large buffer."""
    if codes is None:
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2:
            raise ShapeError(f"pooling takes a [timesteps, hidden] tensor, got shape {x.shape}")
        codes, bias_reg = _q(x, bias_reg, flags)
    T, H = codes.shape
    _check_hidden(H, "hidden size")
    _check_ts(T)
    if k == 1 and T % 2:
        raise ShapeError(f"temporal {mode}pool needs an even number of timesteps, got {T}")
    if k < 1 or T % (1 << k):
        raise ShapeError(f"{k} chained {mode}pools need the timesteps T={T} divisible by {1 << k}")
    if tiled_bytes(T, H // 16) > C.GB_LARGE_SIZE:
        raise ShapeError(f"a [{T}, {H}] tensor needs {tiled_bytes(T, H // 16)} bytes: the 1 MiB GB large buffer overflows")
    return codes, bias_reg, T, H // 16


def pool_parts(x, k: int = 1, mode: str = "max", *, codes=None, bias_reg=None) -> Parts:
    """``k`` temporal max/mean poolings (window (2,1), stride (2,1)) of x[T, H] in one program
    (:func:`pool_program`, :func:`pool_chain_program`); ``codes``/``bias_reg`` give already-quantised
    input. ShapeError for shapes the unit cannot take (naming T and k)."""
    flags: list = []
    codes, bias_reg, T, nv = _pool_operand(x, k, mode, codes, bias_reg, flags)
    prog = pool_program(T, nv, mode) if k == 1 else pool_chain_program(T, nv, k, mode)
    return Parts(prog, {"x": codes}, T >> k, nv, bias_reg, {"x": (codes, bias_reg)}, any(flags))


def run_pool_chain(x, k: int, mode: str = "max", *, r: Runner | None = None) -> Result:
    """``k`` temporal poolings of x[T, H] in one program (:func:`pool_chain_program`); T must be
    divisible by 2^k. ShapeError otherwise (naming T and k)."""
    return pool_parts(x, k, mode).run(r)


def run_pool(x, mode: str = "max", *, codes=None, bias_reg=None, r: Runner | None = None) -> Result:
    """Temporal max/mean pooling, window (2,1) stride (2,1), over x[T, H]. ``codes``/``bias_reg``
    give already-quantised input."""
    return pool_parts(x, 1, mode, codes=codes, bias_reg=bias_reg).run(r)


# ----------------------------------------------------------------------------- PE operations
def _gb_two(T, nvi, nvo):
    al = _Alloc()
    al.add(tiled_bytes(T, nvi), "input tensor")
    al.add(tiled_bytes(T, nvo), "output tensor")
    return al.bases


def _check_linear(xs: tuple, ws: tuple) -> None:
    if len(xs) != 2 or len(ws) != 2 or xs[1] != ws[1]:
        raise ShapeError(f"linear layer needs x[T, I] and w[O, I], got {xs} and {ws}")
    _check_hidden(xs[1], "input size")
    _check_hidden(ws[0], "output size")
    _check_ts(xs[0])
    if ws[0] // 16 % C.NUM_PE:
        raise ShapeError(f"linear-layer output size = {ws[0]}: its {ws[0] // 16} vectors must split evenly over "
                         f"the 4 PEs (a multiple of 64 values)")


def linear_program(xq, wq, bq, *, bx: int, bw: int, bb: int, out_bias: int, pe_images=None) -> tuple[list, dict]:
    """The tensor-assembly program and data library of y[T, O] = x[T, I] @ w[O, I].T + b on the PEs,
    from AdaptivFloat codes (uint8) ``xq`` [T, I], ``wq`` [O, I], ``bq`` [O] (or None: no bias) and
    the 3-bit exponent-bias registers of x, w, b and the output. ``pe_images(wq, bq)`` makes the
    four PE weight-buffer images (default :func:`programs.linear_pe_images`). Raises ShapeError for
    sizes the PEs cannot run (I, O multiples of 16, O/16 a multiple of 4, T in 1..65535)."""
    xq, wq = np.asarray(xq), np.asarray(wq)
    _check_linear(xq.shape, wq.shape)
    T, I = xq.shape
    O = wq.shape[0]
    base_in, base_out = _gb_two(T, I // 16, O // 16)
    if pe_images is None:
        from ila.models.flexasr.programs import linear_pe_images as pe_images
    imgs = pe_images(wq, bq)
    lib = {"x": xq} | {f"w{p}": imgs[p] for p in range(C.NUM_PE)}
    prog = [{"name": "store_pe", "pe": p, "tensor": f"w{p}"} for p in range(C.NUM_PE)]
    prog += [{"name": "store_act", "tensor": "x", "base": base_in},
             {"name": "linear_layer", "num_ts": T, "num_v_in": I // 16, "num_v_out": O // 16,
              "is_bias": int(bq is not None), "adpbias_wgt": bw, "adpbias_inp": bx, "adpbias_bias": bb,
              "adpbias_out": out_bias, "base_in": base_in, "base_out": base_out},
             {"name": "load_act", "num_ts": T, "num_v": O // 16, "base": base_out}]
    return prog, lib


def linear_parts(x, w, b=None, *, out_bias=None) -> Parts:
    """y[T, O] = x[T, I] @ w[O, I].T + b on the PEs: quantise x, w, b (bias registers from their
    ranges), the output register from the float32 host evaluation unless ``out_bias`` is given."""
    flags: list = []
    x, w = np.asarray(x, np.float32), np.asarray(w, np.float32)
    _check_linear(x.shape, w.shape)
    T, O = x.shape[0], w.shape[0]
    xq, bx = _q(x, None, flags)
    wq, bw = _q(w, None, flags)
    bq, bb = _q(b, None, flags) if b is not None else (None, 0)
    if out_bias is None:
        out_bias, _ = af.choose_bias_reg(ref.linear_layer(x, w, b))
    prog, lib = linear_program(xq, wq, bq, bx=bx, bw=bw, bb=bb, out_bias=out_bias)
    return Parts(prog, lib, T, O // 16, out_bias, {"x": (xq, bx), "w": (wq, bw), "b": (bq, bb)}, any(flags))


def run_linear(x, w, b=None, *, out_bias=None, r: Runner | None = None) -> Result:
    """y[T, O] = x[T, I] @ w[O, I].T + b on the PEs."""
    return linear_parts(x, w, b, out_bias=out_bias).run(r)


def lstm_parts(x, w_ih, w_hh, b=None, *, out_bias=None) -> Parts:
    """One LSTM layer (PyTorch gate order in the weights, zero initial state) on the PEs."""
    flags: list = []
    x, w_ih, w_hh = (np.asarray(a, np.float32) for a in (x, w_ih, w_hh))
    T, I = x.shape
    H = w_hh.shape[1]
    if w_ih.shape != (4 * H, I) or w_hh.shape != (4 * H, H):
        raise ShapeError(f"LSTM needs w_ih[4H, I] and w_hh[4H, H], got {w_ih.shape} and {w_hh.shape}")
    _check_hidden(I, "input size")
    _check_hidden(H, "hidden size")
    _check_ts(T)
    if H // 16 % C.NUM_PE:
        raise ShapeError(f"LSTM hidden size = {H}: its {H // 16} vectors must split evenly over the 4 PEs "
                         f"(a multiple of 64 values)")
    xq, bx = _q(x, None, flags)
    wiq, bwi = _q(w_ih, None, flags)
    whq, bwh = _q(w_hh, None, flags)
    bq, bb = _q(b, None, flags) if b is not None else (None, 0)
    if out_bias is None:
        out_bias, _ = af.choose_bias_reg(ref.lstm_layer(x, w_ih, w_hh, b))
    base_in, base_out = _gb_two(T, I // 16, H // 16)
    from ila.models.flexasr.programs import lstm_pe_images
    imgs = lstm_pe_images(wiq, whq, bq)
    lib = {"x": xq} | {f"w{p}": imgs[p] for p in range(C.NUM_PE)}
    prog = [{"name": "store_pe", "pe": p, "tensor": f"w{p}"} for p in range(C.NUM_PE)]
    prog += [{"name": "store_act", "tensor": "x", "base": base_in},
             {"name": "lstm_layer", "num_ts": T, "num_v_in": I // 16, "num_v_out": H // 16,
              "is_bias": int(b is not None), "adpbias_wgt_i": bwi, "adpbias_wgt_h": bwh, "adpbias_inp": bx,
              "adpbias_bias": bb, "adpbias_out": out_bias, "base_in": base_in, "base_out": base_out},
             {"name": "load_act", "num_ts": T, "num_v": H // 16, "base": base_out}]
    return Parts(prog, lib, T, H // 16, out_bias, {"x": (xq, bx)}, any(flags))


def run_lstm(x, w_ih, w_hh, b=None, *, out_bias=None, r: Runner | None = None) -> Result:
    """One LSTM layer (PyTorch gate order in the weights, zero initial state) on the PEs."""
    return lstm_parts(x, w_ih, w_hh, b, out_bias=out_bias).run(r)


# ----------------------------------------------------------------------------- GB operations
def _as_2d(x, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ShapeError(f"{what} takes a [timesteps, hidden] tensor, got shape {x.shape}")
    T, H = x.shape
    _check_hidden(H, "hidden size")
    _check_ts(T)
    if tiled_bytes(T, H // 16) > C.GB_LARGE_SIZE:
        raise ShapeError(f"a [{T}, {H}] tensor needs {tiled_bytes(T, H // 16)} bytes: the 1 MiB GB large buffer overflows")
    return x


def layernorm_parts(x, gamma=None, beta=None, *, bias_reg=None) -> Parts:
    """LayerNorm of every timestep of x[T, H] over H (y = (x - mean) / std * gamma + beta), in place
    in the GB. The output shares the input's bias register (adpbias_1), so by default it is chosen
    from max |x| and max |reference output| together."""
    flags: list = []
    x = _as_2d(x, "layernorm")
    T, H = x.shape
    nv = H // 16
    gamma = np.ones(H, np.float32) if gamma is None else np.asarray(gamma, np.float32)
    beta = np.zeros(H, np.float32) if beta is None else np.asarray(beta, np.float32)
    if gamma.shape != (H,) or beta.shape != (H,):
        raise ShapeError(f"layernorm gamma and beta must have shape ({H},), got {gamma.shape} and {beta.shape}")
    if bias_reg is None:
        bias_reg, _ = af.choose_bias_reg(np.concatenate([x.ravel(), ref.layernorm(x, gamma, beta).ravel()]))
    xq, bx = _q(x, bias_reg, flags)
    gq, bg = _q(gamma, None, flags)
    betq, bb = _q(beta, None, flags)
    lib = {"x": xq, "gamma": gq, "beta": betq}
    prog = [{"name": "store_act", "tensor": "x", "base": 0},
            {"name": "store_small", "tensor": "gamma", "base": 0},
            {"name": "store_small", "tensor": "beta", "base": nv},
            {"name": "layernorm", "num_ts": T, "num_v": nv, "base_in": 0, "base_gamma": 0, "base_beta": nv,
             "adpbias_inp": bx, "adpbias_gamma": bg, "adpbias_beta": bb},
            {"name": "load_act", "num_ts": T, "num_v": nv, "base": 0}]
    return Parts(prog, lib, T, nv, bx, {"x": (xq, bx), "gamma": (gq, bg), "beta": (betq, bb)}, any(flags))


def run_layernorm(x, gamma=None, beta=None, *, bias_reg=None, r: Runner | None = None) -> Result:
    """LayerNorm of every timestep of x[T, H] (:func:`layernorm_parts`)."""
    return layernorm_parts(x, gamma, beta, bias_reg=bias_reg).run(r)


def attention_parts(enc, dec, *, out_bias=None, prob_bias=None) -> Parts:
    """out[H] = softmax(enc @ dec) @ enc for enc[T, H], dec[H] on the GB attention unit. T is padded
    with zero encoder rows to a multiple of 16 (the unit works on groups of 16 timesteps; a zero
    row gets the masked score 0xFC000000 and probability 0). The result has shape [H]; the
    softmax probabilities read back are in ``inputs["p"]`` of the :class:`Result`. The bias
    registers of the output (``out_bias``) and of the probabilities (``prob_bias``) default to
    choose_bias_reg of the float32 host evaluation; an argument overrides it."""
    flags: list = []
    enc = _as_2d(enc, "attention")
    dec = np.asarray(dec, np.float32)
    T, H = enc.shape
    nv = H // 16
    if dec.shape != (H,):
        raise ShapeError(f"attention decoder vector must have shape ({H},), got {dec.shape}")
    Tp = -(-T // 16) * 16
    eq, be = _q(enc, None, flags)
    dq, bd = _q(dec, None, flags)
    s = enc @ dec
    p_ref = np.exp(s - s.max())
    p_ref /= p_ref.sum()
    bp = af.choose_bias_reg(p_ref)[0] if prob_bias is None else int(prob_bias)
    bo = af.choose_bias_reg(ref.attention(enc, dec))[0] if out_bias is None else int(out_bias)
    enc_pad = np.zeros((Tp, H), np.uint8)
    enc_pad[:T] = eq
    base_prob = nv
    lib = {"enc": enc_pad, "dec": dq}
    prog = [{"name": "store_act", "tensor": "enc", "base": 0},
            {"name": "store_small", "tensor": "dec", "base": 0},
            {"name": "attention", "num_ts": Tp, "num_v": nv, "base_enc": 0, "base_dec": 0, "base_prob": base_prob,
             "adpbias_enc": be, "adpbias_dec": bd, "adpbias_prob": bp, "adpbias_out": bo},
            {"name": "load_small", "base": 0, "num_bytes": H},
            {"name": "load_small", "base": base_prob, "num_bytes": Tp}]
    return Parts(prog, lib, 1, nv, bo, {"enc": (eq, be), "dec": (dq, bd), "p": (None, bp)}, any(flags),
                 out=lambda reads: af.dequantize(np.concatenate(reads[:nv]), bo))


def run_attention(enc, dec, *, out_bias=None, prob_bias=None, r: Runner | None = None) -> Result:
    """The attention unit's out[H] (:func:`attention_parts`); ``Result.inputs["p"]`` holds the
    probability codes read back."""
    parts = attention_parts(enc, dec, out_bias=out_bias, prob_bias=prob_bias)
    r = r or runner()
    program, reads = r.run(parts.prog, parts.lib)
    nv, T = parts.nv, np.asarray(enc).shape[0]
    codes = np.concatenate(reads[:nv])
    pcodes = np.concatenate(reads[nv:])[:T]
    inputs = dict(parts.inputs, p=(pcodes, parts.inputs["p"][1]))
    return Result(af.dequantize(codes, parts.bias_reg), codes, parts.bias_reg, program, inputs, r.last_child_steps,
                  parts.clamped)


def run_zero_padding(x, t1: int, t2: int, *, codes=None, bias_reg=None, r: Runner | None = None) -> Result:
    """Zero timesteps t1 .. t2-1 of x[T, H] in place in the GB (ZeroPadding unit); returns all T rows."""
    flags: list = []
    r = r or runner()
    if codes is None:
        x = _as_2d(x, "zero padding")
        codes, bias_reg = _q(x, bias_reg, flags)
    T, H = codes.shape
    _check_hidden(H, "hidden size")
    nv = H // 16
    if not 0 <= t1 < t2 <= T:
        raise ShapeError(f"zero padding of timesteps [{t1}, {t2}) of a {T}-timestep tensor: need 0 <= t1 < t2 <= {T}")
    prog = [{"name": "store_act", "tensor": "x", "base": 0},
            {"name": "zero_padding", "num_v": nv, "num_ts_1": t1, "num_ts_2": t2, "base": 0},
            {"name": "load_act", "num_ts": T, "num_v": nv, "base": 0}]
    program, reads = r.run(prog, {"x": codes})
    return _finish(r, program, reads, T, nv, bias_reg, {"x": (codes, bias_reg)}, any(flags))
