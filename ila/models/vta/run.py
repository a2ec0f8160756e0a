"""``python -m ila.models.vta.run FRAGMENT.json``: run a VTA program fragment on its ILA simulator.

The fragment (``{"program fragment": [entries]}``, the entry forms of :mod:`ila.models.vta.port`;
other keys, such as the metadata of a fragment written by ``python -m compile ... --emit``, are
ignored) is checked entry by entry and executed from the reset state; the data of every read is
printed in order (``--json``: as JSON). Exit 0 after a run; 2 with one ``error:`` line for a
malformed fragment (naming the entry and the field) or a command the model rejects.
"""
from __future__ import annotations

import sys

PORT_REF = "ila.models.vta.port:PORT"


def main(argv: list[str] | None = None) -> int:
    from ila.models.port import fragment_main
    return fragment_main(PORT_REF, argv)


if __name__ == "__main__":
    sys.exit(main())
