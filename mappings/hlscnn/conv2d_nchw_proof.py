"""BMC proof setup of ``hlscnn.conv2d_nchw`` / ``hlscnn.conv2d_nchw_w8`` over abstract arithmetic.

What is proved. For one shape H x W x 1 x O x K x S x P (ONE input channel, for the reason given in
:mod:`mappings.hlscnn.conv2d_proof`), for ALL 16-bit activations x[1, H, W] (ACT, Q16.7 raw) and
ALL weights w[O, 1, K, K] (16-bit Q16.14 raw, or 8-bit Q8.6 raw for the 8-bit design), and ALL
interpretations of HLSCNN's uninterpreted MAC, roundings and partial-output adds that satisfy the
link axioms of :mod:`mappings.hlscnn.conv2d_proof` (checked against their numpy bodies in
``tests/test_mappings_hlscnn_conv2d_proof.py``): the compiler-IR fragment of the mapping (x padded
by P zeros on every side by copies from a zero constant, then ``nn.conv2d_nchw`` on OIHW weights,
:func:`mappings.hlscnn.conv2d_nchw.ir_fragment`) and the accelerator fragment (the host layout of
the mapping, NCHW -> padded HWC and OIHW -> OHWI, then the exact stream the HLSCNN driver emits,
run on the HLSCNN ILA, and the mapping's read-back, the driver's [OH, OW, O] put back in NCHW order)
leave equal outputs, element by element of out[1, O, OH, OW]. With C > 1 input channels the IR side
is the declared numerics term instead (:func:`term_setup`, :func:`padded_term`: the IR's padded
conv2d in HLSCNN's order and rounding, as for hlscnn.conv2d), proved equal to the accelerator side
for all data; its distance to the float32 operator is measured (:func:`gap`). So every activation and every
padding zero reaches the MAC of every output it belongs to, in the tap order of the IR, and every
result comes back at its NCHW position. The arithmetic itself is not proved (``--method sim``
measures its deviation from float32).

IR numerics: :func:`mappings.hlscnn.conv2d_proof.act_numerics` (16-bit elements, HLSCNN's per-tap
arithmetic as uninterpreted ``mul`` / ``add``); the padding zero is the 16-bit 0, which is ACT's
raw zero, the value the host writes into the padded cells. An 8-bit weight enters the IR as the
16-bit weight the datapath widens it to (``w8 << 8``).

Placement (the trusted path, ``verify.scope``): the accelerator side is built by the mapping's own
code generator (:func:`mappings.hlscnn.conv2d_nchw.build_job`) on symbolic operands, through the
driver's element path, with the read-back the mapping applies (:func:`mappings.hlscnn.conv2d_nchw.
readback`). ``--numerics exact`` is refused. Seeded bugs: :mod:`verify.mutations.hlscnn_nchw`.
"""
from __future__ import annotations

import numpy as np

from ila import bv_const, concat
from ila.models.relay.model import relay_ila
from mappings.base import MappingError, Side, symbolic_data
from mappings.common import ir_commands
from mappings.hlscnn.conv2d_proof import _port, act_numerics, instantiate
from mappings.proof_ext import ProofSetupExt


def proof_setup(shape: dict, *, bits: int = 16, numerics: str = "uf") -> ProofSetupExt:
    """Both fragments over shared symbolic data (module docstring); C > 1: :func:`term_setup`.
    Raises MappingError for ``numerics`` other than 'uf' or a shape the mapping refuses."""
    from ila.models.hlscnn import driver
    from ila.models.hlscnn.model import MACHINE_LANES, build_hlscnn
    from mappings.hlscnn import conv2d_nchw as M
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"
    if numerics != "uf":
        raise MappingError(f"{name}: numerics {numerics!r} is not available for proofs (use 'uf': HLSCNN's MAC, "
                           f"roundings and partial-output adds uninterpreted, with link axioms)")
    M.make(bits).check_shape(shape)
    if shape["C"] != 1:                   # no link axioms relate the two: the declared numerics term instead
        return term_setup(shape, bits=bits)
    H, W, O, K = shape["H"], shape["W"], shape["O"], shape["K"]
    nx, nw = H * W, O * K * K
    data = symbolic_data(nx, 16, prefix="x") + symbolic_data(nw, bits, prefix="w")
    x_raw = np.array(data[:nx], dtype=object).reshape(1, H, W)
    w_raw = np.array(data[nx:], dtype=object).reshape(O, 1, K, K)
    try:
        job = M.build_job(x_raw, w_raw, shape, bits)
    except driver.HlscnnError as e:
        raise MappingError(f"{name} proof: the driver refuses shape {shape}: {e}") from e
    frag = M.ir_fragment(shape)
    num = act_numerics()
    w_ir = data[nx:] if bits == 16 else [concat(d, bv_const(0, 8)) for d in data[nx:]]
    zeros = [0] * int(np.prod(frag.inputs["zero"][1]))
    ir = relay_ila(num, tensor_entries=1 << max(10, (frag.size() - 1).bit_length()))
    outs = [(int(a), k) for k, a in enumerate(frag.address("out").reshape(-1))]
    oh, ow = M.out_hw(shape)
    return ProofSetupExt(
        Side(ir, ir_commands(frag, {"x": data[:nx], "w": w_ir, "zero": zeros}), "tensor"),
        Side(build_hlscnn(bits, *MACHINE_LANES), job.commands + job.read_commands, "scratch_pad_1", port=_port()),
        data, outs, axioms=[instantiate(num)], funcs=[num.mul, num.add],
        describe_output=lambda k: f"out[0, {k // (oh * ow)}, {k // ow % oh}, {k % ow}]",
        readback=lambda reads: M.readback(job, reads), split_outputs=True,
        covers=("codegen-bytes", "order", "model-loops", "read-back"))


