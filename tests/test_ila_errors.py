"""Must-show 5: bad input raises the package's own errors, naming the bad value and the user's line."""
import pytest

from ila import (BV, DecodeError, DuplicateNameError, FuncRef, Ila, IlaError, SimulationError,
                 SortError, UndeclaredError, UpdateError, WidthError, bv_const, load, store)
from ila.sim import Simulator

THIS = __file__.rsplit("/", 1)[-1]


def _model():
    m = Ila("m")
    a = m.new_bv_state("a", 8)
    b = m.new_bv_state("b", 4)
    mem = m.new_mem_state("mem", 4, 8, size=16)
    x = m.new_bv_input("x", 8)
    return m, a, b, mem, x


def test_width_mismatch_names_operands_and_line():
    m, a, b, mem, x = _model()
    with pytest.raises(WidthError) as e:
        a + b
    assert "BV(8)" in str(e.value) and "BV(4)" in str(e.value) and THIS in str(e.value)
    with pytest.raises(WidthError, match="does not fit in 8 bits"):
        a + 300
    with pytest.raises(WidthError, match=r"extract \[9:0\] out of range"):
        a[9:0]


def test_undeclared_state_and_foreign_variables():
    m, a, b, mem, x = _model()
    other = Ila("other")
    y = other.new_bv_state("y", 8)
    i = m.new_instr("I")
    with pytest.raises(UndeclaredError, match="'y'.*not declared in ILA 'm'"):
        i.set_decode(y.eq(0))
    with pytest.raises(UndeclaredError, match="not declared in ILA 'm'"):
        i.set_update(y, a)
    with pytest.raises(UndeclaredError, match="is not a declared state"):
        i.set_update(x, a)          # an input is not a state
    with pytest.raises(UndeclaredError, match="has no state 'nope'"):
        m.state("nope")


def test_duplicate_names():
    m, a, b, mem, x = _model()
    with pytest.raises(DuplicateNameError, match="'a' is already declared"):
        m.new_bv_input("a", 3)
    m.new_instr("I")
    with pytest.raises(DuplicateNameError, match="'I'"):
        m.new_child("c").new_instr("I")


def test_decode_must_be_bool_and_set_once():
    m, a, b, mem, x = _model()
    i = m.new_instr("I")
    with pytest.raises(DecodeError, match="must be Bool"):
        i.set_decode(a)
    i.set_decode(x.eq(1))
    with pytest.raises(DecodeError, match="already has a decode"):
        i.set_decode(x.eq(2))


def test_double_update_and_wrong_sort_update():
    m, a, b, mem, x = _model()
    i = m.new_instr("I")
    i.set_update(a, a + 1)
    with pytest.raises(UpdateError, match="updates state 'a' twice"):
        i.set_update(a, a + 2)
    with pytest.raises(WidthError, match="update of 'b'"):
        i.set_update(b, a)
    with pytest.raises(SortError):
        i.set_update(mem, a)


def test_memory_of_the_wrong_sort():
    m, a, b, mem, x = _model()
    with pytest.raises(WidthError, match="4-bit addresses"):
        load(mem, a)
    with pytest.raises(WidthError, match="8-bit data"):
        store(mem, b, b)
    with pytest.raises(SortError, match="needs a memory"):
        load(a, b)


def test_python_truthiness_and_ambiguous_operators_raise():
    m, a, b, mem, x = _model()
    with pytest.raises(SortError, match="used as a Python bool"):
        if a.eq(1):
            pass
    with pytest.raises(SortError, match="ult/slt"):
        a < 3
    with pytest.raises(SortError, match="lshr/ashr"):
        a >> 1
    with pytest.raises(SortError, match="a.eq"):
        a == 1
    f = FuncRef("f", BV(8), [BV(8)])
    with pytest.raises(WidthError, match="argument 0 of f"):
        f(b)


def test_simulator_errors_name_the_instructions():
    m, a, b, mem, x = _model()
    m.new_instr("P").set_decode(x.eq(1))
    m.new_instr("Q").set_decode(x.ule(1))
    sim = Simulator(m)
    with pytest.raises(SimulationError, match="'P' and 'Q' both decode"):
        sim.step({"x": 1})
    with pytest.raises(SimulationError, match="no instruction"):
        sim.step({"x": 7})
    with pytest.raises(SimulationError, match="8 bits wide"):
        sim.step({"x": 256})
    with pytest.raises(SimulationError, match="unknown input"):
        sim.step({"z": 1})
    assert isinstance(SimulationError("x"), IlaError)


def test_memory_bounds_in_simulator():
    m = Ila("m")
    mem = m.new_mem_state("mem", 8, 8, size=16)
    x = m.new_bv_input("x", 8)
    m.new_instr("W").set_decode(x.ne(0)).set_update(mem, store(mem, x, bv_const(1, 8)))
    sim = Simulator(m)
    sim.step({"x": 3})
    assert sim.memory("mem")[3] == 1
    with pytest.raises(SimulationError, match="beyond its 16 entries"):
        sim.step({"x": 200})


def test_non_identifier_names_simulate():
    """Model and state names are labels: 'ﬁlter' (NFKC-normalised by Python) and 'x²' (not an
    identifier) used to crash the compiled simulator (KeyError, SyntaxError)."""
    from ila import Ila
    from ila.sim import Simulator
    m = Ila("ﬁlter")
    x = m.new_bv_state("x²", 8)
    i = m.new_instr("inc")
    i.set_decode(m.new_bv_input("go", 1).eq(1))
    i.set_update(x, x + 1)
    s = Simulator(m)
    s.step({"go": 1})
    assert s.state["x²"] == 1


def test_a_failing_update_names_the_instruction_and_its_source_line():
    import inspect

    from ila import FuncRef, Ila
    from ila.errors import SimulationError
    from ila.sim import Simulator
    from ila.sorts import BvSort

    def body(a):
        raise ValueError("boom")
    f = FuncRef("bad", BvSort(8), [BvSort(8)], body=body)
    m = Ila("m")
    y = m.new_bv_state("y", 8)
    line = inspect.currentframe().f_lineno + 1
    ins = m.new_instr("apply_bad")
    ins.set_decode(m.new_bv_input("go", 1).eq(1))
    ins.set_update(y, f(y))
    with pytest.raises(SimulationError, match=rf"instruction 'apply_bad' of ILA 'm': its update fails: ValueError: "
                                              rf"boom \(at .*test_ila_errors.py:{line}\)"):
        Simulator(m).step({"go": 1})
