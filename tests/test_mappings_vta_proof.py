"""The VTA mappings' BMC proofs run the exact MMIO stream the driver emits, with the tensor
elements as symbols flowing through the real packer into the DRAM words; the clean mappings are
proved with the claims they state; every seeded bug (``verify/mutations/vta.py``, one or more per
claimed layer) is refuted with a replayed counterexample; a packer that permutes lanes fails the
proof."""
import numpy as np
import pytest

from ila.expr import Expr, bv_const
from ila.generic import is_symbolic
from ila.models.vta import driver
from ila.models.vta.isa import VtaIsaError
from ila.simplify import Rewriter
from mappings import registry
from mappings.vta.common import COVERS
from verify import mutations
from verify.bmc import check_bmc
from verify.mapping import main
from verify.mutations.vta import ALLSIZES_ONLY, CHC_ONLY

# vta.dense_bias's proof is vta.dense's composite with lemmas of its own (no BMC setup): its tests
# are in test_mappings_vta_dense_bias_proof.py
VTA = [n for n in registry.names() if n.startswith("vta.") and registry.get(n).proof is not None
       and n != "vta.dense_bias"]
WIDTH = {"vta.gemm": {"x": 8, "w": 8}, "vta.add": {"a": 32, "b": 32}, "vta.relu": {"a": 32}}


def _setup(name):
    m = registry.get(name)
    shape = dict(m.proof.shape)
    return m, shape, m.proof.bmc(shape)


def _signed(v, width):
    return v - (1 << width) if v >> (width - 1) else v


