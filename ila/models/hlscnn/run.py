"""``python -m ila.models.hlscnn.run FRAGMENT.json``: run a HLSCNN program fragment on its ILA simulator.

The fragment (``{"program fragment": [entries]}``, the entry forms of :mod:`ila.models.hlscnn.port`;
other keys, such as the metadata of a fragment written by ``python -m compile ... --emit``, are
ignored) is checked entry by entry and executed from the reset state; the data of every read is
printed in order (``--json``: as JSON). Exit 0 after a run; 2 with one ``error:`` line for a
malformed fragment (naming the entry and the field) or a command the model rejects.
"""
from __future__ import annotations

import sys

PORT_REF = "ila.models.hlscnn.port:PORT"
PORT_W8_REF = "ila.models.hlscnn.port:PORT_W8"


def main(argv: list[str] | None = None) -> int:
    """``--weight-bits 8`` runs the original design (8-bit weights); default 16."""
    from ila.models.port import fragment_main
    args = list(sys.argv[1:] if argv is None else argv)
    ref = PORT_REF
    for flag in ("--weight-bits=8", "--weight-bits=16"):
        if flag in args:
            args.remove(flag)
            ref = PORT_W8_REF if flag.endswith("8") else PORT_REF
    if "--weight-bits" in args:
        k = args.index("--weight-bits")
        val = args[k + 1] if k + 1 < len(args) else ""
        if val not in ("8", "16"):
            from ila.errors import D2AError, report
            return report(D2AError(f"--weight-bits {val!r}: the HLSCNN designs have 8- or 16-bit weights"))
        del args[k:k + 2]
        ref = PORT_W8_REF if val == "8" else PORT_REF
    return fragment_main(ref, args, prog="python -m ila.models.hlscnn.run [--weight-bits 8|16]")


if __name__ == "__main__":
    sys.exit(main())
