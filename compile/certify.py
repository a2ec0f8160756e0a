"""Certificates of accelerator calls: the whole call, from IR operands to the IR result.

A call certificate (:class:`compile.call.Call`'s subject: mapping, shape, and the matched IR subterm
with every attribute, dtype and shape) is obtained by one of two checks and recorded in the proof
ledger (method ``call``, checker ``compile.certify``), keyed by the subject's digest; its source
digest covers the import closure of the mapping's module (models, drivers, machine port, proof
modules) and of this checker (the call artefact, the IR semantics, the patterns), so an edit to any
of them invalidates it.

``sim`` (:func:`validate`): ``samples`` seeded random operand sets, drawn from the mapping's own
input distribution (``random_inputs``) pulled back through the operand adapter onto the IR operands
(:func:`sample_operands`); for each, the adapters, the code generator, the stream executed on the
machine from reset, the read-back and the output adapter, against the subterm's IR semantics
(host numpy), Frobenius relative error within the mapping's tolerance at the shape. On the first
sample the stream is also checked (:func:`stream_checks`): writing it as a program fragment
(JSON text) and parsing it back gives the same commands (the fragment writer is inside the
certified subject), and where the driver has a second builder (a vectorised fast path beside the
element path the proofs run), both build the same stream.

``proof`` (:func:`certify` with ``method="proof"``): the ``sim`` check, plus a current proof of the
mapping itself at the shape or for all sizes (``verify.bmc`` / ``verify.chc``: the mapping's IR
fragment against the exact emitted stream and its read-back; obtained on demand by BMC when
missing), plus an exact check that the subterm's IR semantics equals the mapping's IR fragment
applied to the adapted operands for all data (:func:`adapter_proof`: both sides lowered to the
compiler-IR ILA; first by structure, :func:`structural_adapter_proof` with
:mod:`verify.structural`, at any size: every output element is the same operators applied to the
same operand elements; else by BMC over symbolic operand elements, arithmetic as uninterpreted
functions with the axioms of the mapping's IR numerics, up to :data:`ADAPTER_PROOF_LIMIT`).
Result ``proved`` only when all three hold.

Source of the method: the paper's §2.3 (simulation-based validation; proofs of individual
mappings) and DESIGN.md ("One artefact per accelerator call").
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError

CHECKER = "compile.certify"
METHOD = "call"
# The exact adapter check is first structural (value numbering, any size); when that leaves it open,
# its BMC unrolls both sides element by element on the compiler-IR ILA, and beyond this many scalar
# operations (output elements times reduction length, summed over the subterm's nodes) the BMC is
# not attempted (Unknown: the call is certified by validation, not proved). A 16x64x64 linear layer
# is 65,536 (about 100 s here); the proof shapes of the mappings are below 2,000.
ADAPTER_PROOF_LIMIT = 20_000
COVERS_SIM = ("pattern-attributes", "operand-adapters", "codegen-stream", "fragment-writer", "fast-path",
              "read-back", "output-adapter", "numerics-sampled")


# ----------------------------------------------------------------------------- operands
def sample_operands(call, rng: np.random.Generator) -> list[np.ndarray]:
    """IR operands of ``call`` whose adapted inputs are a draw of the mapping's ``random_inputs``
    (so they satisfy its data conditions): the adapter is traced on operand element indices to
    find where each named input element comes from. Operand elements the adapter never reads get
    standard-normal values. CompileError when the adapter is not pure data movement."""
    m, shape = call.mapping, call.shape
    named = m.random_inputs(shape, rng)
    sizes = [int(np.prod(v.shape, dtype=np.int64)) for v in call.variables]
    base = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ids = [np.arange(base[k], base[k + 1], dtype=np.int64).reshape(v.shape) for k, v in enumerate(call.variables)]
    traced = m.bind_operands(shape, ids)
    flat = np.full(int(base[-1]), np.nan)
    for key, idx in traced.items():
        idx = np.asarray(idx)
        if key not in named:
            raise CompileError(f"{call.where()}: the adapter produces input {key!r}, which the mapping's random inputs "
                               f"do not have ({sorted(named)})")
        val = np.asarray(named[key], np.float64)
        if idx.dtype.kind not in "iu" or idx.shape != val.shape or (idx.size and (idx.min() < 0 or idx.max() >= flat.size)):
            raise CompileError(f"{call.where()}: the operand adapter is not data movement on input {key!r} (it does "
                               "not map operand elements to input elements); give the mapping a sampler")
        flat[idx.reshape(-1)] = val.reshape(-1)
    left = np.isnan(flat)
    flat[left] = rng.standard_normal(int(left.sum()))
    return [flat[base[k]:base[k + 1]].reshape(v.shape).astype(v.dtype) for k, v in enumerate(call.variables)]


# ----------------------------------------------------------------------------- stream checks
def _entries(port, commands) -> list[dict]:
    return port.entries(commands)


def stream_checks(call, prog) -> list[str]:
    """Defects of a call's stream (empty when none): the fragment writer's round trip (entries ->
    JSON text -> entries -> commands equals the stream, command for command) and, when the driver
    builds the stream twice (``prog.canonical``: the element path the proofs run), equality of the
    two builders' streams."""
    port = call.port(prog)
    out = []
    cmds = prog.command_list()
    back = port.commands(json.loads(json.dumps(port.entries(cmds))))
    if len(back) != len(cmds):
        out.append(f"fragment writer: {len(cmds)} commands written as {len(back)} entries")
    else:
        norm = [port.entry_of(c) for c in cmds]
        bad = next((k for k, (a, b) in enumerate(zip(norm, back)) if port.entry_of(b) != a), None)
        if bad is not None:
            out.append(f"fragment writer: command {bad} reads back as {port.entry_of(back[bad])}, written from "
                       f"{norm[bad]}")
    if prog.canonical is not None:
        fast, slow = _entries(port, cmds), _entries(port, prog.canonical())
        if len(fast) != len(slow):
            out.append(f"fast path: {len(fast)} commands, the element path emits {len(slow)}")
        else:
            bad = next((k for k, (a, b) in enumerate(zip(fast, slow)) if a != b), None)
            if bad is not None:
                out.append(f"fast path: command {bad} is {fast[bad]}, the element path emits {slow[bad]}")
    return out


