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
* :func:`chc_spec` -- the split proof (``--method chc``): vta.gemm's phase proof once per distinct
  pass shape (on fresh symbols: for all int8 codes) and three lemmas tying the pieces to the
  program the runner executes: the tiling (above); the stream (:func:`pass_stream_problems`:
  ``dense.int_program``'s stream is, pass by pass, its piece's code generator on the pass's
  operand slices, separated by resets -- compared command for command on ``2 d`` draws of codes
  that name every operand element by its bytes, :func:`tag_draws`, so its cost is a few integer
  builds of the program, not a symbolic one of every operand element); the read-back
  (:func:`assembly_problems`: the whole read-back on symbolic reads places every pass's).

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


def tiling_problems(shape: dict, *, symbols: bool = True) -> list[str]:
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
    if not symbols or bad:               # the data placement per pass: pass_stream_problems
        return bad
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


# ----------------------------------------------------------------------------- the phase proof (every shape)
def _segments(commands) -> list[list]:
    """The stream split at the machine resets between passes: per pass, its commands in order, a
    table of virtual-memory writes (``ila.commands.CommandTable``, a ``driver.Stream`` piece; it
    holds no reset and no read) kept as one item. ``commands``: a ``driver.Stream`` or a list."""
    from ila.commands import CommandTable
    from ila.models.vta.driver import Stream
    out = [[]]
    for piece in (commands.pieces if isinstance(commands, Stream) else (list(commands),)):
        if isinstance(piece, CommandTable) and not {"vta_reset", "vta_read_acc"} & set(piece.columns):
            out[-1].append(piece)
            continue
        for c in (piece.rows() if isinstance(piece, CommandTable) else piece):
            if c.get("vta_reset"):
                out.append([])
            else:
                out[-1].append(c)
    return out


def _same_items(a: list, b: list) -> bool:
    """Two segments (:func:`_segments`) hold the same commands, item for item (tables column for
    column)."""
    from ila.commands import CommandTable
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, CommandTable) or isinstance(y, CommandTable):
            if not (isinstance(x, CommandTable) and isinstance(y, CommandTable) and x.columns.keys() == y.columns.keys()
                    and all(np.array_equal(x.columns[k], y.columns[k]) for k in x.columns)):
                return False
        elif x != y:
            return False
    return True


