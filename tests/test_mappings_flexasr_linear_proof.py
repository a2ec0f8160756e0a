"""flexasr.linear proved by BMC over abstract arithmetic, over the exact MMIO stream the generator
emits and its read-back; every link axiom holds for the numpy bodies of its functions; seeded bugs
in each layer are refuted with replayed counterexamples."""
import types

import numpy as np
import pytest

from ila import BV, bv_const
from ila.compile_np import evaluate
from ila.expr import var
from ila.simplify import Rewriter
from mappings.base import MappingError
from mappings.flexasr import linear_proof as LP
from verify.bmc import check_bmc, query
from mappings.registry import get
from verify import mutations
from verify.mapping import main

SMALL = {"T": 1, "I": 16, "O": 64}
BIAS_SETTINGS = [LP.Biases(), LP.Biases(0, 0, 0, 0), LP.Biases(7, 7, 7, 7), LP.Biases(x=6, w=5, b=0, out=1)]


def _holds(formula, a, b, wa, wb):
    ea, eb = var("state", "a", BV(wa), 0), var("state", "b", BV(wb), 0)
    got = evaluate([formula(ea, eb)], {"a": np.asarray(a, np.uint64), "b": np.asarray(b, np.uint64)}, {})[0]
    got = np.broadcast_to(np.asarray(got, dtype=bool), np.shape(a))
    return np.flatnonzero(~got)


def _accumulators(rng, n):
    edges = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFF, 0x80000, 0xFFF80000, 1 << 14, (1 << 14) - 1]
    return np.concatenate([np.array(edges, np.uint64), rng.integers(0, 1 << 32, n, dtype=np.uint64)])


def test_l_mul_holds_on_all_code_pairs():
    num = LP.pe_numerics()
    ax = LP.link_axioms(num)["L_mul"]
    a, b = np.meshgrid(np.arange(256), np.arange(256))
    bad = _holds(lambda x, y: ax(LP.embed(x), LP.embed(y)), a.ravel(), b.ravel(), 8, 8)
    assert bad.size == 0, f"L_mul fails on code pairs {bad[:5]}"
    rng = np.random.default_rng(1)                                   # any 33-bit pair (guard false: vacuous)
    assert _holds(ax, rng.integers(0, 1 << 33, 4096), rng.integers(0, 1 << 33, 4096), 33, 33).size == 0


def test_l_acc_holds_on_random_and_edge_accumulators():
    num = LP.pe_numerics()
    rng = np.random.default_rng(2)
    acc = _accumulators(rng, 200000)
    a, b = acc, rng.permutation(acc)
    assert _holds(LP.link_axioms(num)["L_acc"], a, b, 33, 33).size == 0


@pytest.mark.parametrize("biases", BIAS_SETTINGS, ids=str)
def test_l_bias_holds_for_every_bias_code(biases):
    num = LP.pe_numerics(biases)
    ax = LP.link_axioms(num, biases)["L_bias"]
    acc = _accumulators(np.random.default_rng(3), 3000)
    a, c = np.meshgrid(acc, np.arange(256, dtype=np.uint64))
    bad = _holds(lambda x, y: ax(x, LP.embed(y)), a.ravel(), c.ravel(), 33, 8)
    assert bad.size == 0, f"L_bias fails at {bad[:5]}"


def test_a_wrong_link_axiom_is_caught():
    # the IR numerics of one register setting against the link axiom of another: false
    num = LP.pe_numerics(LP.Biases())
    ax = LP.link_axioms(num, LP.Biases(x=3, w=1, b=4, out=5))["L_bias"]
    acc = _accumulators(np.random.default_rng(4), 50)
    a, c = np.meshgrid(acc, np.arange(256, dtype=np.uint64))
    assert _holds(lambda x, y: ax(x, LP.embed(y)), a.ravel(), c.ravel(), 33, 8).size > 0


def test_axiom_instances_of_the_proof_are_true_on_random_data():
    ps = LP.proof_setup(SMALL)
    _, _, axioms = query(ps)
    rng = np.random.default_rng(5)
    for _ in range(2):
        rw = Rewriter({d: bv_const(int(v), 8) for d, v in zip(ps.data, rng.integers(0, 256, len(ps.data)))},
                      fold_ufs=True)
        assert {rw.one(ax).short() for ax in axioms} == {"true"}


def test_bmc_proves_linear_over_abstract_arithmetic():
    v = check_bmc(LP.proof_setup(SMALL))
    assert v.kind == "proved", v
    assert "64 output cells" in v.detail


def test_proof_runs_the_emitted_stream_and_read_back():
    from ila.generic import is_symbolic
    ps = LP.proof_setup(SMALL)
    stores = [c for c in ps.acc.commands if any(is_symbolic(v) for k, v in c.items() if k.startswith("data_in"))]
    # x: 1 vector; w: 64 x 16 codes = 64 words; b: 64 codes = 4 words
    assert len(stores) == 1 + 64 + 4
    assert ps.readback is not None and sum(ps.acc.port.is_read(c) for c in ps.acc.commands) == 4
    assert set(ps.covers) >= {"codegen-bytes", "order", "model-loops", "read-back"}


@pytest.mark.parametrize("mutation", ["lane_order", "transposed_weight_tiles", "swapped_input_and_bias_registers",
                                      "wrong_readback_base"])