# ----------------------------------------------------------------------------- simulation
@dataclass
class CallReport:
    """The errors of one call validation (fractions; ``tolerance`` the mapping's at the shape)."""
    subject: object
    seed: int
    tolerance: float
    errors: list = field(default_factory=list)
    failure: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failure and bool(self.errors) and all(e <= self.tolerance for e in self.errors)

    @property
    def mean(self) -> float:
        return float(np.mean(self.errors)) if self.errors else float("nan")

    def summary(self) -> str:
        if self.failure:
            return self.failure
        return (f"{len(self.errors)} samples, Frobenius relative error mean {100 * self.mean:.4f}% max "
                f"{100 * max(self.errors):.4f}% (tolerance {100 * self.tolerance:.4f}%)")


def validate(call, *, samples: int = 20, seed: int = 0) -> CallReport:
    """The ``sim`` check of ``call`` (module docstring). Raises CompileError / MappingError for a
    call whose adapters cannot be sampled or whose shape violates a side condition."""
    from mappings.base import frobenius_relative_error
    m = call.mapping
    m.check_shape(call.shape)
    rep = CallReport(call.subject, seed, m.tolerance_at(call.shape))
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for k in range(samples):
        operands = sample_operands(call, rng)
        named = call.inputs(operands)
        bad = call.violated(named)
        if bad is not None:
            raise CompileError(f"{call.where()}: a sample violates data condition {bad.name!r}: the mapping's "
                               "random inputs must satisfy its own data conditions")
        prog = call.program(operands, named)
        if k == 0:
            defects = stream_checks(call, prog)
            if defects:
                rep.failure = "; ".join(defects)
                break
        try:
            out, _ = call.execute(prog)
        except CompileError as exc:
            rep.failure = str(exc)
            break
        rep.errors.append(frobenius_relative_error(call.reference(operands), out))
    rep.seconds = time.perf_counter() - t0
    return rep


