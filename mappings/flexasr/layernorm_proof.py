"""BMC proof setup of ``flexasr.layernorm`` against its declared numerics term (issue 26, items 1, 4).

What is proved. For one shape T x H and one choice of the three 3-bit exponent-bias registers
(x and the in-place output, gamma, beta: :class:`Biases`), for ALL AdaptivFloat codes x[T, H],
gamma[H], beta[H] and ALL interpretations of FlexASR's LayerNorm functions (uninterpreted:
``GBNormVectorSum16``, ``GBNormVectorSqSum16``, ``GBNormAdd_24_20``, ``GBNormDivide_24``,
``ActSignedMinus``, ``PEActEmul``, ``PEActEadd``, ``SInvSqrt``, ``Adptfloat2Fixed``,
``Fixed2Adaptfloat``): the exact MMIO stream the code generator emits (``driver.layernorm_parts``'
tensor program through the real assembler and packer, on symbolic codes), run on the FlexASR ILA
until quiescence, read back by the driver's read-back, equals the mapping's declared numerics
term (:func:`numerics_term`) element by element, and leaves x, gamma, beta and the output where
the declared refinement map says (``verify.bmc``'s declared-map check).

The declared numerics term: LayerNorm of each timestep as the GB LayerNorm unit computes it
(reference §2.1; ``ila/models/flexasr/layer_norm.py``): the 16-lane vector sums of x and of x^2 in
20-bit ACT fixed point, folded into 24-bit sums starting from a first addition of zeros, mean and
E[x^2] by a 24-bit division by H, var = E[x^2] - mean^2 (not E[(x - mean)^2]), no epsilon,
inv_std = SInvSqrt(var), then per element Fixed2Adaptfloat(((x - mean) * inv_std) * gamma + beta)
with x's register. It is the IR operator ``nn.layer_norm`` in the accelerator's order and
rounding; how far it is from the float32 IR operator is measured by simulation (:func:`gap`) and
stated in the verdict. The model's datapath is not trusted by the term: the term is built from
the mapping's data, never from the model's states.

The generator's program is data independent except for the three registers, which the driver
chooses from the data (a proof is per register choice, as ``flexasr.linear``'s): the proof takes
the program the driver builds and sets those fields (:func:`program`; a test checks that nothing
else in it depends on the data).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ila import bv_const
from mappings.base import MappingError, symbolic_data
from mappings.proof_ext import Declared, NumericsTerm, ProofSetupExt


@dataclass(frozen=True)
class Biases:
    """The 3-bit exponent-bias registers of x (and the in-place output: ``adpbias_1``), gamma
    (``adpbias_4``) and beta (``adpbias_3``); distinct, so that passing one for another changes
    the uninterpreted functions' arguments."""
    x: int = 3
    gamma: int = 1
    beta: int = 2

    def __post_init__(self):
        for k in ("x", "gamma", "beta"):
            v = getattr(self, k)
            if not isinstance(v, (int, np.integer)) or not 0 <= v <= 7:
                raise MappingError(f"flexasr.layernorm proof: exponent-bias register {k} = {v!r} is not in 0..7")


def program(T: int, H: int, biases: Biases) -> list:
    """The tensor program the driver emits for a T x H LayerNorm (``driver.layernorm_parts``), its
    three register fields set to ``biases``."""
    from ila.models.flexasr.driver import layernorm_parts
    parts = layernorm_parts(np.zeros((T, H), np.float32), np.ones(H, np.float32), np.zeros(H, np.float32),
                            bias_reg=biases.x)
    prog = copy.deepcopy(parts.prog)
    for ins in prog:
        if ins["name"] == "layernorm":
            ins.update(adpbias_inp=biases.x, adpbias_gamma=biases.gamma, adpbias_beta=biases.beta)
    return prog


