"""What a proof covers: the claims a verdict makes, by name, as the ledger records them.

A mapping's proof is about the program the compiler emits (DESIGN.md, "the trusted path"). Each
claim below is one layer of that path; a verdict lists the claims it proved (``covers``), so the
compiler can tell a full certificate from a partial one, and each claim has a seeded bug that only
it catches (``verify.mutations``).

* ``codegen-bytes`` — the code generator's data bytes: tensor elements (as symbols) flow through
  the real packer, hex encoding and fragment parser into the MMIO stream the proof executes.
* ``order`` — the emitted command order: stores, configuration and start as the stream orders
  them (an input stored after the start is a counterexample).
* ``configuration-fields`` — the configuration words the generator emits (sizes, modes, bases).
* ``model-loops`` — the accelerator's child-ILA loops, from the model, against the declared
  refinement map: the inputs are where the declared map puts them when the loops start, and the
  outputs where it says when the stream ends.
* ``loops-end-to-end`` — the model's loops between the emitted stores and the emitted read-back,
  end to end: what a BMC miter proves when the setup does not declare the map for it to check
  (the outputs read back equal the IR's; where the data lie in between is not checked).
* ``read-back`` — the emitted reads and the driver's read-back function produce the outputs.
* ``numerics-uf`` / ``numerics-exact`` — arithmetic as uninterpreted functions with checked
  axioms (the paper's abstract data types), or bit-exact.

A scope is a shape (``16x64``: that shape only) or ``symbolic`` (every size within the side
conditions, for the claims listed; the claims a symbolic proof does not list are not proved for
all sizes, and a fixed-shape proof or the per-shape stream lemmas must cover them).
"""
from __future__ import annotations

CLAIMS = {
    "codegen-bytes": "the generator's data bytes (packer, hex, fragment parser)",
    "order": "the emitted command order",
    "configuration-fields": "the emitted configuration fields",
    "model-loops": "the model's loops against the declared refinement map",
    "loops-end-to-end": "the model's loops end to end, from the emitted stores to the emitted read-back "
                        "(the declared refinement map not checked)",
    "read-back": "the emitted read-back",
    "numerics-uf": "arithmetic as uninterpreted functions with checked axioms",
    "numerics-exact": "bit-exact arithmetic",
}
FULL = ("codegen-bytes", "order", "configuration-fields", "model-loops", "read-back")


def describe(covers, scope: str) -> str:
    """One sentence: what was proved, for which sizes, and what was not."""
    got = [c for c in covers if c in CLAIMS and not c.startswith("numerics")]
    num = [CLAIMS[c] for c in covers if c.startswith("numerics")]
    e2e = "loops-end-to-end" in covers and "model-loops" not in covers
    missing = [c for c in FULL if c not in covers and not (c == "configuration-fields" and "codegen-bytes" in covers)
               and not (c == "model-loops" and e2e)]
    where = "for every size within the side conditions" if scope == "symbolic" else f"at shape {scope}"
    text = f"covers {', '.join(got)} {where}" + (f" ({num[0]})" if num else "")
    if e2e:
        text += "; the declared refinement map is not checked (the loops are proved end to end only)"
    if missing:
        text += f"; not covered {where}: {', '.join(missing)}"
        if scope == "symbolic":
            text += " (proved per shape by fixed-shape proofs and their stream lemmas)"
    return text


def is_full(covers) -> bool:
    """True when a verdict covers the whole emitted program (every claim of :data:`FULL`; the
    configuration fields are part of the emitted bytes; the loops proved end to end, between the
    emitted stores and the emitted read-back, cover the program without the declared map)."""
    c = set(covers)
    return all(x in c or (x == "configuration-fields" and "codegen-bytes" in c)
               or (x == "model-loops" and "loops-end-to-end" in c and "read-back" in c) for x in FULL)