# ----------------------------------------------------------------------------- exact adapter check
def subject_work(call) -> int:
    """Scalar operations of the subject: per node, output elements times the reduction length of
    its operator (K for dense, C*KH*KW per group for conv2d, the window for pools, 1 otherwise)."""
    from compile.ir.graph import Node, topological
    total = 0
    for v in topological([call.term]):
        if not isinstance(v, Node):
            continue
        n = int(np.prod(v.shape, dtype=np.int64))
        if v.op == "nn.dense":
            n *= int(v.args[0].shape[-1])
        elif v.op == "nn.conv2d":
            w = v.args[1].shape
            n *= int(np.prod(w[1:], dtype=np.int64))
        elif "pool" in v.op and "pool_size" in v.attrs:
            n *= int(np.prod(v.attrs["pool_size"], dtype=np.int64))
        elif v.op in ("lstm_layer", "nn.lstm"):
            n *= 8 * int(v.args[1].shape[-1]) + 8 * int(v.args[2].shape[-1])
        total += n
    return total


def _sides(call, frag, make_elements):
    """Both sides of the adapter check as compiler-IR ILA command streams: the subject lowered on
    operand elements ``make_elements(k, n)`` (a list of n element terms of operand k), and the
    mapping's fragment on the adapted elements (the real ``bind_operands``). Returns (left
    fragment, right commands, operand element lists, the left output's base address, output elements)
    or a reason (str) when a side cannot be built."""
    from compile.rewrites.lower import LoweringError, lower
    from ila.models.relay.numerics import NUMERICS
    from mappings.common import ir_commands
    m = call.mapping
    numerics = getattr(frag, "numerics", "float32")
    elements, data, arrays = {}, [], []
    g = call.graph()
    for k, v in enumerate(g.inputs):
        e = make_elements(k, int(np.prod(v.shape, dtype=np.int64)))
        elements[v.uid] = e
        data += e
        arr = np.empty(len(e), dtype=object)
        arr[:] = e
        arrays.append(arr.reshape(v.shape))
    try:
        left = lower([g.outputs[0]], elements)
    except LoweringError as exc:
        return f"the subject does not lower to the compiler-IR ILA: {exc}"
    named = m.bind_operands(call.shape, arrays)
    data_in = {}
    for k in frag.inputs:
        if k in named:
            data_in[k] = np.asarray(named[k], dtype=object).reshape(-1)
        elif k in frag.consts:              # a constant the fragment places itself (e.g. a zero for padding)
            bits = NUMERICS[numerics].from_float(np.asarray(frag.consts[k])).reshape(-1)
            data_in[k] = np.array([int(b) for b in bits], dtype=object)
        else:
            return f"the adapter does not produce the fragment's input {k!r}"
    n = int(np.prod(g.outputs[0].shape, dtype=np.int64))
    if int(np.prod(frag.output[1], dtype=np.int64)) != n:
        return f"the fragment's output has {int(np.prod(frag.output[1]))} elements, the subject's {n}"
    return left, ir_commands(frag, data_in), data, left.base[g.outputs[0].uid], n


def structural_adapter_proof(call):
    """The adapter check by structure (:mod:`verify.structural`): the subject lowered on opaque
    operand elements and the mapping's fragment on the adapted elements compute every output
    element by the same compiler-IR ILA operators from the same operand elements. Any size (one
    pass over the programs' memory). A verdict: Proved, or Unknown with the reason (a structural
    difference is not a counterexample). Run afresh each time (no cache: a verdict must be about
    the adapters as they are now, patched ones included)."""
    return _structural(call)


def _structural(call):
    from ila.verdict import Proved, Unknown
    from verify.structural import same_outputs
    t0 = time.perf_counter()
    m = call.mapping
    if m.ir_fragment is None:
        return Unknown("structural", "", 0.0, reason=f"{m.name} declares no compiler-IR ILA fragment")
    frag = m.ir_fragment(call.shape)
    try:
        built = _sides(call, frag, lambda k, n: [object() for _ in range(n)])
    except (TypeError, ValueError) as exc:      # an adapter that computes on its operands' values
        built = f"the adapter does not run on opaque elements ({type(exc).__name__}: {exc})"
    if isinstance(built, str):
        return Unknown("structural", "", time.perf_counter() - t0, reason=built)
    left, right, _, out, n = built
    entries = 1 << max(16, int(max(left.top, frag.size()) - 1).bit_length())
    same, why = same_outputs(left.commands, out, right, frag.output[0], n, entries)
    secs = time.perf_counter() - t0
    if same:
        return Proved("structural", "", secs, why, scope=call.shape.text, covers=("adapters-exact",))
    return Unknown("structural", "", secs, reason=why)


