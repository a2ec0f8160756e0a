"""BMC proof setup of ``hlscnn.conv2d`` / ``hlscnn.conv2d_w8`` over abstract arithmetic (issue 6).

What is proved. For one shape H x W x 1 x O x K x S (ONE input channel, see below), for ALL 16-bit
activations x[H, W] (ACT, Q16.7 raw) and ALL weights w[O, K, K] (16-bit Q16.14 raw, or 8-bit Q8.6
raw for ``conv2d_w8``), and ALL interpretations of HLSCNN's uninterpreted ``ConvMac`` (PSUM 32,
weight 16, act 16 -> PSUM 32), ``ConvMacPsum2Act`` (PSUM -> ACT, rounding), ``ActAdd2Psum``
(ACT, ACT -> PSUM) and ``Psum2Act`` (PSUM -> ACT, truncating) that satisfy the link axioms below:
the compiler-IR fragment (``transpose`` of w to HWIO, then ``nn.conv2d_nhwc`` on
:func:`ila.models.relay.model.relay_ila`) and the accelerator fragment (the driver's command stream:
virtual-SoC-memory images, the scratchpad-0 weight pulls, the convolution registers and the
trigger, executed on the HLSCNN ILA as the mapping runs it, one output pixel per child step) leave equal
outputs under the refinement map (IR out[y, x, o] <-> scratchpad-1 byte pair of (o / 8, y, x, o % 8),
little-endian). So every activation and weight reaches the MAC of every output it belongs to, in
the same tap order, and every result lands where the read-back finds it; the arithmetic itself is
not proved (its deviation from float32 is what ``--method sim`` measures).

IR numerics (:func:`act_numerics`): 16-bit elements; ``mul`` / ``add`` are the uninterpreted
``hlscnn_act_mul`` / ``hlscnn_act_add``, whose numpy bodies (for simulation) are HLSCNN's per-tap
arithmetic written from :mod:`ila.numerics.fixed_point`: mul(x, w) = the product of one tap,
truncated into PSUM and rounded to ACT (saturating); add(a, b) = a + b wrapping at 16 bits (ACT
partial outputs). An 8-bit weight enters the IR as the 16-bit weight the datapath widens it to
(``w8 << 8``, appending a zero byte).

Link axioms (:func:`link_axioms`; checked against the numpy bodies in
``tests/test_conv2d_proof.py``, on random and edge pairs; the weight argument of H_mac0 and the
activation argument of H_mac0' exhaustively over all 65536 values with random others):

* H_mul:   mul(x, w) = ConvMacPsum2Act(ConvMac(0, w, x))            (all x, w)
* H_add:   add(a, b) = Psum2Act(ActAdd2Psum(b, a))                   (all a, b)
* H_mac0:  ConvMac(p, 0, a) = p       (a zero weight adds nothing; the host pads channels 1..7
  of every 8-channel block with zero weights and zero activations)

Why one input channel. The IR's ``nn.conv2d`` sums the products of one output channel-major
(ci, then ky, kx), with no rounding. HLSCNN rounds once per kernel tap (ky, kx) after summing
that tap's block of 8 channels in PSUM, and keeps the running output in 16-bit ACT. With C = 1 a
tap holds exactly one product, so "round each product, add in ACT" is the hardware's arithmetic
and the axioms above are true. With C > 1 (any K), the hardware rounds sums of C products (and,
for K > 1, in a different order than the IR's loop): no assignment of the IR's binary mul / add
reproduces it, so no sound axioms of this form exist; such shapes are refused here
(``--method sim`` measures them).

Placement (the trusted path, ``verify.scope``): the accelerator fragment is the exact MMIO stream
the driver's code generator emits (:func:`ila.models.hlscnn.driver.conv2d_program`) run on
symbolic activations and weights, so every data byte is a term the real packer built; the outputs
are what the driver's read-back (:func:`ila.models.hlscnn.driver.readback`) makes of the emitted
scratchpad-1 reads. ``--numerics exact`` is refused. The seeded bugs the proof must refute are in
``verify/mutations/hlscnn.py``.
"""
from __future__ import annotations

import numpy as np

