"""Certification of a compiler-IR rewrite (:mod:`compile.rewrites`), recorded in the proof ledger.

The object certified is the rewrite's egglog rules (``Rewrite.rules``), the ones the compiler runs:
every right-hand side checked here is what those rules add to an e-graph holding the left-hand
side, read back as IR (:func:`compile.egraph.apply_rules`). Two checks, both required:

* **exact** — at every combination of the rewrite's small parameter space (``Rewrite.space``) where
  the left-hand side is a valid node and the rules apply (``Rewrite.small``; the combinations the
  guard refuses are counted), both sides are lowered to the compiler-IR ILA (int32 numerics,
  :mod:`compile.rewrites.lower`) over the same symbolic input elements and proved equal on every
  output element for all data by BMC (``verify.bmc``); a difference is a counterexample replayed in
  the simulator. The ILA's ``int32_uf`` numerics keep sigmoid and tanh uninterpreted (no axioms),
  so the recurrent rewrites are proved for every activation function (and so for the real ones)
  while add/multiply stay the exact ring Z/2^32. A combination the ILA cannot express is
  ``unknown`` (the guard should have refused it);
* **property** — random parameters drawn without assuming the guard (``Rewrite.random_params``:
  the guard filters, the generator does not), until ``samples`` of them are cases the rules apply
  to (at most ``DRAWS`` draws per wanted case); random float32 data through the IR's reference semantics:
  equal values (``bit_exact``; -0 and +0 compare equal) or a relative Frobenius error within
  ``rtol``. A shape difference between the sides, or a right-hand side that is not a well-formed
  IR term, or two sides the e-graph refuses to unite (``compile.egraph.EGraphError``), is a
  failure too.

* **bound** (size-bounded rewrites, ``Rewrite.checked``): the rules the compiler runs are the
  checked rules with conditions appended (:func:`bound_check`: same patterns, same right-hand
  sides, the same conditions in the same order, then the bound's), so the checks above cover every
  application the compiler makes. A difference is a failure.

``certify(rw)`` returns a :class:`Certificate`; ``record(cert)`` writes it to the ledger under
``rewrite.<name>`` with a digest over the import closure of the rules' module and this checker
(which includes :mod:`compile.egraph`, the adapter the rules run in).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.rewrites.base import Rewrite

CHECKER = "compile.rewrites.certify"
DRAWS = 40          # random draws per wanted property case, at most


@dataclass
class Certificate:
    name: str
    module: str
    exact: list = field(default_factory=list)        # (params, verdict) at every combination the rules apply to
    combinations: int = 0                            # valid left-hand sides in the parameter space
    property_failures: list = field(default_factory=list)
    samples: int = 0                                 # property cases checked (the rules applied)
    draws: int = 0                                   # random parameter sets drawn (valid or not)
    refused: int = 0                                 # ... of which the guard refused
    seconds: float = 0.0

    @property
    def result(self) -> str:
        kinds = [v.kind for _, v in self.exact]
        if self.property_failures or "counterexample" in kinds:
            return "refuted"
        return "proved" if self.samples and kinds and all(k == "proved" for k in kinds) else "unknown"

    def summary(self) -> str:
        kinds = [v.kind for _, v in self.exact]
        counts = ", ".join(f"{kinds.count(k)} {k}" for k in ("proved", "counterexample", "unknown") if k in kinds)
        first = next((f"; first {v.kind} at {_ptext(p)}" for p, v in self.exact if v.kind != "proved"), "")
        ex = (f"{len(self.exact)} of {self.combinations} parameter combinations (the guard refuses the others): "
              f"{counts or 'none'}{first}")
        prop = (f"{self.samples} random cases ({self.draws} draws, {self.refused} refused by the guard), "
                f"{len(self.property_failures)} failing"
                + (f" (first: {self.property_failures[0]})" if self.property_failures else ""))
        return f"{self.name}: {self.result.upper()} — exact (BMC, int32 ILA) at {ex}; property {prop}"


def _ptext(p: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in p.items())


def exact_check(rw: Rewrite, params: dict, timeout: float | None = 60.0):
    """BMC of the two sides at ``params`` through the compiler-IR ILA (int32): a verdict (an
    ``Unknown`` verdict where the ILA cannot express a side). CompileError where the rewrite does
    not apply at ``params`` or its sides' shapes differ."""
    from compile.rewrites.lower import LoweringError, lower
    from ila.models.relay.activations import relay_ila_with_activations
    from ila.verdict import Unknown
    from mappings.base import ProofSetup, Side, symbolic_data
    from verify.bmc import check_bmc
    inputs, lhs, rhs = rw.build(params)
    if rhs is None:
        raise CompileError(f"rewrite {rw.name} does not apply to its own left-hand side at {_ptext(params)}")
    if tuple(lhs.shape) != tuple(rhs.shape):
        raise CompileError(f"rewrite {rw.name} at {_ptext(params)}: the sides' shapes differ "
                           f"({tuple(lhs.shape)} vs {tuple(rhs.shape)})")
    elements, data = {}, []
    for v in inputs:
        elements[v.uid] = symbolic_data(int(np.prod(v.shape)), 32, prefix=f"{v.name}_")
        data += elements[v.uid]
    try:
        left, right = lower([lhs], elements), lower([rhs], elements)
    except LoweringError as exc:
        return Unknown("bmc", "z3", 0.0, reason=f"not expressible in the compiler-IR ILA: {exc}")
    ila = relay_ila_with_activations("int32_uf", tensor_entries=1 << 16)   # int32, uninterpreted sigmoid/tanh
    n = int(np.prod(lhs.shape))
    ps = ProofSetup(Side(ila, left.commands, "tensor"), Side(ila, right.commands, "tensor"), data,
                    [(left.base[lhs.uid] + k, right.base[rhs.uid] + k) for k in range(n)],
                    describe_output=lambda k: f"output {tuple(int(i) for i in np.unravel_index(k, lhs.shape))}")
    return check_bmc(ps, solver="z3", timeout=timeout, label=f"rewrite.{rw.name}")