def adapter_proof(call, *, timeout: float | None = 60.0):
    """The subject's IR semantics equals the mapping's IR fragment on the adapted operands, for all
    data: first by structure (:func:`structural_adapter_proof`, any size); when that leaves it
    open, by BMC (both sides on the compiler-IR ILA in the fragment's numerics, arithmetic
    uninterpreted with its axioms; operands as symbolic elements through the real adapter), up to
    :data:`ADAPTER_PROOF_LIMIT` scalar operations. A verdict (``ila.verdict``); Unknown when a side
    does not lower to the compiler-IR ILA or the subject is above the limit."""
    from ila.models.relay.model import relay_ila
    from ila.verdict import Unknown
    from mappings.base import ProofSetup, Side, symbolic_data
    from verify.bmc import check_bmc
    m = call.mapping
    if m.ir_fragment is None:
        return Unknown("bmc", "z3", 0.0, reason=f"{m.name} declares no compiler-IR ILA fragment")
    st = structural_adapter_proof(call)
    if st.kind == "proved":
        return st
    work = subject_work(call)
    if work > ADAPTER_PROOF_LIMIT:
        return Unknown("bmc", "z3", st.seconds, reason=f"not shown by structure ({st.reason}); the subject has {work} "
                                                      f"scalar operations, above the BMC adapter check's limit of "
                                                      f"{ADAPTER_PROOF_LIMIT}")
    frag = m.ir_fragment(call.shape)
    built = _sides(call, frag, lambda k, n: symbolic_data(n, 32, prefix=f"op{k}_"))
    if isinstance(built, str):
        return Unknown("bmc", "z3", 0.0, reason=built)
    left, right_cmds, data, out, n = built
    ila = relay_ila(getattr(frag, "numerics", "float32"),
                    tensor_entries=1 << max(16, int(max(left.top, frag.size()) - 1).bit_length()))
    ps = ProofSetup(Side(ila, left.commands, "tensor"), Side(ila, right_cmds, "tensor"), data,
                    [(out + k, frag.output[0] + k) for k in range(n)],
                    axioms=[], describe_output=lambda k: f"result element {k}")
    return check_bmc(ps, solver="z3", timeout=timeout, label=f"call.{m.name}.{call.shape.text}")


# ----------------------------------------------------------------------------- the ledger
def _digest(mapping) -> str:
    from mappings.registry import MODULES
    from verify import ledger
    return ledger.module_digest([MODULES[mapping.name], CHECKER])


