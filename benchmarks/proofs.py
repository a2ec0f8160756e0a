"""Formal proofs of every registered mapping that has a proof setup, into the ledger (issue 6).

Table 3 covers flexasr.maxpool alone; this script proves the other mappings too and records every
verdict in the committed ledger ``paper_results/ledger.json`` (the user's own ledger is per user, ``verify.ledger``):

* BMC (``verify.bmc.check_bmc``) at each shape of :data:`PLAN` (the mapping's small proof shape,
  larger shapes, and its default shape where the proof finishes in minutes);
* CHC (``verify.chc.check_chc``) for the LayerReduce family at the default shape and for all sizes
  (``symbolic``);
* mutation testing: each seeded bug of a mapping (``verify.mutations``) by BMC at its small
  shape; a bug is *killed* by a counterexample that the simulators replayed (the LayerReduce
  family's kill table by BMC, CHC and the all-sizes proof is ``benchmarks.mutation_maxpool``).

What each proof covers (abstract arithmetic, bit-precise, data movement) is the mapping's own
statement; the verdict's detail is printed beside it. Registered mappings without a proof setup
are listed as such (they are validated by ``--method sim|fuzz`` only).

Every proof and every seeded-bug check is one task of a Dask campaign (:mod:`benchmarks.campaign`:
a LocalCluster of ``--workers`` processes, or ``--scheduler ADDRESS``); each task records its
verdict in the ledger itself (the ledger's writes are locked) and its summary in the campaign's
results file as it finishes (``--results PATH``; default ``campaigns/proofs.jsonl`` beside ``--out``,
i.e. ``paper_results/campaigns/proofs.jsonl``, committed with the report), keyed by the
mapping's source digest and the ledger file, so an interrupted run resumes and only re-proves what
changed. The ledger is the file ``ledger.json`` beside ``--out``. Seconds are measured inside each task (with ``--workers 2`` two
proofs share this machine's 2 cores). Every proof, piece and seeded-bug task runs in a fresh Python
process started by its worker (``campaign.Task(fresh=True)``): in a long-lived worker that has run
big proofs before, what they leave in memory (hash-consing tables, caches, z3 contexts) made the
next proof several times slower (vta.dense by CHC at 64x576x64: 368 s there, 60 s in a fresh
process); ``--same-process`` runs them in the worker processes themselves (no interpreter start per task).

Writes ``paper_results/proofs.md``. Run: ``python -m benchmarks.proofs [--quick] [--no-mutations]
[--timeout S] [--out PATH] [--workers N] [--scheduler ADDRESS] [--results PATH] [--same-process]
[--application-shapes [--application-limit N] [--offloads FILE | --all-call-shapes]]`` (``--quick``:
only the small shapes, a few minutes; ``--application-shapes``: also :data:`APPLICATION_METHOD`'s
proofs at every shape the six applications offload at in Tables 1 and 4, as listed by ``python -m
benchmarks.offloads`` in ``paper_results/campaigns/application_offloads.txt``; ``--all-call-shapes``:
at every shape of a call certificate in the ledger instead, other models' offloads (the ONNX-zoo
models of ``benchmarks.cosim``) included; ``--application-limit``: of those, only the shapes whose
sizes multiply to at most N; the listed offloads are proved whatever their size).
"""
from __future__ import annotations

import pathlib

import numpy as np
import platform
import re
import sys
import time

from ila.errors import D2AError
from benchmarks import campaign
from mappings.base import format_shape
from mappings.registry import get, names
from verify import mutations
from verify.bmc import check_bmc
from verify.chc import check_chc
from verify.ledger import digest, record, scope_label
from verify.symmetry import check_bmc_symmetric

OUT = pathlib.Path(__file__).resolve().parents[1] / "paper_results"

