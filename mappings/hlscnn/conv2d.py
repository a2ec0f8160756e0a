"""hlscnn.conv2d (16-bit weights) and hlscnn.conv2d_w8 (8-bit weights): 2D convolution on HLSCNN.

IR pattern: ``(nn.conv2d ?x ?w (strides S S) (padding 0 0) (data_layout NHWC) (kernel_layout OHWI))``
with batch 1, no groups, no bias; x[1, H, W, C], w[O, K, K, C] -> out[1, OH, OW, O],
OH = (H - K) / S + 1 (valid padding; a padded convolution is a host-side pad followed by this).

Compiler-IR ILA fragment (:func:`ir_fragment`): x (HWC) and w (OHWI) row-major, ``transpose``
of w viewed as [O][K*K*C] into HWIO, then ``nn.conv2d_nhwc``.

Accelerator fragment (``hlscnn_driver.prepare_conv2d``, the 3LA HLSCNN driver sequence):
virtual-SoC-memory writes of the activation image (channel blocks of 8, ACT Q16.7) and the weight
image (filter blocks x channel blocks x K x K x 8, Q16.14 or Q8.6), per 16-byte weight beat a
SocMemBaseAddr configuration and a scratchpad-0 write pulling it over the AXI master, the
convolution registers (bases, input/output/kernel sizes with the stride, channel config), the
trigger, and the scratchpad-1 reads of every output beat.

Refinement map (:func:`refinement`): IR x[y, x, c] <-> SoC-memory byte pair
``2 * (((c / 8) * H + y) * W + x) * 8 + 2 * (c % 8)``; IR out[y, x, o] <-> scratchpad-1 byte pair
``2 * ((((o / 8) * OH + y) * OW + x) * 8 + o % 8)``.

Proof (``--method bmc``, one input channel): :mod:`mappings.hlscnn.conv2d_proof` proves the IR
fragment, computed in HLSCNN's per-tap numerics with the MAC, roundings and partial-output adds
uninterpreted, equal to the accelerator fragment for all data; with C > 1 the hardware's per-tap
rounding of 8-channel sums has no exact IR counterpart (see there).

Numerics: float32 reference on the original inputs (paper §4.4.1); the accelerator quantises to
fixed point (activations Q16.7, weights Q16.14 / Q8.6) and truncates partial sums.
"""
from __future__ import annotations

import numpy as np

from mappings.base import Mapping, Proof, SideCondition
from mappings.common import IrFragment, Layout

# Measured (verify.simval.run_sim, seed 0, 100 inputs at 16x16x16x16x3x1): 16-bit weights mean
# 0.72 %, max 0.76 %; 8-bit weights mean 3.89 %, max 4.16 %. Fuzzing (3 seeds x 60 examples over
# the strategy's shapes, with edge values): max 3.3 % (16-bit; one-channel 1x1 kernels, where the
# Q16.7 rounding of a few activations is not averaged out) and 3.5 % (8-bit). Tolerances 6 % and
# 8 %: about 1.8x and 1.9x the largest error seen.
TOLERANCE = {16: 0.06, 8: 0.08}


def _out(s):
    return (s["H"] - s["K"]) // s["S"] + 1, (s["W"] - s["K"]) // s["S"] + 1