def entry(call, result: str, *, seconds: float, covers=(), detail: str = "", extra: dict | None = None) -> dict:
    """The ledger entry of a call certificate (see the module docstring)."""
    from mappings.registry import MODULES
    e = {"mapping": call.mapping.name, "module": MODULES[call.mapping.name], "digest": _digest(call.mapping),
         "method": METHOD, "checker": CHECKER, "scope": call.shape.text, "solver": "", "seconds": round(seconds, 3),
         "result": result, "covers": list(covers), "detail": " ".join(detail.split())[:400],
         "subject": call.subject.term, "subject_digest": call.subject.digest,
         "subject_ir": call.graph().to_text(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    e.update(extra or {})
    return e


def certificates(call, *, require: str = "any", path=None) -> list[dict]:
    """Current call certificates of ``call``'s subject in the ledger (``proved`` first; with
    ``require='proved'`` only those). A ``proved`` entry counts as proved only while the mapping
    proof it cites is current (same method, scope and digest as a current proved entry): a proof
    whose checker, model or setup changed since no longer backs the call, which then has the
    validation only (the entry is returned as ``passed``, its detail saying why)."""
    from verify import ledger
    entries = ledger.load(path)
    got = [e for e in ledger.current([e for e in entries if e["mapping"] == call.mapping.name
                                      and e.get("method") == METHOD
                                      and e.get("subject_digest") == call.subject.digest])]
    if any(e["result"] == "proved" for e in got):
        proofs = {(e.get("method"), e.get("scope"), e.get("digest"))
                  for e in ledger.current([e for e in entries if e["mapping"] == call.mapping.name
                                           and e.get("method") in ("bmc", "chc") and e["result"] == "proved"])}
        got = [e if e["result"] != "proved" or _cited(e) in proofs else
               dict(e, result="passed", detail=f"{e.get('detail', '')}; the mapping proof it cites is no longer current")
               for e in got]
    ok = [e for e in got if e["result"] in (("proved",) if require == "proved" else ("proved", "passed"))]
    return sorted(ok, key=lambda e: e["result"] != "proved")


def _cited(e: dict) -> tuple:
    """(method, scope, digest) of the mapping proof a ``proved`` call entry cites."""
    mp = e.get("mapping_proof") or {}
    return mp.get("method"), mp.get("scope"), mp.get("digest")


def refutations(call, path=None) -> list[dict]:
    """Current entries that refute ``call``'s subject (failed validation, counterexample)."""
    from verify import ledger
    return [e for e in ledger.current([e for e in ledger.load(path) if e["mapping"] == call.mapping.name
                                       and e.get("method") == METHOD
                                       and e.get("subject_digest") == call.subject.digest])
            if e["result"] in ("failed", "counterexample")]


def _mapping_proof(call, *, timeout: float | None, path, obtain: bool):
    """A current proof of the mapping at the call's shape or for all sizes (a ledger entry), obtained
    by BMC when missing and ``obtain``; None when there is none."""
    from verify import ledger
    m = call.mapping
    have = [e for e in ledger.certificates(m.name, call.shape.text, path=path) if e["result"] == "proved"
            and e.get("method") in ("bmc", "chc")]
    if have or not obtain or m.proof is None:
        return have[0] if have else None
    from verify.bmc import check_bmc
    numerics = call.port().proof_numerics
    try:
        ps = m.proof.bmc(dict(call.shape), numerics=numerics)
    except Exception as exc:            # a proof setup that refuses the shape
        from ila.errors import D2AError
        if isinstance(exc, D2AError):
            return None
        raise
    v = check_bmc(ps, solver="z3", timeout=timeout, inline_ufs=numerics == "exact", label=f"{m.name}.{call.shape.text}",
                  scope=call.shape.text)
    e = ledger.record(m, v, scope=ledger.scope_label(call.shape.text, numerics), path=path)
    return e if e["result"] == "proved" else None


# unproved_reason's answer when only the proof of the whole call itself is missing
NOT_ATTEMPTED = "no proof attempted yet (python -m compile MODEL --certify proof)"


def _missing(call, path) -> list[str]:
    """What a proof of the whole call lacks besides running it: the mapping's proof setup or a
    current proof at the shape (or for all sizes); the compiler-IR fragment; the exact adapter
    check above the BMC size limit (checked by structure here)."""
    m, why = call.mapping, []
    if m.proof is None:
        why.append(f"{m.name} has no proof setup (validated by simulation only)")
    elif _mapping_proof(call, timeout=None, path=path, obtain=False) is None:
        why.append(f"no current proof of {m.name} at {call.shape.text} or for all sizes in the ledger")
    if m.ir_fragment is None:
        why.append(f"{m.name} declares no compiler-IR fragment for the exact adapter check")
    else:
        work = subject_work(call)
        if work > ADAPTER_PROOF_LIMIT:
            st = structural_adapter_proof(call)
            if st.kind != "proved":
                why.append(f"the adapter check is not shown by structure ({st.reason}) and its BMC is not "
                           f"attempted above {ADAPTER_PROOF_LIMIT:,} scalar operations (this call: {work:,})")
    return why


def unproved_reason(call, path=None) -> str | None:
    """Why ``call`` has no proof of the whole call (None when a current ``proved`` call certificate
    exists): what :func:`certify` with ``method="proof"`` would lack, without running it (the
    mapping's proof setup or a current proof at the shape or for all sizes, the compiler-IR
    fragment, or the exact adapter check's size limit :data:`ADAPTER_PROOF_LIMIT`);
    :data:`NOT_ATTEMPTED` when nothing but the proof itself is missing."""
    if certificates(call, require="proved", path=path):
        return None
    return "; ".join(_missing(call, path)) or NOT_ATTEMPTED


def certify(call, *, method: str = "sim", samples: int = 20, seed: int = 0, timeout: float | None = 60.0,
            path=None, record: bool = True) -> dict:
    """Certify ``call`` by ``method`` (``sim`` or ``proof``, module docstring) and record the entry in
    the ledger (``record``); returns the entry."""
    if method not in ("sim", "proof"):
        raise CompileError(f"call certification method must be 'sim' or 'proof' (got {method!r})")
    t0 = time.perf_counter()
    rep = validate(call, samples=samples, seed=seed)
    extra = {"seed": seed, "samples": len(rep.errors), "mean_error": rep.mean if rep.errors else None,
             "max_error": max(rep.errors) if rep.errors else None, "tolerance": rep.tolerance,
             "validation": "passed" if rep.passed else "failed"}
    if not rep.passed:
        e = entry(call, "failed", seconds=time.perf_counter() - t0, detail=rep.summary(), extra=extra)
    elif method == "sim":
        e = entry(call, "passed", seconds=time.perf_counter() - t0, covers=COVERS_SIM, detail=rep.summary(),
                  extra=extra)
    else:
        mp = _mapping_proof(call, timeout=timeout, path=path, obtain=True)
        ad = adapter_proof(call, timeout=timeout)
        extra["mapping_proof"] = None if mp is None else {k: mp.get(k) for k in ("method", "scope", "digest", "date")}
        extra["adapter_proof"] = ad.kind
        extra["adapter_method"] = ad.method
        parts = [rep.summary(), f"adapter check: {ad.kind}" + (f" ({ad.detail or getattr(ad, 'reason', '')})"
                                                               if ad.kind != "proved" else ""),
                 "mapping proof: " + (f"{mp['method']} at {mp['scope']}" if mp else "none current")]
        if ad.kind == "counterexample":
            result = "counterexample"
        elif mp is not None and ad.kind == "proved":
            result = "proved"
        else:
            result = "passed"          # the validation stands; no proof of the whole call
        covers = COVERS_SIM + ((("adapters-exact",) + tuple(mp.get("covers") or ())) if result == "proved" else ())
        e = entry(call, result, seconds=time.perf_counter() - t0, covers=covers, detail="; ".join(parts), extra=extra)
    if record:
        from verify import ledger
        e = ledger.store(e, path)
    return e


def rebuild(entry: dict):
    """The :class:`compile.call.Call` a call certificate is about, from its ``subject_ir``; CompileError
    when the entry does not describe one (a forged or malformed subject)."""
    from compile.call import Call
    from compile.ir.text import parse
    from mappings.base import Shape
    from mappings.registry import get
    try:
        g = parse(entry["subject_ir"])
        m = get(entry["mapping"])
        vals = [int(v) for v in str(entry["scope"]).split("/")[0].split("x")]
        call = Call(m, g.outputs[0], g.inputs, Shape(zip(m.shape_dims, vals)))
    except (KeyError, ValueError, TypeError) as exc:
        raise CompileError(f"ledger entry of {entry.get('mapping')!r}: not a call certificate ({exc})") from None
    if call.subject.digest != entry.get("subject_digest"):
        raise CompileError(f"ledger entry of {entry.get('mapping')!r}: its subject_ir does not give its subject digest")
    return call


def recheck(entry: dict) -> dict:
    """Re-run a call certificate (for ``python -m verify.ledger --recheck``): ``{"result": ...,
    "detail": ...}`` of the same check, not recorded."""
    call = rebuild(entry)
    method = "proof" if entry.get("result") in ("proved", "counterexample") else "sim"
    e = certify(call, method=method, samples=int(entry.get("samples") or 20), seed=int(entry.get("seed") or 0),
                record=False)
    return {"result": e["result"], "detail": e["detail"]}


__all__ = ["certify", "validate", "adapter_proof", "sample_operands", "stream_checks", "certificates",
           "refutations", "recheck", "rebuild", "CallReport"]