from ila import bv_const, concat
from ila.models.hlscnn.numerics import ACT_ADD_PSUM, CONV_MAC, PSUM_TO_ACT_RND, PSUM_TO_ACT_TRN
from ila.models.relay.model import relay_ila
from ila.models.relay.numerics import Numerics, abstract
from ila.numerics import fixed_point as fx
from mappings.base import MappingError, Side, symbolic_data
from mappings.common import ir_commands
from mappings.proof_ext import ProofSetupExt


def act_numerics() -> Numerics:
    """The IR numerics of the proof (module docstring), with numpy bodies for simulation."""
    def mul_body(x, w):
        p = fx.conv_mac(0, fx.from_bits(w, 16), fx.from_bits(x, 16))
        return fx.to_bits(fx.psum_to_act_rnd(p), 16)

    def add_body(a, b):
        return fx.to_bits(fx.from_bits(a, 16) + fx.from_bits(b, 16), 16)
    return abstract("hlscnn_act", 16, add_body=add_body, mul_body=mul_body, axioms=False)


def link_axioms(num: Numerics) -> dict:
    """The link axioms as functions of their arguments -> Bool expression, by name."""
    zero32, zero16 = bv_const(0, 32), bv_const(0, 16)
    return {"H_mul": lambda x, w: num.mul(x, w).eq(PSUM_TO_ACT_RND(CONV_MAC(zero32, w, x))),
            "H_add": lambda a, b: num.add(a, b).eq(PSUM_TO_ACT_TRN(ACT_ADD_PSUM(b, a))),
            "H_mac0": lambda p, a: CONV_MAC(p, zero16, a).eq(p)}


def instantiate(num: Numerics):
    """Ground instances of the link axioms on the applications that occur (topological order):
    H_mac0 at every ConvMac with a constant zero weight; H_mul at every IR mul; H_add at every IR
    add, instantiated at its arguments with earlier IR applications replaced by the right-hand
    sides of their instances (equal terms; see :func:`mappings.flexasr.linear_proof.instantiate`)."""
    from ila.ops import Op
    ax = link_axioms(num)

    def axioms(apps):
        out, value = [], {}
        for n in apps:
            if n.payload is CONV_MAC and n.args[1].op is Op.CONST and n.args[1].payload == 0:
                out.append(ax["H_mac0"](n.args[0], n.args[2]))
            elif n.payload is num.mul or n.payload is num.add:
                args = [value.get(a.uid, a) for a in n.args]
                inst = ax["H_mul" if n.payload is num.mul else "H_add"](*args)
                out.append(inst)
                value[n.uid] = inst.args[1]
        return out
    return axioms


# ----------------------------------------------------------------------------- the proof setup
def _port():
    from ila.models.hlscnn.driver import read_beat
    from mappings.base import MmioPort
    return MmioPort(is_read=lambda c: c.get("top_slave_if_rd") == 1, read_data=read_beat)


