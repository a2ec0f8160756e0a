"""BMC proof setup of ``flexasr.linear_pad`` over abstract arithmetic (issue 26): flexasr.linear's
proof (:mod:`mappings.flexasr.linear_proof`) with this mapping's padding and cut inside the subject.

What is proved. For one shape T x I x O and one choice of the exponent-bias registers, for ALL
AdaptivFloat codes x[T, I], w[O, I], b[O] and all interpretations of ProductSum, RunBias and
Fixed2Adaptfloat satisfying flexasr.linear's link axioms and the zero-product axiom below: the
compiler-IR fragment at T x I x O (``nn.dense`` then ``nn.bias_add`` in FlexASR's PE numerics,
no padding) and the accelerator side leave equal outputs. The accelerator side is built by the
mapping's own code: the host padding (:func:`mappings.flexasr.linear_pad.pad_operands`, run on
distinct tags so that every code lands where the real padding puts its element, every other
position holding the code the AdaptivFloat quantiser gives the value the padding wrote there, at
that tensor's register: the zero code for 0.0), the
exact MMIO stream the driver emits at the padded shape Ip x Op (flexasr.linear's generator,
assembler and packer on the symbolic codes), executed on the FlexASR ILA, and the read-back
through the driver's read-back and the mapping's cut (:func:`mappings.flexasr.linear_pad.cut`).

Zero-product axiom: the padded input lanes meet only padded weight lanes (a padded column of x is
a padded column of w), so each padded lane contributes ``ProductSum(z_w, z_x)`` to a real output,
z the pad codes; the axiom states that application's value, evaluated from the function's own
numpy body (``ila.models.flexasr.funcs.PRODUCT_SUM``: 0 for the zero code), so it is true of the
real function by evaluation. Padded output rows are computed and cut away; nothing about them is
claimed.

Declared map (``verify.bmc`` checks it): x[t, i] at flexasr.linear's GB byte of the padded shape,
``tiled(T, Ip)[t, i]`` of memory index 0, and y[t, o] at ``tiled(T, Op)[t, o]`` of memory index 1
(o < O). Seeded bugs: ``verify/mutations/flexasr_linear_pad.py``.
"""
from __future__ import annotations

import numpy as np

from ila import bv_const
from mappings.base import MappingError, Side, symbolic_data
from mappings.proof_ext import Declared, NumericsTerm, ProofSetupExt


TAG0 = 1 << 22           # tags 2^22 + k (exact in float32 below 2^24): far from any constant a padding writes


def _tags(n: int, shape) -> np.ndarray:
    if n > (1 << 24) - TAG0:
        raise MappingError(f"flexasr.linear_pad proof: a tensor of {n} elements is too large to tag in float32")
    return (np.arange(n, dtype=np.float64) + TAG0).reshape(shape).astype(np.float32)


def _placed(padded: np.ndarray, data: list, register: int) -> np.ndarray:
    """The codes of a padded tensor: where the host padding put tag ``TAG0 + k``, data[k]; anywhere
    else the constant it wrote, as the AdaptivFloat code the quantiser gives it at ``register`` (0.0:
    the pad code)."""
    flat = np.asarray(padded, np.float32).reshape(-1)
    k = flat.astype(np.float64) - TAG0
    is_tag = (k >= 0) & (k < len(data)) & (k == np.rint(k))
    consts = {float(v): bv_const(pad_code(register, float(v)), 8) for v in np.unique(flat[~is_tag])}
    out = np.empty(flat.size, dtype=object)
    for i in range(flat.size):
        out[i] = data[int(k[i])] if is_tag[i] else consts[float(flat[i])]
    return out.reshape(np.shape(padded))


def pad_code(register: int, value: float = 0.0) -> int:
    """The AdaptivFloat code the host's quantiser gives ``value`` (default 0.0) at exponent-bias
    ``register``."""
    from ila.numerics import adaptivfloat as af
    return int(af.quantize_checked(np.full(1, value, np.float32), register)[0][0])


