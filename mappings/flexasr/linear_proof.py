"""BMC proof setup of ``flexasr.linear`` over abstract arithmetic (issue 6, beyond the paper).

What is proved. For one shape T x I x O and one choice of the four 3-bit exponent-bias registers
(x, w, b, y: :class:`Biases`), for ALL AdaptivFloat codes x[T, I], w[O, I], b[O] and ALL
interpretations of FlexASR's uninterpreted ``ProductSum`` (8-bit w, 8-bit x -> 32-bit accumulator),
``PECoreAccum2Act`` (RunBias: 32-bit accumulator, bias code, registers -> 20-bit ACT) and
``Fixed2Adaptfloat`` (20-bit ACT, register -> 8-bit code) that satisfy the link axioms below: the
compiler-IR fragment (``nn.dense`` then ``nn.bias_add`` on :func:`ila.models.relay.model.relay_ila`)
and the accelerator fragment (the MMIO stream the driver's tensor assembly emits: PE weight-buffer
images, x in the tiled global buffer, the PE / GB configuration and the start, executed on the
FlexASR ILA until quiescence) leave equal outputs under the refinement map (IR y[t, o] <-> GB byte
``tiled(T, O)[t, o]`` of memory index 1). So the mapping moves every weight, input and bias code to
the MAC / RunBias step that uses it, sums exactly the products of one output, passes the right
registers, and writes each result where the read-back finds it; the arithmetic itself is not
proved (its deviation from float32 is what ``--method sim`` measures).

IR numerics (:func:`pe_numerics`): the IR computes in FlexASR's PE numerics, because no abstract
8-bit IR ``add`` can equal the accelerator's exact 32-bit accumulation followed by one rounding.
An IR element has 33 bits: tag bit 32 set = an AdaptivFloat code in bits 7..0 (bits 31..8 zero,
``embed(c) = 2**32 + c``), tag clear = a 32-bit PE accumulator value. The IR's ``mul`` and ``add``
are uninterpreted functions ``flexasr_pe_mul`` / ``flexasr_pe_add``; their numpy bodies (used only
to simulate) are: mul(code x, code w) = the accumulator product of w and x; add(acc, acc) = the
32-bit wrapping sum; add(acc a, code b) = the output code Fixed2Adaptfloat(RunBias(a, b)) (that is
``nn.bias_add`` in FlexASR's numerics quantises its result); 0 for other tag combinations. The IR
inputs are codes (``embed``), ``nn.dense`` starts its sums from the accumulator 0.

Link axioms (:func:`link_axioms`; each is a formula over all 33-bit a, b, instantiated on the
applications that occur; ``tests/test_linear_proof.py`` checks each against the numpy bodies:
exhaustively over all 65536 code pairs for L_mul, and on random and edge accumulators with all 256
bias codes for L_bias under several register settings, random pairs for L_acc):

* L_mul:  code(a) & code(b)  ->  mul(a, b) = zext(ProductSum(b[7:0], a[7:0]))
* L_acc:  acc(a) & acc(b)    ->  add(a, b) = zext(a[31:0] + b[31:0])            (bvadd, mod 2^32)
* L_bias: acc(a) & code(b)   ->  add(a, b) = embed(Fixed2Adaptfloat(PECoreAccum2Act(a[31:0],
  b[7:0], bw, bi, bb, 1), bo))

They are definitional (the IR numerics *is* the PE numerics), hence sound; what the proof needs
beyond congruence is only that accumulator addition is 32-bit modular addition, which is what the
model's partial-sum MAC does (the PE sums lane k over the input vectors j first, then the 16
lanes: a different order than the IR's left fold once I > 16, equal because + mod 2^32 is
associative and commutative). The abstraction is conservative where the real functions are
not injective: RunBias uses the weight and input registers only through their sum, so a mapping
that swapped those two would be refuted although its numbers are right. ``--numerics exact`` is
refused: ProductSum, RunBias and
Fixed2Adaptfloat have no bit-precise expression in the model.

Placement (the trusted path, ``verify.scope``): the accelerator fragment is the exact MMIO stream
the driver's code generator emits (:func:`ila.models.flexasr.driver.linear_program`, the
assembler, the packer, the fragment parser), run on symbolic codes, so every data byte of the
stream is a term the real packer built; the outputs are what the driver's read-back
(:func:`ila.models.flexasr.driver.readback`) makes of the emitted reads. A generator bug (packing,
addresses, order, configuration, read-back) shows up as a counterexample. The seeded bugs the
proof must refute are in ``verify/mutations/flexasr_linear.py``.

Declared map (``verify.bmc`` checks it): x[t, i] at GB large-buffer byte ``tiled(T, I)[t, i]`` of
memory index 0 when the GB control loop starts, y[t, o] at ``tiled(T, O)[t, o]`` of memory index 1
when the stream ends (:func:`mappings.flexasr.linear.refinement`). The weights and the bias are
not in the declared map (their placement, the PE weight-buffer images, is proved end to end).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ila import TRUE, bv_const, concat, extract, implies
from ila.models.relay.model import relay_ila
from ila.ops import Op
from ila.models.relay.numerics import Numerics, abstract
from ila.numerics import adaptivfloat as af
from mappings.base import MappingError, Side, symbolic_data
from mappings.common import ir_commands
from mappings.proof_ext import Declared, NumericsTerm, ProofSetupExt

WIDTH = 33                       # IR element: tag bit 32 + 32 payload bits
TAG = 1 << 32
_CODE_TOP = bv_const(1 << 24, 25)   # bits 32..8 of an embedded code
M32 = (1 << 32) - 1


@dataclass(frozen=True)
class Biases:
    """The 3-bit exponent-bias registers of x (``adpbias_input``), w (``adpbias_weight``), b
    (``adpbias_bias``) and the output (``adpbias_out``). Distinct defaults, so that a mapping that
    passes one register in place of another gives the uninterpreted RunBias / Fixed2Adaptfloat
    different arguments and is refuted."""
    x: int = 3
    w: int = 1
    b: int = 2
    out: int = 5

    def __post_init__(self):
        for k in ("x", "w", "b", "out"):
            v = getattr(self, k)
            if not isinstance(v, (int, np.integer)) or not 0 <= v <= 7:
                raise MappingError(f"flexasr.linear proof: exponent-bias register {k} = {v!r} is not in 0..7")


# ----------------------------------------------------------------------------- IR numerics
def embed(code):
    """The IR element of an 8-bit AdaptivFloat code (tag set)."""
    return concat(_CODE_TOP, code)


def accumulator(v32):
    """The IR element of a 32-bit accumulator value (tag clear)."""
    return concat(bv_const(0, 1), v32)


def is_code(v):
    return extract(v, 32, 8).eq(_CODE_TOP)


def is_acc(v):
    return extract(v, 32, 32).eq(0)


def _np_is_code(v):
    return (v >> np.uint64(8)) == np.uint64(TAG >> 8)


def _np_is_acc(v):
    return v < np.uint64(TAG)


def pe_numerics(biases: Biases = Biases()) -> Numerics:
    """The IR numerics of the proof (module docstring), with numpy bodies for simulation."""
    def mul_body(a, b):
        a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
        p = af.to_unsigned(af.product(b & np.uint64(0xFF), a & np.uint64(0xFF)), 32)
        return np.where(_np_is_code(a) & _np_is_code(b), p, 0).astype(np.uint64)

    def add_body(a, b):
        a, b = np.asarray(a, np.uint64), np.asarray(b, np.uint64)
        total = (a + b) & np.uint64(M32)
        act = af.accum_to_act(af.from_unsigned(a & np.uint64(M32), 32), biases.w, biases.x,
                              b & np.uint64(0xFF), biases.b)
        out = af.from_act(act, biases.out).astype(np.uint64) | np.uint64(TAG)
        acc_a = _np_is_acc(a)
        return np.where(acc_a & _np_is_acc(b), total, np.where(acc_a & _np_is_code(b), out, 0)).astype(np.uint64)
    return abstract("flexasr_pe", WIDTH, add_body=add_body, mul_body=mul_body, axioms=False)


def link_axioms(num: Numerics, biases: Biases = Biases()) -> dict:
    """The three link axioms as functions (a, b) -> Bool expression, by name."""
    from ila.models.flexasr.funcs import FIXED2ADAPTFLOAT, PE_CORE_ACCUM2ACT, PRODUCT_SUM
    regs = [bv_const(v, 3) for v in (biases.w, biases.x, biases.b)]

    def l_mul(a, b):
        return implies(is_code(a) & is_code(b),
                       num.mul(a, b).eq(accumulator(PRODUCT_SUM(extract(b, 7, 0), extract(a, 7, 0)))))

    def l_acc(a, b):
        return implies(is_acc(a) & is_acc(b), num.add(a, b).eq(accumulator(extract(a, 31, 0) + extract(b, 31, 0))))

    def l_bias(a, b):
        act = PE_CORE_ACCUM2ACT(extract(a, 31, 0), extract(b, 7, 0), *regs, bv_const(1, 1))
        return implies(is_acc(a) & is_code(b), num.add(a, b).eq(embed(FIXED2ADAPTFLOAT(act, bv_const(biases.out, 3)))))
    return {"L_mul": l_mul, "L_acc": l_acc, "L_bias": l_bias}


_ACC_TAG = bv_const(0, 1)       # bit 32 of an accumulator element
INSTANCE_BUGS = ("product_operands_swapped",)     # seeded bugs of the fast instances (differential test)


def _element(v):
    """``('code', c)`` for ``embed(c)`` (``concat(_CODE_TOP, c)``), ``('acc', a)`` for
    ``accumulator(a)`` (``concat(0, a)``), syntactically; else ``(None, None)``."""
    if v.op is Op.CONCAT and len(v.args) == 2:
        if v.args[0] is _CODE_TOP:
            return "code", v.args[1]
        if v.args[0] is _ACC_TAG:
            return "acc", v.args[1]
    return None, None


def instantiate(num: Numerics, biases: Biases, *, fast: bool = True, bug: str | None = None):
    """The axiom function of the ProofSetup: given the applications that occur (in topological
    order), ground instances of the link axioms: L_mul at every IR mul, L_bias at every IR add whose
    second argument is a code, L_acc at the other IR adds. Each is instantiated at the application's
    arguments with every earlier IR application replaced by the right-hand side of its own instance
    (terms equal to the arguments, so the solver relates the two by congruence); then the guards
    fold to true syntactically and every instance is an equation between an IR application and
    an expression over FlexASR's functions. (Instantiating a valid formula at any ground terms is
    sound; the choice of terms only decides whether the solver finds the proof quickly: the sums
    become bit-vector sums over the same ProductSum terms on both sides, which z3's rewriter puts
    into one normal form.)

    ``fast``: where the arguments are syntactically ``embed(c)`` / ``accumulator(a)`` (every
    application of the applications' sums), the instance is built from ``c`` / ``a`` directly: the
    link axiom's right-hand side with its ``extract`` terms already resolved and without the guard,
    which folds to true there; the same term the general path gives after simplification (checked
    node for node by ``tests/test_linear_proof.py`` on whole proofs). ``bug``: one of
    :data:`INSTANCE_BUGS`, to show that check catches a wrong fast instance."""
    from ila.models.flexasr.funcs import FIXED2ADAPTFLOAT, PE_CORE_ACCUM2ACT, PRODUCT_SUM
    from ila.simplify import Rewriter
    if bug is not None and bug not in INSTANCE_BUGS:
        raise ValueError(f"unknown seeded bug {bug!r}; one of {INSTANCE_BUGS}")
    ax = link_axioms(num, biases)
    regs = [bv_const(v, 3) for v in (biases.w, biases.x, biases.b)]
    one, out_reg = bv_const(1, 1), bv_const(biases.out, 3)

    def quick(rw, n, args):
        """The simplified instance at ``args`` from their parts, or None (not of the known forms)."""
        (ka, a), (kb, b) = _element(args[0]), _element(args[1])
        if n.payload is num.mul:
            if ka != "code" or kb != "code":
                return None
            prod = PRODUCT_SUM(a, b) if bug == "product_operands_swapped" else PRODUCT_SUM(b, a)
            return rw.one(num.mul(*args).eq(accumulator(prod)))
        if ka == "acc" and kb == "acc":
            return rw.one(num.add(*args).eq(accumulator(a + b)))
        if ka == "acc" and kb == "code":
            return rw.one(num.add(*args).eq(embed(FIXED2ADAPTFLOAT(PE_CORE_ACCUM2ACT(a, b, *regs, one), out_reg))))
        return None

    def axioms(apps):
        rw, out, value = Rewriter(), [], {}
        for n in apps:
            if n.payload is not num.mul and n.payload is not num.add:
                continue
            args = [value.get(a.uid, a) for a in n.args]
            inst = quick(rw, n, args) if fast else None
            if inst is None:
                if n.payload is num.mul:
                    name = "L_mul"
                else:
                    name = "L_bias" if rw.one(is_code(args[1])) is TRUE else "L_acc"
                inst = rw.one(ax[name](*args))
            out.append(inst)
            if inst.op is Op.EQ and inst.args[0].op is Op.APPLY and inst.args[0].payload is n.payload:
                value[n.uid] = inst.args[1]
        return out
    return axioms


# ----------------------------------------------------------------------------- the proof setup
def emitted_stream(shape: dict, biases: Biases, xq, wq, bq) -> list[dict]:
    """The MMIO command stream the code generator emits for codes ``xq`` [T, I], ``wq`` [O, I],
    ``bq`` [O] (uint8, or object arrays of 8-bit terms in proofs): the driver's tensor program
    (:func:`ila.models.flexasr.driver.linear_program`) through the real assembler, packer and
    fragment parser, with the read-back and the interrupt waits."""
    from ila.models.flexasr import driver, isa
    prog, lib = driver.linear_program(xq, wq, bq, bx=biases.x, bw=biases.w, bb=biases.b, out_bias=biases.out)
    return isa.assemble(prog, lib)[1]


def _embed_any(v):
    return embed(v) if hasattr(v, "sort") else int(v) | TAG


def proof_setup(shape: dict, *, numerics: str = "uf", biases: Biases | None = None) -> ProofSetupExt:
    """Both fragments over shared symbolic codes (see the module docstring): the accelerator side
    is the exact stream the generator emits for symbolic codes (bytes built by the real packer),
    its outputs the driver's read-back of the emitted reads. Raises MappingError for ``numerics``
    other than 'uf', a shape the mapping refuses, or bias registers outside 0..7. Seeded bugs are
    applied around this function by ``verify.mutations``."""
    from ila.models.flexasr import driver, shared_model
    from mappings.flexasr import linear as L
    from mappings.flexasr.common import mmio_port as _port
    if numerics != "uf":
        raise MappingError(f"flexasr.linear: numerics {numerics!r} is not available for proofs: ProductSum, RunBias "
                           f"and Fixed2Adaptfloat have no bit-precise expression (use 'uf')")
    L.MAPPING.check_shape(shape)
    biases = biases or Biases()
    T, I, O = shape["T"], shape["I"], shape["O"]
    data = symbolic_data(T * I + O * I + O, 8)
    codes = np.array(data, dtype=object)
    xq = codes[:T * I].reshape(T, I)
    wq = codes[T * I:T * I + O * I].reshape(O, I)
    bq = codes[T * I + O * I:]
    acc_cmds = emitted_stream(shape, biases, xq, wq, bq)
    frag = L.ir_fragment(shape)
    num = pe_numerics(biases)
    emb = [embed(d) for d in data]
    ir_data = {"x": emb[:T * I], "w": emb[T * I:T * I + O * I], "b": emb[T * I + O * I:]}
    ir = relay_ila(num, tensor_entries=1 << max(10, (frag.size() - 1).bit_length()))
    out_ir = frag.address("out").reshape(-1)
    outs = [(int(a), k) for k, a in enumerate(out_ir)]

    def readback(reads):
        return np.array([_embed_any(v) for v in driver.readback(reads, T, O // 16).ravel()], dtype=object)
    ref = L.refinement(shape)                  # the declared map: x and out in the GB large buffer
    (mem_x, off_x), (mem_o, off_o) = ref["x"], ref["out"]
    declared = Declared(tuple((mem_x, int(off_x[t, i]), xq[t, i]) for t in range(T) for i in range(I)),
                        tuple((t * O + o, mem_o, int(off_o[t, o])) for t in range(T) for o in range(O)),
                        tensors=("x", "out"), wrap=embed)
    return ProofSetupExt(
        Side(ir, ir_commands(frag, ir_data), "tensor"),
        Side(shared_model(), acc_cmds, "gb_core_large_buffer", port=_port()),
        data, outs, axioms=[instantiate(num, biases)], funcs=[num.mul, num.add],
        describe_output=lambda k: f"y[{k // O}, {k % O}]", readback=readback, split_outputs=True,
        covers=("codegen-bytes", "order", "model-loops", "read-back"), declared=declared,
        numerics_note=NumericsTerm(NUMERICS, lambda: [], lambda: gap(shape)))


NUMERICS = ("y[t, o] = Fixed2Adaptfloat(RunBias(sum_i ProductSum(w[o, i], x[t, i]) mod 2^32, b[o])): the dense layer "
            "in the PEs' exact 32-bit fixed-point accumulation (any order: addition mod 2^32) with one rounding of "
            "the biased sum, from AdaptivFloat codes")


def gap(shape: dict, samples: int = 10, seed: int = 0) -> str:
    """The distance between the IR in the PE numerics and the float32 IR operator, measured on the
    emitted program in the simulator (equal to the PE-numerics IR for the functions' own bodies,
    which satisfy the link axioms): Frobenius relative error and the tolerance."""
    import warnings
    from mappings.base import frobenius_relative_error
    from mappings.flexasr import linear as L
    m, rng, errs = L.MAPPING, np.random.default_rng(seed), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(samples):
            inputs = m.random_inputs(shape, rng)
            errs.append(frobenius_relative_error(m.reference(shape, inputs), m.run_accelerator(shape, inputs)))
    return (f"Frobenius relative error mean {100 * np.mean(errs):.2f} %, max {100 * max(errs):.2f} % over "
            f"{samples} random inputs at {'x'.join(map(str, shape.values()))} "
            f"(tolerance {100 * m.tolerance_at(shape):g} %)")
