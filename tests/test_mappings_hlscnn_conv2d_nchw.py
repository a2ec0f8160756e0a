"""Issue 24 item 3: hlscnn.conv2d_nchw / conv2d_nchw_w8 match the front-end's padded NCHW nn.conv2d as
it is (closed pattern: dilation, groups, asymmetric padding, other layouts refused), do the layout
and padding on the host inside their program (the stream is the driver's padded HLSCNN stream),
pass simulation and whole-call validation at odd non-square shapes, are proved by BMC over abstract
arithmetic (one input channel), and every seeded bug is refuted with a replayed counterexample."""
import numpy as np
import pytest

from compile.call import at_match
from compile.certify import validate
from compile.ir.graph import call as C, const, var
from compile.patterns import mapping_patterns, match, variables
from mappings.base import MappingError
from mappings.common import run_ir
from mappings.hlscnn import conv2d_nchw as M
from mappings.hlscnn import conv2d_nchw_proof as CP
from mappings.registry import get
from verify import mutations
from verify.bmc import check_bmc
from verify.mutations.hlscnn_nchw import ALLSIZES_ONLY
from verify.simval import run_sim

NAMES = ["hlscnn.conv2d_nchw", "hlscnn.conv2d_nchw_w8"]
ODD = [{"H": 7, "W": 5, "C": 3, "O": 5, "K": 3, "S": 2, "P": 2}, {"H": 5, "W": 9, "C": 10, "O": 9, "K": 3, "S": 1, "P": 1},
       {"H": 6, "W": 3, "C": 1, "O": 4, "K": 2, "S": 1, "P": 0}]
PROOF = {"H": 3, "W": 3, "C": 1, "O": 2, "K": 2, "S": 1, "P": 1}
RNG = np.random.default_rng(0)


def _conv(h, w, c=3, o=5, k=3, s=1, p=1, **attrs):
    x = var("x", (1, c, h, w))
    wt = const((RNG.standard_normal((o, c, k, k)) * 0.2).astype(np.float32))
    return C("nn.conv2d", x, wt, strides=(s, s), padding=attrs.pop("padding", (p, p, p, p)), **attrs)


def _match(name, node):
    return match(mapping_patterns([name])[name], node)


def _call(name, node):
    pat = mapping_patterns([name])[name]
    env = match(pat, node)
    assert env is not None, f"{name} does not match"
    return at_match(get(name), node, env, variables(pat))


# ----------------------------------------------------------------------------- matching
def test_the_front_end_form_matches_and_gives_the_shape():
    node = _conv(7, 5, c=3, o=5, k=3, s=2, p=2)
    c = _call("hlscnn.conv2d_nchw", node)
    assert dict(c.shape) == {"H": 7, "W": 5, "C": 3, "O": 5, "K": 3, "S": 2, "P": 2}
    assert "(padding (2 2 2 2))" in c.subject.term and "(data_layout 'NCHW')" in c.subject.term
    assert _match("hlscnn.conv2d_nchw", _conv(6, 6, p=0, padding=(0, 0))) is not None     # 2-value form
    assert _match("hlscnn.conv2d", node) is None                  # the NHWC mapping does not take it


@pytest.mark.parametrize("why,node", [
    ("dilation", _conv(9, 9, k=2, dilation=(2, 2))),
    ("groups", C("nn.conv2d", var("x", (1, 4, 6, 6)), const(np.zeros((4, 2, 3, 3), np.float32)), strides=(1, 1),
                 padding=(1, 1, 1, 1), groups=2)),
    ("asymmetric padding", _conv(6, 6, padding=(1, 1, 0, 0))),
    ("padding top/left only", _conv(6, 6, padding=(0, 0, 1, 1))),
    ("unequal strides", C("nn.conv2d", var("x", (1, 3, 8, 8)), const(np.zeros((4, 3, 3, 3), np.float32)),
                          strides=(1, 2), padding=(1, 1, 1, 1))),
    ("NHWC layout", C("nn.conv2d", var("x", (1, 8, 8, 3)), const(np.zeros((4, 3, 3, 3), np.float32)),
                      strides=(1, 1), padding=(1, 1, 1, 1), data_layout="NHWC", kernel_layout="OHWI")),
    ("int32", C("nn.conv2d", var("x", (1, 3, 8, 8), "int32"), const(np.zeros((4, 3, 3, 3), np.int32)),
                strides=(1, 1), padding=(1, 1, 1, 1))),
])
def test_closed_pattern_refuses(why, node):
    for name in NAMES:
        assert _match(name, node) is None, (name, why)


