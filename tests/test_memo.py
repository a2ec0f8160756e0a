"""ila.memo.TensorMemo: found only by exact content (bitwise), stored on the second sighting, per
tag, within its entry and byte budgets; the seeded bug (found by the sampled key alone) returns a
stale value the exact comparison would refuse."""
import numpy as np
import pytest

from ila.memo import TensorMemo


def _twice(memo, arr, value, tag=()):
    assert memo.put(arr, value, tag) is False
    assert memo.put(arr, value, tag) is True


def test_found_by_exact_content_only():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((100, 100)).astype(np.float32)
    memo = TensorMemo()
    assert memo.get(a) is None
    _twice(memo, a, "A")
    assert memo.get(a.copy()) == "A"                       # another object, same content
    assert memo.get(a, tag=1) is None                      # another tag
    b = a.copy()
    b[0, 1] = np.nextafter(b[0, 1], np.float32(9))         # one ulp, not a sampled element
    assert memo.key(b) == memo.key(a) and memo.get(b) is None
    z = np.zeros(5000, np.float32)
    _twice(memo, z, "zero")
    neg = z.copy()
    neg[1] = -0.0                                          # equal as numbers, other bits
    assert memo.get(neg) is None
    buggy = TensorMemo(bug="sample_only")
    _twice(buggy, a, "A")
    assert buggy.get(b) == "A"                             # the seeded bug: the stale value
    with pytest.raises(ValueError, match="unknown seeded bug"):
        TensorMemo(bug="nope")


def test_budgets_drop_the_least_recently_used():
    arrs = [np.full(1000, k, np.float64) for k in range(4)]
    memo = TensorMemo(max_entries=2)
    for k, a in enumerate(arrs[:3]):
        _twice(memo, a, k)
    assert memo.get(arrs[0]) is None and memo.get(arrs[1]) == 1 and memo.get(arrs[2]) == 2
    memo = TensorMemo(max_bytes=2 * 8000 + 100)
    _twice(memo, arrs[0], 0)
    _twice(memo, arrs[1], 1)
    memo.get(arrs[0])                                      # 0 used more recently than 1
    _twice(memo, arrs[2], 2)
    assert memo.get(arrs[1]) is None and memo.get(arrs[0]) == 0 and memo.stats()["entries"] == 2


def test_clear_all_empties_every_tensor_memo_and_every_registered_memo():
    """ila.memo.clear_all (called around every seeded bug by verify.mutations.applied) empties
    live TensorMemos and the memos registered with ila.memo.register."""
    from ila import memo
    m = TensorMemo()
    x = np.arange(10_000, dtype=np.float32)
    m.put(x, "v")
    assert m.put(x, "v") and m.get(x) == "v"
    other: dict = {"k": 1}

    def clear_other():
        other.clear()
    memo.register(clear_other)
    memo.register(clear_other)                      # once per function
    try:
        assert memo._CLEARERS.count(clear_other) == 1
        memo.clear_all()
        assert m.get(x) is None and other == {}
    finally:
        memo._CLEARERS.remove(clear_other)
