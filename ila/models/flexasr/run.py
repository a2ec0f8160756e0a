"""``python -m ila.models.flexasr.run FRAGMENT.json``: run a hand-written FlexASR program fragment.

As 3LA's simulator drivers do: the fragment (3LA JSON, ``{"program fragment": [{"instr_No.": k,
"addr": "0x...", "data": "0x...", "mode": "W|R|Q"}, ...]}``; ``data`` is one 128-bit MMIO word,
at most 32 hex digits; ``Q`` waits for the interrupt) is checked entry by entry, executed on the
FlexASR ILA simulator from reset, and the result is printed: the 16 bytes each read command
returned, in order, and the non-zero 16-byte words of the global buffer (large and small) after
the run. ``--json`` prints the same as JSON.

Exit status 0 after a run; 2 with one ``error: ...`` line for a malformed fragment (the message
names the entry and the field) or a command the model rejects (e.g. starting an unconfigured
unit, an unmapped address).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ila.errors import D2AError

MEMORIES = ("gb_core_large_buffer", "gb_core_small_buffer")


def run_fragment(frag: dict) -> dict:
    """Execute a program fragment (already loaded) from reset; return {"reads": [hex words],
    "memory": {memory name: {byte address: hex word}} of the non-zero 16-byte words}. Raises
    FragmentError (malformed entry) or FlexASRError (a command the model rejects)."""
    from ila.models.flexasr.driver import Runner
    from ila.models.flexasr.isa import fragment_to_mmio
    cmds = fragment_to_mmio(frag)
    r = Runner()
    reads = r.execute(cmds)
    out = {"reads": ["0x" + bytes(np.asarray(w, np.uint8)[::-1]).hex().upper() for w in reads], "memory": {}}
    for name in MEMORIES:
        mem = np.asarray(r.sim.memory(name), dtype=np.uint8)
        words = mem[: mem.size // 16 * 16].reshape(-1, 16)
        nz = np.flatnonzero(words.any(axis=1))
        out["memory"][name] = {f"0x{16 * int(k):06X}": "0x" + bytes(words[k][::-1]).hex().upper() for k in nz}
    out["child_steps"] = int(r.sim.child_steps)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ila.models.flexasr.run",
                                 description="Run a FlexASR program fragment (3LA JSON) on the FlexASR ILA simulator.")
    ap.add_argument("fragment", help="program-fragment JSON file")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    args = ap.parse_args(argv)
    from ila.models.flexasr.isa import load_fragment
    try:
        res = run_fragment(load_fragment(args.fragment))
    except D2AError as exc:
        msg = " ".join(str(exc).split())
        print(json.dumps({"error": msg}) if args.json else f"error: {msg}", file=sys.stdout if args.json else sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"{len(res['reads'])} read(s), {res['child_steps']} child-ILA steps")
    for k, w in enumerate(res["reads"]):
        print(f"read {k}: {w}")
    for name, words in res["memory"].items():
        print(f"{name}: {len(words)} non-zero 16-byte word(s)")
        for a, w in list(words.items())[:64]:
            print(f"  {a}: {w}")
        if len(words) > 64:
            print(f"  ... {len(words) - 64} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