def test_the_adapter_refuses_what_the_unit_cannot_take():
    ms = get("hlscnn.conv2d_nchw").match_shape
    attrs = {"strides": (1, 1), "padding": (1, 1, 1, 1)}
    assert ms(attrs, {"?x": (2, 3, 8, 8), "?w": (4, 3, 3, 3)}, ()) is None            # batch 2
    assert ms(attrs, {"?x": (1, 3, 8, 8), "?w": (4, 3, 3, 2)}, ()) is None            # 3 x 2 kernel
    assert ms({**attrs, "padding": (1, 0, 1, 0)}, {"?x": (1, 3, 8, 8), "?w": (4, 3, 3, 3)}, ()) is None
    assert ms(attrs, {"?x": (1, 3, 8, 8), "?w": (4, 3, 3, 3)}, ())["P"] == 1


def test_side_conditions_are_on_the_padded_image_and_name_the_violation():
    m = get("hlscnn.conv2d_nchw")
    m.check_shape({"H": 1, "W": 1, "C": 2, "O": 4, "K": 3, "S": 1, "P": 1})          # 3x3 kernel on a 3x3 padded image
    with pytest.raises(MappingError, match="kernel fits the input"):
        m.check_shape({"H": 1, "W": 1, "C": 2, "O": 4, "K": 3, "S": 1, "P": 0})
    with pytest.raises(MappingError, match="'padding'"):
        m.check_shape({"H": 5, "W": 5, "C": 2, "O": 4, "K": 3, "S": 1, "P": -1})
    with pytest.raises(MappingError, match="register fields"):
        m.check_shape({"H": 1020, "W": 8, "C": 1, "O": 1, "K": 3, "S": 1, "P": 2})


def test_bad_input_is_refused_naming_the_value():
    m = get("hlscnn.conv2d_nchw")
    s = ODD[0]
    inp = m.random_inputs(s, np.random.default_rng(1))
    inp["x"][0, 1, 2, 3] = np.nan
    with pytest.raises(MappingError, match=r"x\[0, 1, 2, 3\] = nan"):
        m.program(s, inp)
    with pytest.raises(MappingError, match="w has shape"):
        m.program(s, {"x": inp["x"], "w": np.zeros((5, 3, 3, 2), np.float32)})


