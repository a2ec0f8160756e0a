"""Timestep-induction proof of ``flexasr.linear`` (issue 26): any number of timesteps T from one
symbolic timestep (:mod:`verify.induction`), so that the cost is that of one timestep (I x O
multiply-adds), not T of them as in the per-output BMC (:mod:`mappings.flexasr.linear_proof`).

The accelerator side is the same as the BMC proof's: the exact MMIO stream the driver's code
generator emits for symbolic codes x[T, I], w[O, I], b[O] (:func:`linear_proof.proof_setup`: the
real assembler, packer and fragment parser, seeded bugs applied around it), executed on the
FlexASR ILA, and the driver's read-back of the emitted reads. The loop is GB control's
(``Child_GB_Control``): an iteration is one timestep, from ``SEND`` with vector counter 0 to
``NEXT``, with the PE cores' MAC and bias steps and the activation unit's micro-ops inside; the
iteration counter is ``gb_control_ts_cntr``. Input cells: x[t, i] at ``tiled(T, I)[t, i]`` of the
GB large buffer (the declared map, :func:`mappings.flexasr.linear.refinement`), output cells
y[t, o] at ``tiled(T, O)[t, o]`` after x.

Declared numerics term (issue 26, item 4) of output o of a timestep with input codes X[0..I-1]:
``Fixed2Adaptfloat(RunBias(sum_i ProductSum(w[o, i], X[i]) mod 2^32, b[o], bw, bx, bb, 1), by)``
(:data:`mappings.flexasr.linear_proof.NUMERICS`): the dense layer in the PEs' exact 32-bit
accumulation and one rounding of the biased sum, with the functions uninterpreted. The BMC proof
shows the IR fragment in PE numerics equal to the same computation through its link axioms; here
the iteration's output terms are compared with the term by rewriting (sums in AC normal form).

Counterexamples: a failing lemma is searched for a counterexample by BMC at :data:`CEX_SHAPES`
(``verify.phases.verdict``), replayed in the simulators.
"""
from __future__ import annotations

import numpy as np

from mappings.base import MappingError, format_shape

# small shapes where a failing lemma's counterexample is searched by BMC: one and two timesteps,
# one and two input vectors, one and two PE output chunks
CEX_SHAPES = ({"T": 1, "I": 16, "O": 64}, {"T": 2, "I": 32, "O": 64}, {"T": 17, "I": 16, "O": 128})
# flexasr.linear_pad: padded lanes and outputs, one and two timesteps and output chunks
PAD_CEX_SHAPES = ({"T": 1, "I": 10, "O": 10}, {"T": 2, "I": 20, "O": 70}, {"T": 17, "I": 10, "O": 10})
COVERS = ("codegen-bytes", "order", "model-loops", "read-back")


def _state(s: dict, name: str):
    v = s[name]
    return v.payload if v.op.name == "CONST" else None