def property_check(rw: Rewrite, samples: int = 30, seed: int = 0, stats: dict | None = None) -> tuple[int, list[str]]:
    """(cases checked, failures as texts) of the float32 property test: random parameter sets drawn
    by ``rw.random_params`` (which does not assume the guard) until ``samples`` cases where the
    rules apply, or ``DRAWS * samples`` draws; ``stats`` (if given) receives ``draws`` and
    ``refused`` (valid left-hand sides the guard refused)."""
    from compile.egraph import EGraphError
    from compile.ir.graph import Graph
    from compile.interpret import run_graph as run     # the IR's reference semantics (not the host's float32 kernels)
    rng = np.random.default_rng(seed)
    bad, checked, draws, refused = [], 0, 0, 0
    while checked < samples and draws < DRAWS * samples:
        params = [rw.random_params(rng) for _ in range(min(max(4, 2 * (samples - checked)), DRAWS * samples - draws))]
        batch = []
        for p in params:
            try:
                batch.append((p,) + tuple(rw.lhs(p)))
            except CompileError:          # parameters for which the left-hand side is not well shaped
                batch.append((p, None, None))
        valid = [lhs for _, _, lhs in batch if lhs is not None]
        try:
            rhss = iter(rw.apply_many(valid))
        except EGraphError:                 # the e-graph refused a union: each case alone
            out = []
            for lhs in valid:
                try:
                    out.append(rw.apply(lhs))
                except EGraphError as one:
                    out.append(one)
            rhss = iter(out)
        for p, inputs, lhs in batch:
            if checked >= samples:
                break
            draws += 1
            if lhs is None:
                continue
            rhs = next(rhss)
            if rhs is None:                 # the guard refuses
                refused += 1
                continue
            checked += 1
            if isinstance(rhs, Exception):
                bad.append(f"{_ptext(p)}: {rhs}")
                continue
            if tuple(lhs.shape) != tuple(rhs.shape):
                bad.append(f"{_ptext(p)}: shapes {tuple(lhs.shape)} vs {tuple(rhs.shape)}")
                continue
            feeds = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in inputs}
            a = run(Graph(inputs, [lhs]), feeds)[0].astype(np.float64)
            b = run(Graph(inputs, [rhs]), feeds)[0].astype(np.float64)
            if rw.bit_exact:
                if not np.array_equal(a, b):
                    bad.append(f"{_ptext(p)}: max difference {np.abs(a - b).max():.3g} (must be equal)")
            else:
                err = np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30)
                if err > rw.rtol:
                    bad.append(f"{_ptext(p)}: relative error {err:.3g} > {rw.rtol:g}")
    if stats is not None:
        stats.update(draws=draws, refused=refused)
    return checked, bad