def proof_setup_w8(shape: dict, *, numerics: str = "uf") -> ProofSetupExt:
    """hlscnn.conv2d_nchw_w8's proof setup (8-bit weights)."""
    return proof_setup(shape, bits=8, numerics=numerics)


# ----------------------------------------------------------------------------- declared numerics (C > 1)
def padded_term(x_raw, w_raw, shape: dict, bits: int, *, tree: bool = False) -> np.ndarray:
    """The declared numerics of hlscnn.conv2d_nchw / _w8 as terms out[O, OH, OW] over ``x_raw``
    [C, H, W] (16-bit ACT raw) and ``w_raw`` [O, C, K, K] (``bits``-bit raw): the IR's conv2d with
    P zero rows and columns around x, computed in HLSCNN's order and rounding
    (:func:`mappings.hlscnn.conv2d_proof.numerics_term`, :data:`~mappings.hlscnn.conv2d_proof.DESCRIBE`).
    The padded image and the weight layout are built here from the IR's definitions, not with the
    mapping's host layout functions, so a layout bug there is a difference the proof sees.
    ``tree``: as for ``numerics_term`` (the term as one tree of tuples over operand arrays, each
    element ``(root, index)`` with ``index`` numerics_term's output index [OH, OW, O])."""
    from mappings.hlscnn.conv2d_proof import numerics_term
    x = np.asarray(x_raw, dtype=object)
    C, H, W = x.shape
    P = shape["P"]
    img = np.empty((H + 2 * P, W + 2 * P, C), dtype=object)
    for y in range(H + 2 * P):
        for xx in range(W + 2 * P):
            for c in range(C):
                inside = P <= y < H + P and P <= xx < W + P
                img[y, xx, c] = x[c, y - P, xx - P] if inside else 0       # raw 0 is the ACT zero
    w = np.asarray(w_raw, dtype=object)
    w_ohwc = np.empty((w.shape[0], w.shape[2], w.shape[3], w.shape[1]), dtype=object)
    for o, c, ky, kx in np.ndindex(*w.shape):
        w_ohwc[o, ky, kx, c] = w[o, c, ky, kx]
    t = numerics_term(img, w_ohwc, shape["S"], bits, tree=tree)                   # [OH, OW, O]
    return np.moveaxis(t, 2, 0)


def gap(shape: dict, bits: int, samples: int = 3, seed: int = 0) -> str:
    """The declared term evaluated with the datapath functions' numpy bodies on the mapping's random
    inputs (quantised as its code generator does) against its float32 reference: Frobenius relative
    error, and the mapping's tolerance (:func:`mappings.hlscnn.conv2d_proof.term_gap`)."""
    from mappings.hlscnn import conv2d_nchw as M
    from mappings.hlscnn.conv2d_proof import term_gap
    H, W, C, O, K = (shape[d] for d in ("H", "W", "C", "O", "K"))
    xs = np.array(symbolic_data(C * H * W, 16, prefix="gx"), dtype=object).reshape(C, H, W)
    ws = np.array(symbolic_data(O * C * K * K, bits, prefix="gw"), dtype=object).reshape(O, C, K, K)
    return term_gap(M.make(bits), shape, padded_term(xs, ws, shape, bits), xs, ws, bits,
                    "x".join(str(shape[d]) for d in M.SHAPE_DIMS), samples, seed)


def symbolic_job(shape: dict, bits: int) -> tuple:
    """The mapping's job on symbolic data: (data, x_raw [C, H, W], w_raw [O, C, K, K], job), the data
    symbols the activations (16-bit) then the weights (``bits``-bit) in NCHW / OIHW order. Raises
    MappingError when the driver refuses ``shape``."""
    from ila.models.hlscnn import driver
    from mappings.hlscnn import conv2d_nchw as M
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"
    H, W, C, O, K = (shape[d] for d in ("H", "W", "C", "O", "K"))
    nx, nw = C * H * W, O * C * K * K
    data = symbolic_data(nx, 16, prefix="x") + symbolic_data(nw, bits, prefix="w")
    x_raw = np.array(data[:nx], dtype=object).reshape(C, H, W)
    w_raw = np.array(data[nx:], dtype=object).reshape(O, C, K, K)
    try:
        job = M.build_job(x_raw, w_raw, shape, bits)
    except driver.HlscnnError as e:
        raise MappingError(f"{name} proof: the driver refuses shape {shape}: {e}") from e
    return data, x_raw, w_raw, job


def term_setup(shape: dict, *, bits: int = 16) -> ProofSetupExt:
    """C > 1: the mapping's whole accelerator side (the host layout -- NCHW to padded HWC, OIHW to
    OHWI --, the exact stream the driver emits, the NCHW read-back) on symbolic activations and
    weights against the declared numerics term (:func:`padded_term`): every output equals the
    term's, for all data and all interpretations of HLSCNN's datapath functions."""
    from mappings.hlscnn import conv2d_nchw as M
    from mappings.hlscnn.conv2d_proof import DESCRIBE, term_proof
    from mappings.proof_ext import NumericsTerm
    data, x_raw, w_raw, job = symbolic_job(shape, bits)
    term = NumericsTerm(DESCRIBE + f"; on x padded with P = {shape['P']} zero rows and columns, out in NCHW order",
                        lambda: list(padded_term(x_raw, w_raw, shape, bits).reshape(-1)), lambda: gap(shape, bits))
    oh, ow = M.out_hw(shape)
    return term_proof(job, bits, data, shape["O"] * oh * ow, lambda k: f"out[0, {k // (oh * ow)}, {k // ow % oh}, {k % ow}]",
                      lambda reads: M.readback(job, reads), term)