# mapping -> list of (method, shape string or "symbolic", numerics, quick?); method "chc-infer" is
# CHC with inferred invariants (verify.houdini) instead of the mapping's supplied ones, "bmc-sym" BMC
# with one solver call per class of alpha-equivalent output goals (verify.symmetry, recorded as bmc)
PLAN: dict[str, list[tuple[str, str, str, bool]]] = {
    "flexasr.maxpool": [("bmc", "16x64", "uf", True), ("bmc", "16x64", "exact", False), ("chc", "16x64", "uf", True),
                        ("chc", "symbolic", "uf", True), ("chc-infer", "symbolic", "uf", False),
                        # the applications' shapes (python -m compile <app> --targets flexasr --explain):
                        # every layer but the codegen bytes, order and read-back is proved for all
                        # sizes above; these prove the whole emitted program at each shape
                        ("chc", "2x3984", "uf", False), ("chc", "4x3984", "uf", False),
                        ("chc", "8x3984", "uf", False), ("chc", "16x3984", "uf", False),
                        ("chc", "128x64", "uf", False), ("chc", "128x128", "uf", False)],
    "flexasr.meanpool": [("bmc", "16x64", "uf", True), ("chc", "16x64", "uf", True),
                         ("chc", "symbolic", "uf", False)],
    "flexasr.maxpool_chain": [("bmc", "32x64x2", "uf", True), ("bmc", "16x64x3", "uf", True),
                              ("bmc", "16x64x4", "uf", False), ("bmc", "16x3984x4", "uf", False)],
    "flexasr.meanpool_chain": [("bmc", "32x64x2", "uf", True), ("bmc", "16x64x3", "uf", True),
                               ("bmc", "16x64x4", "uf", False)],
    "flexasr.linear": [("bmc", "1x16x64", "uf", True), ("chc", "2x16x64", "uf", True), ("bmc", "2x32x64", "uf", False),
                       ("bmc", "16x64x64", "uf", False),
                       # the smallest of the applications' shapes (efficientnet_b0), split per output tile
                       ("bmc", "1x48x1152", "uf", False)],
    # flexasr.linear's proof with the host padding and the cut inside the subject
    "flexasr.linear_pad": [("bmc", "1x10x10", "uf", True), ("bmc", "2x20x70", "uf", False)],
    # against their declared numerics terms (the IR operator in the unit's order and rounding)
    "flexasr.layernorm": [("bmc", "2x32", "uf", True), ("bmc", "16x64", "uf", False)],
    "flexasr.attention": [("bmc", "20x32", "uf", True), ("bmc", "64x64", "uf", False)],
    "flexasr.lstm": [("bmc", "2x16x64", "uf", True), ("bmc", "4x16x64", "uf", False)],
    # C > 1: against the declared numerics term (HLSCNN rounds once per kernel tap)
    "hlscnn.conv2d": [("bmc", "3x3x1x2x2x1", "uf", True), ("bmc", "3x3x2x2x2x1", "uf", True),
                      ("bmc", "4x4x9x9x3x1", "uf", False), ("bmc", "8x8x1x16x3x1", "uf", False),
                      ("bmc", "16x16x1x16x3x1", "uf", False)],
    "hlscnn.conv2d_w8": [("bmc", "3x3x1x2x2x1", "uf", True), ("bmc", "8x8x1x16x3x1", "uf", False)],
    # and the phase proof of the convolution loop nest (one output tile), any number of channels;
    # the loop nest for all sizes at the applications' kernel configurations (about 13 min each of three)
    "hlscnn.conv2d_nchw": [("bmc", "3x3x1x2x2x1x1", "uf", True), ("chc", "2x2x9x8x1x1x0", "uf", True),
                           ("chc", "symbolic", "uf", False)],
    "hlscnn.conv2d_nchw_w8": [("bmc", "3x3x1x2x2x1x1", "uf", True), ("chc", "2x2x9x8x1x1x0", "uf", True),
                              ("chc", "symbolic", "uf", False)],
    "vta.gemm": [("bmc", "1x16x16", "exact", True), ("bmc", "16x64x64", "exact", False),
                 # the GEMM family of loops (LOADs, GEMM reset, GEMM over the micro-ops) for all sizes
                 # (about 9 min; one of its 16 lane cases' clauses is still undecided at times)
                 ("chc", "symbolic", "exact", False)],
    # one pass by BMC; several passes (and an application shape) by the composite phase proof
    "vta.dense": [("bmc", "2x20x18", "exact", True), ("chc", "16x64x32", "exact", True),
                  ("chc", "64x576x64", "exact", False)],
    # vta.dense's composite and the lemmas tying it to the host epilogue (no BMC setup)
    "vta.dense_bias": [("chc", "2x20x18", "exact", True)],
    # and the ALU loop over the micro-op buffer with its LOADs for all sizes (vta.add about 3 min, its
    # two size-dependent seeded bugs 2 and 8 min; vta.relu's, the same loop with an immediate, in the
    # full plan only)
    "vta.add": [("bmc", "32", "exact", True), ("bmc", "1024", "exact", False), ("chc", "symbolic", "exact", True)],
    "vta.relu": [("bmc", "32", "exact", True), ("bmc", "1024", "exact", False), ("chc", "symbolic", "exact", False)],
}
# --application-shapes: the mappings whose proofs reach the shapes the applications offload at, and
# how (method, numerics); each is proved at every shape the six applications offload it at (Tables 1
# and 4, benchmarks.offloads' list), or with --all-call-shapes at every shape of its call certificates.
# Others are not listed: their proofs do not reach those shapes.
# flexasr.linear / _pad: per-output BMC by verify.symmetry, whose goals are discharged by rewriting
# (verify.normalize: the link axioms as rules, the two sums of products in AC normal form; no solver call),
# so the cost is the symbolic execution and goal construction, about 1-3 ms per (padded) multiply-add
# (1x480x20: 57 s with one solver call; per-output BMC: 290 s; 1x1152x48: 208 s, where z3 gave no verdict).
# A value is (method, numerics), or a function of the shape text giving that (None: no proof planned
# at that shape).
# hlscnn.conv2d_nchw / _w8: the phase proof of the convolution loop nest (mappings.hlscnn.conv2d_nchw_chc,
# one tracked output, one case per filter lane) at every shape: 32x32x16x16x3x1x1 (ResNet-20) in 91 s alone.
# flexasr.linear / _pad: the timestep induction (mappings.flexasr.linear_chc, verify.induction): one
# symbolic timestep, so I x O multiply-adds whatever T (16x160x960: 155 s beside a campaign; the
# per-output BMC above needs T x I x O and stops at about 1,000,000)
APPLICATION_METHOD = {"vta.dense": ("chc", "exact"), "vta.dense_bias": ("chc", "exact"),
                      "hlscnn.conv2d_nchw": ("chc", "uf"),
                      "hlscnn.conv2d_nchw_w8": ("chc", "uf"),
                      "flexasr.linear_pad": ("chc", "uf"), "flexasr.linear": ("chc", "uf")}
