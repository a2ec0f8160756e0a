"""Proof artefacts of ``vta.dense_bias`` (issue 26): vta.dense's proof of the int8 core, tied to this
mapping's program by two lemmas.

vta.dense_bias runs ``vta.dense.int_program`` on the host-quantised codes of x and w and reads the
int32 result back through a host epilogue (dequantisation and the bias add,
:func:`mappings.vta.dense_bias.epilogue`). Its declared numerics
(:func:`mappings.vta.dense_bias.reference_term`): the codes' exact integer product, dequantised at
``s_x * s_w`` plus b in float64, one rounding to float32.

``--method chc`` (:func:`chc_spec`) is vta.dense's composite proof at the same shape
(:func:`mappings.vta.dense_proof.chc_spec`: every pass's phase proof for all int8 codes, bit-exact;
the tiling; every pass's stream is its piece's on its own operands; the read-back assembles the
passes') and two lemmas about this mapping's own code:

* ``stream``: for seeded random float inputs, the commands :func:`mappings.vta.dense_bias.program`
  emits are, command for command, ``vta.dense.int_program`` of the codes vta.dense's quantisation
  gives (so the proved stream is the one that runs, and on the codes the declared term uses);
* ``epilogue``: the program's read-back, fed random int32 reads (every lane of every read command,
  values within ``K * 127**2``, the largest a product sum reaches) equals ``float32(A * (s_x * s_w)
  + b)`` bit for bit, where A is ``int_program``'s own read-back of the same reads (the one the
  composite proves) and the formula is written here from the declared term. Float arithmetic on
  sampled accumulators: checked, not proved for all values.

A counterexample to a failing lemma is found by simulation against the declared term
(``verify.phases.simulate_counterexample``: the term is exact, so any difference is a bug).

``--method bmc`` is refused: a shape's stream is several passes, each from reset, and the lemmas
are not BMC queries; use the composite. Seeded bugs: ``verify/mutations/vta_dense_bias.py``.
"""
from __future__ import annotations

import numpy as np

from mappings.base import MappingError
from mappings.vta import dense as D
from mappings.vta import dense_bias as DB

SAMPLES = 3          # seeded random inputs per lemma


def _inputs(shape: dict, k: int) -> dict:
    return DB.random_inputs(shape, np.random.default_rng(1000 + k))


def stream_problems(shape: dict, samples: int = SAMPLES) -> list[str]:
    """Lemma ``stream`` (module docstring): the violations (empty: it holds)."""
    bad = []
    for k in range(samples):
        inputs = _inputs(shape, k)
        (qx, _), (qw, _) = D.quantize(inputs["x"], "x"), D.quantize(inputs["w"], "w")
        got = list(DB.program(shape, inputs).commands)
        want = list(D.int_program(shape, qx, qw).commands)
        if len(got) != len(want):
            bad.append(f"sample {k}: the program emits {len(got)} commands, vta.dense.int_program of the codes {len(want)}")
            continue
        diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        if diff is not None:
            bad.append(f"sample {k}: command {diff} is {got[diff]}, vta.dense.int_program of the codes emits {want[diff]}")
    return bad


def epilogue_problems(shape: dict, samples: int = SAMPLES) -> list[str]:
    """Lemma ``epilogue`` (module docstring): the violations (empty: it holds)."""
    from mappings.vta.common import cfg
    lanes, top = cfg().lanes("acc"), shape["K"] * D.QMAX ** 2
    bad = []
    for k in range(samples):
        inputs = _inputs(shape, k)
        rng = np.random.default_rng(2000 + k)
        (qx, sx), (qw, sw) = D.quantize(inputs["x"], "x"), D.quantize(inputs["w"], "w")
        prog = DB.program(shape, inputs)
        n_reads = sum(1 for c in prog.commands if "vta_read_acc" in c)
        reads = [rng.integers(-top, top + 1, lanes).astype(np.int64) for _ in range(n_reads)]
        acc = np.asarray(D.int_program(shape, qx, qw).readback(reads), np.int64)
        want = (acc.astype(np.float64) * (sx * sw) + np.asarray(inputs["b"], np.float64)).astype(np.float32)
        got = np.asarray(prog.readback(reads))
        if got.shape != want.shape or got.dtype != want.dtype:
            bad.append(f"sample {k}: the read-back gives {got.dtype} {got.shape}, the declared term float32 {want.shape}")
            continue
        diff = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
        if diff.size:
            n, m = (int(i) for i in diff[0])
            bad.append(f"sample {k}: out[{n}, {m}] is {got[n, m]!r} after the read-back, the declared epilogue gives "
                       f"{want[n, m]!r} (accumulator {acc[n, m]}, bias {inputs['b'][m]!r})")
    return bad


def proof_setup(shape: dict, *, numerics: str = "exact"):
    """``--method bmc``: refused (module docstring); MappingError naming the composite."""
    raise MappingError(f"{DB.NAME}: no BMC setup (the lemmas tying vta.dense's proof to this program are not BMC "
                       f"queries); use: python -m verify.mapping {DB.NAME} --method chc --shape "
                       f"{'x'.join(str(shape[d]) for d in ('N', 'K', 'M'))}")


def chc_spec(shape: dict | None, *, numerics: str = "exact", infer: bool = False):
    """``--method chc``: vta.dense's composite at ``shape`` with the lemmas ``stream`` and
    ``epilogue`` (module docstring). MappingError for ``shape`` None (no all-sizes proof)."""
    import dataclasses
    from mappings.vta import dense_proof as DP
    if shape is None:
        raise MappingError(f"{DB.NAME}: the all-sizes proof is not available; give a shape")
    DB.MAPPING.check_shape(shape)
    core = DP.chc_spec(shape, numerics=numerics, infer=infer)
    checks = list(core.checks) + [
        ("stream: the program's commands are vta.dense.int_program of the quantised codes",
         lambda: stream_problems(shape)),
        ("epilogue: the read-back is float32(A * (s_x * s_w) + b) on the proved int32 result A (sampled)",
         lambda: epilogue_problems(shape))]
    notes = [n for n in core.notes if not n.startswith("declared numerics")] + [
        "declared numerics: vta.dense's host quantisation, the exact int8 x int8 -> int32 product (proved for all "
        "codes), dequantisation and the bias add in float64 rounded once (dense_bias.reference_term); the read-back's "
        f"epilogue checked against it on {SAMPLES} x random int32 accumulators, not proved; " + gap(shape)]
    return dataclasses.replace(core, checks=checks, notes=notes)


def gap(shape: dict, samples: int = 5, seed: int = 0) -> str:
    """The declared term (``dense_bias.reference_term``) against the float32 IR operator
    (``dense_bias.reference``) on the mapping's random inputs: Frobenius relative error (numpy only)."""
    from mappings.base import frobenius_relative_error
    rng = np.random.default_rng(seed)
    errs = [frobenius_relative_error(DB.reference(shape, i), DB.reference_term(shape, i))
            for i in (DB.random_inputs(shape, rng) for _ in range(samples))]
    return (f"the declared term is within {100 * max(errs):.2f} % (max Frobenius relative error over {samples} random "
            f"inputs) of the float32 dense with bias; tolerance {100 * DB.TOLERANCE:g} %")
