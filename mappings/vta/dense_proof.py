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
def _same_modulo(a, b, ren: dict, memo: set) -> bool:
    """``a`` and ``b`` (ints or terms) are equal up to a renaming of variables (``ren``: a's
    variable -> b's, extended as the walk meets them; injective)."""
    from ila.expr import Expr
    from ila.ops import Op
    if not isinstance(a, Expr) or not isinstance(b, Expr):
        return (not isinstance(a, Expr)) and (not isinstance(b, Expr)) and a == b
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if (x.uid, y.uid) in memo:
            continue
        memo.add((x.uid, y.uid))
        if x.op is Op.VAR or y.op is Op.VAR:
            if x.op is not Op.VAR or y.op is not Op.VAR or x.sort != y.sort:
                return False
            if ren.setdefault(x, y) is not y:
                return False
            continue
        if x.op is not y.op or x.sort != y.sort or x.payload != y.payload or len(x.args) != len(y.args):
            return False
        stack.extend(zip(x.args, y.args))
    return True


def _segments(commands: list) -> list[list]:
    """The stream split at the machine resets between passes."""
    out = [[]]
    for c in commands:
        if c.get("vta_reset"):
            out.append([])
        else:
            out[-1].append(c)
    return out


class WholeProgram:
    """``dense.int_program`` of ``shape`` on symbolic codes (:func:`symbolic_codes`), built once
    for the lemmas of one proof (:func:`pass_stream_problems`, :func:`assembly_problems`): the
    codes ``qx``, ``qw`` and the program ``prog`` (:class:`ila.models.port.AccProgram`)."""

    def __init__(self, shape: dict):
        self.shape = dict(shape)
        self._built = None

    def get(self) -> tuple:
        """(qx, qw, prog), built on first use."""
        if self._built is None:
            qx, qw = symbolic_codes(self.shape)
            self._built = (qx, qw, D.int_program(self.shape, qx, qw))
        return self._built


def _whole(shape: dict, whole: WholeProgram | None) -> tuple:
    if whole is not None and whole.shape != dict(shape):
        raise ValueError(f"the shared program is of shape {whole.shape}, not {shape}")
    return (whole or WholeProgram(shape)).get()


def pass_stream_problems(shape: dict, whole: WholeProgram | None = None) -> list[str]:
    """Lemma: the emitted stream of the whole shape (``dense.int_program`` on symbolic codes) is the
    passes' streams, in run order, separated by machine resets, and the stream of pass (rows, cols)
    is the stream of its piece (vta.gemm's program at the pass shape on fresh symbols ``x_<i>``,
    ``w_<i>``) with exactly the renaming ``x_<i> -> qx[rows].flat[i]``, ``w_<i> -> qw[cols].flat[i]``
    (structural comparison, every command). So every pass runs its piece's proved program on its
    own operand slices, from reset. ``whole``: the program built once for several lemmas."""
    qx, qw, prog = _whole(shape, whole)
    segs = _segments(list(prog.commands))
    plist = D.passes(shape)
    if len(segs) != len(plist):
        return [f"the stream has {len(segs)} parts between resets, the shape has {len(plist)} passes"]
    bad = []
    reps = {}
    for k, ((r, c), seg) in enumerate(zip(plist, segs)):
        ps = D.pass_shape(shape, r, c)
        key = (ps["N"], ps["K"], ps["M"])
        if key not in reps:
            fx, fw = symbolic_codes(ps)
            reps[key] = (fx, fw, list(G.acc_program(ps, {"x": fx, "w": fw}).commands))
        fx, fw, rep = reps[key]
        if len(rep) != len(seg):
            bad.append(f"pass {k}: {len(seg)} commands, its piece's stream has {len(rep)}")
            continue
        ren, memo = {}, set()
        if not all(a.keys() == b.keys() and all(_same_modulo(a[n], b[n], ren, memo) for n in a) for a, b in zip(rep, seg)):
            bad.append(f"pass {k} (rows {r.start}:{r.stop}, cols {c.start}:{c.stop}): its stream is not its piece's")
            continue
        want = dict(zip(list(fx.reshape(-1)) + list(fw.reshape(-1)), list(qx[r].reshape(-1)) + list(qw[c].reshape(-1))))
        if any(want.get(v) is not t for v, t in ren.items()):
            bad.append(f"pass {k}: its stream carries other data than qx[{r.start}:{r.stop}], qw[{c.start}:{c.stop}]")
    return bad


def readback_takes_terms() -> bool:
    """Whether ``dense.int_program``'s read-back runs on symbolic reads (it is then proved to place
    every pass's result; otherwise the assembly is only checked on distinct integer tags and the
    verdict does not claim the read-back)."""
    try:
        return not assembly_problems({"N": 1, "K": 1, "M": 1}, tags=False)
    except TypeError:
        return False


def assembly_problems(shape: dict, *, tags: bool = False, whole: WholeProgram | None = None) -> list[str]:
    """Lemma: the read-back of the whole program (``dense.int_program``'s on symbolic codes, run on
    symbolic reads, or with ``tags`` on distinct integers) places element (n, m) of pass (rows,
    cols)'s own read-back (vta.gemm's read-back of the pass program, ``common.acc_program`` at
    vta.gemm's output map of the pass shape: the one its piece proves) at out[n, m], for every n,
    m. The pass programs' own read-backs depend on the pass shape and the configuration only; they
    are taken from the pass programs on zero codes (the numeric path, no terms to pack).
    ``whole``: the program built once for several lemmas."""
    import numpy as np
    from ila.sorts import BvSort
    from ila.unroll import symbol
    counter = iter(range(1, 1 << 62))

    def cell(name):
        return next(counter) if tags else symbol(name, BvSort(32))
    qx, qw, prog = _whole(shape, whole)
    segs = _segments(list(prog.commands))
    reads, per_pass = [], []
    for k, seg in enumerate(segs):
        mine = []
        for c in seg:
            if "vta_read_acc" in c:
                row = np.array([cell(f"rd{k}.{c['vta_read_acc']}.{l}") for l in range(V.cfg().lanes("acc"))],
                               dtype=np.int64 if tags else object)
                reads.append(row)
                mine.append(row)
        per_pass.append(mine)
    whole = np.asarray(prog.readback(reads), dtype=object)
    bad = []
    zx, zw = np.zeros(qx.shape, np.int64), np.zeros(qw.shape, np.int64)
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
    whole = WholeProgram(shape)           # one symbolic build for the stream and read-back lemmas
    covers = ("codegen-bytes", "order", "configuration-fields", "model-loops") + (("read-back",) if symbolic_rb else ())
    return Composite(
        scope="x".join(str(shape[d]) for d in ("N", "K", "M")), pieces=pieces,
        checks=[("tiling: the passes partition out, each within vta.gemm's side conditions",
                 lambda: [b for b in tiling_problems(shape, symbols=False)]),
                ("every pass's stream is its piece's on its own operands, passes separated by resets",
                 lambda: pass_stream_problems(shape, whole)),
                ("the read-back assembles the passes' read-backs" + ("" if symbolic_rb else " (on integer tags)"),
                 lambda: assembly_problems(shape, tags=not symbolic_rb, whole=whole))],
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
