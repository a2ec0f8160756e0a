"""Certification of a compiler-IR rewrite (:mod:`compile.rewrites`), recorded in the proof ledger.

Two checks, both required:

* **exact** — at each of the rewrite's small parameters, both sides are lowered to the
  compiler-IR ILA (int32 numerics, :mod:`compile.rewrites.lower`) over the same symbolic input
  elements and proved equal on every output element for all data by BMC (``verify.bmc``); a
  difference is a counterexample replayed in the simulator. The ILA's ``int32_uf`` numerics keep
  sigmoid and tanh uninterpreted (no axioms), so the recurrent rewrites are proved for every
  activation function (and so for the real ones) while add/multiply stay the exact ring Z/2^32;
* **property** — on random parameters satisfying the guard, random float32 data through the host
  runtime: equal values (``bit_exact``; -0 and +0 compare equal) or a relative Frobenius error
  within ``rtol``; a shape difference between the sides is a failure too.

``certify(rw)`` returns a :class:`Certificate`; ``record(cert)`` writes it to the ledger under
``rewrite.<name>`` with a digest over the import closure of the rules' module and this checker.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compile.errors import CompileError
from compile.rewrites.base import Rewrite

CHECKER = "compile.rewrites.certify"


@dataclass
class Certificate:
    name: str
    module: str
    exact: list = field(default_factory=list)        # (params, verdict)
    property_failures: list = field(default_factory=list)
    samples: int = 0
    seconds: float = 0.0

    @property
    def result(self) -> str:
        kinds = [v.kind for _, v in self.exact]
        if self.property_failures or "counterexample" in kinds:
            return "refuted"
        return "proved" if self.samples and kinds and all(k == "proved" for k in kinds) else "unknown"

    def summary(self) -> str:
        ex = "; ".join(f"{_ptext(p)}: {v.kind}" for p, v in self.exact)
        prop = (f"{self.samples} random cases, {len(self.property_failures)} failing"
                + (f" (first: {self.property_failures[0]})" if self.property_failures else ""))
        return f"{self.name}: {self.result.upper()} — exact (BMC, int32 ILA) {ex}; property {prop}"


def _ptext(p: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in p.items())


def exact_check(rw: Rewrite, params: dict, timeout: float | None = 60.0):
    """BMC of the two sides at ``params`` through the compiler-IR ILA (int32): a verdict."""
    from compile.rewrites.lower import lower
    from ila.models.relay.model import relay_ila
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
    left, right = lower([lhs], elements), lower([rhs], elements)
    ila = relay_ila("int32_uf", tensor_entries=1 << 16)    # int32 with uninterpreted sigmoid/tanh
    n = int(np.prod(lhs.shape))
    ps = ProofSetup(Side(ila, left.commands, "tensor"), Side(ila, right.commands, "tensor"), data,
                    [(left.base[lhs.uid] + k, right.base[rhs.uid] + k) for k in range(n)],
                    describe_output=lambda k: f"output {tuple(int(i) for i in np.unravel_index(k, lhs.shape))}")
    return check_bmc(ps, solver="z3", timeout=timeout, label=f"rewrite.{rw.name}")


def property_check(rw: Rewrite, samples: int = 30, seed: int = 0) -> tuple[int, list[str]]:
    """(cases checked, failures as texts) of the float32 property test on ``samples`` random
    parameter sets (those where the rewrite does not apply are skipped)."""
    from compile.runtime import run
    from compile.ir.graph import Graph
    rng = np.random.default_rng(seed)
    bad, checked = [], 0
    for _ in range(samples):
        p = rw.random_params(rng)
        try:
            inputs, lhs, rhs = rw.build(p)
        except CompileError:            # parameters for which the left-hand side is not well shaped
            continue
        if rhs is None:                 # the side condition does not hold there
            continue
        if tuple(lhs.shape) != tuple(rhs.shape):
            bad.append(f"{_ptext(p)}: shapes {tuple(lhs.shape)} vs {tuple(rhs.shape)}")
            continue
        checked += 1
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
    return checked, bad


def certify(rw: Rewrite, module: str = "compile.rewrites.rules", *, samples: int = 30,
            timeout: float | None = 60.0) -> Certificate:
    """Run both checks on ``rw`` (defined in ``module``)."""
    t0 = time.perf_counter()
    cert = Certificate(rw.name, module)
    cert.samples, cert.property_failures = property_check(rw, samples)
    for p in rw.small:
        cert.exact.append((p, exact_check(rw, p, timeout)))
    cert.seconds = time.perf_counter() - t0
    return cert


def record(cert: Certificate, path=None) -> dict:
    """Write ``cert`` to the ledger (``rewrite.<name>``, method ``rewrite``)."""
    from verify import ledger
    entry = {"mapping": f"rewrite.{cert.name}", "module": cert.module,
             "digest": ledger.module_digest([cert.module, CHECKER]), "method": "rewrite", "checker": CHECKER,
             "scope": "small-shapes+random", "solver": "z3", "seconds": round(cert.seconds, 3),
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
    if not entry["mapping"].startswith("rewrite.") or module != "compile.rewrites.rules" or name not in rules:
        raise CompileError(f"{entry['mapping']!r} (module {module!r}) names no rewrite of compile.rewrites.rules")
    cert = certify(rules[name], module, timeout=60.0 if timeout is None else timeout)
    return {"result": {"refuted": "counterexample"}.get(cert.result, cert.result), "seconds": cert.seconds,
            "detail": cert.summary()[:400]}
