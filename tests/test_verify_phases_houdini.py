"""Houdini in the all-sizes phase proofs (verify.phases._Checker._houdini): the concrete-run filter
(``_sample_templates``) drops only template candidates, and what it keeps still proves the phase.
Measured on vta.relu's IR loop (n symbolic), the smallest phase with inferred invariants."""
import pytest

from mappings.vta.alu_allsizes import allsizes_proof
from verify import phases, templates

PHASE = "phase:ir.elementwise"


@pytest.fixture
def recorded(monkeypatch):
    """Run the IR phase of vta.relu's all-sizes proof with inferred invariants, recording the
    templates generated and what the concrete-run filter was given and dropped."""
    seen = {"templates": set(), "given": [], "dropped": set()}
    gen, filt = templates.loop_candidates, phases._Checker._sample_templates

    def loop_candidates(*a, **k):
        out = gen(*a, **k)
        seen["templates"] |= {c.uid for c in out}
        return out

    def sample(self, phase, sysm, start, cands):
        gone, stats = filt(self, phase, sysm, start, cands)
        seen["given"] += [c.uid for c in cands]
        seen["dropped"] |= gone
        return gone, stats
    monkeypatch.setattr(templates, "loop_candidates", loop_candidates)
    monkeypatch.setattr(phases._Checker, "_sample_templates", sample)

    def run():
        return phases.run(allsizes_proof("relu", infer=True), solver="z3", timeout=60, only={PHASE})
    return seen, run


def test_the_filter_drops_templates_only_and_the_kept_invariant_proves_the_phase(recorded):
    seen, run = recorded
    status, rows, notes = run()
    assert status is phases.Status.HOLDS, [(r.name, r.status, r.note) for r in rows]
    assert seen["given"] and set(seen["given"]) <= seen["templates"]     # no relational candidate given
    assert seen["dropped"] and seen["dropped"] <= set(seen["given"])
    assert any("dropped by" in n and "concrete runs" in n for n in notes)


def test_a_filter_that_drops_every_template_leaves_the_phase_unproved(recorded, monkeypatch):
    """The verdict depends on what the filter keeps: with every template dropped, a clause fails
    rather than the phase proving."""
    seen, run = recorded
    monkeypatch.setattr(phases._Checker, "_sample_templates",
                        lambda self, phase, sysm, start, cands: ({c.uid for c in cands}, {}))
    status, rows, _ = run()
    assert status is not phases.Status.HOLDS


def test_a_case_that_fails_after_a_warm_start_is_checked_again_from_all_the_templates(monkeypatch):
    """The lane cases of a split phase start Houdini from the templates the previous case kept; a
    case that then fails is checked again from all of them, and only that second check counts."""
    from types import SimpleNamespace
    proof = allsizes_proof("add", infer=True)
    alu = next(p for p in proof.phases if p.split is not None)
    calls = []

    def fake_phase(self, phase, case, part="all"):
        calls.append((case, self._warm.get((alu.side, alu.name))))
        warm = len(calls) == 2                     # the second case starts warm and fails
        self._warmed = warm
        st = phases.Status.FAILS if warm else phases.Status.HOLDS
        self.rows.append(phases.Row(f"{case}: exit", st, 0.0))
        if warm:
            self.failed.append(phases.TRUE)
        self._warm[(alu.side, alu.name)] = (1, [0])
        return st, SimpleNamespace(cells=[]), {}, phases.TRUE
    monkeypatch.setattr(phases._Checker, "_phase", fake_phase)
    ck = phases._Checker(proof, solver="z3", timeout=60, inline_ufs=True)
    status, _, _ = ck.phase(alu)
    values = list(alu.split[1])
    assert status is phases.Status.HOLDS
    assert len(calls) == len(values) + 1 and calls[1][0] == calls[2][0]       # the failing case, twice
    assert calls[2][1] is None                     # the second check starts from all the templates
    assert not ck.failed and all(r.status is phases.Status.HOLDS for r in ck.rows)
    assert any("checked again from all the templates" in n for n in ck.notes)


def test_a_case_that_fails_from_all_the_templates_is_not_checked_again(monkeypatch):
    from types import SimpleNamespace
    proof = allsizes_proof("add", infer=True)
    alu = next(p for p in proof.phases if p.split is not None)
    calls = []

    def fake_phase(self, phase, case, part="all"):
        calls.append(case)
        self._warmed = False
        st = phases.Status.FAILS if len(calls) == 2 else phases.Status.HOLDS
        self.rows.append(phases.Row(f"{case}: exit", st, 0.0))
        return st, SimpleNamespace(cells=[]), {}, phases.TRUE
    monkeypatch.setattr(phases._Checker, "_phase", fake_phase)
    ck = phases._Checker(proof, solver="z3", timeout=60, inline_ufs=True)
    status, _, _ = ck.phase(alu)
    assert status is phases.Status.FAILS and len(calls) == len(list(alu.split[1]))


@pytest.mark.slow
def test_a_seeded_bug_fails_every_lane_case_even_after_the_retry():
    """vta.add's ALU loop (split on the lane) with inferred invariants and a seeded size-dependent
    generator bug: the first lane case fails from all the templates, the second starts from what
    the first kept, fails, is checked again from all the templates and fails again: the phase
    fails (the retry never turns a real failure into a proof). Lanes 0 and 1 only (about 4 min)."""
    import dataclasses
    from mappings import registry
    from verify.mutations import applied, get
    with applied(get(registry.get("vta.add"), "alu_iter_out_short_some_sizes")):
        proof = allsizes_proof("add", infer=True)
    alu = next(p for p in proof.phases if p.split is not None)
    proof = dataclasses.replace(proof, phases=[dataclasses.replace(p, split=(p.split[0], [0, 1])) if p is alu else p
                                               for p in proof.phases])
    status, rows, notes = phases.run(proof, solver="z3", timeout=60, only={f"phase:{alu.side}.{alu.name}"})
    assert status is phases.Status.FAILS
    assert any("[p.l=1]: checked again from all the templates" in n for n in notes), notes
    assert any(r.status is phases.Status.FAILS and "[p.l=1]" in r.name for r in rows)
