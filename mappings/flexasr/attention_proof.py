"""BMC proof setup of ``flexasr.attention`` against its declared numerics term (issue 26, items 1, 4).

What is proved. For one shape T x H and one choice of the four 3-bit exponent-bias registers (enc,
dec, probabilities, output: :class:`Biases`), for ALL AdaptivFloat codes enc[T, H], dec[H] and ALL
interpretations of FlexASR's attention functions (uninterpreted: ``PEProductSum16``,
``GBAttentionLSH`` / ``RSH`` / ``Max`` / ``Sub`` / ``Exp`` / ``Div`` / ``Compress``): the exact MMIO
stream the code generator emits (``driver.attention_parts``' tensor program, its zero padding to a
multiple of 16 timesteps included, through the real assembler and packer on symbolic codes), run on
the FlexASR ILA until quiescence and read back by the driver (the first H bytes of the small
buffer), equals the declared numerics term (:func:`numerics_term`) for every output element, and
enc, dec and out lie where the declared refinement map says.

The declared numerics term: out = softmax(enc @ dec) @ enc as the GB attention unit computes it
(``ila/models/flexasr/attention.py``, reference §2.1): per group of 16 timesteps, 32-bit sums of
16-lane ProductSum16 blocks over the vectors; a zero sum becomes the masked score 0xFC000000, others
are shifted by reg_enc + reg_dec - 8; the running max from 0xC0000000 over the groups; exp(s - max)
summed from 0 in timestep order; p = Compress(Div(exp(s - max), sum), reg_prob) (4-fraction-bit
operands: the unit's 1/16 quantisation of the probabilities); then per output vector, from 0, the
ProductSum16 of the encoder column with the probabilities over the groups, shifted by reg_enc +
reg_prob - 8 and compressed with reg_out. The zero padding rows are constants (0 codes), as the
generator emits them. How far the term is from the float32 IR operator (nn.dense / nn.softmax /
nn.dense) is measured by simulation (:func:`gap`) and stated in the verdict.

As for ``flexasr.layernorm``, the driver chooses the registers from the data; a proof is per
register choice, over the program the driver builds with those four fields set (:func:`program`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ila import bv_const
from mappings.base import MappingError, symbolic_data
from mappings.proof_ext import Declared, NumericsTerm, ProofSetupExt

WORD_MIN, HIGH_NEG, SHIFT_CONST = 0xC0000000, 0xFC000000, 8


@dataclass(frozen=True)
class Biases:
    """The 3-bit exponent-bias registers of enc (``adpbias_1``), dec (``adpbias_2``), the
    probabilities (``adpbias_3``) and the output (``adpbias_4``); distinct."""
    enc: int = 3
    dec: int = 2
    prob: int = 4
    out: int = 5

    def __post_init__(self):
        for k in ("enc", "dec", "prob", "out"):
            v = getattr(self, k)
            if not isinstance(v, (int, np.integer)) or not 0 <= v <= 7:
                raise MappingError(f"flexasr.attention proof: exponent-bias register {k} = {v!r} is not in 0..7")


def parts(T: int, H: int, biases: Biases):
    """The driver's Parts of a T x H attention (``driver.attention_parts``), its four register fields
    set to ``biases`` (the program is otherwise data independent: a test checks it)."""
    from ila.models.flexasr.driver import attention_parts
    p = attention_parts(np.zeros((T, H), np.float32), np.zeros(H, np.float32), out_bias=biases.out,
                        prob_bias=biases.prob)
    prog = copy.deepcopy(p.prog)
    for ins in prog:
        if ins["name"] == "attention":
            ins.update(adpbias_enc=biases.enc, adpbias_dec=biases.dec, adpbias_prob=biases.prob,
                       adpbias_out=biases.out)
    return prog, p.lib


def _shift(acc, b_a: int, b_b: int):
    from ila.models.flexasr import funcs as Fn
    sb = b_a + b_b
    if sb > SHIFT_CONST:
        return Fn.GB_ATTENTION_LSH(acc, bv_const(sb - SHIFT_CONST, 32))
    return Fn.GB_ATTENTION_RSH(acc, bv_const(SHIFT_CONST - sb, 32))


def numerics_term(enc, dec, biases: Biases) -> np.ndarray:
    """The declared numerics (module docstring): out[H] codes as terms over ``enc`` [Tp, H] (8-bit
    terms or codes, Tp a multiple of 16: the padded encoder the generator stores) and ``dec`` [H]."""
    from ila import ite
    from ila.models.flexasr import funcs as Fn
    enc = np.asarray(enc, dtype=object)
    Tp, H = enc.shape
    nv = H // 16

    def c8(x):
        return bv_const(int(x), 8) if not hasattr(x, "sort") else x
    enc = np.vectorize(c8, otypes=[object])(enc)
    dec = [c8(d) for d in dec]
    zero = bv_const(0, 32)
    scores = []
    mx = bv_const(WORD_MIN, 32)
    for g in range(Tp // 16):
        acc = [zero] * 16
        for v in range(nv):
            xs = dec[16 * v:16 * v + 16]
            acc = [acc[i] + Fn.PE_PRODUCT_SUM16(*enc[16 * g + i, 16 * v:16 * v + 16], *xs) for i in range(16)]
        group = [ite(a.eq(0), bv_const(HIGH_NEG, 32), _shift(a, biases.enc, biases.dec)) for a in acc]
        scores += group
        for s in group:
            mx = Fn.GB_ATTENTION_MAX(mx, s)
    exps = [Fn.GB_ATTENTION_EXP(Fn.GB_ATTENTION_SUB(s, mx)) for s in scores]
    total = zero
    for e in exps:
        total = total + e
    p = [Fn.GB_ATTENTION_COMPRESS(Fn.GB_ATTENTION_DIV(e, total), bv_const(biases.prob, 3)) for e in exps]
    out = []
    for v in range(nv):
        acc = [zero] * 16
        for g in range(Tp // 16):
            ps = p[16 * g:16 * g + 16]
            acc = [acc[i] + Fn.PE_PRODUCT_SUM16(*[enc[16 * g + k, 16 * v + i] for k in range(16)], *ps)
                   for i in range(16)]
        out += [Fn.GB_ATTENTION_COMPRESS(_shift(a, biases.enc, biases.prob), bv_const(biases.out, 3)) for a in acc]
    return np.array(out, dtype=object)


DESCRIBE = ("softmax(enc @ dec) @ enc in the GB attention unit's order and rounding: 32-bit ProductSum16 sums per "
            "16-timestep group, zero scores masked to 0xFC000000, scores shifted by reg_enc + reg_dec - 8, running "
            "max from 0xC0000000, exp(s - max) summed in timestep order, probabilities Compress(Div(exp, sum)) with "
            "Div's 4-fraction-bit operands (1/16 quantised), the output as 32-bit ProductSum16 sums over the groups "
            "shifted by reg_enc + reg_prob - 8 and compressed; zero padding rows as the generator emits them")


def gap(shape: dict, samples: int = 10, seed: int = 0) -> str:
    """The term, evaluated with the functions' numpy bodies on the mapping's random inputs
    (quantised and padded as the driver does, registers as the mapping's code generator chooses
    them), against the float32 IR operator: Frobenius relative error and the tolerance."""
    import warnings
    from ila.compile_np import compile_exprs
    from ila.numerics import adaptivfloat as af
    from mappings.base import frobenius_relative_error
    from mappings.flexasr import attention as A
    from mappings.flexasr import common as F
    from ila.models.flexasr.driver import attention_parts
    T, H = shape["T"], shape["H"]
    rng = np.random.default_rng(seed)
    errs = []
    fns: dict = {}
    for _ in range(samples):
        inputs = A.random_inputs(shape, rng)
        enc, dec = inputs["enc"], inputs["dec"]
        s = enc.astype(np.float32) @ dec.astype(np.float32)
        pr = np.exp(s - s.max())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pt = attention_parts(enc, dec, prob_bias=F.out_bias(pr / pr.sum()), out_bias=F.out_bias(A.reference(shape, inputs)))
        regs = Biases(int(pt.inputs["enc"][1]), int(pt.inputs["dec"][1]), int(pt.inputs["p"][1]), int(pt.bias_reg))
        if regs not in fns:            # the term once per register choice, evaluated on codes
            es = np.array(symbolic_data(pt.lib["enc"].size, 8, "ae"), dtype=object).reshape(pt.lib["enc"].shape)
            ds = symbolic_data(H, 8, "ad")
            fns[regs] = (compile_exprs(list(numerics_term(es, ds, regs)), vectorize=False), es, ds)
        fn, es, ds = fns[regs]
        env = {d.name: int(c) for d, c in zip(es.ravel(), pt.lib["enc"].ravel())}
        env.update({d.name: int(c) for d, c in zip(ds, np.asarray(pt.lib["dec"]).ravel())})
        codes = np.array([int(v) for v in fn(env, {})], dtype=np.uint8)
        errs.append(frobenius_relative_error(A.reference(shape, inputs), af.dequantize(codes, regs.out)))
    tol = A.MAPPING.tolerance_at(shape)
    return (f"Frobenius relative error mean {100 * np.mean(errs):.2f} %, max {100 * max(errs):.2f} % over {samples} "
            f"random inputs at {T}x{H} (tolerance {100 * tol:g} %)")


def proof_setup(shape: dict, *, numerics: str = "uf", biases: Biases | None = None) -> ProofSetupExt:
    """The emitted stream on symbolic codes against the declared numerics term (module docstring)."""
    from ila.models.flexasr import isa, shared_model
    from ila.models.flexasr import funcs as Fn
    from mappings.base import Side
    from mappings.flexasr import attention as A
    from mappings.flexasr.common import mmio_port as _port
    if numerics != "uf":
        raise MappingError(f"flexasr.attention: numerics {numerics!r} is not available for proofs: the unit's exp and "
                           f"division are proved as uninterpreted functions (use 'uf')")
    A.MAPPING.check_shape(shape)
    biases = biases or Biases()
    T, H = shape["T"], shape["H"]
    nv = H // 16
    prog, lib = parts(T, H, biases)
    data = symbolic_data(T * H + H, 8)
    enc = np.array(lib["enc"], dtype=object)           # the generator's padded encoder, data rows symbolic
    enc[:T] = np.array(data[:T * H], dtype=object).reshape(T, H)
    dec = np.array(data[T * H:], dtype=object)
    cmds = isa.assemble(prog, {"enc": enc, "dec": dec})[1]
    term = NumericsTerm(DESCRIBE, lambda: list(numerics_term(enc, dec, biases)), lambda: gap(shape))
    ref = A.refinement(shape)
    (me, oe), (md, od), (mo, oo) = (ref[k] for k in ("enc", "dec", "out"))
    declared = Declared(tuple((me, int(oe[t, h]), enc[t, h]) for t in range(T) for h in range(H))
                        + tuple((md, int(od[h]), dec[h]) for h in range(H)),
                        tuple((h, mo, int(oo[h])) for h in range(H)), tensors=("enc", "dec", "out"))
    funcs = [Fn.PE_PRODUCT_SUM16, Fn.GB_ATTENTION_LSH, Fn.GB_ATTENTION_RSH, Fn.GB_ATTENTION_MAX, Fn.GB_ATTENTION_SUB,
             Fn.GB_ATTENTION_EXP, Fn.GB_ATTENTION_DIV, Fn.GB_ATTENTION_COMPRESS]
    return ProofSetupExt(
        None, Side(shared_model(), cmds, "gb_core_small_buffer", port=_port()),
        data, [(h, h) for h in range(H)], funcs=funcs, describe_output=lambda k: f"out[{k}]",
        readback=lambda reads: np.concatenate([np.asarray(r) for r in reads[:nv]]),
        covers=("codegen-bytes", "order", "model-loops", "read-back"), declared=declared, reference=term)
