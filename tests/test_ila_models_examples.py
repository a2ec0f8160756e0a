"""Must-show 2 and 3 of the DSL core: every instruction of the example models steps identically in
the simulator and in the unrolled SMT encoding; BMC proves and refutes (z3 and cvc5)."""
import numpy as np
import pytest

from ila import SimulationError
from verify.model_bmc import bmc
from ila.models.examples import counter_with_child, fifo4
from ila.sim import Simulator
from ila.smt import SmtEncoder, check
from ila.unroll import execute, unroll_path
from ila import expr as E


def _random_state(m, rng):
    st = {}
    for v in m.all_states():
        if v.sort.is_mem:
            st[v.name] = rng.integers(0, 1 << v.sort.data_width, m.mem_size(v.name))
        elif v.sort.is_bool:
            st[v.name] = bool(rng.integers(0, 2))
        else:
            st[v.name] = int(rng.integers(0, 1 << v.sort.width))
    return st


def _smt_step(m, name, state, cmd, solver):
    u = unroll_path(m, [name], [cmd], init=state, connect=True)
    enc = SmtEncoder()
    final = u.states[-1]
    want = {}
    for v in m.all_states():
        x = final[v.name]
        if v.sort.is_mem:
            for a in range(m.mem_size(v.name)):
                want[(v.name, a)] = E.load(x, E.bv_const(a, v.sort.addr_width))
        else:
            want[v.name] = x
    terms = {k: enc.encode(x) for k, x in want.items()}
    res = check(enc, enc.encode_all(u.conditions) or [enc.mgr.TRUE()], solver=solver, want=terms.values())
    assert res.status == "sat", f"path of {name} infeasible under the decode"
    out = {}
    for k, t in terms.items():
        out[k] = res.values[t]
    return out


@pytest.mark.parametrize("model", [fifo4, counter_with_child])
def test_every_instruction_steps_identically_in_sim_and_smt(model):
    m = model()
    rng = np.random.default_rng(1)
    names = [i.name for i in m.all_instrs()]
    done = {n: 0 for n in names}
    for trial in range(400):
        if all(c >= 3 for c in done.values()):
            break
        st = _random_state(m, rng)
        cmd = {v.name: int(rng.integers(0, 1 << v.sort.width)) for v in m.all_inputs()}
        for name in names:
            if done[name] >= 3:
                continue
            sim = Simulator(m, state=st)
            try:
                sim.fire(name, cmd)
            except SimulationError:
                continue       # decode does not hold for this random state/command
            got = _smt_step(m, name, st, cmd, "z3" if done[name] % 2 == 0 else "cvc5")
            for v in m.all_states():
                if v.sort.is_mem:
                    mem = sim.memory(v.name)
                    for a in range(len(mem)):
                        assert got[(v.name, a)] == int(mem[a]), (name, v.name, a)
                else:
                    assert got[v.name] == sim.state[v.name], (name, v.name)
            done[name] += 1
    assert all(c >= 3 for c in done.values()), done


@pytest.mark.parametrize("solver", ["z3", "cvc5"])
def test_bmc_proves_and_refutes_fifo_properties(solver):
    m = fifo4()
    count, dout = m.state("count"), m.state("data_out")
    proved = bmc(m, count.ule(4), 8, solver=solver)
    assert proved.kind == "proved" and proved.scope == "bound 8"
    cex = bmc(m, count.ne(4), 8, solver=solver)
    assert cex.kind == "counterexample" and cex.replayed
    # replay once more, independently of bmc's own replay
    sim = Simulator(m, state=cex.trace["initial_state"])
    for cmd in cex.trace["inputs"]:
        sim.step(cmd, allow_idle=True)
    assert sim.state["count"] == 4
    cex2 = bmc(m, dout.ne(0xA5), 4, solver=solver)
    assert cex2.kind == "counterexample"
    sim = Simulator(m, state=cex2.trace["initial_state"])
    for cmd in cex2.trace["inputs"]:
        sim.step(cmd, allow_idle=True)
    assert sim.state["data_out"] == 0xA5


def test_bmc_bound_too_small_is_proved_only_for_that_bound():
    m = fifo4()
    v = bmc(m, m.state("count").ne(4), 3)
    assert v.kind == "proved" and v.scope == "bound 3"


def test_symbolic_execution_matches_simulator_on_child_loop():
    m = counter_with_child()
    cmds = [{"cmd": 1, "arg": 3}, {"cmd": 2, "arg": 5}, {"cmd": 3, "arg": 2}]
    u = execute(m, cmds, init={v.name: 0 for v in m.all_states() if not v.sort.is_mem})
    assert u.steps == ["INC", "START", "STEP", "STEP", "STEP", "STEP", "STEP", "FINISH", "BUMP"]
    sim = Simulator(m, record_trace=True)
    sim.run(cmds)
    assert sim.trace == u.steps
    enc = SmtEncoder()
    buf0 = u.init["buf"]
    for a in range(24):
        got = u.final["buf"]
        x = E.load(got, E.bv_const(a, 8))
        # data unknown initially except what the program wrote: compare where the program wrote
        if 0 <= a < 5 or 2 <= a < 18:
            res = check(enc, [enc.mgr.TRUE()], want=[enc.encode(x), enc.encode(E.load(buf0, E.bv_const(a, 8)))])
            val, orig = res.values[enc.encode(x)], res.values[enc.encode(E.load(buf0, E.bv_const(a, 8)))]
            expect = (a * 3 if a < 5 else orig) + (1 if 2 <= a < 18 else 0)
            assert val == expect % 256
