"""Test helper: snapshots of a simulator's architectural state, for the differential tests of fast
paths (a fast path must leave every state, every memory and the step count as stepping does)."""
import numpy as np


def snapshot(sim):
    """(copy of every state, step count)."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in sim.state.items()}, sim.steps


def same(a, b) -> bool:
    """Whether two :func:`snapshot` results are equal: every state and memory, and the step count."""
    (sa, na), (sb, nb) = a, b
    return na == nb and sa.keys() == sb.keys() and all(
        np.array_equal(sa[k], sb[k]) if isinstance(sa[k], np.ndarray) else sa[k] == sb[k] for k in sa)


def copy_of(sim):
    """A second simulator of the same ILA in the same state (states, memories, step count)."""
    from ila.sim import Simulator
    other = Simulator(sim.ila)
    other.state = snapshot(sim)[0]
    other.steps = sim.steps
    return other