# the size measure of --application-limit (default: the product of the shape's sizes) and a cap of
# each mapping's own: hlscnn.conv2d_nchw's phase proof grows with its data (lemmas, term check) and
# outputs x taps (term check), so H*W*C*O*K*K orders its shapes (P = 0 makes the plain product 0)
# flexasr.linear / _pad: the induction executes one timestep at the padded Ip x Op and checks T x (Ip + Op)
# cells (the stream's x, the read-back)
APPLICATION_SIZE = {"hlscnn.conv2d_nchw": lambda s: s["H"] * s["W"] * s["C"] * s["O"] * s["K"] * s["K"],
                    "hlscnn.conv2d_nchw_w8": lambda s: s["H"] * s["W"] * s["C"] * s["O"] * s["K"] * s["K"],
                    "flexasr.linear_pad": lambda s: _linear_size(s), "flexasr.linear": lambda s: _linear_size(s)}
# vta.dense_bias: the six applications' classifiers are at most 1x1280x10 (12,800); the zoo models' larger
# shapes each cost vta.dense's composite proof again (1-6 min), so up to 20,000 here
APPLICATION_CAP = {"vta.dense_bias": 20_000}


def _linear_size(s: dict) -> int:
    ip, op = -(-s["I"] // 16) * 16, -(-s["O"] // 64) * 64
    return ip * op + s["T"] * (ip + op)


def _size(m, text: str) -> int:
    s = m.parse_shape(text)
    f = APPLICATION_SIZE.get(m.name)
    return int(f(s)) if f else int(np.prod([int(x) for x in s.values()]))


def application_shapes(name: str, ledger_file: str, limit: int | None = None, offloads: set | None = None) -> list[str]:
    """The shapes ``name`` is offloaded at, smallest first (by :data:`APPLICATION_SIZE`, else the
    product of the sizes), those above ``limit`` or the mapping's :data:`APPLICATION_CAP` left out:
    with ``offloads`` ((mapping, shape) pairs: the six applications' offloads listed by
    ``python -m benchmarks.offloads``) those pairs' shapes; without, the shapes of ``name``'s call
    certificates in the ledger (every model's offloads, the ONNX-zoo models' included)."""
    from verify.ledger import load
    if offloads is not None:
        shapes = {s for m, s in offloads if m == name}
    else:
        shapes = {e["scope"] for e in load(ledger_file) if e.get("mapping") == name and e.get("method") == "call"}
    m = get(name)
    caps = [c for c in (limit, APPLICATION_CAP.get(name)) if c is not None]
    return sorted((t for t in shapes if not caps or _size(m, t) <= min(caps)), key=lambda t: (_size(m, t), t))


# shapes for the seeded bugs (else the mapping's proof_shape): the LayerReduce family needs R > 16,
# since its tiling_stride bug changes the stride between 16-timestep groups and is equivalent to the
# correct mapping while there is only one group, and C >= 64, since size_field_some_sizes fires only
# there (at other shapes BMC proves the mutant, rightly: it is correct there)
MUTATION_SHAPE = {"flexasr.maxpool": "32x64", "flexasr.meanpool": "32x64", "flexasr.maxpool_chain": "32x64x2",
                  "flexasr.meanpool_chain": "32x64x2",
                  # one timestep: every flexasr.lstm bug shows there already (h_{-1} and the
                  # registers are arguments of the uninterpreted functions), at a third of the cost
                  "flexasr.lstm": "1x16x64"}
# seeded bugs that show only at sizes no fixed-shape proof of the plan reaches (a configuration field
# wrong only near the largest sizes the side conditions allow): killed by the all-sizes proof, whose
# counterexample search finds the shape (verify.chc.countershapes) -> (method, shape)
MUTATION_CHECKS = {("flexasr.maxpool", "vector_count_near_max"): ("chc", "symbolic"),
                   ("flexasr.maxpool", "timestep_count_near_max"): ("chc", "symbolic"),
                   ("flexasr.meanpool", "vector_count_near_max"): ("chc", "symbolic"),
                   ("flexasr.meanpool", "timestep_count_near_max"): ("chc", "symbolic"),
                   # a tiling bug: each pass is a correct program, only the split proof's tiling lemma sees it
                   ("vta.dense", "last_pass_row_short"): ("chc", "2x20x18"),
                   # a read-back bug: only the split proof's assembly lemma runs the whole read-back
                   ("vta.dense", "readback_rows_rotated"): ("chc", "2x20x18"),
                   # the runner's assembly of the passes' streams: only the split proof's stream lemma runs it
                   ("vta.dense", "runner_weight_rows_rotated"): ("chc", "2x20x18"),
                   # the driver's read-back: claimed by the phase proofs (BMC compares the SRAM)
                   ("vta.gemm", "readback_lanes_rotated"): ("chc", "2x20x18"),
                   # configuration fields wrong only at sizes vta.gemm's fixed shapes do not reach
                   ("vta.gemm", "wgt_factor_short_some_sizes"): ("chc", "symbolic"),
                   ("vta.gemm", "iter_out_short_near_max"): ("chc", "symbolic"),
                   **{(n, b): ("chc", "symbolic") for n in ("vta.add", "vta.relu")
                      for b in ("alu_iter_out_short_some_sizes", "alu_iter_out_short_near_max")},
                   ("vta.dense", "readback_lanes_rotated"): ("chc", "2x20x18"),
                   # the HLSCNN generator's size fields wrong only at sizes the fixed shapes do not reach
                   **{(n, b): ("chc", "symbolic") for n in ("hlscnn.conv2d_nchw", "hlscnn.conv2d_nchw_w8")
                      for b in ("out_cols_short_some_sizes", "in_cols_short_near_max")}}
# mappings whose proof is the composite only (their BMC setup refuses): every seeded bug by CHC
CHC_ONLY_MAPPINGS = ("vta.dense_bias",)


# seeded bugs also checked at a second shape, where the proof is of another kind: hlscnn.conv2d_nchw
# with C = 9 input channels (two channel blocks) is proved against its declared numerics term, with
# C = 1 against the IR fragment
MUTATION_ALSO = {"hlscnn.conv2d_nchw": "3x3x9x2x2x1x1", "hlscnn.conv2d_nchw_w8": "3x3x9x2x2x1x1"}
MUTATION_CHECKS.update({(n, "weight_channels_reversed"): ("bmc", s) for n, s in MUTATION_ALSO.items()})
# seeded bugs also checked by the CHC (phase) proof: hlscnn.conv2d_nchw's loop-nest proof at a small
# shape with padding, two channel blocks and 3 x 3 outputs (every host-layout, driver and read-back bug shows)
MUTATION_CHC = {"hlscnn.conv2d_nchw": "2x2x9x2x2x1x1",
                # the timestep induction: every seeded bug fails one of its lemmas (then BMC at the
                # small shapes of mappings.flexasr.linear_chc finds the counterexample)
                "flexasr.linear": "2x16x64", "flexasr.linear_pad": "2x20x70"}

# proofs too big for one task, split per output tile into pieces (verify.bmc.piece), each a task of
# the campaign; the pieces' verdicts are assembled into one (verify.bmc.assemble) and recorded in
# the ledger once: (mapping, method, shape, numerics) -> number of pieces
SPLIT = {("flexasr.linear", "bmc", "16x64x64", "uf"): 8,
         ("flexasr.linear", "bmc", "1x48x1152", "uf"): 8}


def piece_task(name: str, method: str, scope: str, numerics: str, timeout: float, lo: int, hi: int) -> dict:
    """Campaign task: one piece (output pairs lo .. hi - 1) of a split BMC proof; nothing is recorded
    (the assembled verdict is, once). Returns the verdict as plain data."""
    from verify.bmc import piece
    m = get(name)
    ps = m.proof.bmc(m.parse_shape(scope), numerics=numerics)
    v = check_bmc(piece(ps, lo, hi, measure=lo == 0), solver="z3", timeout=timeout, inline_ufs=numerics == "exact",
                  scope=scope)
    return {"kind": v.kind, "seconds": v.seconds, "what": _what(v), "verdict": v.to_json()}


def _verdict_of(d: dict):
    """A verdict from its ``to_json`` form (for assembling pieces)."""
    from ila.verdict import Counterexample, Proved, Unknown
    kind, secs, solver = d["result"], float(d["seconds"]), d.get("solver", "z3")
    if kind == "proved":
        return Proved("bmc", solver, secs, d.get("detail", ""), scope=d.get("scope", ""), covers=tuple(d.get("covers", ())))
    if kind == "counterexample":
        return Counterexample("bmc", solver, secs, d.get("detail", ""), trace=d.get("trace", {}),
                              replayed=bool(d.get("replayed")))
    return Unknown("bmc", solver, secs, reason=d.get("reason", ""))


def _pieces(name: str, scope: str, n: int) -> list[tuple[int, int]]:
    """``n`` consecutive ranges of the proof's output pairs (as many as the IR fragment's output
    elements, the order of the proof setups' outputs)."""
    m = get(name)
    shape = m.parse_shape(scope)
    total = int(np.prod(m.ir_fragment(shape).output[1]))
    return [(k * total // n, (k + 1) * total // n) for k in range(n)]


def _prove(m, method: str, scope: str, numerics: str, timeout: float):
    shape = None if scope == "symbolic" else m.parse_shape(scope)
    if method in ("bmc", "bmc-sym"):
        check = check_bmc if method == "bmc" else check_bmc_symmetric
        return check(m.proof.bmc(shape, numerics=numerics), solver="z3", timeout=timeout,
                     inline_ufs=numerics == "exact", scope=scope)
    return check_chc(m, shape, solver="z3", timeout=timeout, numerics=numerics, infer=method == "chc-infer")


def _what(v) -> str:
    text = v.detail if v.kind != "unknown" else v.reason
    return " ".join(text.split())[:220].replace("|", "/")


def prove_task(name: str, method: str, scope: str, numerics: str, timeout: float, ledger_file: str) -> dict:
    """Campaign task: one proof, recorded in the ledger; its summary (plain data)."""
    m = get(name)
    v = _prove(m, method, scope, numerics, timeout)
    # VTA's int arithmetic is bit-precise under either option: recorded as the CLI's default does
    record(m, v, scope=scope_label(scope, "uf" if name.startswith("vta.") else numerics, method == "chc-infer"),
           path=ledger_file, checker="verify.symmetry" if method == "bmc-sym" else None)
    return {"kind": v.kind, "seconds": v.seconds, "what": _what(v)}


def mutation_task(name: str, shape_text: str, mut: str, timeout: float, method: str = "bmc") -> dict:
    """Campaign task: one seeded bug checked by ``method`` at ``shape_text`` ("symbolic": the
    all-sizes CHC proof); killed = a counterexample the simulators replayed."""
    m = get(name)
    shape = None if shape_text == "symbolic" else m.parse_shape(shape_text)
    v = mutations.check(m, shape, mut, method, solver="z3", timeout=timeout)
    return {"kind": v.kind, "seconds": v.seconds, "killed": bool(v.kind == "counterexample" and v.replayed)}


def _claim(method: str) -> str:
    """The ledger method a plan method's verdict is recorded as (``bmc-sym`` proves what ``bmc`` does,
    so a shape the plan proves by one is not proved again by the other)."""
    return "bmc" if method == "bmc-sym" else method


def _digest(m, method: str) -> str:
    """The ledger digest of a plan method's verdicts on ``m`` (the inferred-invariant CHC proof is the
    CHC checker's, ``bmc-sym`` the symmetry checker's BMC): a task is keyed by the sources of the
    checker that runs it, so editing that checker re-runs it."""
    if method == "bmc-sym":
        return digest(m, "bmc", "verify.symmetry")
    return digest(m, "chc" if method == "chc-infer" else method)


def tasks(quick: bool, with_mutations: bool, timeout: float, ledger_file: str,
          app_shapes: bool = False, app_limit: int | None = None, fresh: bool = True,
          offloads: set | None = None) -> tuple[list, list]:
    """(campaign tasks in report order, registered mappings without a proof setup). ``app_shapes``:
    also the proofs of :data:`APPLICATION_METHOD` at :func:`application_shapes` (up to ``app_limit``;
    ``offloads``: the listed pairs' shapes, else every call certificate's).
    ``fresh``: each task runs in a fresh process started by its worker (``campaign.Task.fresh``)."""
    out, plain = [], []
    for name in names():
        m = get(name)
        plan = [p for p in PLAN.get(name, []) if p[3] or not quick]
        if app_shapes and name in APPLICATION_METHOD:
            how = APPLICATION_METHOD[name]
            have = {(_claim(p[0]), p[1], p[2]) for p in plan}
            for t in application_shapes(name, ledger_file, app_limit, offloads):
                mn = how(t) if callable(how) else how
                if mn is not None and (_claim(mn[0]), t, mn[1]) not in have:
                    plan.append((mn[0], t, mn[1], False))
        if not plan:
            plain.append(name)
            continue
        for method, scope, numerics, _ in plan:
            key = proof_key(m, method, scope, numerics, timeout, ledger_file)
            n = SPLIT.get((name, method, scope, numerics))
            if n:
                for lo, hi in _pieces(name, scope, n):
                    out.append(campaign.Task(f"{key}/piece/{lo}-{hi}", piece_task,
                                             (name, method, scope, numerics, timeout, lo, hi), fresh=fresh))
                continue
            out.append(campaign.Task(key, prove_task, (name, method, scope, numerics, timeout, ledger_file),
                                     fresh=fresh))
        if not with_mutations or not mutations.names(m):
            continue
        default = MUTATION_SHAPE.get(name) or format_shape(dict(m.proof.shape))
        symbolic = any(p[1] == "symbolic" for p in plan)
        for mut in mutations.names(m):
            method, shape = MUTATION_CHECKS.get((name, mut), ("chc" if name in CHC_ONLY_MAPPINGS else "bmc", default))
            if shape == "symbolic" and not symbolic:
                continue                 # its all-sizes proof is not in this plan (--quick): neither is the bug
            tag = "" if method == "bmc" else f"{method}/"
            also = [MUTATION_ALSO[name]] if name in MUTATION_ALSO and (name, mut) not in MUTATION_CHECKS else []
            runs = [(method, at) for at in [shape] + also]
            if name in MUTATION_CHC and method != "chc":
                runs.append(("chc", MUTATION_CHC[name]))
            for method, at in runs:
                tag = "" if method == "bmc" else f"{method}/"
                out.append(campaign.Task(f"mutation/{name}/{tag}{at}/{mut}/{timeout:g}/{_digest(m, method)}",
                                         mutation_task, (name, at, mut, timeout, method), fresh=fresh))
    return out, plain


_DIGEST = re.compile(r"[0-9a-f]{16}")


def stable_key(key: str) -> str:
    """A task key without its source digest: the same proof or seeded-bug check across edits of
    the sources, whose earlier duration estimates this one's."""
    return "/".join(p for p in key.split("/") if not _DIGEST.fullmatch(p))


def estimates(records: list) -> dict:
    """Seconds per :func:`stable_key` from finished campaign records (the latest record of each)."""
    out = {}
    for r in records:
        if r.get("ok") and isinstance(r.get("seconds"), (int, float)):
            out[stable_key(r["key"])] = float(r["seconds"])
    return out


def submission_order(todo: list, first: list, est: dict | None = None, prefer: set | None = None) -> list:
    """The tasks with those of the mappings ``first`` (in that order) ahead of the others; within
    a group, with duration estimates ``est`` (:func:`estimates`), longest first and tasks without
    an estimate before all (the longest-processing-time rule: a long task started last would
    leave the other workers idle), else in their own order (a task key is ``kind/mapping/...``).
    ``prefer``: (mapping, shape) pairs whose proofs go before everything else (e.g. the offloads a
    table waits for), in the same order among themselves."""
    rank = {n: k for k, n in enumerate(first)}
    prefer = prefer or set()

    def preferred(t) -> int:      # by name: run as __main__, the tasks hold the importable module's function
        return 0 if t.fn.__name__ == "prove_task" and (t.args[0], t.args[2]) in prefer else 1
    if est is None:
        return sorted(todo, key=lambda t: (preferred(t), rank.get(t.key.split("/")[1], len(first))))
    return sorted(todo, key=lambda t: (preferred(t), rank.get(t.key.split("/")[1], len(first)),
                                       -est.get(stable_key(t.key), float("inf"))))


def proof_key(m, method: str, scope: str, numerics: str, timeout: float, ledger_file: str) -> str:
    """The campaign key of mapping ``m``'s proof by ``method`` at ``scope``: it names the sources'
    digest and the ledger file (relative to the repository when inside it, so another clone reuses
    the committed results; a result recorded in another ledger is not reused)."""
    return (f"proof/{m.name}/{method}/{scope}/{numerics}/{timeout:g}/{_digest(m, method)}/"
            f"{campaign.repo_relative(ledger_file)}")


def planned_for(pairs: set, todo: list, timeout: float, ledger_file: str, fresh: bool = True) -> list:
    """Proof tasks (:data:`APPLICATION_METHOD`) for the ``pairs`` of mappings it lists whose shape no
    task of ``todo`` proves (e.g. an application's offload above the size caps, named by
    ``--prefer``); shapes the mapping refuses are left out."""
    have = {(t.args[0], t.args[2]) for t in todo if t.fn.__name__ == "prove_task"}
    out = []
    for name, scope in sorted(pairs - have):
        how = APPLICATION_METHOD.get(name)
        if how is None:
            continue
        m = get(name)
        try:
            m.check_shape(m.parse_shape(scope))
        except D2AError:                    # a shape the mapping refuses: no proof to plan
            continue
        method, numerics = how(scope) if callable(how) else how
        out.append(campaign.Task(proof_key(m, method, scope, numerics, timeout, ledger_file), prove_task, (name, method, scope, numerics, timeout, ledger_file), fresh=fresh))
    return out


def read_pairs(path: str) -> set:
    """(mapping, shape) pairs from a text file: one per line, ``NAME SHAPE`` or ``NAME at SHAPE``
    (as ``python -m compile MODEL --explain`` prints its refused offloads), ``#`` lines comments;
    CampaignError naming the line for anything else."""
    out = set()
    for k, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        words = [w for w in line.split() if w != "at"]
        if not words or words[0].startswith("#"):
            continue
        if len(words) != 2 or words[0] not in names():
            raise campaign.CampaignError(f"{path}, line {k}: {line!r} is not 'MAPPING SHAPE' with a registered mapping")
        out.add((words[0], words[1]))
    return out


def _shown(path: str) -> str:
    """``path`` relative to the repository when inside it."""
    p = pathlib.Path(path).resolve()
    try:
        return str(p.relative_to(OUT.parent))
    except ValueError:
        return str(p)


def makespan(seconds: list, workers: int) -> float:
    """Wall time of running tasks of these durations on ``workers`` workers, longest first, each
    task to the first free worker (a lower bound is ``sum / workers``)."""
    import heapq
    free = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(free, free[0] + s)
    return max(free)


def main(argv=None) -> int:
    from ila.cli import ArgumentParser
    ap = ArgumentParser(prog="python -m benchmarks.proofs", description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=900.0, help="solver timeout per proof (s)")
    ap.add_argument("--quick", action="store_true", help="small shapes only")
    ap.add_argument("--no-mutations", action="store_true")
    ap.add_argument("--application-shapes", action="store_true",
                    help="also prove " + ", ".join(APPLICATION_METHOD) + " at every shape the six applications "
                         "offload at (the list of --offloads)")
    ap.add_argument("--offloads", default=str(OUT / "campaigns" / "application_offloads.txt"), metavar="FILE",
                    help="with --application-shapes: the (mapping, shape) list of the six applications' offloads "
                         "(written by python -m benchmarks.offloads; default "
                         "paper_results/campaigns/application_offloads.txt)")
    ap.add_argument("--all-call-shapes", action="store_true",
                    help="with --application-shapes: every shape of a call certificate in the ledger instead of "
                         "--offloads (other models' offloads too, e.g. the ONNX-zoo models of benchmarks.cosim)")
    ap.add_argument("--application-limit", type=int, metavar="ELEMENTS",
                    help="with --application-shapes --all-call-shapes: only shapes whose sizes multiply to at most "
                         "this (the six applications' listed offloads are all proved)")
    ap.add_argument("--out", default=str(OUT / "proofs.md"), help="the report (default paper_results/proofs.md)")
    ap.add_argument("--same-process", action="store_true",
                    help="run each proof in the worker process itself (default: a fresh Python process per "
                         "task, since a long-lived worker's leftovers from earlier proofs slow the next ones down)")
    ap.add_argument("--report-only", action="store_true",
                    help="write the report from the results finished so far (no task runs; the unfinished ones "
                         "are counted in the report)")
    ap.add_argument("--first", default="", metavar="NAMES",
                    help="comma-separated mapping names whose tasks are submitted first (e.g. the ones a table waits "
                         "for); the report's order is unchanged")
    ap.add_argument("--prefer", default=None, metavar="FILE",
                    help="a file of 'MAPPING SHAPE' lines (or 'MAPPING at SHAPE', as python -m compile --explain "
                         "prints them) whose proofs are submitted before all others")
    campaign.add_arguments(ap)
    args = ap.parse_args(argv)
    ledger_file = pathlib.Path(args.out).resolve().parent / "ledger.json"   # beside the report: paper_results/
    from ila.errors import report
    try:                                         # every argument and file checked before any work
        from ila.cli import check_int, check_seconds, output_file
        from verify.ledger import load
        check_seconds("--timeout", args.timeout)
        first = [n for n in args.first.split(",") if n]
        if first:
            from ila.cli import check_names
            check_names("--first", first, names(), what="mapping")
        check_int("--application-limit", args.application_limit, 1)
        try:
            prefer = read_pairs(args.prefer) if args.prefer else set()
        except OSError as exc:
            raise campaign.CampaignError(f"--prefer {args.prefer}: cannot read it ({exc.strerror})") from None
        offloads = None
        if args.application_shapes and not args.all_call_shapes:
            try:
                offloads = read_pairs(args.offloads)
            except OSError as exc:
                raise campaign.CampaignError(f"--offloads {args.offloads}: cannot read it ({exc.strerror}); write it "
                                             f"with python -m benchmarks.offloads, or use --all-call-shapes") from None
        output_file(args.out, "--out")
        output_file(ledger_file, "the ledger beside --out")
        load(str(ledger_file))
        campaign.check_arguments(args, ledger_file.parent / "campaigns" / "proofs.jsonl")
    except D2AError as exc:
        return report(exc)
    import importlib
    # the tasks by reference to the importable module (as __main__ they would be pickled by value)
    todo, plain = importlib.import_module("benchmarks.proofs").tasks(args.quick, not args.no_mutations, args.timeout,
                                                                    str(ledger_file), args.application_shapes,
                                                                    args.application_limit,
                                                                    fresh=not args.same_process, offloads=offloads)
    if args.application_shapes:              # preferred and listed pairs beyond the size caps are planned too
        todo += importlib.import_module("benchmarks.proofs").planned_for(prefer | (offloads or set()), todo, args.timeout,
                                                                         str(ledger_file), fresh=not args.same_process)
    try:
        # beside the report too (paper_results/campaigns/proofs.jsonl, committed): a rerun on another
        # machine or in another session redoes only proofs whose sources changed
        results = campaign.results_path(args, ledger_file.parent / "campaigns" / "proofs.jsonl")
        before = campaign.load(results) if pathlib.Path(results).exists() else []
        wall, ran = None, 0
        if args.report_only:                  # the records finished so far, nothing run
            keys = {t.key for t in todo}
            recs = [r for r in before if r.get("key") in keys]
        else:
            est = estimates(before)
            done_before = {r["key"] for r in before if r.get("ok")}
            ran = sum(t.key not in done_before for t in todo)
            t0 = time.perf_counter()
            recs = campaign.run_from_args(args, submission_order(todo, first, est, prefer), results, desc="proofs")
            wall = time.perf_counter() - t0
    except campaign.CampaignError as exc:
        return report(exc)
    got = {r["key"]: r for r in recs}
    proofs, kills, failed, not_run = [], [], [], []
    split: dict = {}
    for t in todo:
        r = got.get(t.key)
        if r is None and args.report_only:
            not_run.append(t.key)
            continue
        if r is None or not r.get("ok"):
            failed.append((t.key, (r or {}).get("error", "no result")))
            continue
        res = r["result"]
        if t.fn.__name__ == "piece_task":
            name, method, scope, numerics, _, lo, hi = t.args
            split.setdefault((name, method, scope, numerics), []).append(((lo, hi), res))
            continue
        if t.fn.__name__ == "prove_task":
            name, method, scope, numerics = t.args[:4]
            proofs.append((name, method, scope, numerics, res))
            print(f"{name:22} {method:9} {scope:16} {numerics:5} {res['kind']:14} {res['seconds']:8.2f} s", flush=True)
        else:
            name, shape, mut = t.args[:3]
            method = t.args[4] if len(t.args) > 4 else "bmc"
            m = get(name)
            kills.append((name, shape, mut, mutations.layers(m)[mut], mutations.names(m)[mut], method, res,
                          res["killed"]))
            print(f"{name:22} {method} mutation {mut:34} {'killed' if res['killed'] else 'SURVIVED (' + res['kind'] + ')'} "
                  f"{res['seconds']:.1f} s", flush=True)
    from verify.bmc import assemble
    for (name, method, scope, numerics), parts in split.items():
        if len(parts) != SPLIT[(name, method, scope, numerics)]:
            continue                              # a piece failed: reported among the failed tasks
        ranges = [rng for rng, _ in parts]
        v = assemble([_verdict_of(res["verdict"]) for _, res in parts], ranges, max(hi for _, hi in ranges),
                     scope=scope)
        record(get(name), v, scope=scope_label(scope, numerics), path=str(ledger_file))   # once, for the whole proof
        res = {"kind": v.kind, "seconds": v.seconds, "what": _what(v),
               "pieces": [(rng, p["seconds"]) for rng, p in parts]}
        proofs.append((name, method, scope, numerics, res))
        print(f"{name:22} {method:9} {scope:16} {numerics:5} {res['kind']:14} {res['seconds']:8.2f} s "
              f"({len(parts)} pieces, longest {max(p['seconds'] for _, p in parts):.1f} s)", flush=True)
    cmd = "python -m benchmarks.proofs" + (" --quick" if args.quick else "") + \
        (" --application-shapes" if args.application_shapes else "") + \
        (f" --application-limit {args.application_limit}" if args.application_limit else "") + \
        (f" --timeout {args.timeout:g}" if args.timeout != 900.0 else "") + (" --no-mutations" if args.no_mutations else "") + \
        (" --same-process" if args.same_process else "") + (f" --first {args.first}" if args.first else "") + \
        (f" --prefer {args.prefer}" if args.prefer else "") + (" --all-call-shapes" if args.all_call_shapes else "") + \
        (f" --offloads {args.offloads}" if args.application_shapes and not args.all_call_shapes
         and pathlib.Path(args.offloads).resolve() != (OUT / "campaigns" / "application_offloads.txt").resolve() else "")
    shapes_from = ("" if not args.application_shapes else
                   " The application shapes are every shape of a call certificate in the ledger (`--all-call-shapes`: "
                   "other models' offloads too)." if args.all_call_shapes else
                   f" The application shapes are the six applications' offloads in Tables 1 and 4 ({len(offloads)} "
                   f"(mapping, shape) pairs in `{_shown(args.offloads)}`, written by `python -m benchmarks.offloads`); "
                   "other models' offloads (the ONNX-zoo models of `benchmarks.cosim`) are proved with "
                   "`--all-call-shapes`.")
    L = ["# Formal proofs of the mappings (BMC and CHC), recorded in the ledger", "",
         f"Measured by `{cmd}` on {platform.node() or 'this machine'} ({platform.machine()}, 2 cores; a Dask campaign, "
         f"{'scheduler ' + args.scheduler if args.scheduler else f'{args.workers} worker processes'}; "
         f"Python {platform.python_version()}), z3 through pysmt, {time.strftime('%Y-%m-%d')}. Every verdict is "
         "in the proof ledger (`python -m verify.ledger`). Numerics: `uf` = the accelerator's arithmetic "
         "uninterpreted with stated, exhaustively checked axioms; `exact` = bit-precise (VTA's int8 x int8 -> "
         "int32 is always bit-precise)." + shapes_from, ""]
    secs = [r["seconds"] for r in recs if r.get("ok") and isinstance(r.get("seconds"), (int, float))]
    L += [f"Campaign time: the {len(secs)} finished tasks took {sum(secs):,.0f} s in all (each in its own "
          f"process); on 2 workers, longest first, that is {makespan(secs, 2):,.0f} s of wall time "
          f"(the issue's target: 3,600 s on 2 cores)" +
          (f"; this invocation ran {ran} task(s) in {wall:,.0f} s of wall time." if wall is not None and ran else ".")
          + " Task times are wall seconds of each task, measured beside whatever else ran on the machine.", ""]
    if not_run:
        kinds = {}
        for k in not_run:
            kinds[k.split("/")[1]] = kinds.get(k.split("/")[1], 0) + 1
        L += [f"Report of the tasks finished so far (`--report-only`): {len(todo) - len(not_run)} of {len(todo)}; not run "
              "yet: " + ", ".join(f"{n} {c}" for n, c in sorted(kinds.items())) + ".", ""]
    L += ["| Mapping | Method | Shape | Numerics | Result | Seconds | What the verdict says |",
         "|---|---|---|---|---|---|---|"]
    for name, method, scope, numerics, v in proofs:
        L.append(f"| `{name}` | {method} | {scope} | {numerics} | {v['kind']} | {v['seconds']:.2f} | {v['what']} |")
    if kills:
        n_k = sum(k[7] for k in kills)
        L += ["", f"## Seeded bugs (mutation testing): {n_k} of {len(kills)} checks killed", "",
              "A bug is killed when the method returns a counterexample that the simulators replay; the layer is "
              "the claim of the proof it is seeded in (verify/scope.py). The LayerReduce family's table at "
              "16x64 and for all sizes is `python -m benchmarks.mutation_maxpool`.", "",
              "| Mapping | Shape | Seeded bug | Layer | Method | Result | Seconds |", "|---|---|---|---|---|---|---|"]
        for name, shape, mut, layer, text, method, v, killed in kills:
            L.append(f"| `{name}` | {shape} | {mut}: {text} | {layer} | {method} | "
                     f"{'killed' if killed else 'SURVIVED (' + v['kind'] + ')'} | {v['seconds']:.1f} |")
    L += ["", "Registered mappings without a formal proof setup (validated by `--method sim|fuzz` only): "
          + ", ".join(f"`{n}`" for n in plain) + ".", "",
          "Notes (written by the script, not measured): flexasr.layernorm, flexasr.attention and flexasr.lstm are "
          "proved against their declared numerics terms (the IR operator in the unit's order and rounding, "
          "functions uninterpreted; mappings/flexasr/*_proof.py); each verdict adds the term's simulated "
          "distance to the float32 IR operator. hlscnn.conv2d(_nchw) is proved against the IR fragment for one "
          "input channel and against its declared numerics term for several (HLSCNN rounds once per kernel tap "
          "after summing an 8-channel block, so no sound per-product axioms exist for C > 1; see "
          "mappings/hlscnn/conv2d_proof.py); its chc rows are the phase proof of the convolution loop nest "
          "(mappings/hlscnn/conv2d_nchw_chc.py, one tracked output per filter lane). flexasr.linear(_pad)'s chc rows "
          "are the induction over the GB control loop's timesteps from one symbolic timestep (verify/induction.py, "
          "mappings/flexasr/linear_chc.py), against the declared numerics term (the dense layer in the PEs' "
          "32-bit accumulation with one rounding); their bmc rows prove the IR fragment in the PE numerics. "
          "flexasr.meanpool's IR average is linked to the "
          "unit's GBAdpfloat_mean by a stated abstraction (the IR averages in float32). The CHC rows of "
          "flexasr.maxpool at every size are in table3.md.", ""]
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(L))
    print(f"wrote {out}")
    if failed:
        print(f"{len(failed)} campaign task(s) failed: " + "; ".join(f"{k}: {e}" for k, e in failed[:3]), file=sys.stderr)
    bad = [p for p in proofs if p[4]["kind"] == "counterexample"] + [k for k in kills if not k[7]]
    return 1 if bad or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