MODULES = ("compile.rewrites.rules", "compile.rewrites.tiling", "compile.rewrites.unroll")


def module_of(rw: Rewrite) -> str:
    """The module that declares ``rw`` (its certificate's digest covers that module's closure)."""
    from compile.rewrites.tiling import TILING
    from compile.rewrites.unroll import UNROLL
    if any(r is rw for r in TILING):
        return MODULES[1]
    return MODULES[2] if any(r is rw for r in UNROLL) else MODULES[0]


def bound_check(rw: Rewrite) -> list[str]:
    """The differences between the rules the compiler runs (``rw.rules``) and the checked rules
    with conditions appended (empty: none, or ``rw`` is not size-bounded), as texts."""
    if not rw.checked:
        return []
    if len(rw.rules) != len(rw.checked):
        return [f"{len(rw.rules)} rules run, {len(rw.checked)} checked"]
    bad = []
    for run, chk in zip(rw.rules, rw.checked):
        if run.name != chk.name or str(run.lhs) != str(chk.lhs) or str(run.rhs) != str(chk.rhs):
            bad.append(f"rule {run.name}: its pattern or right-hand side is not the checked rule {chk.name}'s")
        elif len(run.where) <= len(chk.where) or \
                [str(c) for c in run.where[:len(chk.where)]] != [str(c) for c in chk.where]:
            bad.append(f"rule {run.name}: its conditions are not the checked rule's with bound conditions appended")
    return bad


def certify(rw: Rewrite, module: str | None = None, *, samples: int = 30,
            timeout: float | None = 60.0) -> Certificate:
    """Run the checks on ``rw`` (defined in ``module``, by default :func:`module_of`): the bound
    check (size-bounded rewrites), the property test, then the exact check at every combination of
    its parameter space the rules apply to. A right-hand side the e-graph or the IR refuses at a
    combination is a property failure (the rewrite is wrong there)."""
    t0 = time.perf_counter()
    cert = Certificate(rw.name, module or module_of(rw))
    cert.property_failures += [f"bound: {b}" for b in bound_check(rw)]
    stats: dict = {}
    cert.samples, failures = property_check(rw, samples, stats=stats)
    cert.property_failures += failures
    cert.draws, cert.refused = stats["draws"], stats["refused"]
    apps = rw.applications()
    cert.combinations = len(apps)
    for p, rhs in apps:
        if isinstance(rhs, Exception):      # the e-graph refused the right-hand side at p
            cert.property_failures.append(f"{_ptext(p)}: {rhs}")
    for p in rw.small:
        try:
            cert.exact.append((p, exact_check(rw, p, timeout)))
        except CompileError as exc:       # an ill-formed right-hand side at p
            cert.property_failures.append(f"{_ptext(p)}: {exc}")
    cert.seconds = time.perf_counter() - t0
    return cert


def record(cert: Certificate, path=None) -> dict:
    """Write ``cert`` to the ledger (``rewrite.<name>``, method ``rewrite``)."""
    from verify import ledger
    entry = {"mapping": f"rewrite.{cert.name}", "module": cert.module,
             "digest": ledger.module_digest([cert.module, CHECKER]), "method": "rewrite", "checker": CHECKER,
             "scope": "parameter-space+random", "solver": "z3", "seconds": round(cert.seconds, 3),
             "result": {"refuted": "counterexample"}.get(cert.result, cert.result),
             "covers": ["rewrite-exact-int32", "rewrite-property-float32"], "detail": cert.summary()[:400],
             "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    return ledger.store(entry, path)


def recheck(entry: dict, *, timeout: float | None = None) -> dict:
    """Re-run the certification a ledger entry records (``python -m verify.ledger --recheck``): the
    rewrite it names, from the project's rules, both checks; the result as :func:`record` writes it.
    CompileError for an entry naming no rewrite of ``compile.rewrites.rules``."""
    from compile.rewrites import registry
    name, module = entry["mapping"].removeprefix("rewrite."), entry.get("module")
    rules = registry()
    if not entry["mapping"].startswith("rewrite.") or name not in rules or module != module_of(rules[name]):
        raise CompileError(f"{entry['mapping']!r} (module {module!r}) names no rewrite of {' or '.join(MODULES)}")
    cert = certify(rules[name], module, timeout=60.0 if timeout is None else timeout)
    return {"result": {"refuted": "counterexample"}.get(cert.result, cert.result), "seconds": cert.seconds,
            "detail": cert.summary()[:400]}
