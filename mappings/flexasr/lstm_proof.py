"""BMC proof setup of ``flexasr.lstm`` against its declared numerics term (issue 26, items 1, 4).

What is proved. For one shape T x I x H and one choice of the five 3-bit exponent-bias registers
(x, w_ih, w_hh, b, and h, which is both the output's and, fed back, manager 2's input register:
:class:`Biases`), for ALL AdaptivFloat codes x[T, I], w_ih[4H, I], w_hh[4H, H], b[4H] and ALL
interpretations of FlexASR's PE functions (uninterpreted: ``ProductSum``, ``PECoreAccum2Act``,
``PEActEadd``, ``PEActEmul``, ``PEActSigmoid``, ``PEActTanh``, ``Fixed2Adaptfloat``): the MMIO stream
of the code generator (``driver.lstm_parts``' tensor program through the real assembler and
packer, on symbolic codes; the PE weight images below), run on the FlexASR ILA until quiescence
and read back by the driver, equals the declared numerics term (:func:`numerics_term`) for every
h[t, j], and x and h lie where the declared refinement map says.

The declared numerics term: the LSTM recurrence (PyTorch gate order i, f, g, o in the weight rows;
zero initial state) in the PEs' order and rounding: for each gate row, the 32-bit sums of
ProductSum over the input vectors per lane k, then over the 16 lanes (manager 1: x_t with w_ih,
the bias byte and the x / w_ih / b registers; manager 2: h_{t-1} as AdaptivFloat codes (zeros at
t = 0) with w_hh and the h / w_hh registers), each through PECoreAccum2Act, added with PEActEadd;
then the activation unit's micro-program: c = sigmoid(i) * tanh(g) + sigmoid(f) * c_{t-1} (c_{-1} =
0, kept in ACT fixed point), h = tanh(c) * sigmoid(o), h_t = Fixed2Adaptfloat(h, reg_h), fed back as
codes. How far the term is from the float32 IR operator is measured by simulation (:func:`gap`).

PE weight images. ``programs.lstm_pe_images`` casts its result to uint8, so it cannot run on
symbolic codes (unlike ``linear_pe_images``; reported). The proof therefore runs it on concrete
codes and lifts the data-independent rearrangement it performs (:func:`lifted_images`): three runs
on the digits of every element's index give each image byte's source element, and a fourth run
(indices + 1) checks that every byte is a copy of one (no byte is computed or constant); the
symbolic images are those sources' symbols. The rest of the stream (stores, configuration,
micro-programs, start, read-back) is the real generator's on symbolic codes.
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
    """Exponent-bias registers (3 bits): x, w_ih, w_hh, b, and h (output and fed-back input); distinct."""
    x: int = 3
    w_ih: int = 1
    w_hh: int = 2
    b: int = 4
    h: int = 5

    def __post_init__(self):
        for k in ("x", "w_ih", "w_hh", "b", "h"):
            v = getattr(self, k)
            if not isinstance(v, (int, np.integer)) or not 0 <= v <= 7:
                raise MappingError(f"flexasr.lstm proof: exponent-bias register {k} = {v!r} is not in 0..7")


def lifted_images(w_ih, w_hh, b) -> list[np.ndarray]:
    """``programs.lstm_pe_images`` on symbolic codes (object arrays), by lifting the rearrangement it
    performs on concrete codes (module docstring). Raises MappingError when some image byte is not
    a copy of one input element."""
    from ila.models.flexasr import programs
    shapes = [np.shape(w_ih), np.shape(w_hh), np.shape(b)]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = np.concatenate([np.asarray(a, dtype=object).ravel() for a in (w_ih, w_hh, b)])
    idx = np.arange(sum(sizes))

    def run(vals):
        parts, k = [], 0
        for s, n in zip(shapes, sizes):
            parts.append(vals[k:k + n].reshape(s).astype(np.uint8))
            k += n
        return [np.asarray(img, dtype=np.int64) for img in programs.lstm_pe_images(*parts)]
    digits = [run((idx >> (8 * d)) & 255) for d in range(3)]
    check = run((idx + 1) & 255)
    out = []
    for p in range(len(digits[0])):
        src = digits[0][p] | (digits[1][p] << 8) | (digits[2][p] << 16)
        if np.any(src >= idx.size) or np.any(((src + 1) & 255) != check[p]):
            raise MappingError("flexasr.lstm proof: lstm_pe_images is not a rearrangement of its inputs")
        out.append(flat[src])
    return out


def parts(T: int, I: int, H: int, biases: Biases):
    """The driver's tensor program of a T x I x H LSTM (``driver.lstm_parts``), its register fields
    set to ``biases`` (a test checks the program is otherwise data independent)."""
    import warnings
    from ila.models.flexasr.driver import lstm_parts
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = lstm_parts(rng.normal(size=(T, I)).astype(np.float32), rng.normal(size=(4 * H, I)).astype(np.float32),
                       rng.normal(size=(4 * H, H)).astype(np.float32), rng.normal(size=4 * H).astype(np.float32),
                       out_bias=biases.h)
    prog = copy.deepcopy(p.prog)
    for ins in prog:
        if ins["name"] == "lstm_layer":
            ins.update(adpbias_wgt_i=biases.w_ih, adpbias_wgt_h=biases.w_hh, adpbias_inp=biases.x,
                       adpbias_bias=biases.b, adpbias_out=biases.h)
    return prog


def numerics_term(xq, wiq, whq, bq, biases: Biases) -> np.ndarray:
    """The declared numerics (module docstring): h[T, H] codes as terms over the codes ``xq`` [T, I],
    ``wiq`` [4H, I], ``whq`` [4H, H], ``bq`` [4H]."""
    from ila.models.flexasr import funcs as Fn
    xq, wiq, whq, bq = (np.asarray(a, dtype=object) for a in (xq, wiq, whq, bq))
    T, I = xq.shape
    H = whq.shape[1]
    r3 = {k: bv_const(getattr(biases, k), 3) for k in ("x", "w_ih", "w_hh", "b", "h")}
    z32, z20, z8 = bv_const(0, 32), bv_const(0, 20), bv_const(0, 8)

    def dot(w_row, vec):
        """The PE's sum: per lane k over the input vectors j, then over the 16 lanes."""
        nv = len(vec) // 16
        lanes = []
        for k in range(16):
            acc = z32
            for j in range(nv):
                acc = acc + Fn.PRODUCT_SUM(w_row[16 * j + k], vec[16 * j + k])
            lanes.append(acc)
        total = lanes[0]
        for k in range(1, 16):
            total = total + lanes[k]
        return total

    h_prev = [z8] * H
    c_prev = [z20] * H
    out = np.empty((T, H), dtype=object)
    for t in range(T):
        x = list(xq[t])
        h_new, c_new = [], []
        for u in range(H):
            pre = {}
            for gate in range(4):             # PyTorch row blocks: i, f, g, o
                row = gate * H + u
                r1 = Fn.PE_CORE_ACCUM2ACT(dot(wiq[row], x), bq[row], r3["w_ih"], r3["x"], r3["b"], bv_const(1, 1))
                r2 = Fn.PE_CORE_ACCUM2ACT(dot(whq[row], h_prev), z8, r3["w_hh"], r3["h"], bv_const(0, 3),
                                          bv_const(0, 1))
                pre[gate] = Fn.PE_ACT_EADD(r1, r2)
            a0 = Fn.PE_ACT_EMUL(Fn.PE_ACT_SIGMOID(pre[0]), Fn.PE_ACT_TANH(pre[2]))
            a1 = Fn.PE_ACT_EMUL(Fn.PE_ACT_SIGMOID(pre[1]), c_prev[u])
            c = Fn.PE_ACT_EADD(a0, a1)
            h = Fn.PE_ACT_EMUL(Fn.PE_ACT_TANH(c), Fn.PE_ACT_SIGMOID(pre[3]))
            c_new.append(c)
            h_new.append(Fn.FIXED2ADAPTFLOAT(h, r3["h"]))
        out[t] = h_new
        h_prev, c_prev = h_new, c_new
    return out


