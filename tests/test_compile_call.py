"""The call artefact (compile.call) and call certificates (compile.certify): the subject carries
every attribute; a whole-call validation starts from IR operands and runs the adapters, the emitted
stream as a replay of its written fragment would, the read-back and the output adapter against the
subterm's IR semantics; defects in the adapter (only at non-square shapes), the fragment writer
(only above the proof shape) and a fast path (only in the vectorised builder) are each refused by
it, while the mapping-level checks alone accept them."""
import dataclasses

import numpy as np
import pytest

from compile.certify import (adapter_proof, certificates, certify, sample_operands, stream_checks, unproved_reason,
                             validate)
from compile.errors import CompileError
from compile.ir.graph import call as C, const, var
from compile.patterns import mapping_patterns, match
from mappings.registry import get

from calls import call_at as _call

RNG = np.random.default_rng(0)


def _conv(h, w, c=3, o=8, k=3, dilation=(1, 1)):
    x = var("x", (1, h, w, c))
    wt = const((RNG.standard_normal((o, k, k, c)) * 0.2).astype(np.float32))
    return C("nn.conv2d", x, wt, strides=(1, 1), dilation=dilation, data_layout="NHWC", kernel_layout="OHWI")


def _linear(t=4, i=16, o=64):
    x = var("x", (1, t, i))
    w = const((RNG.standard_normal((o, i)) / 8).astype(np.float32))
    b = const((RNG.standard_normal(o) / 8).astype(np.float32))
    return C("nn.bias_add", C("nn.dense", x, w), b, axis=2)


def test_the_subject_names_every_attribute_and_operand():
    c = _call("hlscnn.conv2d", _conv(6, 10))
    for text in ("(dilation (1 1))", "(groups 1)", "(data_layout 'NHWC')", "%0:float32[1, 6, 10, 3]", "float32[1, 4, 8, 8]"):
        assert text in c.subject.term, (text, c.subject.term)
    assert c.shape.text == "6x10x3x8x3x1"
    other = _call("hlscnn.conv2d", _conv(10, 6))
    assert other.subject.digest != c.subject.digest
    with pytest.raises(CompileError, match="another subject"):
        c.check_certificate({"subject_digest": other.subject.digest})
    with pytest.raises(CompileError, match="operand %0 has shape"):
        c.check_operands([np.zeros((1, 10, 6, 3), np.float32), np.zeros((8, 3, 3, 3), np.float32)])


def test_a_dilated_convolution_is_not_the_hlscnn_pattern():
    pat = mapping_patterns(["hlscnn.conv2d"])["hlscnn.conv2d"]
    assert match(pat, _conv(12, 12, k=2, dilation=(2, 2))) is None
    assert match(pat, _conv(12, 12, k=2)) is not None


def test_sampled_operands_are_the_mappings_distribution_through_the_adapter():
    c = _call("flexasr.linear", _linear())
    ops = sample_operands(c, np.random.default_rng(3))
    named = c.inputs(ops)
    want = get("flexasr.linear").random_inputs(c.shape, np.random.default_rng(3))
    for k in ("x", "w", "b"):
        assert np.array_equal(np.asarray(named[k], np.float32), np.asarray(want[k], np.float32)), k


@pytest.mark.parametrize("name,node", [("flexasr.linear", _linear(3, 32, 64)), ("hlscnn.conv2d", _conv(5, 7)),
                                       ("vta.dense", C("nn.dense", var("x", (5, 40)),
                                                       const(RNG.standard_normal((24, 40)).astype(np.float32)))),
                                       ("flexasr.maxpool", C("nn.max_pool2d", var("x", (1, 1, 6, 32)),
                                                             pool_size=(2, 1), strides=(2, 1)))])
def test_whole_call_validation_passes_at_odd_non_square_shapes(name, node):
    rep = validate(_call(name, node), samples=3)
    assert rep.passed, rep.summary()


def nwhc(m):
    """An adapter bug: the NHWC image read as NWHC (H and W taken in the wrong order, the buffer
    re-cut accordingly: a no-op for square images)."""
    def match_shape(attrs, shapes, out):
        s = m.match_shape(attrs, shapes, out)
        return None if s is None else dict(s, H=s["W"], W=s["H"])

    def bind(shape, operands):
        x, w = operands
        return {"x": np.asarray(x).reshape(1, shape["H"], shape["W"], shape["C"]), "w": w}
    return dataclasses.replace(m, match_shape=match_shape, bind_operands=bind)


