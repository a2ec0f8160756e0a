"""The vectorised stream-lemma check (:func:`verify.phases.check_lemma_fast`) agrees with the
point-by-point check (:func:`verify.phases.check_lemma_slow`) on values that mix data symbols and
numbers under width operations (a word padded with constant bytes), on a correct image and on
corrupted ones; two seeded bugs in its numeric width operations make them disagree."""
from types import SimpleNamespace

import pytest

from ila import BvSort, bv_const, extract, ite, load, sext, zext
from ila.simplify import Rewriter
from ila.sorts import MemSort
from ila.unroll import symbol
from mappings.phases import Lemma, Region
from verify import phases as V

N, NSYM = 16, 8


def _setup():
    A = symbol("lemfast.A", MemSort(32, 8))
    p = symbol("lemfast.p", BvSort(32))
    d = [symbol(f"lemfast.d{i}", BvSort(8)) for i in range(NSYM)]
    byte = ite(p.ult(NSYM), load(A, p), bv_const(0x80, 8) + extract(p, 7, 0))     # data, or a negative byte
    val = zext(extract(sext(byte, 16), 11, 4), 16)                                 # SEXT, EXTRACT (lo 4), ZEXT
    region = Region("r", "acc", "M", "lemma", (p,), p.ult(N), p, val)
    lem = Lemma("lemfast", "acc", 0, region, (range(0, N),), {A: d})
    return lem, d


def _image(d, corrupt=None):
    rw = Rewriter()
    img = {}
    for i in range(N):
        b = d[i] if i < NSYM else bv_const(0x80 + i, 8)
        img[i] = rw.one(zext(extract(sext(b, 16), 11, 4), 16))
    if corrupt == "constant":
        img[9] = bv_const(0xF9, 16)
    elif corrupt == "symbol":
        img[3] = rw.one(zext(extract(sext(d[4], 16), 11, 4), 16))
    elif corrupt == "chain":
        img[5] = rw.one(zext(extract(zext(d[5], 16), 11, 4), 16))
    elif corrupt == "missing":
        del img[12]
    return img


def _both(lem, img):
    images = SimpleNamespace(run=lambda at: None, images={"M": img})
    ila = SimpleNamespace(state=lambda name: SimpleNamespace(sort=MemSort(32, 16)))
    fast = V.check_lemma_fast(lem, images, ila)
    slow = V.check_lemma_slow(lem, images, ila)
    return fast, slow


def test_mixed_values_are_vectorised_and_hold():
    lem, d = _setup()
    fast, slow = _both(lem, _image(d))
    assert fast == [] and slow == []            # fast is not None: no fallback to the slow check


@pytest.mark.parametrize("corrupt", ["constant", "symbol", "chain", "missing"])
def test_a_corrupted_image_fails_both(corrupt):
    lem, d = _setup()
    fast, slow = _both(lem, _image(d, corrupt))
    assert fast and slow
    assert len(fast) == len(slow) == 1


@pytest.mark.parametrize("bug", ["sext_as_zext", "extract_ignores_lo"])
def test_seeded_width_operation_bugs_make_them_disagree(monkeypatch, bug):
    right = V._width_op

    def wrong(op, payload, src, dst, v):
        if bug == "sext_as_zext" and op is V.Op.SEXT:
            return v
        if bug == "extract_ignores_lo" and op is V.Op.EXTRACT:
            hi, lo = payload
            return v & ((1 << (hi - lo + 1)) - 1)
        return right(op, payload, src, dst, v)
    monkeypatch.setattr(V, "_width_op", wrong)
    lem, d = _setup()
    fast, slow = _both(lem, _image(d))
    assert slow == [] and fast                  # the differential check above would fail
