"""``python -m compile.rewrites``: certify the compiler-IR rewrites and record them in the ledger.

``--list`` prints the rewrites (and how many egglog rules each is); ``NAME ...`` (default: all)
certifies those (their egglog rules run on instances of their left-hand sides: exact BMC through
the compiler-IR ILA at every combination of the parameter space the guard admits + float32
property test on parameters drawn without assuming the guard) and records each certificate in the
ledger (``$D2A_LEDGER`` or the per-user file); ``--broken`` certifies the seeded wrong rewrites
instead (each must be refuted; nothing is recorded). Exit 0 when every rewrite is proved (with
``--broken``: every one refuted), 1 otherwise, 2 on a user error (unknown name, bad option).
"""
from __future__ import annotations

import json
import sys

from ila.errors import D2AError, report


def main(argv=None) -> int:
    from ila.cli import ArgumentParser, check_count, check_int, check_seconds
    ap = ArgumentParser(prog="python -m compile.rewrites", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="rewrites to certify (default: all)")
    ap.add_argument("--list", action="store_true", help="list the rewrites and exit")
    ap.add_argument("--broken", action="store_true", help="certify the seeded wrong rewrites (must be refuted)")
    ap.add_argument("--samples", type=int, default=30, help="random cases of the property test (>= 1)")
    ap.add_argument("--timeout", type=float, default=120.0, help="solver timeout per exact check (s, > 0)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        check_int("--samples", args.samples, 1)
        check_count("--samples", args.samples, item_bytes=512, what="property-test cases")
        check_seconds("--timeout", args.timeout)
    except D2AError as exc:
        return report(exc, args.json)
    from compile.rewrites import registry
    from compile.rewrites.broken import BROKEN
    pool = {r.name: r for r in BROKEN} if args.broken else registry()
    try:
        unknown = [n for n in args.names if n not in pool]
        if unknown:
            raise D2AError(f"unknown rewrite(s) {unknown}; known: {', '.join(pool)}")
        if args.list:
            from compile.rewrites.base import RuleFamily
            for r in pool.values():
                if isinstance(r.rules, RuleFamily):      # counted without building every key's rules
                    size = f"{len(r.rules.of_keys(r.rules.keys[:1]))} egglog rules per size, {len(r.rules.keys)} sizes"
                else:
                    size = f"{len(r.rules)} egglog rule{'s' if len(r.rules) > 1 else ''}"
                print(f"{r.name:34} [{size}] {r.text}")
            return 0
        from compile.rewrites.certify import certify, record
        module = "compile.rewrites.broken" if args.broken else None
        out, ok = [], True
        for name in args.names or list(pool):
            cert = certify(pool[name], module, samples=args.samples, timeout=args.timeout)
            want = "refuted" if args.broken else "proved"
            ok &= cert.result == want
            if not args.broken:
                record(cert)
            out.append({"rewrite": name, "result": cert.result, "seconds": round(cert.seconds, 3),
                        "detail": cert.summary()})
            if not args.json:
                print(f"{cert.summary()} [{cert.seconds:.1f} s]", flush=True)
    except D2AError as exc:
        return report(exc, args.json)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
