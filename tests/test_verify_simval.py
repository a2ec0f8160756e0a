"""verify.simval refutes deliberately broken variants of every registered FlexASR mapping (a
validation that cannot fail is worth nothing)."""
import dataclasses
import json
import sys
import types

import numpy as np
import pytest

from mappings import registry
from verify.simval import run_sim

NAMES = registry.names()


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
    elif name == "flexasr.linear_pad":
        from mappings.flexasr import linear_pad as LP

        def padded_run(s, i, r=None, x_at_front=False, cut=slice(0, None)):
            xp, wp, bp = LP.pad_operands(s, i["x"], i["w"], i["b"])
            if x_at_front:                       # x's zero columns placed before its values, w's after
                xp = np.roll(xp, xp.shape[1] - s["I"], axis=1)
            y = D.run_linear(xp, wp, bp, r=r).out
            return y[:, :s["O"]] if cut.start == 0 else y[:, -s["O"]:]
        runs = {
            "wrong tiling": lambda s, i: padded_run(s, i, r=Mutant(_retile("x"))),
            "input padded at the front": lambda s, i: padded_run(s, i, x_at_front=True),
            "result cut from the end": lambda s, i: padded_run(s, i, cut=slice(1, None)),
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
    elif name.startswith(("flexasr.maxpool", "flexasr.meanpool")):         # single pools and chains
        mode = "max" if name.startswith("flexasr.maxpool") else "mean"

        def pool(s, x, r=None):
            return D.run_pool(x, mode, r=r) if "L" not in s else D.run_pool_chain(x, s["L"], mode, r=r)
        other = {"max": "meanp", "mean": "maxp"}[mode]
        own = {"max": "maxp", "mean": "meanp"}[mode]

        def wrong_mode(prog, lib):
            for p in prog:
                if p["name"] == own:
                    p["name"] = other
            return prog, lib

        def swapped(s, i):                       # pairs (t, t+1) taken from the wrong timesteps
            x = i["x"]
            return pool(s, np.roll(x, 1, axis=0)).out
        runs = {"wrong tiling": lambda s, i: pool(s, i["x"], r=Mutant(_retile("x"))).out,
                "wrong mode": lambda s, i: pool(s, i["x"], r=Mutant(wrong_mode)).out,
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
    "flexasr.maxpool_chain": VARIANTS, "flexasr.meanpool_chain": VARIANTS,
    "flexasr.layernorm": ["wrong tiling", "swapped operands", "num_vector one short"],
    "flexasr.linear_pad": ["wrong tiling", "input padded at the front", "result cut from the end"],
    "flexasr.attention": ["wrong tiling", "swapped operands", "query from the encoder", "num_vector one short",
                          "probability bias 2 too small"],
}
# square-ish shapes with T a multiple of 16 (wrong tiling permutes 16x16 blocks; attention's swapped
# operands needs T = H)
SQUARE = {"flexasr.linear": {"T": 16, "I": 64, "O": 64}, "flexasr.linear_pad": {"T": 16, "I": 40, "O": 24}, "flexasr.lstm": {"T": 16, "I": 64, "H": 64},
          "flexasr.layernorm": {"T": 16, "H": 64},
          "flexasr.maxpool": {"R": 16, "C": 32}, "flexasr.meanpool": {"R": 16, "C": 32},
          "flexasr.maxpool_chain": {"R": 32, "C": 32, "L": 2}, "flexasr.meanpool_chain": {"R": 32, "C": 32, "L": 2},
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