# ----------------------------------------------------------------------------- stream and numerics
@pytest.mark.parametrize("bits", [16, 8])
def test_the_stream_is_the_drivers_padded_stream(bits):
    """Layout and padding on the host give exactly what the driver's own padding path emits for the
    NHWC/OHWI operands (prepare_conv2d(padding=P)), and the element path (proofs) agrees."""
    from ila.commands import CommandTable
    from ila.models.hlscnn.driver import prepare_conv2d
    m = get(NAMES[bits == 8])
    for s in ODD:
        inp = m.random_inputs(s, np.random.default_rng(2))
        job = prepare_conv2d(inp["x"].transpose(0, 2, 3, 1), inp["w"].transpose(0, 2, 3, 1), stride=s["S"],
                             padding=s["P"], weight_bits=bits)
        prog = m.program(s, inp)
        port = m.port
        assert isinstance(prog.commands, CommandTable)      # the integer path's rows, never turned into dicts
        entries = port.entries(prog.commands)
        assert entries == port.entries(job.commands + job.read_commands)
        assert port.entries(prog.canonical()) == entries
        # the same commands as dicts (a read's data inputs 0 in the table, omitted in the dicts: the same value)
        assert all({k: v for k, v in a.items() if v or not k.startswith("top_slave_data_in")} ==
                   {k: v for k, v in b.items() if v or not k.startswith("top_slave_data_in")}
                   for a, b in zip(prog.command_list(), prog.canonical(), strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_sim_passes_at_odd_non_square_shapes(name):
    m = get(name)
    for s in ODD:
        rep = run_sim(m, shape=s, samples=3, seed=4)
        assert rep.passed, rep.to_json()
        out = m.run_accelerator(s, m.random_inputs(s, np.random.default_rng(0)))
        assert out.shape == (1, s["O"], *M.out_hw(s))


def test_ir_fragment_agrees_with_the_reference_at_odd_shapes():
    m = get("hlscnn.conv2d_nchw")
    for s in ODD:
        inp = m.random_inputs(s, np.random.default_rng(5))
        ref = m.reference(s, inp)
        got = run_ir(m.ir_fragment(s), inp)
        assert got.shape == ref.shape
        assert np.max(np.abs(got - ref)) < 1e-5


@pytest.mark.parametrize("name", NAMES)
def test_whole_call_validation_passes_at_an_odd_non_square_shape(name):
    rep = validate(_call(name, _conv(7, 5, c=3, o=5, k=3, s=2, p=2)), samples=3)
    assert rep.passed, rep.summary()


def _exact_adapter_check(call, frag):
    """The exact adapter check of compile.certify.adapter_proof with the fragment's constants (the
    zero row) supplied: the subject lowered to the compiler-IR ILA against the fragment on the adapted
    symbolic operands, BMC."""
    from compile.rewrites.lower import lower
    from ila.models.relay.model import relay_ila
    from mappings.base import ProofSetup, Side, symbolic_data
    from mappings.common import ir_commands
    g = call.graph()
    elements, data, arrays = {}, [], []
    for k, v in enumerate(g.inputs):
        e = symbolic_data(int(np.prod(v.shape)), 32, prefix=f"op{k}_")
        elements[v.uid] = e
        data += e
        arrays.append(np.array(e, dtype=object).reshape(v.shape))
    left = lower([g.outputs[0]], elements)
    named = call.mapping.bind_operands(call.shape, arrays)
    feed = {k: (np.asarray(named[k], dtype=object).reshape(-1) if k in named else frag.consts[k].astype(np.int64))
            for k in frag.inputs}
    ila = relay_ila("float32", tensor_entries=1 << 16)
    n = int(np.prod(g.outputs[0].shape))
    ps = ProofSetup(Side(ila, left.commands, "tensor"), Side(ila, ir_commands(frag, feed), "tensor"), data,
                    [(left.base[g.outputs[0].uid] + k, frag.output[0] + k) for k in range(n)])
    return check_bmc(ps, solver="z3", timeout=120)


def test_the_ir_fragment_is_exactly_the_subjects_semantics():
    """For all data: the subject (a padded NCHW convolution, lowered by the compiler) equals the
    mapping's IR fragment on the adapted operands; a fragment padding on the wrong side is refuted."""
    call = _call("hlscnn.conv2d_nchw", _conv(2, 3, c=1, o=2, k=2, p=1))
    frag = M.ir_fragment(call.shape)
    v = _exact_adapter_check(call, frag)
    assert v.kind == "proved", v
    conv = frag.ops[-1]
    shifted = [(op, list(args)) for op, args in frag.ops[:-1]] + [(conv[0], [conv[1][0] + 1] + conv[1][1:])]
    bad = _exact_adapter_check(call, type(frag)(frag.inputs, shifted, frag.output, consts=frag.consts))
    assert bad.kind == "counterexample" and bad.replayed, bad


# ----------------------------------------------------------------------------- proof and seeded bugs
def test_bmc_proves_one_channel_padded_conv():
    v = check_bmc(CP.proof_setup(PROOF))
    assert v.kind == "proved", v
    assert set(v.covers) >= {"codegen-bytes", "order", "read-back"}
    # the loops against the declared map, or end to end where the verifier checks no declared map
    assert {"model-loops", "loops-end-to-end"} & set(v.covers)


@pytest.mark.slow
def test_bmc_proves_the_8_bit_design_and_a_stride_two_shape():
    assert check_bmc(CP.proof_setup_w8(PROOF)).kind == "proved"
    v = check_bmc(CP.proof_setup({"H": 4, "W": 4, "C": 1, "O": 9, "K": 3, "S": 2, "P": 2}))
    assert v.kind == "proved", v


def test_symbolic_and_integer_streams_agree():
    """The proof's stream, with random values substituted, is the mapping's stream for those raw values."""
    from ila.expr import bv_const
    from ila.simplify import Rewriter
    rng = np.random.default_rng(3)
    ps = CP.proof_setup(PROOF)
    vals = {d: int(rng.integers(0, 1 << d.width)) for d in ps.data}
    rw = Rewriter({d: bv_const(v, d.width) for d, v in vals.items()})
    sym = [{k: (rw.one(v).payload if hasattr(v, "sort") else v) for k, v in c.items()} for c in ps.acc.commands]
    H, W, O, K = PROOF["H"], PROOF["W"], PROOF["O"], PROOF["K"]
    x = np.array([vals[d] for d in ps.data[:H * W]], np.int64).reshape(1, H, W)
    w = np.array([vals[d] for d in ps.data[H * W:]], np.int64).reshape(O, 1, K, K)
    job = M.build_job(x, w, PROOF, 16)
    assert sym == job.commands + job.read_commands


def test_proof_refuses_exact_numerics():
    with pytest.raises(MappingError, match="numerics 'exact'"):
        CP.proof_setup(PROOF, numerics="exact")


C9 = {**PROOF, "C": 9}          # two channel blocks of HLSCNN's 8-channel MAC chain
C9_ONLY = {"weight_channels_reversed"}     # equal to the mapping with one input channel


def test_more_than_one_channel_is_proved_against_the_declared_numerics_term():
    """C > 1: the whole accelerator side (host layout with padding, stream, NCHW read-back) against
    the declared term (the IR's padded conv2d in HLSCNN's order and rounding), with the term's
    measured distance to the float32 operator in the verdict."""
    ps = CP.proof_setup(C9)
    assert ps.reference is not None and ps.ir is None
    v = check_bmc(ps)
    assert v.kind == "proved", v
    assert "declared numerics term" in v.detail and "of the float32 conv2d" in v.detail


@pytest.mark.parametrize("bug", ["weight_channels_reversed", "padding_wrong_side", "readback_hw_transposed"])
def test_seeded_bugs_are_refuted_with_more_than_one_channel(bug):
    v = mutations.check(get("hlscnn.conv2d_nchw"), C9, bug, "bmc")
    assert v.kind == "counterexample" and v.replayed, v


def test_the_channel_order_bug_is_invisible_with_one_channel():
    """Why weight_channels_reversed is checked at C = 9: with one input channel it is the mapping."""
    assert mutations.check(get("hlscnn.conv2d_nchw"), PROOF, "weight_channels_reversed", "bmc").kind == "proved"


def test_the_term_pads_by_itself(monkeypatch):
    """The term builds the padded image from the IR's definition, not with the mapping's host
    layout: a term that took the mapping's padded image would agree with a padding bug."""
    from verify.mutations import applied
    with applied(mutations.get(get("hlscnn.conv2d_nchw"), "padding_value_nonzero")):
        v = check_bmc(CP.proof_setup(C9))
    assert v.kind == "counterexample", v


def test_seeded_bugs_cover_the_claimed_layers():
    m = get("hlscnn.conv2d_nchw")
    lay = mutations.layers(m)
    for name in ("padding_wrong_side", "image_hw_transposed", "readback_hw_transposed", "element_byte_order"):
        assert name in lay
    assert set(lay.values()) >= {"codegen-bytes", "configuration-fields", "read-back"}
    assert mutations.layers(get("hlscnn.conv2d_nchw_w8")) == lay


FAST_BUGS = ["padding_wrong_side"]


@pytest.mark.parametrize("bug", FAST_BUGS)
def test_seeded_bugs_are_refuted_and_replayed(bug):
    v = mutations.check(get("hlscnn.conv2d_nchw"), PROOF, bug, "bmc")
    assert v.kind == "counterexample" and v.replayed, v
    assert v.trace["ir_value"] != v.trace["acc_value"]


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(set(mutations.names(get("hlscnn.conv2d_nchw"))) - set(FAST_BUGS)
                                       - set(ALLSIZES_ONLY)))
def test_every_other_seeded_bug_is_refuted_and_replayed(bug):
    at = C9 if bug in C9_ONLY else PROOF
    v = mutations.check(get("hlscnn.conv2d_nchw"), at, bug, "bmc")
    assert v.kind == "counterexample" and v.replayed, v


@pytest.mark.slow
def test_a_seeded_bug_is_refuted_on_the_8_bit_design():
    v = mutations.check(get("hlscnn.conv2d_nchw_w8"), PROOF, "padding_value_nonzero", "bmc")
    assert v.kind == "counterexample" and v.replayed, v


def test_a_seeded_layout_bug_shows_in_simulation_too():
    """The H/W swap of the image is wrong on real data (square shape: the stream is well-formed)."""
    m = get("hlscnn.conv2d_nchw")
    s = {"H": 6, "W": 6, "C": 3, "O": 4, "K": 3, "S": 1, "P": 1}
    with mutations.applied(mutations.get(m, "image_hw_transposed")):
        rep = run_sim(m, shape=s, samples=2, seed=0)
    assert not rep.passed and min(rep.errors) > 0.5


def test_size_dependent_generator_bugs_show_only_at_their_sizes():
    """The all-sizes proof's seeded bugs leave the proof shape's stream as it is (2 x 4 outputs:
    BMC proves the mutant there) and are wrong where they fire: OW one short from 5 output columns
    on, the padded width one short from 500 on: there the trigger's fields are inconsistent and the
    model accepts no instruction for it (the simulator rejects the program); the mapping itself
    runs at both shapes."""
    from verify.mutations import applied
    from verify.phases import rejected_program
    m = get("hlscnn.conv2d_nchw")
    assert set(ALLSIZES_ONLY) == {"out_cols_short_some_sizes", "in_cols_short_near_max"}
    assert set(ALLSIZES_ONLY) <= set(mutations.names(get("hlscnn.conv2d_nchw_w8")))
    for bug in ALLSIZES_ONLY:
        assert mutations.check(m, PROOF, bug, "bmc").kind == "proved"
    for bug, shape in (("out_cols_short_some_sizes", {"H": 2, "W": 6, "C": 1, "O": 1, "K": 1, "S": 1, "P": 0}),
                       ("in_cols_short_near_max", {"H": 2, "W": 500, "C": 1, "O": 1, "K": 1, "S": 1, "P": 0})):
        with applied(mutations.get(m, bug)):
            v = rejected_program(m, shape)
            assert v is not None and v.replayed and "decodes" in v.detail, bug
        assert rejected_program(m, shape) is None
