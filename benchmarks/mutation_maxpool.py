"""Mutation testing of the flexasr.maxpool proofs (issue 6, must-show 2).

Each seeded bug (``MUTATIONS`` in ``mappings/flexasr/maxpool.py``: tiling stride, timestep off by
one, wrong mode, wrong base address, missing lane, wrong in-place target, wrong vector count,
duplicated operand) is checked by BMC and by CHC at one shape; a mutant is *killed* when the
method returns a counterexample that the simulators replayed. Prints a table and the kill rate.

Run: ``python -m benchmarks.mutation_maxpool [--shape RxC] [--solver z3|cvc5]``
"""
from __future__ import annotations

import argparse

from mappings.registry import get
from verify.bmc import check_bmc
from verify.chc import check_chc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="32x32",
                    help="R > 16 (two 16-timestep groups), or tiling_stride is equivalent to the correct mapping")
    ap.add_argument("--solver", default="z3", choices=["z3", "cvc5"])
    args = ap.parse_args(argv)
    m = get("flexasr.maxpool")
    shape = m.parse_shape(args.shape)
    killed = total = 0
    print(f"{'mutation':24} {'bmc':16} {'chc':16} description")
    for name, text in m.extras["mutations"].items():
        vb = check_bmc(m.extras["proof"](shape, mutation=name), solver=args.solver)
        vc = check_chc(m, shape, solver=args.solver, mutation=name)
        row = []
        for v in (vb, vc):
            ok = v.kind == "counterexample" and v.replayed
            killed += ok
            total += 1
            row.append(("killed" if ok else f"SURVIVED({v.kind})") + f" {v.seconds:4.1f}s")
        print(f"{name:24} {row[0]:16} {row[1]:16} {text}")
    clean_b = check_bmc(m.extras["proof"](shape), solver=args.solver).kind
    clean_c = check_chc(m, shape, solver=args.solver).kind
    print(f"{'(unmutated)':24} {clean_b:16} {clean_c:16} the correct mapping")
    print(f"kill rate: {killed}/{total} = {100 * killed / total:.0f}% (shape {args.shape}, {args.solver})")
    return 0 if killed == total and clean_b == clean_c == "proved" else 1


if __name__ == "__main__":
    raise SystemExit(main())