def _random_assignment(name, ps, rng):
    """Random values of the setup's data symbols, and the same data as the mapping's input tensors."""
    vals = {d: int.from_bytes(rng.bytes(d.width // 8), "little") for d in ps.data}
    shape = dict(registry.get(name).proof.shape)
    inputs, k = {}, 0
    for t, w in WIDTH[name].items():
        n = {"x": shape.get("N", 0) * shape.get("K", 0), "w": shape.get("M", 0) * shape.get("K", 0)}.get(t, shape.get("n"))
        flat = [_signed(vals[d], w) for d in ps.data[k:k + n]]
        k += n
        dims = {"x": ("N", "K"), "w": ("M", "K")}.get(t)
        inputs[t] = np.array(flat, np.int64).reshape(tuple(shape[x] for x in dims) if dims else (n,))
    return vals, inputs


@pytest.mark.parametrize("name", VTA)
def test_the_clean_mapping_is_proved_with_the_claims_it_states(name):
    m, shape, ps = _setup(name)
    assert tuple(ps.covers) == COVERS and "read-back" not in ps.covers and ps.readback is None
    v = mutations.check(m, shape, None, "bmc", solver="z3")
    assert v.kind == "proved", v
    with pytest.raises(TypeError):
        m.proof.bmc(shape, mutation="input_row_off_by_one")      # seeded bugs are not the setup's business


@pytest.mark.parametrize("name, bug", [(n, b) for n in VTA for b in mutations.names(registry.get(n))
                                       if b not in CHC_ONLY.get(n, ()) and b not in ALLSIZES_ONLY.get(n, ())])
def test_seeded_bug_is_refuted_and_replayed(name, bug):
    m = registry.get(name)
    v = mutations.check(m, dict(m.proof.shape), bug, "bmc", solver="z3")
    assert v.kind == "counterexample" and v.replayed, (name, bug, v)
    assert v.trace["ir_value"] != v.trace["acc_value"]


@pytest.mark.parametrize("name", VTA)
def test_every_claimed_layer_has_a_seeded_bug(name):
    """Every layer the BMC proof claims, and for the split proofs (vta.dense's) every layer the
    split proof claims, has a seeded bug."""
    m = registry.get(name)
    claimed = set(COVERS) | (set(m.proof.chc(dict(m.proof.shape)).covers) if name in CHC_ONLY else set())
    assert set(mutations.layers(m).values()) == claimed


@pytest.mark.parametrize("name", VTA)
def test_a_packer_that_permutes_lanes_fails_the_proof(name, monkeypatch):
    real = driver.pack_element

    def rotated(lanes, width):            # lane i written where lane i+1 belongs (within every SRAM element)
        lanes = list(lanes)
        return real(lanes[1:] + lanes[:1], width)
    monkeypatch.setattr(driver, "pack_element", rotated)
    m, shape, ps = _setup(name)
    v = check_bmc(ps, solver="z3")
    assert v.kind == "counterexample" and v.replayed, v


@pytest.mark.parametrize("name, bug", [(n, b) for n, bugs in CHC_ONLY.items() for b in bugs])
def test_a_tiling_or_assembly_bug_is_refuted_by_the_split_proof(name, bug):
    from verify.mutations.vta import CHC_LEMMA
    m = registry.get(name)
    v = mutations.check(m, dict(m.proof.shape), bug, "chc", solver="z3")
    assert v.kind == "counterexample" and CHC_LEMMA[bug] in v.detail, v
    assert mutations.check(m, dict(m.proof.shape), bug, "bmc", solver="z3").kind == "proved"   # BMC of the pass


def test_dense_pass_stream_is_the_emitted_stream_over_symbolic_codes():
    """vta.dense's proof runs the pass's stream built by the real generator on symbolic int8 codes:
    substituting random codes gives, word for word, the stream the mapping emits for them."""
    from mappings.vta import dense as D, dense_proof as DP
    from mappings.vta.common import symbolic_tensor
    shape = dict(registry.get("vta.dense").proof.shape)
    qx_s, qw_s = symbolic_tensor("x", (shape["N"], shape["K"]), 8), symbolic_tensor("w", (shape["M"], shape["K"]), 8)
    ps = DP.pass_setup(shape, 0, codes=(qx_s, qw_s))
    rng = np.random.default_rng(5)
    qx = rng.integers(-128, 128, qx_s.shape)
    qw = rng.integers(-128, 128, qw_s.shape)
    env = {s: bv_const(int(v) % 256, 8) for syms, vals in ((qx_s, qx), (qw_s, qw)) for s, v in zip(syms.flat, vals.flat)}
    rw = Rewriter(env)
    concrete = [{k: (rw.one(v).payload if isinstance(v, Expr) else v) for k, v in c.items()} for c in ps.acc.commands]
    emitted = [c for c in D.int_program(shape, qx, qw).commands if "vta_read_acc" not in c]
    assert concrete == emitted


def test_the_tag_draws_name_every_operand_element_by_its_bytes():
    """Over the draws, the bytes of every operand element (x's and w's) are distinct from every
    other element's and from every constant byte (a byte and its pair never agree with one value)."""
    from mappings.vta import dense_proof as DP
    shape = {"N": 3, "K": 40, "M": 30}                      # 1,320 elements: 2-byte tags, 4 draws
    draws = list(DP.tag_draws(shape))
    assert len(draws) == 4
    codes = np.stack([np.concatenate([x.reshape(-1), w.reshape(-1)]) for x, w in draws], axis=1)
    assert codes.min() >= -128 and codes.max() <= 127
    assert len({tuple(r) for r in codes % 256}) == len(codes)       # every element's bytes distinct
    for j in range(0, 4, 2):                                        # no constant byte equals both of a pair
        assert not (codes[:, j] % 256 == codes[:, j + 1] % 256).any()


def test_the_stream_lemma_sees_passes_built_from_other_operands(monkeypatch):
    """At a shape of 6 passes (row blocks 0:20, 20:40, 40:45 x column blocks 0:160, 160:170), the
    stream lemma holds for the runner's program, and a runner that builds the passes of rows 20:40
    from rows 0:20 of x (each pass still a correct vta.gemm program, of the same shape) fails it,
    naming those passes."""
    from ila.models.vta.driver import dense_program
    from mappings.vta import dense as D, dense_proof as DP
    shape = {"N": 45, "K": 1600, "M": 170}
    assert [(r.start, r.stop, c.start, c.stop) for r, c in D.passes(shape)] == [
        (0, 20, 0, 160), (20, 40, 0, 160), (40, 45, 0, 160), (0, 20, 160, 170), (20, 40, 160, 170), (40, 45, 160, 170)]
    assert DP.pass_stream_problems(shape) == [] and DP.assembly_problems(shape) == []
    real = D.pass_programs

    def stale_rows(shape, qx, qw):
        return [(r, c, dense_program(qx[0:20], qw[c], cfg=D._cfg()) if r.start == 20 else p)
                for r, c, p in real(shape, qx, qw)]
    monkeypatch.setattr(D, "pass_programs", stale_rows)
    bad = DP.pass_stream_problems(shape)
    assert [b.split(":")[0] for b in bad] == ["pass 1 (rows 20", "pass 4 (rows 20"], bad


def test_k_beyond_the_weight_factor_field_is_refused():
    """ceil(K/16) = 1024 fits the weight SRAM but not the GEMM's 10-bit wgt_factor_in field: both
    VTA dense mappings refuse the shape, naming the field (they emitted an unencodable GEMM before)."""
    from mappings.base import MappingError
    for name in ("vta.gemm", "vta.dense"):
        registry.get(name).check_shape({"N": 1, "K": 16368, "M": 16})
        with pytest.raises(MappingError, match="wgt_factor_in"):
            registry.get(name).check_shape({"N": 1, "K": 16369, "M": 16})


@pytest.mark.parametrize("name", [n for n in VTA if n in WIDTH])
def test_the_proof_stream_is_the_emitted_stream_over_symbolic_bytes(name):
    m, shape, ps = _setup(name)
    sym = [c for c in ps.acc.commands if is_symbolic(*c.values())]
    n_bytes = sum(d.width // 8 for d in ps.data)
    assert len(sym) == n_bytes // 8                      # the data words, each a 64-bit term over data bytes
    assert all(isinstance(c["vta_vir_mem_data_in"], Expr) and c["vta_vir_mem_data_in"].width == 64 for c in sym)
    assert all(not is_symbolic(c.get("vta_top_instr_in", 0)) for c in ps.acc.commands)
    vals, inputs = _random_assignment(name, ps, np.random.default_rng(7))
    rw = Rewriter({d: bv_const(v, d.width) for d, v in vals.items()})
    concrete = [{k: (rw.one(v).payload if isinstance(v, Expr) else v) for k, v in c.items()} for c in ps.acc.commands]
    emitted = [c for c in m.codegen(shape, inputs) if "vta_read_acc" not in c]   # less the host's read-back
    assert concrete == emitted                           # the driver's stream for the same data, word for word


@pytest.mark.parametrize("name", [n for n in VTA if n in WIDTH])
def test_the_declared_refinement_map_places_the_inputs_where_the_generator_does(name):
    m = registry.get(name)
    shape = dict(m.proof.shape) if name != "vta.gemm" else {"N": 3, "K": 20, "M": 40}
    inputs = m.random_inputs(shape, np.random.default_rng(3))
    prog = (driver.dense_program(inputs["x"], inputs["w"]) if name == "vta.gemm"
            else driver.elementwise_program(name.split(".")[1], inputs["a"], inputs.get("b")))
    ref = m.refinement(shape)
    for t, w in WIDTH[name].items():
        addrs = np.asarray(ref[t][1]).reshape(-1)
        raw = np.stack([prog.dram[addrs + j] for j in range(w // 8)], axis=-1).astype(np.uint64)
        got = (raw << (8 * np.arange(w // 8, dtype=np.uint64))).sum(axis=-1)
        want = np.asarray(inputs[t], np.int64).reshape(-1) % (1 << w)
        assert np.array_equal(got, want.astype(np.uint64)), t


def test_the_packer_and_word_join_run_on_ints_and_terms_alike():
    from ila.unroll import symbol
    from ila.sorts import BvSort
    s = symbol("v", BvSort(32))
    parts = driver.pack_element([s, -2], 32)
    assert [p.width for p in parts[:4]] == [8] * 4 and parts[4:] == [0xFE, 0xFF, 0xFF, 0xFF]
    rw = Rewriter({s: bv_const(0x12345678, 32)})
    assert [rw.one(p).payload for p in parts[:4]] == driver.pack_element([0x12345678], 32)
    word = driver.dram_word(parts)
    assert rw.one(word).payload == int.from_bytes(bytes(driver.pack_element([0x12345678, -2], 32)), "little")
    with pytest.raises(VtaIsaError, match="8-bit term cannot fill a 32-bit lane"):
        driver.pack_element([symbol("b", BvSort(8))], 32)


def test_a_program_over_terms_is_not_simulated():
    from mappings.vta.common import symbolic_tensor
    prog = driver.elementwise_program("relu", symbolic_tensor("a", (16,), 32))
    assert len(prog.terms) == 64
    with pytest.raises(VtaIsaError, match="symbolic bytes"):
        driver.run_on_ila(prog)
    with pytest.raises(VtaIsaError, match="int8 values or 8-bit terms"):
        driver.dense_program(symbolic_tensor("x", (1, 16), 32), np.zeros((16, 16), np.int64))


def test_the_cli_states_what_the_proof_covers(capsys):
    assert main(["vta.gemm", "--method", "bmc", "--shape", "1x16x16", "--no-ledger"]) == 0
    out = capsys.readouterr().out
    assert "PROVED" in out and "covers codegen-bytes, order, configuration-fields, loops-end-to-end" in out
    assert "not covered at shape 1x16x16: read-back" in out


def test_size_dependent_generator_bugs_show_only_at_their_sizes():
    """The all-sizes proof's seeded bugs are correct at vta.gemm's proof shape (BMC proves the
    mutant there) and wrong where they fire: wgt_factor_in one short from 3 K blocks on (BMC at
    1x48x32 refutes it), iter_out one short from 1024 rows on (simulation at 1024x16x16 differs)."""
    from verify.mutations import applied, get
    from verify.phases import simulate_counterexample
    m = registry.get("vta.gemm")
    assert set(ALLSIZES_ONLY["vta.gemm"]) == {"wgt_factor_short_some_sizes", "iter_out_short_near_max"}
    for bug in ALLSIZES_ONLY["vta.gemm"]:
        assert mutations.check(m, dict(m.proof.shape), bug, "bmc", solver="z3").kind == "proved"
    v = mutations.check(m, {"N": 1, "K": 48, "M": 32}, "wgt_factor_short_some_sizes", "bmc", solver="z3")
    assert v.kind == "counterexample" and v.replayed, v
    with applied(get(m, "iter_out_short_near_max")):
        assert simulate_counterexample(m, {"N": 1024, "K": 16, "M": 16}, tries=1) is not None
    assert simulate_counterexample(m, {"N": 1024, "K": 16, "M": 16}, tries=1) is None
