"""Fixed-point and small-integer numerics for HLSCNN and VTA, vectorised over numpy arrays.

Values are carried as *raw* signed integers (numpy ``int64``): a fixed-point number ``x`` of
format ``Q(total, frac)`` is stored as the integer ``round(x * 2**frac)``. Helpers convert raw
values to and from the unsigned bit patterns the ILA models keep in memories and registers.

HLSCNN formats (ac_fixed ``<total, int>`` with the sign counted in ``int``; see
``ILA_AND_ACCELERATORS.md`` §2.2):

=============  =====  ====  ====  ==========================================================
name           total  int   frac  use
=============  =====  ====  ====  ==========================================================
``ACT``        16     9     7     activations (inputs and conv outputs in the scratchpad)
``PSUM``       32     16    16    partial sums / accumulator
``OUT``        16     12    4     the documented output type (the conv path writes ``ACT``)
``WGT16``      16     2     14    weights of the updated (16-bit weight) design
``WGT8``       8      2     6     weights of the original design; the datapath widens an
                                  8-bit weight to ``WGT16`` by appending a zero byte
=============  =====  ====  ====  ==========================================================

Quantisation modes (our reading of the ac_fixed types; the HLSCNN typedefs themselves are not in
the sources we could read, so these are modelling choices, applied identically by the ILA model
and by the independent reference):

* host float -> fixed (:meth:`FixedFormat.quantize`): round to nearest, ties to even, then
  saturate to the format's range;
* multiply-accumulate into ``PSUM`` (``conv_psum_nornd_t``): the exact product
  (frac 14 + 7 = 21 bits) is truncated toward -inf to 16 fraction bits and the sum wraps at
  32 bits (ac_fixed defaults AC_TRN / AC_WRAP);
* ``PSUM -> ACT`` after a MAC (``conv_activation_rnd_t``): round half up (AC_RND), saturate
  (AC_SAT);
* ``ACT + ACT -> PSUM``, ``PSUM + bias``: exact (the bias is in weight format, 14 fraction bits);
* final ``PSUM -> ACT`` store (``conv_activation_t``): truncate toward -inf, wrap at 16 bits.

VTA helpers: two's-complement wrap to 8/32 bits, arithmetic shifts with VTA's SHR convention.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# --------------------------------------------------------------------------- bit patterns
def wrap(x, bits: int) -> np.ndarray:
    """Two's-complement wrap of integers to ``bits`` bits (signed result, int64)."""
    x = np.asarray(x).astype(np.int64)
    if bits >= 64:
        return x
    half = np.int64(1) << np.int64(bits - 1)
    m = (np.int64(1) << np.int64(bits)) - 1
    return ((x + half) & m) - half


def saturate(x, bits: int) -> np.ndarray:
    """Clamp integers to the signed range of ``bits`` bits (int64)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.clip(np.asarray(x).astype(np.int64), lo, hi)


def to_bits(x, bits: int) -> np.ndarray:
    """Signed raw integers -> unsigned bit patterns of ``bits`` bits (uint64)."""
    x = wrap(x, bits)
    return (x & ((1 << bits) - 1)).astype(np.uint64)


def from_bits(u, bits: int) -> np.ndarray:
    """Unsigned bit patterns of ``bits`` bits -> signed raw integers (int64)."""
    u = np.asarray(u).astype(np.uint64) & np.uint64((1 << bits) - 1)
    return wrap(u.astype(np.int64), bits)


def floor_shift(x, k: int) -> np.ndarray:
    """Arithmetic right shift (truncation toward -inf) by ``k >= 0`` bits."""
    return np.asarray(x).astype(np.int64) >> np.int64(k)


def round_half_up_shift(x, k: int) -> np.ndarray:
    """Right shift by ``k`` bits rounding to nearest, ties toward +inf (ac_fixed AC_RND)."""
    x = np.asarray(x).astype(np.int64)
    if k == 0:
        return x
    return (x + (np.int64(1) << np.int64(k - 1))) >> np.int64(k)


# --------------------------------------------------------------------------- formats
@dataclass(frozen=True)
class FixedFormat:
    """A signed two's-complement fixed-point format with ``total`` bits, ``frac`` of them fractional."""

    name: str
    total: int
    frac: int

    def __post_init__(self):
        if not (1 <= self.total <= 63) or not (0 <= self.frac <= self.total + 16):
            raise ValueError(f"bad fixed-point format {self.name}: total={self.total}, frac={self.frac}")

    @property
    def int_bits(self) -> int:
        """Integer bits including the sign (ac_fixed's ``I``)."""
        return self.total - self.frac

    @property
    def raw_min(self) -> int:
        return -(1 << (self.total - 1))

    @property
    def raw_max(self) -> int:
        return (1 << (self.total - 1)) - 1

    @property
    def lsb(self) -> float:
        return 2.0 ** -self.frac

    @property
    def max_value(self) -> float:
        return self.raw_max * self.lsb

    @property
    def min_value(self) -> float:
        return self.raw_min * self.lsb

    def quantize(self, x) -> np.ndarray:
        """Float -> raw integers: round to nearest (ties to even), saturate. NaN is an error."""
        x = np.asarray(x, dtype=np.float64)
        if np.isnan(x).any():
            raise ValueError(f"cannot quantise NaN to {self.name}")
        scaled = np.rint(x * (2.0 ** self.frac))
        return np.clip(scaled, self.raw_min, self.raw_max).astype(np.int64)

    def to_float(self, raw) -> np.ndarray:
        return np.asarray(raw).astype(np.float64) * self.lsb

    def round_trip(self, x) -> np.ndarray:
        """``to_float(quantize(x))``: the value the hardware sees for a float."""
        return self.to_float(self.quantize(x))

    def to_bits(self, raw) -> np.ndarray:
        return to_bits(raw, self.total)

    def from_bits(self, u) -> np.ndarray:
        return from_bits(u, self.total)


