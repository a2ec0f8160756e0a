"""Hash-consing of ILA expressions (:mod:`ila.expr`): building the same node twice gives the same
object, also across sweeps of the intern table, which drop only nodes nothing else holds."""
import gc

import ila.expr as E
from ila.expr import bv_const, var
from ila.sorts import BvSort


def _x():
    return var("input", "x_intern_test", BvSort(8), 0)


def _chain(x, n: int, salt: int):
    e = x
    for k in range(n):
        e = (e + bv_const((k * 7 + salt) % 256, 8)) * 3
    return e


def test_same_structure_same_object():
    x = _x()
    assert (x + 1) is (x + 1)
    assert (x + 1) is not (x + 2)


def test_sweeps_keep_every_node_something_holds():
    x = _x()
    kept = _chain(x, 50, 1)                    # held: the whole chain is reachable through its args
    inner = kept.args[0].args[0]               # held directly
    for s in range(5):
        _chain(x, 50, 100 + s)                 # garbage
    gc.collect()
    before = E.intern_size()
    dropped = E._sweep()
    assert dropped > 0 and E.intern_size() == before - dropped
    # rebuilding gives the very same objects: a sweep that dropped a live node from the table
    # would make the rebuild a second, different node of the same structure
    assert _chain(x, 50, 1) is kept
    assert kept.args[0].args[0] is inner


def test_a_dead_chain_goes_in_one_sweep():
    x = _x()
    _chain(x, 200, 7)
    gc.collect()
    E._sweep()
    after_first = E.intern_size()
    assert E._sweep() == 0                     # nothing left for a second pass
    assert E.intern_size() == after_first


def test_rebuilt_after_death_is_a_new_node():
    x = _x()
    uid = _chain(x, 3, 9).uid                  # dies at once
    gc.collect()
    E._sweep()
    assert _chain(x, 3, 9).uid != uid


def test_the_next_sweep_is_due_at_twice_the_live_nodes():
    x = _x()
    keep = [_chain(x, 20, s) for s in range(20)]
    gc.collect()
    E._sweep()
    live = E.intern_size()
    assert E._SWEEP_AT == max(E._SWEEP_MIN, 2 * live)
    assert keep