def test_an_adapter_bug_at_non_square_shapes_is_refused_by_the_call_check():
    bad = nwhc(get("hlscnn.conv2d"))
    square = _call("hlscnn.conv2d", _conv(6, 6), bad)
    assert validate(square, samples=2).passed          # the bug does not show on square images
    rect = _call("hlscnn.conv2d", _conv(5, 7), bad)
    rep = validate(rect, samples=2)
    assert not rep.passed and min(rep.errors) > 0.5, rep.summary()
    small = _call("hlscnn.conv2d", _conv(2, 3, c=1, o=2, k=2), bad)
    v = adapter_proof(small)
    assert v.kind == "counterexample" and v.replayed, v
    assert adapter_proof(_call("hlscnn.conv2d", _conv(2, 3, c=1, o=2, k=2))).kind == "proved"


def test_a_fragment_writer_bug_above_the_proof_shape_is_refused(monkeypatch):
    """The writer puts a wrong address on entries beyond the 600th command: invisible at the proof
    shape (1x16x64 has fewer), caught by the call check's round trip at 16x64x64."""
    import ila.models.flexasr.port as P
    real = P.PORT
    calls = {"n": 0}

    def entry_of(cmd):
        e = real.entry_of(cmd)
        calls["n"] += 1
        if calls["n"] > 600 and e.get("mode") == "W":
            e = dict(e, addr=f"0x{int(e['addr'], 16) + 16:08X}")
        return e

    def fresh():
        calls["n"] = 0
        return dataclasses.replace(real, entry_of=entry_of)
    small = _call("flexasr.linear", _linear(1, 16, 64))
    monkeypatch.setattr(P, "PORT", fresh())
    prog = small.program(sample_operands(small, np.random.default_rng(0)))
    assert len(prog) < 600 and stream_checks(small, prog) == []
    big = _call("flexasr.linear", _linear(16, 64, 64))
    monkeypatch.setattr(P, "PORT", fresh())
    rep = validate(big, samples=1)
    assert not rep.passed and "fragment writer" in rep.failure


def test_a_fast_path_bug_is_refused_although_the_proofs_use_the_element_path(monkeypatch):
    """Lanes 0 and 1 of every data word swapped in the vectorised builder only (isa.mmio_table):
    writes and reads alike, so the values even come back right; the element path the proofs run is
    untouched. The call check compares the two builders' streams."""
    from ila.models.flexasr import driver, isa
    real = isa.mmio_table

    def swapped(prog, lib):
        t, modes = real(prog, lib)
        cols = dict(t.columns)
        cols["data_in_0"], cols["data_in_1"] = cols["data_in_1"], cols["data_in_0"]
        from ila.commands import CommandTable
        return CommandTable(cols), modes
    monkeypatch.setattr(driver, "mmio_table", swapped)
    c = _call("flexasr.maxpool", C("nn.max_pool2d", var("x", (1, 1, 4, 16)), pool_size=(2, 1), strides=(2, 1)))
    rep = validate(c, samples=1)
    assert not rep.passed and "fast path" in rep.failure


def test_call_certificates_are_keyed_by_subject(tmp_path):
    path = tmp_path / "l.json"
    a = _call("flexasr.maxpool", C("nn.max_pool2d", var("x", (1, 1, 4, 16)), pool_size=(2, 1), strides=(2, 1)))
    e = certify(a, samples=2, path=path)
    assert e["result"] == "passed" and e["subject_digest"] == a.subject.digest
    assert certificates(a, path=path) and not certificates(a, require="proved", path=path)
    b = _call("flexasr.maxpool", C("nn.max_pool2d", var("x", (1, 1, 4, 32)), pool_size=(2, 1), strides=(2, 1)))
    assert not certificates(b, path=path)
    e = certify(a, method="proof", samples=2, path=path)
    assert e["result"] == "proved", e["detail"]
    assert certificates(a, require="proved", path=path)
    assert unproved_reason(a, path=path) is None
    # the mapping proof it cites goes stale (its checker, model or setup changed since): the call
    # keeps its validation but is no longer proved
    import json
    entries = json.loads(path.read_text())
    for x in entries:
        if x["mapping"] == "flexasr.maxpool" and x["method"] in ("bmc", "chc"):
            x["digest"] = "0" * 16
    path.write_text(json.dumps(entries))
    assert not certificates(a, require="proved", path=path)
    [kept] = certificates(a, path=path)
    assert kept["result"] == "passed" and "no longer current" in kept["detail"]
    assert unproved_reason(a, path=path)
