"""FlexASR's packer on symbolic words (the proofs' emitted streams): ``word_digits`` and
``word_bytes`` share one simplifier per word; they must give ``ila.generic``'s terms node for
node (``generic.field`` / ``generic.join``, one simplification per digit or byte), on words of
data symbols, constants and mixtures; a seeded shortcut that skips the simplification differs."""
import numpy as np
import pytest

from ila import generic
from ila.expr import Expr, bv_const, extract
from ila.models.flexasr import isa
from ila.sorts import BvSort
from ila.unroll import symbol


def _words():
    rng = np.random.default_rng(0)
    syms = [symbol(f"isa.d{k}", BvSort(8)) for k in range(16)]
    yield isa.pack_word(syms)
    yield isa.pack_word([syms[k] if k % 3 else int(rng.integers(0, 256)) for k in range(16)])
    yield isa.pack_word([int(v) for v in rng.integers(0, 256, 16)])
    yield isa.pack_word([extract(symbol("isa.wide", BvSort(32)), 7 + k % 4, k % 4) for k in range(16)])
    # fields that straddle digits, and a field that is itself a concatenation
    widths = [6, 10, 4, 12, 8, 8, 3, 5, 16, 20, 12, 24]
    parts = [(symbol(f"isa.f{k}", BvSort(w)), w) for k, w in enumerate(widths)]
    parts[4] = (generic.join([(symbol("isa.hi4", BvSort(4)), 4), (symbol("isa.lo4", BvSort(4)), 4)]), 8)
    yield generic.join(parts)


def _reference_digits(word):
    return [generic.field(word, 124 - 4 * j, 4) for j in range(32)]


def _reference_bytes(digits):
    return [generic.join([(digits[30 - 2 * k], 4), (digits[31 - 2 * k], 4)]) for k in range(16)]


@pytest.mark.parametrize("n", range(5))
def test_digits_and_bytes_are_generics_node_for_node(n):
    word = list(_words())[n]
    got, want = isa.word_digits(word), _reference_digits(word)
    assert len(got) == 32
    assert all((g is w) if isinstance(w, Expr) else (g == w) for g, w in zip(got, want))
    got_b, want_b = isa.word_bytes(got), _reference_bytes(want)
    assert all((g is w) if isinstance(w, Expr) else (g == w) for g, w in zip(got_b, want_b))


def test_mixed_digits_of_ints_and_narrow_terms():
    d = [3, symbol("isa.n", BvSort(4)), extract(symbol("isa.m", BvSort(8)), 2, 0), 9] * 8
    got, want = isa.word_bytes(d), _reference_bytes(d)
    assert all((g is w) if isinstance(w, Expr) else (g == w) for g, w in zip(got, want))


def test_a_shortcut_without_simplification_differs():
    """Seeded bug: the digits as raw extracts of the word (no simplification): not generic's
    terms, so the differential check above would refuse it."""
    word = next(_words())
    raw = [extract(word, 127 - 4 * j, 124 - 4 * j) for j in range(32)]
    assert any(r is not w for r, w in zip(raw, _reference_digits(word)))


def test_the_emitted_bytes_are_the_data_symbols():
    """Through the packer and back: a word of 16 data symbols gives those symbols as its bytes."""
    syms = [symbol(f"isa.e{k}", BvSort(8)) for k in range(16)]
    back = isa.word_bytes(isa.word_digits(isa.pack_word(syms)))
    assert len(back) == 16 and all(b is s for b, s in zip(back, syms))
    assert isa.word_bytes(isa.word_digits(isa.pack_word(list(range(16))))) == list(range(16))
    zero = isa.word_digits(bv_const(0, 128))
    assert all(z is bv_const(0, 4) for z in zero)
