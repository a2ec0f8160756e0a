"""Every registered mapping passes sim and fuzz (parametrised over the registry: a mapping is tested
by being registered); shapes outside the side conditions are refused with the condition named;
the IR-ILA fragment of each mapping agrees with its numpy reference (VT1 per mapping); and
deliberately broken variants of every registered FlexASR mapping fail sim."""
import dataclasses
import json
import re
import sys
import types

import numpy as np
import pytest

from mappings import registry
from mappings.base import MappingError, frobenius_relative_error
from mappings.common import run_ir
from verify.simval import run_fuzz, run_sim

NAMES = registry.names()
# small shapes for the fast suite (the default shapes run in the slow test and in benchmarks/table2.py)
SMALL = {"flexasr.linear": {"T": 4, "I": 32, "O": 64}, "flexasr.lstm": {"T": 2, "I": 16, "H": 64},
         "flexasr.layernorm": {"T": 4, "H": 32}, "flexasr.attention": {"T": 16, "H": 32},
         "hlscnn.conv2d": {"H": 5, "W": 5, "C": 8, "O": 8, "K": 3, "S": 1},
         "hlscnn.conv2d_w8": {"H": 5, "W": 5, "C": 8, "O": 8, "K": 3, "S": 1},
         "vta.gemm": {"N": 2, "K": 32, "M": 32}}


def _small(m):
    return SMALL.get(m.name, m.default_shape)


def test_registry_lists_the_issue_mappings():
    want = {"flexasr.linear", "flexasr.lstm", "flexasr.layernorm", "flexasr.maxpool", "flexasr.meanpool",
            "flexasr.attention", "hlscnn.conv2d", "vta.gemm", "vta.add", "vta.relu"}
    assert want <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_sim_passes(name):
    m = registry.get(name)
    rep = run_sim(m, shape=_small(m), samples=3, seed=1)
    assert rep.passed, rep.to_json()
    assert len(rep.errors) == 3


@pytest.mark.parametrize("name", NAMES)
def test_fuzz_passes(name):
    m = registry.get(name)
    rep = run_fuzz(m, seed=0, examples=4)
    assert rep.passed, rep.failure
    assert rep.errors


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_sim_at_default_shape_and_longer_fuzz(name):
    m = registry.get(name)
    assert run_sim(m, samples=20, seed=3).passed
    rep = run_fuzz(m, seed=5, examples=30)
    assert rep.passed, rep.failure


@pytest.mark.parametrize("name", NAMES)
def test_mapping_is_complete_data(name):
    m = registry.get(name)
    assert m.ir_pattern.startswith("(") and m.ir_pattern.count("(") == m.ir_pattern.count(")")
    assert m.shape_strategy is not None and m.edge_inputs is not None
    assert len(m.edge_inputs(_small(m), np.random.default_rng(0))) >= 3
    m.check_shape(m.default_shape)
    for c in m.side_conditions:
        assert c.name and c.text


# Caps on the tolerances. A tolerance is the bound every input's error must meet, so it is only useful
# while it stays below the error of the mapping bugs it should catch; a tolerance near that would let
# sim and fuzz pass a wrong tiling or swapped operands. At the default shape (what sim and Table 2
# check) the FlexASR and HLSCNN tolerances are 1.5-3x their measured maxima (2-4 %): capped at 10 %,
# the error of the mildest broken variant below (flexasr.linear without its bias: 10-13 %; the others
# err 20-160 %). A shape-dependent tolerance may be larger at some shapes the fuzzer draws
# (flexasr.attention at H = 16, where its 1/16-quantised probabilities err up to ~20 %), but stays
# below 30 %, under the ~50 % of its mildest broken variant there (the probability bias register 2
# too small; test_broken_attention_variants_fail_at_the_loosest_tolerance). VTA is exact: 0.
DEFAULT_SHAPE_CAP = 0.10
FUZZ_SHAPE_CAP = 0.30