def _induction(ps, shape: dict, at: dict, biases, x, w, b, in_values, *, cut=None, axioms=()):
    """The :class:`verify.induction.LoopInduction` of the setup ``ps`` (its accelerator side, at the
    shape ``at`` the stream runs: the padded one for flexasr.linear_pad) for the layer ``shape``:
    the declared term over the data symbols x [T, I], w [O, I], b [O] of the layer itself (not over
    what a padding placed: a misplaced code must show), input cells holding ``in_values`` [T, Ip]."""
    from ila import bv_const
    from ila.models.flexasr import driver
    from ila.models.flexasr.funcs import FIXED2ADAPTFLOAT, PE_CORE_ACCUM2ACT, PRODUCT_SUM
    from ila.models.flexasr.gb_control import NEXT, SEND
    from mappings.flexasr import linear as L
    from mappings.induction import LoopInduction
    T, I, O = shape["T"], shape["I"], shape["O"]
    ref = L.refinement(at)
    regs = [bv_const(v, 3) for v in (biases.w, biases.x, biases.b)]
    one, out_reg = bv_const(1, 1), bv_const(biases.out, 3)

    def term(o: int, X: list):
        acc = PRODUCT_SUM(w[o, 0], X[0])
        for i in range(1, I):
            acc = acc + PRODUCT_SUM(w[o, i], X[i])
        return FIXED2ADAPTFLOAT(PE_CORE_ACCUM2ACT(acc, b[o], *regs, one), out_reg)

    def readback(reads):
        y = driver.readback(reads, T, at["O"] // 16)
        return y if cut is None else cut(y, shape)
    return LoopInduction(
        ps.acc, "gb_control_ts_cntr",
        cut=lambda s: _state(s, "gb_control_child_state") == SEND and _state(s, "gb_control_v_cntr") == 0,
        stop=lambda s: _state(s, "gb_control_child_state") == NEXT,
        stop_states=("gb_control_child_state",),
        # the activation micro-op registers: the first timestep finds them at reset, the others at
        # micro-op 0; the PE core's bias step fetches them before the activation unit reads them
        free_states=("pe_act_opcode", "pe_act_ra", "pe_act_rb"),
        in_cells=np.asarray(ref["x"][1], dtype=np.int64), in_values=in_values,
        out_cells=np.asarray(ref["out"][1], dtype=np.int64), claimed=range(O), term=term,
        readback=readback, axioms=list(axioms))


def _operands(shape: dict, data: list):
    T, I, O = shape["T"], shape["I"], shape["O"]
    codes = np.array(data, dtype=object)
    return codes[:T * I].reshape(T, I), codes[T * I:T * I + O * I].reshape(O, I), codes[T * I + O * I:]


def induction(shape: dict, *, biases=None):
    """flexasr.linear's induction at ``shape`` (T x I x O)."""
    from mappings.flexasr import linear_proof as LP
    biases = biases or LP.Biases()
    ps = LP.proof_setup(shape, biases=biases)
    x, w, b = _operands(shape, ps.data)
    return _induction(ps, shape, shape, biases, x, w, b, x)


def pad_induction(shape: dict, *, biases=None):
    """flexasr.linear_pad's induction at ``shape`` (T x I x O; the stream at the padded shape):
    input cells of padded lanes hold the pad code of 0.0, and the padded lanes' products
    ``ProductSum(pad w, pad x)`` are rewritten by the zero-product axiom (true of the function's
    own body: ``mappings.flexasr.linear_pad_proof``); padded outputs are not claimed."""
    from ila import bv_const
    from ila.models.flexasr.funcs import PRODUCT_SUM
    from mappings.flexasr import linear_pad as LPd
    from mappings.flexasr import linear_pad_proof as PP
    from mappings.flexasr import linear_proof as LP
    biases = biases or LP.Biases()
    ps = PP.proof_setup(shape, biases=biases)
    P = LPd.padded(shape)
    x, w, b = _operands(shape, ps.data)
    zx, zw = PP.pad_code(biases.x), PP.pad_code(biases.w)
    vals = np.empty((shape["T"], P["I"]), dtype=object)
    vals[:, :] = bv_const(zx, 8)
    vals[:, :shape["I"]] = x
    zero = int(PRODUCT_SUM.body(np.uint64(zw), np.uint64(zx)))
    axiom = PRODUCT_SUM(bv_const(zw, 8), bv_const(zx, 8)).eq(bv_const(zero, 32))
    return _induction(ps, shape, P, biases, x, w, b, vals, cut=LPd.cut, axioms=[axiom])


def _spec(name: str, mapping, shape: dict | None, numerics: str, build, extra: str = "", cex=CEX_SHAPES):
    from mappings.phases import Composite
    from mappings.flexasr.linear_proof import NUMERICS
    from mappings.induction import composite_checks
    if shape is None:
        raise MappingError(f"{name}: the all-sizes proof is not available; give a shape (the induction is over "
                           f"the timesteps T at one I x O)")
    if numerics != "uf":
        raise MappingError(f"{name}: numerics {numerics!r} is not available for proofs: ProductSum, RunBias and "
                           f"Fixed2Adaptfloat have no bit-precise expression (use 'uf')")
    mapping.check_shape(shape)
    return Composite(scope=format_shape(shape), pieces={}, checks=composite_checks(lambda: build(shape), shape["T"]), covers=COVERS, numerics="uf",
                     notes=[f"induction over the {shape['T']} timesteps of GB control's loop from one symbolic "
                            f"timestep (verify.induction), against the declared numerics term: {NUMERICS}{extra}"],
                     cex_shapes=tuple(cex))


def chc_spec(shape: dict | None, *, numerics: str = "uf", infer: bool = False):
    """flexasr.linear ``--method chc``: the timestep induction of ``shape`` as a
    :class:`mappings.phases.Composite` of its lemmas (module docstring). Raises MappingError without
    a shape (no all-sizes proof: the iteration is executed at its I x O) or for numerics other than
    'uf'."""
    from mappings.flexasr import linear as L
    return _spec(L.NAME, L.MAPPING, shape, numerics, induction)


def pad_chc_spec(shape: dict | None, *, numerics: str = "uf", infer: bool = False):
    """flexasr.linear_pad ``--method chc``: as :func:`chc_spec`, the stream at the padded shape
    (:func:`pad_induction`)."""
    from mappings.flexasr import linear_pad as LPd
    return _spec(LPd.NAME, LPd.MAPPING, shape, numerics, pad_induction,
                 "; the padded lanes add ProductSum(pad w, pad x) = 0, padded outputs are cut", PAD_CEX_SHAPES)
