"""The content-keyed AdaptivFloat quantisation memo (``ila.models.flexasr.quantcache`` over
``ila.memo.TensorMemo``) returns exactly a fresh quantisation's codes, bias register and flag; its
seeded bug (an entry found by its sampled key alone) is caught."""
import numpy as np
import pytest

from ila.models.flexasr import quantcache
from ila.numerics import adaptivfloat as af


def _same(a, b) -> bool:
    return np.array_equal(a[0], b[0]) and a[1:] == b[1:]


@pytest.mark.parametrize("bug", [None, *quantcache.BUGS])
def test_cached_codes_equal_a_fresh_quantisation_and_the_seeded_bug_is_caught(bug):
    quantcache.clear()
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.1, (64, 128)).astype(np.float32)
    other = rng.normal(0, 0.1, (64, 128)).astype(np.float32)
    changed = w.copy()
    changed[3, 7] += 0.25
    got = []
    # stored the second time a tensor is seen, found the third; the changed element is not one of
    # the 64 sampled ones (same key as w): only the exact comparison tells the two apart
    assert quantcache._MEMO.key(changed) == quantcache._MEMO.key(w)
    for x, bias in ((w, None), (w, None), (w, None), (other, None), (changed, None), (w, 2), (w, None)):
        got.append(_same(quantcache.quantize(x, bias, bug=bug), af.quantize_checked(x, bias)))
    if bug is None:
        assert all(got)
        st = quantcache.stats()
        assert st["hits"] == 1 and st["misses"] == 6 and st["entries"] == 1
    else:
        assert not all(got)


def test_cached_codes_are_read_only_small_tensors_are_not_kept_and_clamping_warns_on_every_hit():
    quantcache.clear()
    w = np.full((64, 64), 0.3, np.float32)
    for _ in range(3):
        codes, _, _ = quantcache.quantize(w)
        with pytest.raises(ValueError):
            codes[0, 0] = 1
    for _ in range(3):
        quantcache.quantize(np.ones((4, 4), np.float32))             # below MIN_SIZE: never looked up
    tiny = np.full((64, 64), 1e-6, np.float32)
    for _ in range(3):                                               # misses, then a hit: all warn
        with pytest.warns(af.AdaptivFloatClampWarning):
            got = quantcache.quantize(tiny)
        with pytest.warns(af.AdaptivFloatClampWarning):
            assert got[2] and _same(got, af.quantize_checked(tiny))
    assert quantcache.stats()["entries"] == 2 and quantcache.stats()["hits"] == 2
    with pytest.raises(ValueError, match="unknown seeded bug"):
        quantcache.quantize(w, bug="nope")
