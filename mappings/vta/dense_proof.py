"""Proof artefacts of ``vta.dense`` (issue 26): the int8 core of every pass bit-exact, the pass
tiling, and the host quantisation as the mapping's declared numerics.

**What is proved, and what is declared.** vta.dense's IR operator is a float32 ``nn.dense``.
Its declared numerics (:func:`mappings.vta.dense.reference_term`) are the IR operator computed
in the accelerator's order and rounding: both operands quantised on the host (``quantize``), the
exact integer product of the int8 codes, dequantised (``dequantize``). The host functions are the
same code in the runner and in the term, so the proofs are about the integer core:

    for ALL int8 codes qx[N, K], qw[M, K] (every int8 value, a superset of the codes
    ``quantize`` emits), the pass programs the mapping emits (``dense.pass_programs``: the driver's
    ``dense_program`` of every pass, each run from reset), read as the runner reads them (the
    accumulator SRAM at vta.gemm's output map of the pass's shape, placed at out[rows, cols] of
    the pass: ``dense.int_product``), equal the compiler-IR ``nn.dense`` over int32 of the codes
    (sign-extended; exact, no wrap-around: ``|sum| <= K * 2**14 <= 2**28``).

How far the term is from the float IR operator is measured by simulation (``--method sim|fuzz``:
the runner computes exactly the term, so its measured error is the term's), not proved.

**Pieces.** A pass is one program run from reset, so the proof of the whole shape is the
conjunction of one proof per pass and the tiling lemma (:func:`tiling_problems`: the passes
partition out[N, M], and pass (rows, cols) is generated from qx[rows], qw[cols]):

* :func:`pass_setup` -- BMC of one pass: the pass's exact MMIO stream (the real generator and
  packer on the symbols of the global tensors qx, qw) executed on the VTA ILA from reset, against
  the IR ``nn.dense`` of the pass's operand slices, compared at vta.gemm's declared accumulator
  entries of the pass shape. Bit-precise (no uninterpreted functions).
* :func:`proof_setup` -- the mapping's BMC setup (``--method bmc``): the setup of its only pass
  for shapes that run in one pass; a shape with several passes is refused (each pass is a BMC
  problem of its own, and no single stream resets between passes): its proof is the split proof
  of ``--method chc`` (:mod:`mappings.vta.gemm_chc`).

``covers``: codegen-bytes, order, configuration-fields, model-loops (:data:`mappings.vta.common.COVERS`;
no read-back claim: the runner reads the int32 results from the simulator's accumulator SRAM, which
the proof compares at the same entries, but that is not a host-visible read of the emitted program,
see :mod:`mappings.vta.common`). Seeded bugs: ``verify/mutations/vta.py`` (``dense_mutations``).
"""
from __future__ import annotations

import numpy as np

from mappings.base import MappingError
from mappings.vta import common as V
from mappings.vta import dense as D
from mappings.vta import gemm as G


def symbolic_codes(shape: dict) -> tuple[np.ndarray, np.ndarray]:
    """qx[N, K] and qw[M, K] as tensors of fresh 8-bit symbols ``x_<k>``, ``w_<k>`` (flat index k
    of the whole tensor, so every pass's symbols are the global tensors' own)."""
    return (V.symbolic_tensor("x", (shape["N"], shape["K"]), 8),
            V.symbolic_tensor("w", (shape["M"], shape["K"]), 8))


def pass_setup(shape: dict, index: int, codes: tuple | None = None):
    """The BMC setup of pass ``index`` (run order of ``dense.passes``) at ``shape``: module
    docstring. ``codes``: the symbolic (qx, qw) to use (default :func:`symbolic_codes`)."""
    D.MAPPING.check_shape(shape)
    qx, qw = codes if codes is not None else symbolic_codes(shape)
    progs = D.pass_programs(shape, qx, qw)
    if not 0 <= index < len(progs):
        raise MappingError(f"{D.NAME}: shape {shape} has {len(progs)} passes, no pass {index}")
    rows, cols, prog = progs[index]
    ps_shape = D.pass_shape(shape, rows, cols)
    frag = G.ir_fragment(ps_shape)
    t = {"x": qx[rows], "w": qw[cols]}
    M = ps_shape["M"]
    return V.proof_setup(frag, prog, t, out_entries=G.acc_index(ps_shape),
                         describe=lambda k: f"out[{rows.start + k // M}, {cols.start + k % M}] (pass {index})")


def proof_setup(shape: dict, *, numerics: str = "exact"):
    """``--method bmc``: the setup of the only pass of a one-pass shape (module docstring).
    ``numerics`` is ignored (bit-precise either way). Raises MappingError for a shape with several
    passes, naming the split proof."""
    n = len(D.passes(shape))
    if n != 1:
        raise MappingError(f"{D.NAME}: shape {shape} runs in {n} passes, each from reset; BMC takes one stream. "
                           f"Use the split proof: python -m verify.mapping {D.NAME} --method chc --shape "
                           f"{'x'.join(str(shape[d]) for d in ('N', 'K', 'M'))}")
    return pass_setup(shape, 0)


def tiling_problems(shape: dict) -> list[str]:
    """The tiling lemma at ``shape`` (fixed shapes; concrete index arithmetic, no data): the passes of
    ``dense.passes`` cover every out[n, m] exactly once, every pass satisfies vta.gemm's side
    conditions (so it is vta.gemm's program at the pass's shape), and the program ``dense.pass_programs``
    generates for pass (rows, cols) is ``dense_program(qx[rows], qw[cols])``: its data bytes are the
    symbols of exactly those rows (checked on symbolic codes: every data symbol of the pass's DRAM
    image belongs to qx[rows] or qw[cols], and every one of those occurs). Returns the violations
    (empty: the lemma holds)."""
    bad = []
    N, M = shape["N"], shape["M"]
    seen = np.zeros((N, M), np.int64)
    plist = D.passes(shape)
    for r, c in plist:
        seen[r, c] += 1
        try:
            G.MAPPING.check_shape(D.pass_shape(shape, r, c))
        except MappingError as e:
            bad.append(f"pass rows {r.start}:{r.stop} cols {c.start}:{c.stop}: {e}")
    if (seen != 1).any():
        n, m = np.argwhere(seen != 1)[0]
        bad.append(f"out[{n}, {m}] is computed by {seen[n, m]} passes, not exactly one")
    qx, qw = symbolic_codes(shape)
    want_all = {}
    for r, c in plist:
        want_all[(r.start, r.stop, c.start, c.stop)] = {s.uid for s in list(qx[r].reshape(-1)) + list(qw[c].reshape(-1))}
    for k, (r, c, prog) in enumerate(D.pass_programs(shape, qx, qw)):
        got = set()
        for t in prog.terms.values():
            got |= {n.uid for n in _vars(t)}
        want = want_all.get((r.start, r.stop, c.start, c.stop))
        if want is None or got != want:
            bad.append(f"pass {k} (rows {r.start}:{r.stop}, cols {c.start}:{c.stop}) holds the data of other rows "
                       f"than its own")
        if len(bad) >= 4:
            break
    return bad


def _vars(t):
    from ila.ops import Op
    from ila.walk import toposort
    return [n for n in toposort([t]) if n.op is Op.VAR]
