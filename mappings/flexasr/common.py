"""Pieces shared by the FlexASR mappings: side conditions from the FlexASR registers and buffers,
the tiled global-buffer refinement map, and edge-value inputs.

Every side condition here restates a limit the FlexASR model or its assembler enforces (the
assembler raises ``ShapeError`` past it), so a shape the mapping accepts is one the accelerator
runs. Sizes: GB large buffer 1 MiB (four memory indices), PE weight buffer 256 KiB per PE, PE core
output buffer 4096 rows, 8-bit ``num_vector`` and 16-bit ``num_timestep`` registers.
"""
from __future__ import annotations

import numpy as np

from ila.models.flexasr import constants as K
from ila.numerics import adaptivfloat as af
from mappings.base import DataCondition, SideCondition


def tiled_bytes(T: int, nv: int) -> int:
    return -(-T // 16) * 16 * nv * 16


def gb_address(t, v, i, nv):
    """The declared refinement map of the FlexASR mappings (the one tiling formula on the mapping
    side): GB large-buffer byte offset of element (t, 16 v + i) of a [T, 16 nv] tensor at base 0,
    16 ((t mod 16) + floor(t / 16) nv 16) + 256 v + i (reference §2.1). Works on ints, numpy arrays
    and 32-bit terms alike (:mod:`ila.generic`). The code generator (``isa.tiled_offsets``) and the
    model (``model.tiled_addr``) each implement the layout on their own side; proofs check both
    against this declaration, never against each other."""
    from ila import generic
    return 16 * (generic.low_bits(t, 4) + generic.lshr(t, 4) * nv * 16) + 256 * v + i


def tiled(T: int, H: int, base: int = 0) -> np.ndarray:
    """:func:`gb_address` of every element (t, h) of a [T, H] tensor, plus ``base`` (bytes)."""
    t = np.arange(T)[:, None]
    c = np.arange(H)[None, :]
    return base + gb_address(t, c // 16, c % 16, H // 16)


def vectors(dim: str, *, multiple: int = 16, what: str = "") -> tuple[SideCondition, ...]:
    what = what or dim
    out = [SideCondition(f"{dim} multiple of {multiple}", lambda s: s[dim] >= multiple and s[dim] % multiple == 0,
                         f"{what} must be a positive multiple of {multiple}" +
                         (" (FlexASR vectors hold 16 values)" if multiple == 16 else
                          " (its 16-value vectors split evenly over the 4 PEs)")),
           SideCondition(f"{dim} num_vector fits", lambda s: s[dim] // 16 <= 255,
                         f"{what}/16 must fit the 8-bit num_vector register (at most 255 vectors)")]
    return tuple(out)


def timesteps(dim: str = "T", *, even: bool = False) -> tuple[SideCondition, ...]:
    out = [SideCondition(f"{dim} num_timestep fits", lambda s: 1 <= s[dim] <= 0xFFFF,
                         f"the number of timesteps {dim} must be in 1..65535 (16-bit num_timestep register)")]
    if even:
        out.insert(0, SideCondition(f"{dim} even", lambda s: s[dim] % 2 == 0,
                                    f"temporal pooling pairs timesteps: {dim} must be even"))
    return tuple(out)


def gb_fits(*tensors) -> SideCondition:
    """The listed [T, H] tensors (pairs of dimension names) fit the GB large buffer together."""
    names = ", ".join(f"[{t}, {h}]" for t, h in tensors)
    return SideCondition("fits the GB large buffer",
                         lambda s: sum(tiled_bytes(s[t], s[h] // 16) for t, h in tensors) <= K.GB_LARGE_SIZE,
                         f"the tiled tensors {names} must fit the 1 MiB global-buffer large memory together")


def pe_weights_fit(bytes_per_pe, text: str) -> SideCondition:
    return SideCondition("fits the PE weight buffers", lambda s: bytes_per_pe(s) <= K.PE_WEIGHT_SIZE,
                         f"{text} must fit each PE's {K.PE_WEIGHT_SIZE}-byte weight buffer")


def saturating(shape, rng: np.random.Generator, bias_reg: int | None = None) -> np.ndarray:
    """Random signs at the largest AdaptivFloat magnitude (code 0x7F) of a bias register: every
    element sits at the top of the format's range."""
    br = int(rng.integers(0, 8)) if bias_reg is None else bias_reg
    codes = np.where(rng.integers(0, 2, shape) == 1, 0x7F, 0xFF)
    return af.dequantize(codes, br)


def normal(rng: np.random.Generator, shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# Output exponent bias with headroom. FlexASR's PE output conversion (Fixed2Adaptfloat) saturates
# a *negative* overflow to +max (a hardware quirk the model reproduces, see
# ila.numerics.adaptivfloat), so an output bias chosen from max|y| alone (values in
# (max_value, 2^k) overflow) can flip the sign of the largest negative outputs. The code
# generator therefore picks the bias from the host-side float32 evaluation with HEADROOM: the
# smallest register whose largest value exceeds HEADROOM * max|y| (covering the accelerator's
# own few-percent deviation from the float result), when the 3-bit register allows.
HEADROOM = 1.125


def out_bias(y) -> int:
    reg, _ = af.choose_bias_reg(y)
    amax = float(np.max(np.abs(np.asarray(y, dtype=np.float64)))) if np.size(y) else 0.0
    while reg < 7 and amax * HEADROOM > float(af.max_value(reg)):
        reg += 1
    return reg


def _clamped(shape: dict, inputs: dict) -> float:
    """1.0 when some float input tensor needs an exponent-bias register outside 0..7, else 0.0."""
    return float(any(af.choose_bias_reg(v)[1] for v in inputs.values()
                     if isinstance(v, np.ndarray) and v.dtype.kind == "f"))


# Every FlexASR mapping's data condition: the driver quantises each float input with a bias register
# chosen from its range (ila.numerics.adaptivfloat.choose_bias_reg); outside what 3 bits encode, the
# quantiser saturates or flushes silently in hardware, so such data is refused, not run.
AF_RANGE = DataCondition(
    "AdaptivFloat range", _clamped, 0.5,
    "max|x| of every input tensor must be 0 or within [2**-3, 2**5), the range the 3-bit exponent-bias register "
    "covers (outside it AdaptivFloat saturates large values or flushes small ones to zero)")


def mmio_port():
    """FlexASR's MMIO port for proofs: reads are ``if_axi_rd`` commands whose data is the driver's
    ``read_word``; the interrupt line is ``top_interrupt_request``."""
    from ila.models.flexasr.driver import read_word
    from mappings.base import MmioPort
    return MmioPort(is_read=lambda c: c.get("if_axi_rd") == 1, read_data=read_word, irq="top_interrupt_request")