ACT = FixedFormat("act", 16, 7)
PSUM = FixedFormat("psum", 32, 16)
OUT = FixedFormat("out", 16, 4)
WGT16 = FixedFormat("wgt16", 16, 14)
WGT8 = FixedFormat("wgt8", 8, 6)


def weight_format(bits: int) -> FixedFormat:
    """The HLSCNN weight format for an 8-bit (original) or 16-bit (updated) design."""
    if bits == 8:
        return WGT8
    if bits == 16:
        return WGT16
    raise ValueError(f"HLSCNN weights are 8 or 16 bits wide, got {bits!r}")


def widen_weight8(raw8) -> np.ndarray:
    """An 8-bit weight (6 frac) as the 16-bit datapath weight (14 frac): append a zero byte."""
    return wrap(np.asarray(raw8).astype(np.int64) << 8, 16)


# --------------------------------------------------------------------------- HLSCNN datapath ops
# All take and return raw signed integers (int64 arrays or scalars).
_MAC_SHIFT = WGT16.frac + ACT.frac - PSUM.frac          # 21 - 16 = 5
_PSUM_TO_ACT = PSUM.frac - ACT.frac                     # 9
_BIAS_SHIFT = PSUM.frac - WGT16.frac                    # 2


def conv_mac(psum, w16, a16) -> np.ndarray:
    """``psum + w*a`` in PSUM: product truncated (toward -inf) to 16 frac bits, 32-bit wrap."""
    prod = np.asarray(w16).astype(np.int64) * np.asarray(a16).astype(np.int64)
    return wrap(np.asarray(psum).astype(np.int64) + floor_shift(prod, _MAC_SHIFT), PSUM.total)


def psum_to_act_rnd(psum) -> np.ndarray:
    """PSUM -> ACT after the MAC: round half up, saturate to 16 bits."""
    return saturate(round_half_up_shift(psum, _PSUM_TO_ACT), ACT.total)


def act_add_psum(a, b) -> np.ndarray:
    """ACT + ACT -> PSUM, exact."""
    s = np.asarray(a).astype(np.int64) + np.asarray(b).astype(np.int64)
    return wrap(s << np.int64(_PSUM_TO_ACT), PSUM.total)


def psum_add_bias(psum, bias_w16) -> np.ndarray:
    """PSUM + bias (weight format, 14 frac) -> PSUM, exact up to the 32-bit wrap."""
    b = np.asarray(bias_w16).astype(np.int64) << np.int64(_BIAS_SHIFT)
    return wrap(np.asarray(psum).astype(np.int64) + b, PSUM.total)


def psum_relu(psum) -> np.ndarray:
    return np.maximum(np.asarray(psum).astype(np.int64), 0)


def psum_to_act_trn(psum) -> np.ndarray:
    """Final PSUM -> ACT: truncate toward -inf, wrap to 16 bits."""
    return wrap(floor_shift(psum, _PSUM_TO_ACT), ACT.total)


# --------------------------------------------------------------------------- VTA integer helpers
def wrap_int8(x) -> np.ndarray:
    return wrap(x, 8)


def wrap_int32(x) -> np.ndarray:
    return wrap(x, 32)


def sat_int8(x) -> np.ndarray:
    return saturate(x, 8)


def vta_shr(x, y) -> np.ndarray:
    """VTA ALU SHR on int32 lanes: ``y >= 0 ? x >> y (arithmetic) : x << -y``, wrapped to 32 bits.

    Shift counts of 32 or more (undefined in the C++ simulator) follow SMT-LIB bit-vector
    semantics: an arithmetic right shift fills with the sign, a left shift gives 0.
    """
    x = wrap_int32(x)
    y = wrap_int32(y)
    right = x >> np.minimum(np.maximum(y, 0), 63)
    left_count = np.minimum(np.maximum(-y, 0), 63)
    left = np.where(left_count >= 32, 0, wrap_int32(x << np.minimum(left_count, 31)))
    return np.where(y >= 0, right, left).astype(np.int64)


def relative_error(ref, out) -> float:
    """Frobenius-norm relative error ``||ref - out||_F / ||ref||_F`` (0 when both are zero)."""
    ref = np.asarray(ref, dtype=np.float64)
    out = np.asarray(out, dtype=np.float64)
    den = float(np.linalg.norm(ref))
    num = float(np.linalg.norm(ref - out))
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / den


__all__ = [
    "FixedFormat", "ACT", "PSUM", "OUT", "WGT16", "WGT8", "weight_format", "widen_weight8",
    "wrap", "saturate", "to_bits", "from_bits", "floor_shift", "round_half_up_shift",
    "conv_mac", "psum_to_act_rnd", "act_add_psum", "psum_add_bias", "psum_relu", "psum_to_act_trn",
    "wrap_int8", "wrap_int32", "sat_int8", "vta_shr", "relative_error",
]