@pytest.mark.parametrize("name", NAMES)
def test_tolerance_stays_below_a_sane_cap(name):
    from hypothesis import HealthCheck, given, settings
    m = registry.get(name)
    tol = m.tolerance_at(m.default_shape)
    assert (tol == 0.0) if m.accelerator == "vta" else (0 <= tol < DEFAULT_SHAPE_CAP), (name, tol)
    assert m.tolerance_at(_small(m)) < FUZZ_SHAPE_CAP
    if not m.shape_dependent_tolerance:
        assert tol == m.tolerance

    @settings(max_examples=10, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(m.shape_strategy())
    def prop(shape):
        t = m.tolerance_at(shape)
        assert (t == 0.0) if m.accelerator == "vta" else (0 <= t < FUZZ_SHAPE_CAP), (shape, t)
    prop()


@pytest.mark.parametrize("name", [n for n in NAMES if registry.get(n).ir_fragment is not None])
def test_ir_ila_fragment_agrees_with_the_reference(name):
    m = registry.get(name)
    shape = _small(m)
    inputs = m.random_inputs(shape, np.random.default_rng(7))
    ref = m.reference(shape, inputs)
    got = run_ir(m.ir_fragment(shape), inputs)
    if m.accelerator == "vta":
        assert np.array_equal(got.astype(np.int64), np.asarray(ref).reshape(got.shape))
    else:
        assert frobenius_relative_error(np.asarray(ref).reshape(got.shape), got) < 1e-5


# ----------------------------------------------------------------------------- side conditions
BAD = {
    "flexasr.linear": ({"T": 4, "I": 24, "O": 64}, "I multiple of 16"),
    "flexasr.lstm": ({"T": 4, "I": 16, "H": 32}, "H multiple of 64"),
    "flexasr.maxpool": ({"R": 3, "C": 16}, "R even"),
    "flexasr.meanpool": ({"R": 4, "C": 20}, "C multiple of 16"),
    "hlscnn.conv2d": ({"H": 2, "W": 5, "C": 1, "O": 1, "K": 3, "S": 1}, "kernel fits the input"),
    "hlscnn.conv2d_w8": ({"H": 5, "W": 5, "C": 1, "O": 1, "K": 3, "S": 300}, "stride fits"),
    "vta.gemm": ({"N": 4096, "K": 16, "M": 16}, "inputs fit the input SRAM"),
    "vta.add": ({"n": 20000}, "result fits the accumulator SRAM"),
    "vta.relu": ({"n": 0}, "positive size"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_shapes_outside_the_side_conditions_are_refused_by_name(name):
    m = registry.get(name)
    shape, cond = BAD[name]
    with pytest.raises(MappingError, match=cond):
        run_sim(m, shape=shape, samples=1)
    with pytest.raises(MappingError, match=cond):
        m.parse_shape("x".join(str(v) for v in shape.values()))


def test_cli_refuses_a_bad_shape_naming_the_condition(capsys):
    from verify.mapping import main
    assert main(["flexasr.linear", "--method", "sim", "--shape", "4x24x64", "--samples", "1"]) == 2
    assert "I multiple of 16" in capsys.readouterr().err


def test_fuzz_strategies_only_draw_valid_shapes():
    from hypothesis import HealthCheck, given, settings
    for name in NAMES:
        m = registry.get(name)

        @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(m.shape_strategy())
        def prop(shape):
            m.check_shape(shape)
        prop()


# ----------------------------------------------------------------------------- broken FlexASR variants
class Mutant:
    """A FlexASR runner whose tensor-assembly program (or operand library) is altered before it is
    assembled to MMIO: the command stream a buggy code generator would emit."""

    def __init__(self, mutate):
        from ila.models.flexasr.driver import Runner
        self.inner = Runner()
        self.mutate = mutate

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def run(self, prog, lib):
        prog, lib = self.mutate([dict(p) for p in prog], dict(lib))
        return self.inner.run(prog, lib)


def _set(name, **fields):
    def f(prog, lib):
        for p in prog:
            if p["name"] == name:
                p.update(fields)
        return prog, lib
    return f


def _retile(key):
    """Wrong tiling: the tensor's 16x16 blocks are written vector-major instead of timestep-major."""
    def f(prog, lib):
        x = lib[key]
        T, H = x.shape
        lib[key] = x.reshape(T // 16, 16, H // 16, 16).transpose(0, 2, 1, 3).reshape(T, H)
        return prog, lib
    return f


def _layernorm_runs(D, m):
    from mappings.flexasr.layernorm import _x_bias

    def run(s, i, **kw):
        return D.run_layernorm(i["x"], i["gamma"], i["beta"], bias_reg=_x_bias(s, i), **kw).out

    def one_short(prog, lib):                    # statistics over H - 16 values; the last vector untouched
        for p in prog:
            if p["name"] == "layernorm":
                p["num_v"] -= 1
        return prog, lib
    return {
        "wrong tiling": lambda s, i: run(s, i, r=Mutant(_retile("x"))),
        # gamma and beta exchanged (the code generator binding the IR operands in the wrong order)
        "swapped operands": lambda s, i: D.run_layernorm(i["x"], i["beta"], i["gamma"], bias_reg=_x_bias(s, i)).out,
        "num_vector one short": lambda s, i: run(s, i, r=Mutant(one_short)),
    }


def _broken(name, how):
    """The registered mapping ``name`` with its accelerator runner replaced by the broken variant
    ``how`` (a key of BROKEN[name])."""
    from ila.models.flexasr import driver as D
    from mappings.flexasr import common as F
    m = registry.get(name)
    if name == "flexasr.linear":
        runs = {
            "wrong tiling": lambda s, i: D.run_linear(i["x"], i["w"], i["b"], r=Mutant(_retile("x"))).out,
            "wrong mode": lambda s, i: D.run_linear(i["x"], i["w"], i["b"], r=Mutant(_set("linear_layer", is_bias=0))).out,
            "swapped operands": lambda s, i: D.run_linear(i["x"], i["w"].T.copy(), i["b"]).out,
        }
    elif name == "flexasr.lstm":
        runs = {
            "wrong tiling": lambda s, i: D.run_lstm(i["x"], i["w_ih"], i["w_hh"], i["b"], r=Mutant(_retile("x"))).out,
            "wrong mode": lambda s, i: D.run_lstm(i["x"], i["w_ih"], i["w_hh"], i["b"],
                                                  r=Mutant(_set("lstm_layer", is_bias=0))).out,
            "swapped operands": lambda s, i: D.run_lstm(i["x"], i["w_hh"], i["w_ih"], i["b"]).out,
        }
    elif name == "flexasr.layernorm":
        runs = _layernorm_runs(D, m)
    elif name in ("flexasr.maxpool", "flexasr.meanpool"):
        mode = "max" if name == "flexasr.maxpool" else "mean"
        other = {"max": "meanp", "mean": "maxp"}[mode]
        own = {"max": "maxp", "mean": "meanp"}[mode]

        def wrong_mode(prog, lib):
            for p in prog:
                if p["name"] == own:
                    p["name"] = other
            return prog, lib

        def swapped(s, i):                       # pairs (t, t+1) taken from the wrong timesteps
            x = i["x"]
            return D.run_pool(np.roll(x, 1, axis=0), mode).out
        runs = {"wrong tiling": lambda s, i: D.run_pool(i["x"], mode, r=Mutant(_retile("x"))).out,
                "wrong mode": lambda s, i: D.run_pool(i["x"], mode, r=Mutant(wrong_mode)).out,
                "swapped operands": swapped}
    elif name == "flexasr.attention":
        def biases(i):                           # the mapping's own bias choice (headroom)
            s = i["enc"] @ i["dec"]
            p = np.exp(s - s.max())
            return {"prob_bias": F.out_bias(p / p.sum()), "out_bias": F.out_bias(m.reference({}, i))}

        def attention(prog, lib, **fields):
            for p in prog:
                if p["name"] == "attention":
                    for k, v in fields.items():
                        p[k] = v(p[k])
            return prog, lib
        runs = {
            "wrong tiling": lambda s, i: D.run_attention(i["enc"], i["dec"], r=Mutant(_retile("enc")), **biases(i)).out,
            # the IR's transpose of enc applied to the score operand instead (T = H)
            "swapped operands": lambda s, i: D.run_attention(i["enc"].T.copy(), i["dec"], **biases(i)).out,
            # the decoder state taken from the encoder operand (enc/dec roles confused)
            "query from the encoder": lambda s, i: D.run_attention(i["enc"], i["enc"][0].copy(), **biases(i)).out,
            "num_vector one short": lambda s, i: D.run_attention(
                i["enc"], i["dec"], r=Mutant(lambda p, lib: attention(p, lib, num_v=lambda v: v - 1)), **biases(i)).out,
            "probability bias 2 too small": lambda s, i: D.run_attention(
                i["enc"], i["dec"], r=Mutant(lambda p, lib: attention(p, lib, adpbias_prob=lambda b: max(b - 2, 0))),
                **biases(i)).out,
        }
    else:
        raise KeyError(f"no broken variants written for {name}")
    return dataclasses.replace(m, run_accelerator=runs[how])


FLEX = [n for n in NAMES if n.startswith("flexasr.")]
VARIANTS = ["wrong tiling", "wrong mode", "swapped operands"]
# the deliberately broken variants of each FlexASR mapping (built by _broken)
BROKEN = {
    "flexasr.linear": VARIANTS, "flexasr.lstm": VARIANTS, "flexasr.maxpool": VARIANTS, "flexasr.meanpool": VARIANTS,
    "flexasr.layernorm": ["wrong tiling", "swapped operands", "num_vector one short"],
    "flexasr.attention": ["wrong tiling", "swapped operands", "query from the encoder", "num_vector one short",
                          "probability bias 2 too small"],
}
# square-ish shapes with T a multiple of 16 (wrong tiling permutes 16x16 blocks; attention's swapped
# operands needs T = H)
SQUARE = {"flexasr.linear": {"T": 16, "I": 64, "O": 64}, "flexasr.lstm": {"T": 16, "I": 64, "H": 64},
          "flexasr.layernorm": {"T": 16, "H": 64},
          "flexasr.maxpool": {"R": 16, "C": 32}, "flexasr.meanpool": {"R": 16, "C": 32},
          "flexasr.attention": {"T": 64, "H": 64}}


def test_every_registered_flexasr_mapping_has_broken_variants():
    """Registering a FlexASR mapping without deliberately broken variants fails here."""
    missing = [n for n in FLEX if not BROKEN.get(n)]
    assert not missing, f"no broken variants for {missing}: add them to BROKEN and _broken"
    assert set(FLEX) <= set(SQUARE)


@pytest.mark.parametrize("name, how", [(n, h) for n in sorted(BROKEN) for h in BROKEN[n]])
def test_broken_flexasr_variants_fail_sim(name, how):
    assert name in FLEX, f"{name} is not registered"
    m = _broken(name, how)
    rep = run_sim(m, shape=SQUARE[name], samples=2, seed=4)
    assert not rep.passed, f"{name} with {how} passed sim: errors {rep.errors}"


@pytest.mark.parametrize("how", ["swapped operands", "query from the encoder", "probability bias 2 too small"])
def test_broken_attention_variants_fail_at_the_loosest_tolerance(how):
    """At H = 16 attention's tolerance is its loosest; the bugs that exist at H = 16 (one vector: no
    tiling to get wrong, no vector to drop) still fail there."""
    m = _broken("flexasr.attention", how)
    shape = {"T": 16, "H": 16}
    rep = run_sim(m, shape=shape, samples=2, seed=4)
    assert rep.tolerance == m.tolerance_at(shape) >= max(m.tolerance_at({"T": t, "H": 16}) for t in range(1, 65))
    assert not rep.passed, f"attention with {how} passed sim at 16x16: errors {rep.errors}"


def test_a_broken_variant_registered_at_run_time_fails_the_cli(monkeypatch, capsys):
    """End to end through ``python -m verify.mapping``: a broken variant registered under its own name
    fails sim (exit 1, JSON passed false, its error far above the tolerance)."""
    from verify.mapping import main
    name = "flexasr.layernorm_swapped"
    mod = types.ModuleType("broken_layernorm_for_test")
    mod.MAPPING = dataclasses.replace(_broken("flexasr.layernorm", "swapped operands"), name=name)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(registry.MODULES, name, mod.__name__)
    code = main([name, "--method", "sim", "--shape", "4x32", "--samples", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["passed"] is False
    assert out["max_error"] > 5 * out["tolerance"]


def test_the_unbroken_variant_runner_passes():
    """The Mutant runner itself (identity mutation) does not break anything."""
    from ila.models.flexasr import driver as D
    m = registry.get("flexasr.meanpool")
    ok = dataclasses.replace(m, run_accelerator=lambda s, i: D.run_pool(i["x"], "mean",
                                                                         r=Mutant(lambda p, lib: (p, lib))).out)
    assert run_sim(ok, shape=SQUARE["flexasr.meanpool"], samples=2).passed


# ----------------------------------------------------------------------------- data conditions
def _attention_violations():
    """One input per attention data condition that violates it (and only the conditions before it
    hold), with the condition's name."""
    rng = np.random.default_rng(0)
    enc = rng.standard_normal((64, 64)).astype(np.float32)
    flat = {"enc": enc, "dec": (rng.standard_normal(64) / 8).astype(np.float32)}     # scaled dot product
    e = rng.standard_normal((16, 256)).astype(np.float32)
    wrap = {"enc": e, "dec": (e[3] * 2100 / (e[3] @ e[3])).astype(np.float32)}       # score 2100 > 2048
    e = rng.standard_normal((16, 16)).astype(np.float32)
    d = rng.standard_normal(16).astype(np.float32)
    e = -e * np.sign(e @ d)[:, None]                                                 # every score negative
    e[0] = 0.0                                                                       # ... but a zero row's
    return [({"T": 16, "H": 256}, wrap, "scores fit the attention datapath"),
            ({"T": 64, "H": 64}, {"enc": enc, "dec": np.zeros(64, np.float32)}, "exp-sum fits ac_fixed<6,2>"),
            ({"T": 64, "H": 64}, flat, "exp-sum fits ac_fixed<6,2>"),
            ({"T": 16, "H": 16}, {"enc": e, "dec": d}, "masked timesteps negligible")]


@pytest.mark.parametrize("k", range(4))
def test_attention_refuses_data_violating_a_condition_naming_it_and_the_value(k):
    from mappings.flexasr import attention as A
    shape, inputs, cond = _attention_violations()[k]
    c = next(c for c in A.DATA_CONDITIONS if c.name == cond)
    value = c.value(shape, inputs)
    assert not value < c.bound
    with pytest.raises(MappingError, match=re.escape(cond)) as exc:
        A.MAPPING.check_data(shape, inputs)
    assert f"measured {value:.6g}" in str(exc.value)
    # the limit is the hardware's: the unit's result on these inputs is far from the reference
    assert frobenius_relative_error(A.MAPPING.reference(shape, inputs), A.MAPPING.run_accelerator(shape, inputs)) > 0.4


def test_simval_refuses_generated_data_violating_a_condition():
    """A data generator leaving the preconditions is refused by sim and fuzz (MappingError naming the
    condition), not measured."""
    from mappings.flexasr import attention as A
    flat = dataclasses.replace(A.MAPPING, random_inputs=lambda s, rng: {
        "enc": rng.standard_normal((s["T"], s["H"])).astype(np.float32), "dec": np.zeros(s["H"], np.float32)})
    with pytest.raises(MappingError, match="exp-sum fits"):
        run_sim(flat, shape={"T": 16, "H": 16}, samples=1)
    with pytest.raises(MappingError, match="exp-sum fits"):
        run_fuzz(flat, seed=0, examples=2)


def test_layernorm_refuses_vectors_whose_sum_of_squares_wraps():
    m = registry.get("flexasr.layernorm")
    shape = {"T": 4, "H": 32}
    inputs = m.random_inputs(shape, np.random.default_rng(0))
    inputs["x"] = inputs["x"] * 8                       # N(0, 4^2): sum of 16 squares ~ 256
    with pytest.raises(MappingError, match="vector sum of squares fits the 20-bit register"):
        m.check_data(shape, inputs)


def test_attention_generates_data_within_its_conditions_at_boundary_shapes():
    """flexasr.attention's random and edge data satisfy its data conditions at the smallest shapes,
    a shape where T is not a multiple of 16, and the largest T its tolerance covers at H = 16."""
    m = registry.get("flexasr.attention")
    rng = np.random.default_rng(3)
    for shape in ({"T": 1, "H": 16}, {"T": 16, "H": 32}, {"T": 40, "H": 16}, {"T": 256, "H": 64}):
        for inputs in [m.random_inputs(shape, rng)] + m.edge_inputs(shape, rng):
            m.check_data(shape, inputs)


def test_attention_tolerance_by_shape():
    """The shape-dependent tolerance: tighter as H grows (fewer competing timesteps), never tighter
    for more timesteps, and refused (naming T) beyond the measured T <= 256."""
    from mappings.flexasr import attention as A
    m = registry.get("flexasr.attention")
    assert m.shape_dependent_tolerance
    for T in (1, 40, 64, 65, 256):
        tols = [m.tolerance_at({"T": T, "H": H}) for H in (16, 32, 48, 64, 128, 4080 if T <= 64 else 256)]
        assert tols == sorted(tols, reverse=True) and tols[0] > tols[3], (T, tols)
        assert tols[-1] == tols[3]                               # H >= 64 share the band
    for H in (16, 32, 48, 64):
        assert m.tolerance_at({"T": 64, "H": H}) <= m.tolerance_at({"T": 65, "H": H}) == A.TOLERANCES[H][1]
    with pytest.raises(MappingError, match="T = 257"):
        m.tolerance_at({"T": 257, "H": 64})
    with pytest.raises(MappingError, match="T = 257"):
        run_sim(m, shape={"T": 257, "H": 64}, samples=1)
    with pytest.raises(MappingError, match="H multiple of 16"):
        m.tolerance_at({"T": 4, "H": 24})


def test_tolerance_at_names_a_bad_value():
    m = registry.get("flexasr.meanpool")
    for bad in (-0.1, float("nan"), "x"):
        with pytest.raises(MappingError, match=re.escape(repr(bad))):
            dataclasses.replace(m, tolerance=lambda s, b=bad: b).tolerance_at(m.default_shape)


def test_attention_passes_sim_and_fuzz_with_other_seeds():
    """Not only the suite's fixed seeds: sim at the default shape (where the tolerance is tightest)
    and fuzz over the fuzz domain pass for a few more."""
    m = registry.get("flexasr.attention")
    for seed in (11, 12, 13):
        rep = run_sim(m, samples=8, seed=seed)
        assert rep.passed, rep.to_json()
        rep = run_fuzz(m, seed=seed, examples=8)
        assert rep.passed, rep.failure
