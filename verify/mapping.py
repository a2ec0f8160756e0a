"""``python -m verify.mapping NAME --method sim|fuzz|bmc|chc``: check an IR-accelerator mapping.

* ``sim``  — 100 seeded random inputs at the mapping's shape: Frobenius relative error mean and
  standard deviation, pass/fail against the mapping's tolerance at that shape
  (``Mapping.tolerance_at``; some mappings' tolerances depend on the shape).
* ``fuzz`` — hypothesis over valid shapes and data (with edge values), each input against the
  tolerance at its shape; a failure prints the minimal example and the replay command.
* ``bmc``  — both fragments unrolled from the ILA models, equal inputs under the refinement map,
  miter on the outputs: proved / counterexample (replayed in the simulators) / unknown.
  ``--symmetry``: each output's goal discharged by rewriting when its axiom equations and sums in
  AC normal form rewrite it to false (:mod:`verify.normalize`), else one solver call per class of
  alpha-equivalent goals, the others checked to be renamings of a proved one (:mod:`verify.symmetry`;
  setups with one query per output cell).
* ``chc``  — the product program of the two loops as constrained Horn clauses with relational
  invariants (supplied by the mapping, checked for initiation, consecution and safety; and handed
  to z3's Spacer engine).

Exit status: 0 only when the check passed (proved, or validation within tolerance); 1 for a
counterexample or a failed validation; 2 for unknown (timeout, solver gave up) or bad input.
Every proof verdict is recorded in the ledger (``python -m verify.ledger``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

from ila.errors import D2AError
from mappings.base import MappingError, format_shape

EXIT_OK, EXIT_FAIL, EXIT_UNKNOWN = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    from ila.cli import ArgumentParser
    p = ArgumentParser(prog="python -m verify.mapping",
                       description="Check an IR-accelerator mapping by simulation, fuzzing, BMC or CHC.")
    p.add_argument("name", nargs="?", help="mapping name, accelerator.operation (see --list)")
    p.add_argument("--list", action="store_true", help="list the registered mappings")
    p.add_argument("--method", default="chc", choices=["sim", "fuzz", "bmc", "chc"])
    p.add_argument("--shape", help="shape, e.g. 16x64 (default: the mapping's); 'symbolic' for all sizes (chc)")
    p.add_argument("--solver", default="z3", choices=["z3", "cvc5"])
    p.add_argument("--timeout", type=float, default=None, help="solver timeout in seconds (expiry = unknown)")
    p.add_argument("--numerics", default="uf", choices=["uf", "exact"],
                   help="uf: uninterpreted arithmetic with axioms (paper); exact: bit-precise numerics")
    p.add_argument("--emit-smt", metavar="DIR", help="write the SMT-LIB2 / HORN problems to DIR")
    p.add_argument("--spacer", type=float, metavar="SECONDS",
                   help="chc: also run z3's Spacer on the clauses with unknown invariants")
    p.add_argument("--infer", action="store_true",
                   help="chc: infer the loop invariants (Houdini over generic templates and the mapping's relational "
                        "candidates) instead of using the mapping's supplied ones")
    p.add_argument("--symmetry", action="store_true",
                   help="bmc: per-output goals discharged by rewriting where they can be, else one solver call "
                        "per class of alpha-equivalent goals (verify.symmetry)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=100, help="random inputs for --method sim")
    p.add_argument("--json", action="store_true", help="machine-readable result")
    p.add_argument("--no-ledger", action="store_true", help="do not record the verdict in the ledger")
    return p


def _check_options(args) -> None:
    """Refuse option values and combinations that cannot mean anything (MappingError naming them)."""
    def positive(name, v, *, zero_ok=False):
        if v is None:
            return
        if not math.isfinite(v) or v < 0 or (v == 0 and not zero_ok):
            raise MappingError(f"--{name} {v!r}: must be a finite number {'>= 0' if zero_ok else '> 0'} (seconds)")
    positive("timeout", args.timeout)
    positive("spacer", args.spacer)
    if args.seed < 0:
        raise MappingError(f"--seed {args.seed}: must be >= 0")
    if args.samples <= 0:
        raise MappingError(f"--samples {args.samples}: must be >= 1")
    from ila.cli import check_count
    check_count("--samples", args.samples, item_bytes=64, what="samples")   # an error statistic per sample
    proof = args.method in ("bmc", "chc")
    refused = [(args.infer, "--infer", args.method != "chc"), (args.symmetry, "--symmetry", args.method != "bmc"),
               (args.spacer is not None, "--spacer", args.method != "chc"),
               (args.emit_smt is not None, "--emit-smt", not proof), (args.timeout is not None, "--timeout", not proof),
               (args.numerics != "uf", "--numerics", not proof), (args.shape is not None, "--shape", args.method == "fuzz"),
               (args.samples != 100, "--samples", args.method != "sim")]
    for given, opt, bad in refused:
        if given and bad:
            raise MappingError(f"{opt} does not apply to --method {args.method}")
    if args.shape is not None and not args.shape.strip():
        raise MappingError("--shape '': give a shape such as 16x64" + (" or 'symbolic'" if args.method == "chc" else ""))
    if args.emit_smt is not None:
        d = args.emit_smt
        if os.path.exists(d) and not os.path.isdir(d):
            raise MappingError(f"--emit-smt {d!r}: exists and is not a directory")
        parent = os.path.dirname(os.path.abspath(d))
        if not os.path.isdir(d) and not os.path.isdir(parent):
            raise MappingError(f"--emit-smt {d!r}: its parent directory {parent!r} does not exist")
        from ila.cli import output_dir
        output_dir(d, "--emit-smt")


def _emit(args, payload: dict, text: str) -> None:
    print(json.dumps(payload, indent=1, default=str) if args.json else text)


def _tolerance_text(rep) -> str:
    """'tolerance X%' (one tolerance for all inputs), else the range of the shape-dependent
    tolerances over the inputs with the largest error/tolerance ratio."""
    if not rep.tolerances:
        return "no inputs"
    if rep.tolerance is not None:
        return f"tolerance {100 * rep.tolerance:.4f}%"
    return (f"tolerance by shape {100 * min(rep.tolerances):.4f}%..{100 * max(rep.tolerances):.4f}%, "
            f"max error/tolerance {rep.worst_ratio:.3f}")


def _validation(args, m) -> int:
    from .simval import run_fuzz, run_sim
    if args.method == "sim":
        shape = m.parse_shape(args.shape) if args.shape else None
        rep = run_sim(m, shape=shape, samples=args.samples, seed=args.seed)
    else:
        rep = run_fuzz(m, seed=args.seed)
    verdict = "PASS" if rep.passed else "FAIL"
    if not rep.errors:
        raise MappingError(f"{m.name}: no inputs were checked")
    text = (f"{m.name} --method {rep.method} ({rep.shape}, seed {rep.seed}): {len(rep.errors)} samples, "
            f"Frobenius relative error mean {100 * rep.mean:.4f}% std {100 * rep.std:.4f}% "
            f"({_tolerance_text(rep)}) in {rep.seconds:.1f} s: {verdict}")
    if rep.failure:
        text += "\n" + rep.failure
    _emit(args, rep.to_json(), text)
    code = EXIT_OK if rep.passed else EXIT_FAIL
    if not args.no_ledger:
        from .ledger import record_validation
        record_validation(m, rep)          # after the verdict is out: a ledger error cannot swallow it
    return code


def _proof(args, m) -> int:
    from ila.verdict import Counterexample, Proved
    symbolic = args.shape == "symbolic"
    shape = None if symbolic else (m.parse_shape(args.shape) if args.shape else dict(m.default_shape))
    scope = "symbolic" if symbolic else format_shape(shape)
    if args.method == "bmc":
        if symbolic:
            raise MappingError("--shape symbolic needs --method chc (BMC unrolls a fixed shape)")
        if m.proof is None:
            raise MappingError(f"{m.name} has no proof setup for BMC yet")
        from .bmc import check_bmc
        from .symmetry import check_bmc_symmetric
        check = check_bmc_symmetric if args.symmetry else check_bmc
        v = check(m.proof.bmc(shape, numerics=args.numerics), solver=args.solver, timeout=args.timeout,
                  inline_ufs=args.numerics == "exact", emit_smt=args.emit_smt, label=f"{m.name}.{scope}", scope=scope)
    else:
        from .chc import check_chc
        if m.proof is None or m.proof.chc is None:
            raise MappingError(f"{m.name} has no CHC setup (product program and invariants) yet")
        v = check_chc(m, shape, solver=args.solver, timeout=args.timeout, numerics=args.numerics,
                      emit_smt=args.emit_smt, spacer=args.spacer, infer=args.infer)
    payload = {"mapping": m.name, "shape": scope, "numerics": args.numerics, **v.to_json()}
    text = f"{m.name} --method {args.method} ({scope}, {args.numerics} numerics, {v.solver}): "
    if isinstance(v, Proved):
        text += f"PROVED in {v.seconds:.2f} s — {v.detail}"
        code = EXIT_OK
    elif isinstance(v, Counterexample):
        text += f"COUNTEREXAMPLE in {v.seconds:.2f} s (replayed in the simulator: {v.replayed}) — {v.detail}"
        code = EXIT_FAIL
    else:
        text += f"UNKNOWN after {v.seconds:.2f} s — {v.reason}"
        code = EXIT_UNKNOWN
    _emit(args, payload, text)
    if not args.no_ledger:               # after the verdict is out: a ledger error cannot swallow it
        from .ledger import record, scope_label
        record(m, v, scope=scope_label(scope, args.numerics, args.infer),
               checker="verify.symmetry" if args.symmetry else None)
    return code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from mappings import registry
    try:
        _check_options(args)
        if args.list:
            rows = [registry.get(n) for n in registry.names()]
            if args.json:
                print(json.dumps([{"name": m.name, "ir_pattern": m.ir_pattern, "default_shape": m.default_shape,
                                   "tolerance": m.tolerance_at(m.default_shape),
                                   "tolerance_depends_on_shape": m.shape_dependent_tolerance}
                                  for m in rows], indent=1))
            else:
                for m in rows:
                    tol = f"tolerance {100 * m.tolerance_at(m.default_shape):g}%" + (
                        " (at this shape; depends on the shape)" if m.shape_dependent_tolerance else "")
                    print(f"{m.name:20} {m.ir_pattern:55} default {format_shape(m.default_shape):18} {tol}")
            return EXIT_OK
        if not args.name:
            raise MappingError("give a mapping name (see --list)")
        m = registry.get(args.name)
        if args.method in ("sim", "fuzz"):
            return _validation(args, m)
        return _proof(args, m)
    except D2AError as exc:
        from ila.errors import report
        return report(exc, args.json)           # EXIT_UNKNOWN


if __name__ == "__main__":
    sys.exit(main())
