"""verify.horn: the product program as HORN clauses with unknown loop predicates."""
import z3

from mappings import registry
from verify.horn import horn_clauses, horn_smtlib


def test_horn_export_parses_and_leaves_configuration_out_of_the_predicates():
    m = registry.get("flexasr.maxpool")
    spec = m.proof.chc({"R": 2, "C": 16})
    text = horn_smtlib(spec)
    s = z3.SolverFor("HORN")
    s.from_string(text)                                  # well-formed for z3's CHC engines
    assert len(s.assertions()) == 7                      # init, step, exit per loop + safety
    built, preds, _ = horn_clauses(spec)
    ir_args = {a.name for a in preds[0][1]}
    assert "cnt_1" in ir_args and "cfg_4" not in ir_args  # counters are unknowns, configuration is not