def proof_setup(shape: dict, *, bits: int = 16, numerics: str = "uf") -> ProofSetupExt:
    """Both fragments over shared symbolic data (see the module docstring): the accelerator side is
    the exact stream the driver emits (:func:`ila.models.hlscnn.driver.conv2d_program`) for
    symbolic activations and weights, its outputs the driver's read-back of the emitted scratchpad
    reads (C > 1: against the declared numerics term, :func:`term_setup`). Raises MappingError for
    ``numerics`` other than 'uf' or a shape the mapping refuses. Seeded bugs are applied around this function by ``verify.mutations``."""
    from ila.models.hlscnn import driver
    from ila.models.hlscnn.model import MACHINE_LANES, build_hlscnn
    from mappings.hlscnn import conv2d as M
    name = "hlscnn.conv2d" if bits == 16 else "hlscnn.conv2d_w8"
    if numerics != "uf":
        raise MappingError(f"{name}: numerics {numerics!r} is not available for proofs (use 'uf': HLSCNN's MAC, "
                           f"roundings and partial-output adds uninterpreted, with link axioms)")
    M.make(bits).check_shape(shape)
    if shape["C"] != 1:                   # no link axioms relate the two: the declared numerics term instead
        return term_setup(shape, bits=bits)
    H, W, O, K = shape["H"], shape["W"], shape["O"], shape["K"]
    nx, nw = H * W, O * K * K
    data = symbolic_data(nx, 16, prefix="x") + symbolic_data(nw, bits, prefix="w")
    x_raw = np.array(data[:nx], dtype=object).reshape(H, W, 1)
    w_raw = np.array(data[nx:], dtype=object).reshape(O, K, K, 1)
    try:
        job = driver.conv2d_program(x_raw, w_raw, stride=shape["S"], weight_bits=bits)
    except driver.HlscnnError as e:
        raise MappingError(f"{name} proof: the driver refuses shape {shape}: {e}") from e
    frag = M.ir_fragment(shape)
    num = act_numerics()
    w_ir = data[nx:] if bits == 16 else [concat(d, bv_const(0, 8)) for d in data[nx:]]
    ir = relay_ila(num, tensor_entries=1 << max(10, (frag.size() - 1).bit_length()))
    outs = [(int(a), k) for k, a in enumerate(frag.address("out").reshape(-1))]
    ow = M._out(shape)[1]
    return ProofSetupExt(
        Side(ir, ir_commands(frag, {"x": data[:nx], "w": w_ir}), "tensor"),
        Side(build_hlscnn(bits, *MACHINE_LANES), job.commands + job.read_commands, "scratch_pad_1", port=_port()),
        data, outs, axioms=[instantiate(num)], funcs=[num.mul, num.add],
        describe_output=lambda k: f"out[0, {k // O // ow}, {k // O % ow}, {k % O}]",
        readback=lambda reads: driver.readback(job, reads), split_outputs=True,
        covers=("codegen-bytes", "order", "model-loops", "read-back"))


def proof_setup_w8(shape: dict, *, numerics: str = "uf") -> ProofSetupExt:
    """hlscnn.conv2d_w8's proof setup (8-bit weights)."""
    return proof_setup(shape, bits=8, numerics=numerics)


# ----------------------------------------------------------------------------- declared numerics (C > 1)
DESCRIBE = ("conv2d in HLSCNN's order and rounding: for each output, the kernel taps in the unit's order (channel "
            "block of 8, kernel row, kernel column), each tap's 8-channel MAC chain in 32-bit PSUM (ConvMac, "
            "channels beyond C padded with zero weight and zero activation), rounded to 16-bit ACT "
            "(ConvMacPsum2Act), added to the partial output in PSUM (ActAdd2Psum) and truncated back to ACT "
            "(Psum2Act) after every tap; activations Q16.7, weights Q16.14 (or Q8.6 widened by a zero byte)")


def _array(v) -> np.ndarray:
    """``v`` as an object array (a lone term or tuple as a 0-d array, never taken apart)."""
    if isinstance(v, np.ndarray):
        return v
    a = np.empty((), dtype=object)
    a[()] = v
    return a


def _elementwise(f, *args) -> np.ndarray:
    """``f`` applied element by element to its broadcast arguments (object arrays or lone terms)."""
    return _array(np.frompyfunc(f, len(args), 1)(*map(_array, args)))


def _free(f, *args) -> tuple:
    """A free constructor of function applications: ``(f, args)``, the arguments kept whole."""
    return (f, args)


def read_at(a, index: tuple):
    """Element ``index`` (a tuple of int arrays, one per axis of the term's output) of the leaf ``a``
    broadcast to the output: an axis where ``a`` has length 1 is read at 0. A lone term is itself.
    Raises IndexError when ``a`` has another number of axes or an index beyond an axis."""
    if not isinstance(a, np.ndarray) or a.ndim == 0:
        return a if not isinstance(a, np.ndarray) else a[()]
    if a.ndim != len(index):
        raise IndexError(f"a leaf of {a.ndim} axes read at an index of {len(index)}")
    return a[tuple(i if n > 1 else np.zeros_like(i) for i, n in zip(index, a.shape))]


