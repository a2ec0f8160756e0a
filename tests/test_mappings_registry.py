"""Every registered mapping passes sim and fuzz (parametrised over the registry: a mapping is tested
by being registered); shapes outside the side conditions are refused with the condition named;
the IR-ILA fragment of each mapping agrees with its numpy reference (VT1 per mapping); and
deliberately broken variants of the FlexASR mappings fail sim or fuzz."""
import dataclasses

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
    want = {"flexasr.linear", "flexasr.lstm", "flexasr.maxpool", "flexasr.meanpool", "hlscnn.conv2d",
            "vta.gemm", "vta.add", "vta.relu"}
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
    assert (m.tolerance == 0.0) if m.accelerator == "vta" else (0 <= m.tolerance < 0.2)
    for c in m.side_conditions:
        assert c.name and c.text


@pytest.mark.parametrize("name", [n for n in NAMES if "ir_fragment" in registry.get(n).extras])
def test_ir_ila_fragment_agrees_with_the_reference(name):
    m = registry.get(name)
    shape = _small(m)
    inputs = m.random_inputs(shape, np.random.default_rng(7))
    ref = m.reference(shape, inputs)
    got = run_ir(m.extras["ir_fragment"](shape), inputs)
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


def _broken(name, how):
    from ila.models.flexasr import driver as D
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
    else:
        return None
    return dataclasses.replace(m, run_accelerator=runs[how])


FLEX = [n for n in NAMES if n.startswith("flexasr.") and n not in ("flexasr.layernorm", "flexasr.attention")]
VARIANTS = ["wrong tiling", "wrong mode", "swapped operands"]
SQUARE = {"flexasr.linear": {"T": 16, "I": 64, "O": 64}, "flexasr.lstm": {"T": 16, "I": 64, "H": 64},
          "flexasr.maxpool": {"R": 16, "C": 32}, "flexasr.meanpool": {"R": 16, "C": 32}}


@pytest.mark.parametrize("how", VARIANTS)
@pytest.mark.parametrize("name", FLEX)
def test_broken_flexasr_variants_fail_sim(name, how):
    m = _broken(name, how)
    if m is None:
        pytest.skip(f"no broken variants written for {name}")
    rep = run_sim(m, shape=SQUARE[name], samples=2, seed=4)
    assert not rep.passed, f"{name} with {how} passed sim: errors {rep.errors}"


def test_the_unbroken_variant_runner_passes():
    """The Mutant runner itself (identity mutation) does not break anything."""
    from ila.models.flexasr import driver as D
    m = registry.get("flexasr.meanpool")
    ok = dataclasses.replace(m, run_accelerator=lambda s, i: D.run_pool(i["x"], "mean",
                                                                         r=Mutant(lambda p, lib: (p, lib))).out)
    assert run_sim(ok, shape=SQUARE["flexasr.meanpool"], samples=2).passed