def side_conditions(bits: int):
    from ila.models.hlscnn.model import SPAD_BYTES, VIR_MEM_BYTES
    blk = lambda v: -(-v // 8)    # noqa: E731

    def soc_bytes(s):
        act = blk(s["C"]) * 8 * s["H"] * s["W"] * 2
        return -(-act // 16) * 16 + blk(s["O"]) * 8 * s["K"] * s["K"] * blk(s["C"]) * 8 * bits // 8

    def w_bytes(s):
        return blk(s["O"]) * 8 * s["K"] * s["K"] * blk(s["C"]) * 8 * bits // 8
    return (
        SideCondition("positive sizes", lambda s: min(s["H"], s["W"], s["C"], s["O"], s["K"], s["S"]) >= 1,
                      "all dimensions must be at least 1"),
        SideCondition("kernel fits the input", lambda s: s["K"] <= min(s["H"], s["W"]),
                      "the kernel K x K must fit the (valid-padded) input H x W"),
        SideCondition("stride fits", lambda s: s["S"] <= 255, "the stride S must fit the 8-bit stride field"),
        SideCondition("register fields", lambda s: s["C"] < 4096 and s["O"] < 4096 and s["H"] < 1024 and
                      s["W"] < 1024 and s["K"] < 256,
                      "C and O must fit 12-bit, H and W 10-bit and K 8-bit configuration fields"),
        SideCondition("fits the SoC memory", lambda s: soc_bytes(s) <= VIR_MEM_BYTES,
                      f"the activation and weight images must fit the {VIR_MEM_BYTES}-byte virtual SoC memory"),
        SideCondition("weights fit scratchpad 0", lambda s: w_bytes(s) <= SPAD_BYTES,
                      f"the weight image must fit the {SPAD_BYTES}-byte scratchpad 0"),
        SideCondition("outputs fit scratchpad 1",
                      lambda s: blk(s["O"]) * 8 * _out(s)[0] * _out(s)[1] * 2 <= SPAD_BYTES,
                      f"the outputs (8-channel blocks, 2 bytes each) must fit the {SPAD_BYTES}-byte scratchpad 1"),
    )


def ir_fragment(shape: dict) -> IrFragment:
    H, W, C, O, K, S = (shape[d] for d in ("H", "W", "C", "O", "K", "S"))
    oh, ow = _out(shape)
    lay = Layout()
    for name, shp in (("x", (H, W, C)), ("w", (O, K, K, C)), ("w_hwio", (K, K, C, O)), ("out", (1, oh, ow, O))):
        lay.add(name, shp)
    b = lay.base
    return IrFragment({k: lay.regions[k] for k in ("x", "w")},
                      [("transpose", [b("w"), b("w_hwio"), O, K * K * C]),
                       ("nn.conv2d_nhwc", [b("x"), b("w_hwio"), b("out"), C, H, W, O, (S << 24) | (K << 8) | K])],
                      lay.regions["out"])


def refinement(shape: dict) -> dict:
    H, W, C, O = shape["H"], shape["W"], shape["C"], shape["O"]
    oh, ow = _out(shape)
    y, x, c = np.ix_(np.arange(H), np.arange(W), np.arange(C))
    o_y, o_x, o = np.ix_(np.arange(oh), np.arange(ow), np.arange(O))
    return {"x": ("vir_mem (byte pairs)", 2 * ((((c // 8) * H + y) * W + x) * 8 + c % 8)),
            "out": ("scratch_pad_1 (byte pairs)", 2 * ((((o // 8) * oh + o_y) * ow + o_x) * 8 + o % 8))}


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    """Activations ~ N(0, 1); weights ~ N(0, 2/fan_in) (He), with the standard deviation capped at 0.5
    so that the weights stay inside the weight formats' range [-2, 2) (a data side condition: larger
    weights saturate on the accelerator, whatever the mapping)."""
    H, W, C, O, K = (shape[d] for d in ("H", "W", "C", "O", "K"))
    std = min(np.sqrt(2 / (K * K * C)), 0.5)
    return {"x": rng.standard_normal((1, H, W, C)).astype(np.float32),
            "w": np.clip(rng.standard_normal((O, K, K, C)) * std, -1.98, 1.98).astype(np.float32)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    base = random_inputs(shape, rng)
    x, w = base["x"], base["w"]
    top = np.where(rng.integers(0, 2, w.shape) == 1, 1.984375, -2.0).astype(np.float32)   # weight-format extremes
    return [{"x": np.zeros_like(x), "w": w}, {"x": np.full_like(x, -0.0), "w": np.full_like(w, -0.0)},
            {"x": x, "w": top}]


def reference(shape: dict, inputs: dict) -> np.ndarray:
    from ila.models.hlscnn.reference import conv2d_float_ref
    return conv2d_float_ref(inputs["x"], inputs["w"], stride=shape["S"])


def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(nn.conv2d ?x ?w (strides S S) (padding 0 0) (data_layout NHWC) (kernel_layout OHWI))``:
    x[1, H, W, C], w[O, K, K, C] (also read in NCHW/OIHW when the node says so); one image,
    square kernels."""
    x, w = shapes["?x"], shapes["?w"]
    if attrs.get("data_layout") == "NHWC":
        x, w = (x[0], x[3], x[1], x[2]), (w[0], w[3], w[1], w[2])
    if len(x) != 4 or w[2] != w[3] or x[0] != 1:
        return None
    return {"H": x[2], "W": x[3], "C": x[1], "O": w[0], "K": w[2], "S": attrs["strides"][0]}


def bind_operands(shape: dict, operands: list) -> dict:
    return {"x": operands[0], "w": operands[1]}


def make(bits: int) -> Mapping:
    name = "hlscnn.conv2d" if bits == 16 else "hlscnn.conv2d_w8"

    def program(shape, inputs):
        """The code generator (``driver.prepare_conv2d``): the emitted stream (SoC-memory images,
        weight pull, registers, trigger, scratchpad-1 reads) and its read-back (the ACT outputs as
        float32 [1, OH, OW, O]); ``canonical`` builds the same stream through the element path the
        proofs run (``conv2d_program`` on object arrays); ``hints`` name the weight-pull range."""
        from ila.models.hlscnn import driver as hd
        from ila.models.port import AccProgram
        from ila.numerics.fixed_point import ACT
        job = hd.prepare_conv2d(inputs["x"], inputs["w"], stride=shape["S"], weight_bits=bits)

        def canonical():
            j = hd.conv2d_program(job.x_raw.astype(object), job.w_raw.astype(object), stride=job.stride,
                                  weight_bits=bits, bias_raw=job.bias_raw, has_bias=job.has_bias, relu=job.relu)
            return j.commands + j.read_commands
        return AccProgram(job.stream(),
                          lambda reads: ACT.to_float(np.asarray(hd.readback(job, reads), np.int64))[None],
                          canonical=canonical, hints={"pull": job.pull})

    def shape_strategy():
        from hypothesis import strategies as st

        @st.composite
        def shapes(draw):
            # at least 2 x 2 output pixels and 4 output channels: the Frobenius relative error of a
            # handful of output values is dominated by cancellation in single sums, not by the mapping
            k, s = draw(st.integers(1, 3)), draw(st.integers(1, 2))
            oh, ow = draw(st.integers(2, 5)), draw(st.integers(2, 5))
            return {"H": (oh - 1) * s + k + draw(st.integers(0, s - 1)), "W": (ow - 1) * s + k,
                    "C": draw(st.integers(1, 12)), "O": draw(st.integers(4, 12)), "K": k, "S": s}
        return shapes()

    return Mapping(
        name=name,
        ir_pattern="(nn.conv2d ?x ?w (strides S S) (padding 0 0) (data_layout NHWC) (kernel_layout OHWI))",
        description=f"NHWC conv2d on HLSCNN ({bits}-bit fixed-point weights, Q16.7 activations)",
        shape_dims=("H", "W", "C", "O", "K", "S"),
        default_shape={"H": 16, "W": 16, "C": 16, "O": 16, "K": 3, "S": 1},
        side_conditions=side_conditions(bits),
        match_shape=match_shape,
        bind_operands=bind_operands,
        tolerance=TOLERANCE[bits],
        random_inputs=random_inputs,
        reference=reference,
        program=program,
        machine="ila.models.hlscnn.port:PORT" if bits == 16 else "ila.models.hlscnn.port:PORT_W8",
        shape_strategy=shape_strategy,
        edge_inputs=edge_inputs,
        ir_fragment=ir_fragment, refinement=refinement,
        # BMC over abstract arithmetic (C = 1): mappings.hlscnn.conv2d_proof (named, not imported)
        mutations="verify.mutations.hlscnn:conv2d_mutations" if bits == 16 else "verify.mutations.hlscnn:conv2d_w8_mutations",
        proof=Proof(f"mappings.hlscnn.conv2d_proof:proof_setup{'' if bits == 16 else '_w8'}",
                    {"H": 3, "W": 3, "C": 1, "O": 2, "K": 2, "S": 1}),
    )


MAPPING = make(16)