def numerics_term(xq, gq, bq, biases: Biases, *, regs=None) -> np.ndarray:
    """The declared numerics (module docstring): the [T, H] output codes as terms over the codes
    ``xq`` [T, H], ``gq`` [H], ``bq`` [H] (8-bit terms), with the unit's functions. ``regs``:
    3-bit terms for the registers (x, gamma, beta) instead of ``biases`` (to evaluate the term on
    several register choices at once)."""
    from ila.models.flexasr import funcs as Fn
    xq = np.asarray(xq, dtype=object)
    T, H = xq.shape
    nv = H // 16
    bx, bg, bb = regs if regs is not None else (bv_const(biases.x, 3), bv_const(biases.gamma, 3),
                                                 bv_const(biases.beta, 3))
    z20, z24 = bv_const(0, 20), bv_const(0, 24)
    divisor = bv_const(16 * nv, 24)
    out = np.empty((T, H), dtype=object)
    for t in range(T):
        sum_x = Fn.GB_NORM_ADD_24_20(z24, z20)            # the first vector prep adds the cleared vector sums
        sum_sq = Fn.GB_NORM_ADD_24_20(z24, z20)
        for v in range(nv):
            lanes = [xq[t, 16 * v + k] for k in range(16)]
            vs = Fn.PE_ACT_EADD(z20, Fn.GB_NORM_VECTOR_SUM16(*lanes, bx))
            vq = Fn.PE_ACT_EADD(z20, Fn.GB_NORM_VECTOR_SQSUM16(*lanes, bx))
            sum_x = Fn.GB_NORM_ADD_24_20(sum_x, vs)
            sum_sq = Fn.GB_NORM_ADD_24_20(sum_sq, vq)
        mean = Fn.GB_NORM_DIVIDE_24(sum_x, divisor)
        var = Fn.ACT_SIGNED_MINUS(Fn.GB_NORM_DIVIDE_24(sum_sq, divisor), Fn.PE_ACT_EMUL(mean, mean))
        inv_std = Fn.SINV_SQRT(var)
        for h in range(H):
            x = Fn.ADPTFLOAT2FIXED(xq[t, h], bx)
            g = Fn.ADPTFLOAT2FIXED(gq[h], bg)
            b = Fn.ADPTFLOAT2FIXED(bq[h], bb)
            y = Fn.PE_ACT_EADD(Fn.PE_ACT_EMUL(Fn.PE_ACT_EMUL(Fn.ACT_SIGNED_MINUS(x, mean), inv_std), g), b)
            out[t, h] = Fn.FIXED2ADAPTFLOAT(y, bx)
    return out


DESCRIBE = ("LayerNorm per timestep in the GB LayerNorm unit's order and rounding: 16-lane vector sums of x and x^2 "
            "in 20-bit ACT fixed point folded into 24-bit sums, mean and E[x^2] by integer division by H, var = "
            "E[x^2] - mean^2, no epsilon, inv_std = SInvSqrt(var), y = ((x - mean) * inv_std) * gamma + beta rounded "
            "to AdaptivFloat with x's register")


def gap(shape: dict, samples: int = 20, seed: int = 0) -> str:
    """The declared term evaluated with the functions' numpy bodies on the mapping's random inputs
    quantised as the driver does (registers chosen by the driver), against the float32 IR
    operator (the mapping's reference): Frobenius relative error, mean and max, and the tolerance."""
    from ila.compile_np import compile_exprs
    from ila.models.flexasr.driver import layernorm_parts
    from ila.numerics import adaptivfloat as af
    from ila.sorts import BvSort
    from ila.unroll import symbol
    from mappings.base import frobenius_relative_error
    from mappings.flexasr import layernorm as L
    T, H = shape["T"], shape["H"]
    xs = np.array(symbolic_data(T * H, 8, "gx"), dtype=object).reshape(T, H)
    gs, bs = symbolic_data(H, 8, "gg"), symbolic_data(H, 8, "gb")
    regs = [symbol(f"greg{k}", BvSort(3)) for k in range(3)]
    term = numerics_term(xs, gs, bs, Biases(), regs=regs).ravel()
    fn = compile_exprs(list(term), vectorize=False)
    import warnings
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(samples):
        inputs = L.random_inputs(shape, rng)
        with warnings.catch_warnings():           # a clamped register is part of the measured error
            warnings.simplefilter("ignore")
            parts = layernorm_parts(inputs["x"], inputs["gamma"], inputs["beta"], bias_reg=L._x_bias(shape, inputs))
        (xq, bx), (gq, bg), (bq, bb) = (parts.inputs[k] for k in ("x", "gamma", "beta"))
        env = {d.name: int(c) for d, c in zip(xs.ravel(), np.asarray(xq).ravel())}
        env.update({d.name: int(c) for d, c in zip(gs, np.asarray(gq).ravel())})
        env.update({d.name: int(c) for d, c in zip(bs, np.asarray(bq).ravel())})
        env.update({regs[0].name: int(bx), regs[1].name: int(bg), regs[2].name: int(bb)})
        codes = np.array([int(v) for v in fn(env, {})], dtype=np.uint8).reshape(T, H)
        errs.append(frobenius_relative_error(L.reference(shape, inputs), af.dequantize(codes, bx)))
    tol = L.MAPPING.tolerance_at(shape)
    return (f"Frobenius relative error mean {100 * np.mean(errs):.2f} %, max {100 * max(errs):.2f} % over {samples} "
            f"random inputs at {T}x{H} (tolerance {100 * tol:g} %)")


