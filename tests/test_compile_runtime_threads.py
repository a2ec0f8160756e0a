"""compile.runtime.threads: the host runtime's native thread pools follow the setting inside the
context and are restored after; results do not depend on it; bad counts are refused by value."""
import numpy as np
import pytest

from compile.errors import CompileError
from compile.ir import Graph, call, const, var
from compile.runtime import run
from compile.runtime.threads import MEASURE_THREADS, current, host_threads, restore, set_host_threads


def test_pools_follow_the_setting_and_are_restored():
    before = current()
    assert before, "numpy's BLAS is a native thread pool threadpoolctl sees"
    with host_threads(1):
        assert set(current().values()) == {1}
        with host_threads(2):
            assert set(current().values()) == {2}
        assert set(current().values()) == {1}
    assert current() == before
    prev = set_host_threads(MEASURE_THREADS)
    try:
        assert set(current().values()) == {MEASURE_THREADS}
    finally:
        restore(prev)
    assert current() == before
    with host_threads(None):
        assert current() == before


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(0)
    x = var("x", (1, 16, 12, 12))
    y = call("nn.conv2d", x, const(rng.standard_normal((32, 16, 3, 3)).astype(np.float32)), padding=(1, 1, 1, 1))
    g = Graph([x], [call("nn.dense", call("reshape", y, newshape=(32, -1)),
                         const(rng.standard_normal((7, 144)).astype(np.float32)))])
    feeds = {"x": rng.standard_normal((1, 16, 12, 12)).astype(np.float32)}
    outs = []
    for n in (1, 2):
        with host_threads(n):
            outs.append(run(g, feeds)[0])
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_counts_are_refused_by_value(bad):
    with pytest.raises(CompileError, match=repr(bad).replace("(", r"\(").replace(".", r"\.")):
        with host_threads(bad):
            pass
