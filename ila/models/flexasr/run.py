"""``python -m ila.models.flexasr.run FRAGMENT.json``: run a FlexASR program fragment.

As 3LA's simulator drivers do: the fragment (3LA JSON, ``{"program fragment": [{"instr_No.": k,
"addr": "0x...", "data": "0x...", "mode": "W|R|Q"}, ...]}``; ``data`` is one 128-bit MMIO word,
at most 32 hex digits; ``Q`` waits for the interrupt; other keys of the object, such as the
metadata of a fragment written by ``python -m compile ... --emit``, are ignored) is checked entry by
entry, executed on the FlexASR ILA simulator from reset, and the result is printed: the 16 bytes
each read command returned, in order, and the non-zero 16-byte words of the global buffer (large
and small) after the run. ``--json`` prints the same as JSON.

Exit status 0 after a run; 2 with one ``error: ...`` line for a malformed fragment (the message
names the entry and the field) or a command the model rejects (e.g. starting an unconfigured
unit, an unmapped address). The runner itself is :func:`ila.models.port.fragment_main` over
:data:`ila.models.flexasr.port.PORT`.
"""
from __future__ import annotations

import sys

PORT_REF = "ila.models.flexasr.port:PORT"


def run_fragment(frag: dict) -> dict:
    """Execute a program fragment (already loaded) from reset; return {"reads": [hex words],
    "memory": {memory name: {byte address: hex word}} of the non-zero 16-byte words}. Raises
    FragmentError (malformed entry) or FlexASRError (a command the model rejects)."""
    from ila.models.flexasr.port import PORT
    return PORT.run_fragment(frag)


def main(argv: list[str] | None = None) -> int:
    from ila.models.port import fragment_main
    return fragment_main(PORT_REF, argv)


if __name__ == "__main__":
    sys.exit(main())