def proof_setup(shape: dict, *, numerics: str = "uf", biases: Biases | None = None) -> ProofSetupExt:
    """The emitted stream on symbolic codes against the declared numerics term (module docstring).
    Raises MappingError for numerics other than 'uf' or a shape the mapping refuses."""
    from ila.models.flexasr import driver, isa, shared_model
    from mappings.base import Side
    from mappings.flexasr import layernorm as L
    from mappings.flexasr.common import mmio_port as _port
    if numerics != "uf":
        raise MappingError(f"flexasr.layernorm: numerics {numerics!r} is not available for proofs: SInvSqrt and the "
                           f"unit's divisions are proved as uninterpreted functions (use 'uf')")
    L.MAPPING.check_shape(shape)
    biases = biases or Biases()
    T, H = shape["T"], shape["H"]
    data = symbolic_data(T * H + 2 * H, 8)
    xq = np.array(data[:T * H], dtype=object).reshape(T, H)
    gq, bq = data[T * H:T * H + H], data[T * H + H:]
    cmds = isa.assemble(program(T, H, biases), {"x": xq, "gamma": np.array(gq, dtype=object),
                                                 "beta": np.array(bq, dtype=object)})[1]
    term = NumericsTerm(DESCRIBE, lambda: list(numerics_term(xq, gq, bq, biases).ravel()), lambda: gap(shape))
    ref = L.refinement(shape)
    (mx, ox), (mg, og), (mb, ob), (mo, oo) = (ref[k] for k in ("x", "gamma", "beta", "out"))
    declared = Declared(tuple((mx, int(ox[t, h]), xq[t, h]) for t in range(T) for h in range(H))
                        + tuple((mg, int(og[h]), gq[h]) for h in range(H))
                        + tuple((mb, int(ob[h]), bq[h]) for h in range(H)),
                        tuple((t * H + h, mo, int(oo[t, h])) for t in range(T) for h in range(H)),
                        tensors=("x", "gamma", "beta", "out"))
    from ila.models.flexasr import funcs as Fn
    funcs = [Fn.GB_NORM_VECTOR_SUM16, Fn.GB_NORM_VECTOR_SQSUM16, Fn.GB_NORM_ADD_24_20, Fn.GB_NORM_DIVIDE_24,
             Fn.ACT_SIGNED_MINUS, Fn.PE_ACT_EMUL, Fn.PE_ACT_EADD, Fn.SINV_SQRT, Fn.ADPTFLOAT2FIXED, Fn.FIXED2ADAPTFLOAT]
    return ProofSetupExt(
        None, Side(shared_model(), cmds, "gb_core_large_buffer", port=_port()),
        data, [(k, k) for k in range(T * H)], funcs=funcs,
        describe_output=lambda k: f"out[{k // H}, {k % H}]",
        readback=lambda reads: driver.readback(reads, T, H // 16),
        covers=("codegen-bytes", "order", "model-loops", "read-back"), declared=declared, reference=term)
