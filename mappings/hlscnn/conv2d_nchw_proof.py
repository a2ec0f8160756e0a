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
leave equal outputs, element by element of out[1, O, OH, OW]. So every activation and every
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
    """Both fragments over shared symbolic data (module docstring). Raises MappingError for
    ``numerics`` other than 'uf', C != 1, or a shape the mapping refuses."""
    from ila.models.hlscnn import driver
    from ila.models.hlscnn.model import build_hlscnn
    from mappings.hlscnn import conv2d_nchw as M
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"
    if numerics != "uf":
        raise MappingError(f"{name}: numerics {numerics!r} is not available for proofs (use 'uf': HLSCNN's MAC, "
                           f"roundings and partial-output adds uninterpreted, with link axioms)")
    M.make(bits).check_shape(shape)
    if shape["C"] != 1:
        raise MappingError(f"{name}: the abstract-arithmetic proof needs C = 1 input channel, got C = {shape['C']}: "
                           f"HLSCNN rounds once per kernel tap after summing its block of 8 channels, while the IR's "
                           f"conv2d adds one product at a time in channel-major order, so with C > 1 no sound link "
                           f"axioms relate the two (see mappings.hlscnn.conv2d_proof)")
    H, W, O, K, P = shape["H"], shape["W"], shape["O"], shape["K"], shape["P"]
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
        Side(build_hlscnn(bits, 32, 4), job.commands + job.read_commands, "scratch_pad_1", port=_port()),
        data, outs, axioms=[instantiate(num)], funcs=[num.mul, num.add],
        describe_output=lambda k: f"out[0, {k // (oh * ow)}, {k // ow % oh}, {k % ow}]",
        readback=lambda reads: M.readback(job, reads), split_outputs=True,
        covers=("codegen-bytes", "order", "model-loops", "read-back"))


def proof_setup_w8(shape: dict, *, numerics: str = "uf") -> ProofSetupExt:
    """hlscnn.conv2d_nchw_w8's proof setup (8-bit weights)."""
    return proof_setup(shape, bits=8, numerics=numerics)
