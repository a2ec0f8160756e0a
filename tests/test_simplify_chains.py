"""Read-over-write through indexed store chains (ila.simplify): a load simplified through the
shared chain index is node for node the load the store-by-store walk gives, on chains that grow,
branch off older nodes and mix constant and symbolic addresses."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ila import BvSort, bv_const
from ila.expr import Expr, store
from ila.ops import Op
from ila.simplify import Rewriter, _ChainTable
from ila.sorts import MemSort
from ila.unroll import symbol

SORT = MemSort(8, 8)


def walk_load(mem: Expr, addr: Expr) -> Expr:
    """The reference: read-over-write one store at a time (no index)."""
    while mem.op is Op.STORE:
        if mem.args[1] is addr:
            return mem.args[2]
        if addr.op is Op.CONST and mem.args[1].op is Op.CONST:
            mem = mem.args[0]
            continue
        break
    return Expr(Op.LOAD, BvSort(8), (mem, addr))


# one step: extend the chain at node `at` (an index into the nodes made so far; -1 the newest)
# with a store at a constant address (or a symbolic one), then load some addresses from the result
steps = st.lists(st.tuples(st.integers(-1, 40), st.integers(0, 11), st.booleans(),
                           st.lists(st.integers(0, 11), max_size=4)), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(steps)
def test_indexed_loads_equal_the_walk(plan):
    base = symbol("chains.m", SORT)
    nodes = [base]
    sym_addr = symbol("chains.a", BvSort(8))
    rw = Rewriter()
    for k, (at, addr, symbolic, loads) in enumerate(plan):
        parent = nodes[at] if at < len(nodes) else nodes[-1]
        a = sym_addr if symbolic and k % 7 == 3 else bv_const(addr, 8)
        node = store(parent, a, symbol(f"chains.d{k}", BvSort(8)))
        nodes.append(node)
        for q in loads + [addr]:
            for probe in (node, parent):
                want = walk_load(probe, bv_const(q, 8))
                assert rw.load(probe, bv_const(q, 8)) is want


def test_long_chains_branch_without_seeing_newer_stores():
    """A chain of 40 constant stores, then a branch off its 20th node: the branch must not see the
    stores 21..40 the table shared with the longer chain holds."""
    m = symbol("branch.m", SORT)
    chain = [m]
    for k in range(40):
        chain.append(store(chain[-1], bv_const(k % 10, 8), symbol(f"branch.d{k}", BvSort(8))))
    rw = Rewriter()
    # index the 20th node, then the 40th (which extends the 20th's table in place)
    for node in (chain[20], chain[-1]):
        assert rw.load(node, bv_const(3, 8)) is walk_load(node, bv_const(3, 8))
    side = store(chain[20], bv_const(200, 8), symbol("branch.side", BvSort(8)))
    for q in (0, 3, 9, 200, 201):
        assert rw.load(side, bv_const(q, 8)) is walk_load(side, bv_const(q, 8))
    # the longer chain still reads its own newest stores
    assert rw.load(chain[-1], bv_const(9, 8)) is chain[-1].args[2]      # store 39 is at address 9


def test_table_prefix_keeps_only_the_first_stores():
    t = _ChainTable(symbol("prefix.m", SORT))
    vals = [symbol(f"prefix.d{k}", BvSort(8)) for k in range(6)]
    for k, v in enumerate(vals):
        t.append(k % 3, v)
    p = t.prefix(4)
    assert p.get(0, 4) is vals[3] and p.get(1, 4) is vals[1] and p.get(2, 4) is vals[2]
    assert t.get(1, 6) is vals[4] and t.get(1, 4) is vals[1] and t.get(2, 2) is None