def proof_setup(shape: dict, *, numerics: str = "uf", biases=None) -> ProofSetupExt:
    """The setup (module docstring). MappingError for ``numerics`` other than 'uf', a shape the
    mapping refuses, bias registers outside 0..7, or a host padding that places a value that is
    no input element."""
    from ila.models.flexasr import driver, shared_model
    from ila.models.flexasr.funcs import PRODUCT_SUM
    from ila.models.relay.model import relay_ila
    from mappings.common import ir_commands
    from mappings.flexasr import linear as L
    from mappings.flexasr import linear_pad as LPd
    from mappings.flexasr import linear_proof as LPr
    from mappings.flexasr.common import mmio_port
    if numerics != "uf":
        raise MappingError(f"{LPd.NAME}: numerics {numerics!r} is not available for proofs (use 'uf', as "
                           f"flexasr.linear)")
    LPd.MAPPING.check_shape(shape)
    biases = biases or LPr.Biases()
    T, I, O = shape["T"], shape["I"], shape["O"]
    P = LPd.padded(shape)
    data = symbolic_data(T * I + O * I + O, 8)
    xs, ws, bs = data[:T * I], data[T * I:T * I + O * I], data[T * I + O * I:]
    xp, wp, bp = LPd.pad_operands(shape, _tags(T * I, (T, I)), _tags(O * I, (O, I)), _tags(O, (O,)))
    xq, wq, bq = _placed(xp, xs, biases.x), _placed(wp, ws, biases.w), _placed(bp, bs, biases.b)
    zx, zw = pad_code(biases.x), pad_code(biases.w)
    acc_cmds = LPr.emitted_stream(P, biases, xq, wq, bq)

    frag = L.ir_fragment(shape)
    num = LPr.pe_numerics(biases)
    emb = [LPr.embed(d) for d in data]
    ir_data = {"x": emb[:T * I], "w": emb[T * I:T * I + O * I], "b": emb[T * I + O * I:]}
    ir = relay_ila(num, tensor_entries=1 << max(10, (frag.size() - 1).bit_length()))
    out_ir = frag.address("out").reshape(-1)
    outs = [(int(a), k) for k, a in enumerate(out_ir)]
    zero = int(PRODUCT_SUM.body(np.uint64(zw), np.uint64(zx)))

    def zero_product(apps):
        return [PRODUCT_SUM(bv_const(zw, 8), bv_const(zx, 8)).eq(bv_const(zero, 32))]

    def readback(reads):
        codes = LPd.cut(driver.readback(reads, T, P["O"] // 16), shape)
        return np.array([LPr.embed(v) if hasattr(v, "sort") else int(v) | LPr.TAG for v in codes.ravel()], dtype=object)
    ref = L.refinement(P)                          # flexasr.linear's map at the padded shape
    (mem_x, off_x), (mem_o, off_o) = ref["x"], ref["out"]
    declared = Declared(tuple((mem_x, int(off_x[t, i]), xq[t, i]) for t in range(T) for i in range(I)),
                        tuple((t * O + o, mem_o, int(off_o[t, o])) for t in range(T) for o in range(O)),
                        tensors=("x", "out"), wrap=LPr.embed)
    return ProofSetupExt(
        Side(ir, ir_commands(frag, ir_data), "tensor"),
        Side(shared_model(), acc_cmds, "gb_core_large_buffer", port=mmio_port()),
        data, outs, axioms=[LPr.instantiate(num, biases), zero_product], funcs=[num.mul, num.add],
        describe_output=lambda k: f"y[{k // O}, {k % O}]", readback=readback, split_outputs=True,
        covers=("codegen-bytes", "order", "model-loops", "read-back"), declared=declared,
        numerics_note=NumericsTerm(LPr.NUMERICS + "; the padded lanes add ProductSum(0, 0) = 0", lambda: [],
                                   lambda: gap(shape)))


def gap(shape: dict, samples: int = 10, seed: int = 0) -> str:
    """The measured distance between the emitted program (the PE numerics) and the float32 layer:
    Frobenius relative error on the mapping's random inputs, and its tolerance."""
    import warnings
    from mappings.base import frobenius_relative_error
    from mappings.flexasr import linear_pad as LPd
    m, rng = LPd.MAPPING, np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        errs = [frobenius_relative_error(m.reference(shape, i), m.run_accelerator(shape, i))
                for i in (m.random_inputs(shape, rng) for _ in range(samples))]
    return (f"Frobenius relative error mean {100 * np.mean(errs):.2f} %, max {100 * max(errs):.2f} % over {samples} "
            f"random inputs at {'x'.join(map(str, shape.values()))} (tolerance {100 * m.tolerance_at(shape):g} %)")