def numerics_term(x_raw, w_raw, stride: int, bits: int = 16, *, tree: bool = False) -> np.ndarray:
    """The declared numerics of hlscnn.conv2d / conv2d_w8 (issue 26, item 4): out[OH, OW, O] as
    16-bit ACT terms over ``x_raw`` [H, W, C] (16-bit ACT raw values: ints or terms) and ``w_raw``
    [O, K, K, C] (``bits``-bit raw weights), the IR's valid conv2d computed in the accelerator's
    order and rounding (:data:`DESCRIBE`), with HLSCNN's datapath functions
    (:mod:`ila.models.hlscnn.numerics`) uninterpreted; their numpy bodies give its values. Unlike the
    IR's channel-major sum of exact products, the hardware rounds once per kernel tap after summing
    a block of 8 channels, so the term is not the IR's sum: its distance to the float32 operator is
    measured (:func:`gap`), not proved.

    The term is built for all outputs at once: each datapath function is applied to whole arrays
    of operands (activations [OH, OW, 1] at the tap's window, weights [1, 1, O]), element by
    element. ``tree=True`` keeps those applications as one shared tree of tuples ``(function,
    arguments)`` whose leaves are the operand arrays (and lone constants): every element of the
    result is ``(root, index)``, the output's term being the tree with each leaf read at ``index``
    (:func:`read_at`); the phase proof's term check walks that tree once instead of building a term
    per output."""
    x = np.asarray(x_raw, dtype=object)
    w = np.asarray(w_raw, dtype=object)
    H, W, C = x.shape
    O, K, _, _ = w.shape
    OH, OW = (H - K) // stride + 1, (W - K) // stride + 1
    ncb = -(-C // 8)
    z16, z32 = bv_const(0, 16), bv_const(0, 32)

    def e16(v, width):
        from ila.expr import Expr
        return v if isinstance(v, Expr) else bv_const(int(v) & ((1 << width) - 1), width)

    def widen(v):
        v = e16(v, bits)
        return v if bits == 16 else concat(v, bv_const(0, 8))      # the datapath widens an 8-bit weight
    # every operand as its 16-bit term once (channels beyond C: zero weight, zero activation)
    wt = np.full((O, K, K, ncb * 8), z16, dtype=object)
    wt[..., :C] = np.frompyfunc(widen, 1, 1)(w) if w.size else w
    xt = np.full((H, W, ncb * 8), z16, dtype=object)
    xt[..., :C] = np.frompyfunc(lambda v: e16(v, 16), 1, 1)(x) if x.size else x
    rows, cols = np.arange(OH) * stride, np.arange(OW) * stride
    app = _free if tree else _elementwise
    v = None
    for cb in range(ncb):
        for ky in range(K):
            for kx in range(K):
                psum = z32
                for i in range(8):
                    c = 8 * cb + i
                    wv = wt[:, ky, kx, c].reshape(1, 1, O)
                    xv = xt[(rows + ky)[:, None], (cols + kx)[None, :], c][:, :, None]
                    psum = app(CONV_MAC, psum, wv, xv)
                p = app(ACT_ADD_PSUM, app(PSUM_TO_ACT_RND, psum), z16 if v is None else v)
                v = app(PSUM_TO_ACT_TRN, p)
    out = np.empty((OH, OW, O), dtype=object)
    if tree:
        for idx in np.ndindex(OH, OW, O):
            out[idx] = (v, idx)
    else:
        out[...] = np.broadcast_to(_array(v), out.shape)
    return out


def gap(shape: dict, bits: int, samples: int = 5, seed: int = 0) -> str:
    """The declared term evaluated with the datapath functions' numpy bodies on the mapping's random
    inputs (quantised as the driver does), against the float32 IR operator (the mapping's
    reference): Frobenius relative error, and the mapping's tolerance."""
    from mappings.hlscnn import conv2d as M
    H, W, C, O, K, S = (shape[d] for d in ("H", "W", "C", "O", "K", "S"))
    xs = np.array(symbolic_data(H * W * C, 16, prefix="gx"), dtype=object).reshape(H, W, C)
    ws = np.array(symbolic_data(O * K * K * C, bits, prefix="gw"), dtype=object).reshape(O, K, K, C)
    return term_gap(M.make(bits), shape, numerics_term(xs, ws, S, bits), xs, ws, bits,
                    "x".join(str(shape[d]) for d in ("H", "W", "C", "O", "K", "S")), samples, seed)


def term_gap(m, shape: dict, term, xs, ws, bits: int, shape_text: str, samples: int, seed: int) -> str:
    """The sentence of :func:`gap` for mapping ``m``: ``term`` (terms over the symbols ``xs``, laid
    out as the mapping's x[0], and ``ws``, as its w) evaluated with the datapath functions' numpy
    bodies on ``samples`` random inputs of ``m``, quantised as its code generator does, against
    ``m``'s float32 reference (the term shaped as the reference without its batch axis)."""
    from ila.compile_np import compile_exprs
    from ila.numerics.fixed_point import ACT, weight_format
    from mappings.base import frobenius_relative_error
    fn = compile_exprs(list(term.reshape(-1)), vectorize=False)
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(samples):
        inputs = m.random_inputs(shape, rng)
        xq = ACT.quantize(np.asarray(inputs["x"], np.float64)[0])
        wq = weight_format(bits).quantize(np.asarray(inputs["w"], np.float64))
        env = {d.name: int(v) & 0xFFFF for d, v in zip(xs.reshape(-1), xq.reshape(-1))}
        env.update({d.name: int(v) & ((1 << bits) - 1) for d, v in zip(ws.reshape(-1), wq.reshape(-1))})
        raw = np.array([int(v) for v in fn(env, {})], np.int64).reshape(term.shape)
        raw = np.where(raw >= 1 << 15, raw - (1 << 16), raw)
        errs.append(frobenius_relative_error(m.reference(shape, inputs), ACT.to_float(raw)[None]))
    return (f"the term is within {100 * max(errs):.2f} % (max Frobenius relative error over {samples} random inputs "
            f"at {shape_text}) of the float32 conv2d; tolerance {100 * m.tolerance_at(shape):g} %")


def term_setup(shape: dict, *, bits: int = 16) -> ProofSetupExt:
    """The emitted stream (the driver's ``conv2d_program`` on symbolic activations and weights, any
    C) against the declared numerics term (:func:`numerics_term`): every output the driver reads
    back equals the term's, for all data and all interpretations of the datapath functions (no
    axioms needed: the program must compute the term itself, padding channels included)."""
    from ila.models.hlscnn import driver
    from mappings.hlscnn import conv2d as M
    from mappings.proof_ext import NumericsTerm
    name = "hlscnn.conv2d" if bits == 16 else "hlscnn.conv2d_w8"
    M.make(bits).check_shape(shape)
    H, W, C, O, K, S = (shape[d] for d in ("H", "W", "C", "O", "K", "S"))
    nx, nw = H * W * C, O * K * K * C
    data = symbolic_data(nx, 16, prefix="x") + symbolic_data(nw, bits, prefix="w")
    x_raw = np.array(data[:nx], dtype=object).reshape(H, W, C)
    w_raw = np.array(data[nx:], dtype=object).reshape(O, K, K, C)
    try:
        job = driver.conv2d_program(x_raw, w_raw, stride=S, weight_bits=bits)
    except driver.HlscnnError as e:
        raise MappingError(f"{name} proof: the driver refuses shape {shape}: {e}") from e
    term = NumericsTerm(DESCRIBE, lambda: list(numerics_term(x_raw, w_raw, S, bits).reshape(-1)),
                        lambda: gap(shape, bits))
    oh, ow = M._out(shape)
    return term_proof(job, bits, data, oh * ow * O, lambda k: f"out[0, {k // O // ow}, {k // O % ow}, {k % O}]",
                      lambda reads: driver.readback(job, reads), term)


def term_proof(job, bits: int, data: list, n_out: int, describe_output, readback, term) -> ProofSetupExt:
    """The proof setup of a driver job (its stream and reads on the HLSCNN ILA of ``bits``-bit
    weights) against a declared numerics term: outputs 0 .. ``n_out`` - 1 of ``readback`` equal the
    term's, for all ``data`` and all interpretations of the datapath functions."""
    from ila.models.hlscnn.model import MACHINE_LANES, build_hlscnn
    from ila.models.hlscnn.numerics import ALL
    return ProofSetupExt(
        None, Side(build_hlscnn(bits, *MACHINE_LANES), job.commands + job.read_commands, "scratch_pad_1", port=_port()),
        data, [(k, k) for k in range(n_out)], funcs=list(ALL), describe_output=describe_output,
        readback=readback, split_outputs=True, covers=("codegen-bytes", "order", "model-loops", "read-back"),
        reference=term)