def _tag_bytes(shape: dict) -> int:
    """Bytes of the largest operand tag (:func:`tag_draws`)."""
    return max(1, -(-int(shape["N"] * shape["K"] + shape["M"] * shape["K"]).bit_length() // 8))


def tag_draws(shape: dict):
    """The int8 codes (qx[N, K], qw[M, K]) that identify every operand element by its DRAM bytes,
    one draw at a time (a generator of ``2 d`` draws): element t (x's flat index first, then w's,
    counted from 1) has tag ``t`` of ``d`` bytes (``d = ceil(bits(N K + M K) / 8)``); draw ``2 j``
    holds code ``b_j(t) - 128`` and draw ``2 j + 1`` code ``127 - b_j(t)``, with ``b_j(t)`` byte j
    of the tag. A byte copied from element t reads ``b_j(t) ^ 0x80`` and ``(255 - b_j(t)) ^ 0x80``
    in the two draws of byte j, so over all draws it names t, and no constant byte equals both
    (``b != 255 - b``)."""
    nx = shape["N"] * shape["K"]
    tags = np.arange(1, nx + shape["M"] * shape["K"] + 1, dtype=np.int64)
    for j in range(_tag_bytes(shape)):
        b = (tags >> (8 * j)) & 0xFF
        for codes in (b - 128, 127 - b):
            yield codes[:nx].reshape(shape["N"], shape["K"]), codes[nx:].reshape(shape["M"], shape["K"])


def pass_stream_problems(shape: dict) -> list[str]:
    """Lemma: the stream ``dense.int_program`` emits (the integer path the runner executes: a
    ``driver.Stream``) is, pass by pass in the run order of ``dense.passes``, the stream of the
    pass's piece -- vta.gemm's code generator (``gemm.acc_program``: the stream its phase proof
    walks, and the read-back of its rows) at the pass shape on the pass's own operands qx[rows],
    qw[cols] -- the passes separated by machine resets: compared command for command on the codes
    of :func:`tag_draws`, which name every operand element by its bytes. The premise: the
    generator and the assembly copy each int8 code into a DRAM byte whose address does not depend
    on the codes, and choose nothing else by a code's value (the premise under which a proof's run
    on symbolic codes stands for every code; the driver's skipping of all-zero DRAM words is a
    function of the image, so equal images give equal streams). Then every image byte is a
    constant or one operand element's byte, agreement on every draw means the same constant or the
    same element in every byte, and the streams agree for all codes. So every
    pass runs its piece's proved program on its own operand slices, from reset."""
    plist = D.passes(shape)
    bad = []
    for draw, (qx, qw) in enumerate(tag_draws(shape)):
        segs = _segments(D.int_program(shape, qx, qw).commands)
        if len(segs) != len(plist):
            return [f"the stream has {len(segs)} parts between resets, the shape has {len(plist)} passes"]
        for k, ((r, c), seg) in enumerate(zip(plist, segs)):
            piece = G.acc_program(D.pass_shape(shape, r, c), {"x": qx[r], "w": qw[c]}).commands
            if not _same_items(seg, _segments(piece)[0]):
                bad.append(f"pass {k} (rows {r.start}:{r.stop}, cols {c.start}:{c.stop}): its stream is not its piece's "
                           f"on qx[{r.start}:{r.stop}], qw[{c.start}:{c.stop}] (tag draw {draw})")
                if len(bad) >= 4:
                    return bad
        if bad:
            return bad
    return bad


def readback_takes_terms() -> bool:
    """Whether ``dense.int_program``'s read-back runs on symbolic reads (it is then proved to place
    every pass's result; otherwise the assembly is only checked on distinct integer tags and the
    verdict does not claim the read-back)."""
    try:
        return not assembly_problems({"N": 1, "K": 1, "M": 1}, tags=False)
    except TypeError:
        return False


def assembly_problems(shape: dict, *, tags: bool = False) -> list[str]:
    """Lemma: the read-back of the whole program (``dense.int_program``'s, run on symbolic reads,
    or with ``tags`` on distinct integers) places element (n, m) of pass (rows, cols)'s own
    read-back (vta.gemm's read-back of the pass program, ``common.acc_program`` at vta.gemm's
    output map of the pass shape: the one its piece proves) at out[n, m], for every n, m. The
    read-backs depend on the shape and the configuration only, not on the codes (their reads are
    the accumulator rows of the pass shapes): the whole program and the passes' are taken on zero
    codes (the integer path)."""
    from ila.sorts import BvSort
    from ila.unroll import symbol
    counter = iter(range(1, 1 << 62))

    def cell(name):
        return next(counter) if tags else symbol(name, BvSort(32))
    zx, zw = np.zeros((shape["N"], shape["K"]), np.int64), np.zeros((shape["M"], shape["K"]), np.int64)
    prog = D.int_program(shape, zx, zw)
    reads, per_pass = [], []
    for k, seg in enumerate(_segments(prog.commands)):
        mine = []
        for c in seg:
            if isinstance(c, dict) and "vta_read_acc" in c:
                row = np.array([cell(f"rd{k}.{c['vta_read_acc']}.{l}") for l in range(V.cfg().lanes("acc"))],
                               dtype=np.int64 if tags else object)
                reads.append(row)
                mine.append(row)
        per_pass.append(mine)
    whole = np.asarray(prog.readback(reads), dtype=object)
    bad = []
    for (r, c, p), mine in zip(D.pass_programs(shape, zx, zw), per_pass):
        own = np.asarray(V.acc_program(p, G.acc_index(D.pass_shape(shape, r, c))).readback(mine), dtype=object)
        same = (lambda a, b: a == b) if tags else (lambda a, b: a is b)
        if whole[r, c].shape != own.shape or not all(same(a, b) for a, b in zip(whole[r, c].reshape(-1), own.reshape(-1))):
            bad.append(f"out[{r.start}:{r.stop}, {c.start}:{c.stop}] is not the read-back of its pass")
    return bad


def gap(shape: dict, samples: int = 5, seed: int = 0) -> str:
    """The declared numerics term (``dense.reference_term``) against the float32 IR operator
    (``dense.reference``) on the mapping's random inputs: Frobenius relative error (numpy only)."""
    import numpy as np
    from mappings.base import frobenius_relative_error
    rng = np.random.default_rng(seed)
    errs = [frobenius_relative_error(D.reference(shape, i), D.reference_term(shape, i))
            for i in (D.random_inputs(shape, rng) for _ in range(samples))]
    return (f"the declared term (host int8 quantisation, exact int32 product, dequantisation) is within "
            f"{100 * max(errs):.2f} % (max Frobenius relative error over {samples} random inputs) of the float32 "
            f"dense; tolerance {100 * D.TOLERANCE:g} %")


def chc_spec(shape: dict | None, *, numerics: str = "exact", infer: bool = False):
    """``--method chc``: the composite phase proof of every pass of ``shape`` (module docstring):
    one vta.gemm phase proof per distinct pass shape (``mappings.vta.gemm_chc``), and the lemmas
    that every pass's stream is its piece's on its own operands, that the passes partition the
    output (tiling), and that the whole read-back assembles the passes'."""
    from mappings.phases import Composite
    from mappings.vta import gemm_chc as GC
    if shape is None:
        raise MappingError(f"{D.NAME}: the all-sizes proof is not available; give a shape")
    D.MAPPING.check_shape(shape)
    pieces = {}
    for r, c in D.passes(shape):
        ps = D.pass_shape(shape, r, c)
        key = f"{ps['N']}x{ps['K']}x{ps['M']}"
        pieces.setdefault(key, lambda ps=ps: GC.phase_proof(ps, infer=infer))
    n = len(D.passes(shape))
    symbolic_rb = readback_takes_terms()
    covers = ("codegen-bytes", "order", "configuration-fields", "model-loops") + (("read-back",) if symbolic_rb else ())
    return Composite(
        scope="x".join(str(shape[d]) for d in ("N", "K", "M")), pieces=pieces,
        checks=[("tiling: the passes partition out, each within vta.gemm's side conditions",
                 lambda: [b for b in tiling_problems(shape, symbols=False)]),
                ("every pass's stream is its piece's on its own operands, passes separated by resets "
                 f"(compared on {2 * _tag_bytes(shape)} draws of codes that name every operand element)",
                 lambda: pass_stream_problems(shape)),
                ("the read-back assembles the passes' read-backs" + ("" if symbolic_rb else " (on integer tags)"),
                 lambda: assembly_problems(shape, tags=not symbolic_rb))],
        covers=covers, numerics="exact",
        notes=[f"{n} pass(es) from reset, {len(pieces)} distinct pass shape(s) proved once each (a pass's stream is "
               f"its piece's with the pass's data, checked)",
               *([] if symbolic_rb else ["read-back not claimed: dense.int_program's read-back does not run on "
                                         "symbolic reads (int64 result array), so its assembly of the passes is "
                                         "checked on distinct integer tags only"]),
               "declared numerics: host quantisation and dequantisation around the exact int8 x int8 -> int32 "
               "product (dense.reference_term); the proof covers the integer core for all int8 codes; "
               + gap(shape)],
        cex_shapes=({"N": 2, "K": 20, "M": 18}, {"N": 1, "K": 16, "M": 16}))