DESCRIBE = ("the LSTM recurrence in the PEs' order and rounding: per gate row 32-bit ProductSum sums per lane over the "
            "input vectors then over the lanes, PECoreAccum2Act per manager (x with the bias byte; h_{t-1} as AdaptivFloat "
            "codes, zeros at t = 0), PEActEadd; c = sigmoid(i) tanh(g) + sigmoid(f) c_{t-1} in ACT fixed point, "
            "h = tanh(c) sigmoid(o) rounded to AdaptivFloat and fed back")


def gap(shape: dict, samples: int = 6, seed: int = 0) -> str:
    """The term evaluated with the functions' numpy bodies on the mapping's random inputs, quantised
    as the driver does (registers as the mapping's generator chooses them), against the float32 IR
    operator: Frobenius relative error and the tolerance."""
    import warnings
    from ila.compile_np import compile_exprs
    from ila.models.flexasr.driver import lstm_parts, _q
    from ila.numerics import adaptivfloat as af
    from mappings.base import frobenius_relative_error
    from mappings.flexasr import common as F
    from mappings.flexasr import lstm as L
    T, I, H = shape["T"], shape["I"], shape["H"]
    syms = [np.array(symbolic_data(n, 8, p), dtype=object).reshape(s) for p, n, s in
            (("lx", T * I, (T, I)), ("lwi", 4 * H * I, (4 * H, I)), ("lwh", 4 * H * H, (4 * H, H)), ("lb", 4 * H, (4 * H,)))]
    rng = np.random.default_rng(seed)
    errs, fns = [], {}
    for _ in range(samples):
        inputs = L.random_inputs(shape, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            codes = [_q(inputs[k]) for k in ("x", "w_ih", "w_hh", "b")]
        regs = Biases(codes[0][1], codes[1][1], codes[2][1], codes[3][1], F.out_bias(L.reference(shape, inputs)))
        if regs not in fns:
            fns[regs] = compile_exprs(list(numerics_term(*syms, regs).ravel()), vectorize=False)
        env = {}
        for s, (c, _) in zip(syms, codes):
            env.update({d.name: int(v) for d, v in zip(s.ravel(), np.asarray(c).ravel())})
        h = np.array([int(v) for v in fns[regs](env, {})], dtype=np.uint8).reshape(T, H)
        errs.append(frobenius_relative_error(L.reference(shape, inputs), af.dequantize(h, regs.h)))
    tol = L.MAPPING.tolerance_at(shape)
    return (f"Frobenius relative error mean {100 * np.mean(errs):.2f} %, max {100 * max(errs):.2f} % over {samples} "
            f"random inputs at {T}x{I}x{H} (tolerance {100 * tol:g} %)")


def proof_setup(shape: dict, *, numerics: str = "uf", biases: Biases | None = None) -> ProofSetupExt:
    """The emitted stream on symbolic codes against the declared numerics term (module docstring)."""
    from ila.models.flexasr import constants as C, driver, funcs as Fn, isa, shared_model
    from mappings.base import Side
    from mappings.flexasr import lstm as L
    from mappings.flexasr.common import mmio_port as _port
    if numerics != "uf":
        raise MappingError(f"flexasr.lstm: numerics {numerics!r} is not available for proofs (use 'uf')")
    L.MAPPING.check_shape(shape)
    biases = biases or Biases()
    T, I, H = shape["T"], shape["I"], shape["H"]
    data = symbolic_data(T * I + 4 * H * I + 4 * H * H + 4 * H, 8)
    k = 0
    xq = np.array(data[k:k + T * I], dtype=object).reshape(T, I)
    k += T * I
    wiq = np.array(data[k:k + 4 * H * I], dtype=object).reshape(4 * H, I)
    k += 4 * H * I
    whq = np.array(data[k:k + 4 * H * H], dtype=object).reshape(4 * H, H)
    k += 4 * H * H
    bq = np.array(data[k:], dtype=object)
    imgs = lifted_images(wiq, whq, bq)
    lib = {"x": xq} | {f"w{p}": imgs[p] for p in range(C.NUM_PE)}
    cmds = isa.assemble(parts(T, I, H, biases), lib)[1]
    term = NumericsTerm(DESCRIBE, lambda: list(numerics_term(xq, wiq, whq, bq, biases).ravel()), lambda: gap(shape))
    ref = L.refinement(shape)
    (mx, ox), (mo, oo) = ref["x"], ref["out"]
    declared = Declared(tuple((mx, int(ox[t, i]), xq[t, i]) for t in range(T) for i in range(I)),
                        tuple((t * H + j, mo, int(oo[t, j])) for t in range(T) for j in range(H)),
                        tensors=("x", "out"))
    funcs = [Fn.PRODUCT_SUM, Fn.PE_CORE_ACCUM2ACT, Fn.PE_ACT_EADD, Fn.PE_ACT_EMUL, Fn.PE_ACT_SIGMOID, Fn.PE_ACT_TANH,
             Fn.FIXED2ADAPTFLOAT]
    return ProofSetupExt(
        None, Side(shared_model(), cmds, "gb_core_large_buffer", port=_port()),
        data, [(j, j) for j in range(T * H)], funcs=funcs, describe_output=lambda j: f"h[{j // H}, {j % H}]",
        readback=lambda reads: driver.readback(reads, T, H // 16), split_outputs=True,
        covers=("codegen-bytes", "order", "model-loops", "read-back"), declared=declared, reference=term)
