"""The six applications' offloads: every (mapping, shape) the compiler offloads, or would offload
with a certificate, in Tables 1 and 4, written as the shape list of ``python -m benchmarks.proofs
--application-shapes`` (issue 26: every offload of the six applications carries a proof).

Table 1's compilations (``compile.applications``, random weights: each accelerator alone, exact
and flexible matching) and Table 4's designs (the trained models, ``benchmarks.table4.APPS``: the
650-feature LSTM and the Transformer language model included), each compiled as the tables compile
it, with certificates obtained on demand by simulation (``--certify sim``, as Table 1's first pass;
they go to the ledger): the calls the gate allows are the offloads. (Listing the calls refused for
want of a certificate instead would add the alternatives the compiler tries when its first choice
is refused, shapes the tables never offload.) Other models' offloads (the ONNX-zoo models of
``benchmarks.cosim``) are not in it; ``benchmarks.proofs --all-call-shapes`` proves those too (every
shape of a call certificate in the ledger).

Usage: ``python -m benchmarks.offloads`` (both tables; Table 4's trained models come from the
training cache, trained first when missing), ``--tables 1`` (Table 1 only), ``--apps NAMES``,
``--certify none`` (no certification on demand).
"""
from __future__ import annotations

import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "paper_results" / "campaigns" / "application_offloads.txt"
LEDGER = pathlib.Path(__file__).resolve().parents[1] / "paper_results" / "ledger.json"


def _pairs(res) -> set[tuple[str, str]]:
    """(mapping, shape) of every offload of a compilation."""
    return {(o.mapping, o.shape) for o in res.offloads}


def table1_offloads(apps, ledger: str, certify: str = "sim") -> dict[str, set]:
    """Per application of Table 1: the (mapping, shape) pairs of its compilations."""
    import torch
    from benchmarks.table1 import TARGETS
    from compile.applications import load
    from compile.compiler import compile_graph
    from compile.frontend import from_torch
    torch.set_num_threads(1)
    out = {}
    for name in apps:
        module, ex = load(name)
        graph = from_torch(module, ex)
        got = set()
        for target in TARGETS:
            for mode in ("exact", "flexible"):
                got |= _pairs(compile_graph(graph, (target,), matching=mode, certify=certify, ledger_path=ledger))
        out[name] = got
    return out


def table4_offloads(apps, ledger: str, certify: str = "sim") -> dict[str, set]:
    """Per application of Table 4 (trained models): the (mapping, shape) pairs of every design."""
    from benchmarks import table4 as T
    out = {}
    for app in apps:
        got = set()
        for design in T.APPS[app].designs:
            got |= _pairs(T.compile_app(app, design[0], "auto", ledger, certify))
        out[app] = got
    return out


def write(pairs_by_source: dict, path) -> int:
    pairs = sorted(set().union(*pairs_by_source.values())) if pairs_by_source else []
    lines = ["# (mapping, shape) of every offload of the six applications (Tables 1 and 4), written by",
             "# python -m benchmarks.offloads; read by python -m benchmarks.proofs --application-shapes",
             *[f"# {src}: {len(p)} pairs" for src, p in sorted(pairs_by_source.items())],
             *[f"{m} {s}" for m, s in pairs]]
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(path).write_text("\n".join(lines) + "\n")
    return len(pairs)


def main(argv=None) -> int:
    from ila.cli import ArgumentParser, check_names, output_file
    from ila.errors import D2AError, report
    ap = ArgumentParser(prog="python -m benchmarks.offloads", description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="1,4", help="comma-separated: 1 (Table 1's compilations), 4 (Table 4's designs)")
    ap.add_argument("--apps", default="", metavar="NAMES", help="comma-separated applications (default: all six)")
    ap.add_argument("--out", default=str(OUT), help="the list (default paper_results/campaigns/application_offloads.txt)")
    ap.add_argument("--ledger", default=str(LEDGER), help="the ledger the compilations read (and certify into)")
    ap.add_argument("--certify", default="sim", choices=("sim", "none"),
                    help="'sim' (default): certificates obtained on demand, as the tables' first run; 'none': the "
                         "ledger's current certificates only (a call without one is not listed)")
    args = ap.parse_args(argv)
    try:
        from benchmarks import table4 as T
        from compile.applications import names
        NAMES = names()
        tables = [t for t in args.tables.split(",") if t]
        check_names("--tables", tables, ["1", "4"], what="table")
        apps = [a for a in args.apps.split(",") if a]
        if apps:
            check_names("--apps", apps, sorted(set(NAMES) | set(T.APPS)), what="application")
        output_file(args.out, "--out")
        by = {}
        if "1" in tables:
            for name, p in table1_offloads([a for a in (apps or NAMES) if a in NAMES], args.ledger,
                                           args.certify).items():
                by[f"table 1, {name}"] = p
        if "4" in tables:
            for name, p in table4_offloads([a for a in (apps or list(T.APPS)) if a in T.APPS], args.ledger,
                                           args.certify).items():
                by[f"table 4, {name}"] = p
    except D2AError as exc:
        return report(exc)
    n = write(by, args.out)
    print(f"{n} (mapping, shape) pairs from {len(by)} compilations' sets -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