def test_seeded_bugs_are_refuted_and_replayed(mutation):
    v = mutations.check(get("flexasr.linear"), SMALL, mutation, "bmc")
    assert v.kind == "counterexample" and v.replayed, v
    assert v.trace["ir_value"] != v.trace["acc_value"]


def test_replay_applies_the_solver_interpretation_inside_summarised_loops():
    # A counterexample is replayed under the solver's interpretation of the uninterpreted
    # functions; the PE core's loop summary reads a ProductSum table built from the real body, so
    # the replay must run that loop instruction by instruction (else a real refutation of a wrong
    # program fails to replay, or a spurious one passes).
    from ila.models.flexasr.funcs import PRODUCT_SUM
    from verify.bmc import replay
    ps = LP.proof_setup(SMALL)
    rng = np.random.default_rng(3)
    data = {d: int(rng.integers(1, 1 << d.width)) for d in ps.data}
    assert replay(ps, data, {}, {}) is None                      # the proved mapping, real bodies
    zero = {(a, b): 0 for a in range(256) for b in range(256)}  # ProductSum interpreted as 0
    assert replay(ps, data, {}, {PRODUCT_SUM: zero}) is not None


@pytest.mark.slow
@pytest.mark.parametrize("mutation", ["weights_of_next_pe", "bias_off_by_one", "output_vector_off_by_one",
                                      "wrong_input_base"])
def test_more_seeded_bugs_are_refuted(mutation):
    v = mutations.check(get("flexasr.linear"), SMALL, mutation, "bmc")
    assert v.kind == "counterexample" and v.replayed, v


@pytest.mark.slow
def test_bmc_proves_two_timesteps_two_input_vectors():
    # I = 32: the PE sums lane k over the input vectors first, the IR left to right
    v = check_bmc(LP.proof_setup({"T": 2, "I": 32, "O": 64}, biases=LP.Biases(x=0, w=7, b=4, out=2)))
    assert v.kind == "proved", v


def test_refusals_name_the_bad_value(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("D2A_LEDGER", str(tmp_path / "ledger.json"))
    assert main(["flexasr.linear", "--method", "bmc", "--shape", "1x16x64", "--numerics", "exact"]) == 2
    assert "'exact'" in capsys.readouterr().err
    with pytest.raises(MappingError, match="exponent-bias register out = 9"):
        LP.Biases(out=9)
    with pytest.raises(MappingError, match="unknown mutation 'nope'"):
        mutations.check(get("flexasr.linear"), SMALL, "nope")
    assert main(["flexasr.linear", "--method", "bmc", "--shape", "1x16x32"]) == 2
    assert "O multiple of 64" in capsys.readouterr().err
    assert main(["flexasr.linear", "--method", "bmc", "--shape", "1x16x64", "--timeout", "0.001"]) == 2
    assert "UNKNOWN" in capsys.readouterr().out


# ----------------------------------------------------------------------------- the fast instances
def _applications(ps):
    """The application lists the BMC hands the setup's axiom function (recorded from a proof)."""
    from verify.symmetry import check_bmc_symmetric
    seen, real = [], ps.axioms[0]
    ps.axioms[0] = lambda apps: (seen.append(list(apps)), real(apps))[1]
    assert check_bmc_symmetric(ps).kind == "proved"
    return seen


@pytest.mark.parametrize("pad", [False, True])
def test_fast_instances_are_the_general_path_s_node_for_node(pad):
    """On every application list of a whole proof (flexasr.linear, and flexasr.linear_pad with its
    padding), the fast instances are the general path's simplified instances, the same nodes; most
    applications take the fast path; the seeded bug (ProductSum's operands swapped) differs."""
    from mappings.flexasr import linear_pad_proof as LPP
    biases = LP.Biases()
    ps = LPP.proof_setup({"T": 1, "I": 10, "O": 10}) if pad else LP.proof_setup(SMALL)
    numerics = types.SimpleNamespace(mul=ps.funcs[0], add=ps.funcs[1])       # the setup's own functions
    assert (numerics.mul.name, numerics.add.name) == ("flexasr_pe_mul", "flexasr_pe_add")
    fast, slow, bad = (LP.instantiate(numerics, biases, fast=f, bug=b) for f, b in
                       ((True, None), (False, None), (True, "product_operands_swapped")))
    lists = _applications(ps)
    assert lists
    for apps in lists:
        got, want = fast(apps), slow(apps)
        assert want and len(got) == len(want) and all(g is w for g, w in zip(got, want))
        assert any(g is not w for g, w in zip(bad(apps), want))
    with pytest.raises(ValueError, match="unknown seeded bug"):
        LP.instantiate(numerics, biases, bug="nonsense")


def test_most_instances_take_the_fast_path(monkeypatch):
    calls = {"quick": 0, "general": 0}
    real = LP.link_axioms

    def counting(num, biases=LP.Biases()):
        ax = real(num, biases)
        return {k: (lambda f: lambda *a: (calls.__setitem__("general", calls["general"] + 1), f(*a))[1])(f)
                for k, f in ax.items()}
    monkeypatch.setattr(LP, "link_axioms", counting)
    ps = LP.proof_setup(SMALL)
    lists = _applications(ps)
    n = sum(1 for apps in lists for a in apps if a.op.name == "APPLY" and a.payload in ps.funcs)
    assert n and calls["general"] <= n // 10, (calls, n)       # one per output: the sum's first add (of 0)
