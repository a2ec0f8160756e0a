"""Small example ILAs used by the tests, the docs and ``benchmarks/sim_speed.py``.

* :func:`fifo4`: a 4-entry, 8-bit FIFO with push/pop commands (no children).
* :func:`counter_with_child`: a counter whose START instruction launches a child ILA that writes
  ``buf[i] = i * step`` for i < n, one child instruction per element, then raises ``done``; and a
  16-lane instruction ``BUMP`` that adds 1 to 16 consecutive buffer entries at once.
"""
from __future__ import annotations

from ila import FALSE, TRUE, Ila, bv_const, ite, load, store, zext


def fifo4() -> Ila:
    """A 4-entry FIFO. Inputs: push (1 bit), pop (1 bit), data_in (8 bits).

    States: buf Mem(2, 8) (4 entries), rd_ptr/wr_ptr (2 bits), count (3 bits, 0..4), data_out
    (8 bits). PUSH when not full stores data_in; POP when not empty moves the head to data_out;
    pushing to a full or popping from an empty FIFO matches no instruction (idle).
    """
    m = Ila("fifo4")
    push, pop, din = m.new_bv_input("push", 1), m.new_bv_input("pop", 1), m.new_bv_input("data_in", 8)
    buf = m.new_mem_state("buf", 2, 8, size=4)
    rd, wr = m.new_bv_state("rd_ptr", 2), m.new_bv_state("wr_ptr", 2)
    count, dout = m.new_bv_state("count", 3), m.new_bv_state("data_out", 8)
    for s in (rd, wr, count, dout):
        m.add_init(s.eq(0))
    m.set_valid(push.eq(1) | pop.eq(1))
    p = m.new_instr("PUSH")
    p.set_decode(push.eq(1) & pop.eq(0) & count.ult(4))
    p.set_update(buf, store(buf, wr, din))
    p.set_update(wr, wr + 1)
    p.set_update(count, count + 1)
    q = m.new_instr("POP")
    q.set_decode(pop.eq(1) & push.eq(0) & count.ugt(0))
    q.set_update(dout, load(buf, rd))
    q.set_update(rd, rd + 1)
    q.set_update(count, count - 1)
    return m


def counter_with_child() -> Ila:
    """Counter with a child loop. Inputs: cmd (2 bits: 1 INC, 2 START, 3 BUMP), arg (8 bits).

    States: cnt (8 bits), n (8), step (8), i (8), busy (Bool), done (Bool), buf Mem(8, 8)
    with 256 entries. START(arg) sets n = arg, i = 0, busy; the child LOOP runs STEP
    (buf[i] := i * step, i += 1) while i < n, then FINISH (busy := false, done := true).
    """
    m = Ila("counter")
    cmd, arg = m.new_bv_input("cmd", 2), m.new_bv_input("arg", 8)
    cnt, n, step, i = (m.new_bv_state(x, 8) for x in ("cnt", "n", "step", "i"))
    busy, done = m.new_bool_state("busy"), m.new_bool_state("done")
    buf = m.new_mem_state("buf", 8, 8, size=256)
    m.set_valid(cmd.ne(0))
    inc = m.new_instr("INC")
    inc.set_decode(cmd.eq(1))
    inc.set_update(cnt, cnt + 1)
    inc.set_update(step, ite(arg.eq(0), step, arg))
    start = m.new_instr("START")
    start.set_decode(cmd.eq(2) & ~busy)
    start.set_update(n, arg)
    start.set_update(i, bv_const(0, 8))
    start.set_update(busy, TRUE)
    start.set_update(done, FALSE)
    bump = m.new_instr("BUMP")
    bump.set_decode(cmd.eq(3))
    mem = buf
    for k in range(16):
        mem = store(mem, arg + k, load(buf, arg + k) + 1)
    bump.set_update(buf, mem)
    bump.set_update(cnt, cnt + zext(arg[3:0], 8))
    loop = m.new_child("LOOP")
    loop.set_valid(busy)
    s = loop.new_instr("STEP")
    s.set_decode(i.ult(n))
    s.set_update(buf, store(buf, i, i * step))
    s.set_update(i, i + 1)
    f = loop.new_instr("FINISH")
    f.set_decode(i.uge(n))
    f.set_update(busy, FALSE)
    f.set_update(done, TRUE)
    return m
