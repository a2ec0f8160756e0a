"""hlscnn.conv2d_nchw (16-bit weights) and hlscnn.conv2d_nchw_w8 (8-bit weights): the front-end's
2D convolution, NCHW/OIHW with symmetric zero padding, on HLSCNN, matched as the front-end emits it.

IR pattern: ``(nn.conv2d ?x ?w (strides S S) (padding P P P P))`` on float32: Relay's default
layouts (data NCHW, kernel OIHW), groups 1 and dilation 1 (closed pattern: any other value of an
unstated attribute is not a match), one stride S for rows and columns, the same zero padding P on
all four sides. Shapes: x[1, C, H, W], w[O, C, K, K] -> out[1, O, OH, OW] with
OH = (H + 2P - K) / S + 1, OW = (W + 2P - K) / S + 1 (integer division); batch 1, square kernels.
The paper (Appendix B, HLSCNN) maps any non-grouped ``nn.conv2d`` to the HLSCNN convolution and
"pads on the host before invoking the accelerator"; this mapping does that inside its own program.

Code generator (:func:`build_job`, the same code on integers and on proof terms): the host
quantises x to ACT (Q16.7) and w to the weight format (Q16.14, or Q8.6 for the 8-bit design),
lays the activations out as HWC with P zero rows/columns on each side (:func:`host_image`: NCHW ->
padded HWC, the zero activation is raw 0), the weights as OHWI (:func:`host_weights`), and emits
the HLSCNN driver's stream for that valid convolution (``ila.models.hlscnn.driver.conv2d_program``:
SoC-memory images, weight pull, registers, trigger, scratchpad-1 reads). The read-back is the
driver's (raw ACT outputs [OH, OW, O]) put back into NCHW by :func:`to_nchw`: float32-valued
[1, O, OH, OW]. The stream is the one ``prepare_conv2d(x NHWC, w OHWI, padding=P)`` emits
(tested), so the accelerator side is the HLSCNN stream of :mod:`mappings.hlscnn.conv2d` on the
padded image.

Compiler-IR ILA fragment (:func:`ir_fragment`): x (CHW) and w (OIHW) row-major; the padded input
[C, H + 2P, W + 2P] assembled by ``reshape`` copies (one per contiguous run) of x's rows and of a
fragment constant ``zero`` (W + 2P zero elements, :attr:`IrFragment.consts`); then
``nn.conv2d_nchw``. The same data movement as the compiler's lowering of a padded ``nn.conv2d``
(``compile.rewrites.lower``), which pads from a zero cell.

Refinement map (:func:`refinement`): IR x[c, y, x] <-> SoC-memory byte pair of the padded HWC image
at (y + P, x + P, c): ``2 * (((c / 8) * Hp + y + P) * Wp + x + P) * 8 + 2 * (c % 8)`` with
Hp = H + 2P, Wp = W + 2P; IR out[o, y, x] <-> scratchpad-1 byte pair
``2 * ((((o / 8) * OH + y) * OW + x) * 8 + o % 8)``.

Proof (``--method bmc``, one input channel): :mod:`mappings.hlscnn.conv2d_nchw_proof`, the
abstract-arithmetic proof of :mod:`mappings.hlscnn.conv2d_proof` with the host layout and padding
of this mapping on the accelerator side and the padded NCHW fragment on the IR side (several input
channels: against the declared numerics term). ``--method chc``: the phase proof of
:mod:`mappings.hlscnn.conv2d_nchw_chc` (the convolution loop nest for one tracked output, any
number of channels and outputs), whose loop proof does not grow with the number of outputs. Seeded bugs: :mod:`verify.mutations.hlscnn_nchw`.

Numerics: float32 reference on the original inputs (paper §4.4.1; :func:`reference`, an NCHW
convolution written here from Relay's definition, independent of the layout code); the
accelerator quantises to fixed point and truncates partial sums, as ``hlscnn.conv2d``.
"""
from __future__ import annotations

import numpy as np

from mappings.base import DataCondition, Mapping, MappingError, Proof, SideCondition
from mappings.common import IrFragment, Layout
from mappings.hlscnn import conv2d as V

SHAPE_DIMS = ("H", "W", "C", "O", "K", "S", "P")
# Measured (verify.simval.run_sim, seed 0, 100 inputs at the default shape 8x8x8x8x3x1x1): 16-bit
# weights mean 0.53 %, max 0.61 %; 8-bit weights mean 2.77 %, max 3.19 %. Fuzzing (run_fuzz seeds
# 0-2 x 60 examples over the strategy's shapes, P 0..2, with edge values): max 3.47 % (16-bit) and
# 4.24 % (8-bit). ResNet-20's shapes, 5 inputs each (16-bit / 8-bit max): 32x32x16x16x3x1x1 0.72 % /
# 3.91 %, 16x16x32x32x3x1x1 1.00 % / 5.59 %, 16x16x32x64x3x2x1 1.00 % / 5.60 %, 8x8x64x64x3x1x1
# 1.40 % / 7.90 %. Tolerances 6 % and 8 %, hlscnn.conv2d's (the same datapath on the padded image):
# 1.7x and 1.9x the fuzzing maxima. The 8-bit design's error grows with the fan-in (He weights
# shrink as 1/sqrt(9C) against the fixed Q8.6 step): at C = 64 it reaches its tolerance, and a call
# at a larger C fails its validation.
TOLERANCE = {16: 0.06, 8: 0.08}


def _padded(s: dict) -> dict:
    """hlscnn.conv2d's shape of the valid convolution on the padded image."""
    return {"H": s["H"] + 2 * s["P"], "W": s["W"] + 2 * s["P"], "C": s["C"], "O": s["O"], "K": s["K"], "S": s["S"]}


def out_hw(s: dict) -> tuple[int, int]:
    """(OH, OW) of shape ``s``."""
    return V._out(_padded(s))


def side_conditions(bits: int) -> tuple[SideCondition, ...]:
    """hlscnn.conv2d's side conditions on the padded image (H + 2P, W + 2P), and P >= 0."""
    def on_padded(c):
        return SideCondition(c.name, lambda s, c=c: c.check(_padded(s)), c.text + " (H and W after padding)")
    return (SideCondition("padding", lambda s: s["P"] >= 0, "the padding P must be at least 0"),
            *(on_padded(c) for c in V.side_conditions(bits)))


# ----------------------------------------------------------------------------- host layout (generic)
def host_image(x_chw, pad: int) -> np.ndarray:
    """The HWC activation image of the padded input: ``x_chw`` [C, H, W] (raw ACT ints or 16-bit
    terms) -> [H + 2P, W + 2P, C] with ``pad`` zero rows above and below and zero columns left and
    right (raw 0 is the ACT zero). Same dtype as the input (object arrays stay object arrays)."""
    x = np.asarray(x_chw)
    C, H, W = x.shape
    img = np.zeros((H + 2 * pad, W + 2 * pad, C), dtype=x.dtype)
    img[pad:pad + H, pad:pad + W, :] = x.transpose(1, 2, 0)
    return img


def host_weights(w_oihw) -> np.ndarray:
    """OIHW [O, C, K, K] -> OHWI [O, K, K, C], the driver's weight layout (ints or terms)."""
    return np.asarray(w_oihw).transpose(0, 2, 3, 1)


def to_nchw(out_hwo) -> np.ndarray:
    """The driver's read-back [OH, OW, O] -> [O, OH, OW] (ints or terms)."""
    return np.asarray(out_hwo).transpose(2, 0, 1)


def build_job(x_chw, w_oihw, shape: dict, bits: int):
    """The driver's job (``ila.models.hlscnn.driver.ConvJob``: stream and read commands) of the
    padded convolution on raw operands: x [C, H, W] ACT raw, w [O, C, K, K] raw in the weight format
    (numpy integers: the driver's numpy path; object arrays of ints or terms: its element path)."""
    from ila.models.hlscnn import driver as hd
    return hd.conv2d_program(host_image(x_chw, shape["P"]), host_weights(w_oihw), stride=shape["S"],
                             weight_bits=bits)


def readback(job, reads) -> np.ndarray:
    """The raw ACT outputs [O, OH, OW] (ints, or terms in proofs) from the reads of ``job``."""
    from ila.models.hlscnn import driver as hd
    return to_nchw(hd.readback(job, reads))


# ----------------------------------------------------------------------------- IR side
def ir_fragment(shape: dict) -> IrFragment:
    """The compiler-IR ILA fragment at ``shape`` (module docstring): inputs ``x`` [C, H, W],
    ``w`` [O, C, K, K] and the constant ``zero`` [W + 2P]; output [1, O, OH, OW]."""
    H, W, C, O, K, S, P = (shape[d] for d in SHAPE_DIMS)
    hp, wp = H + 2 * P, W + 2 * P
    oh, ow = out_hw(shape)
    lay = Layout()
    for name, shp in (("x", (C, H, W)), ("w", (O, C, K, K)), ("zero", (wp,)), ("xpad", (C, hp, wp)),
                      ("out", (1, O, oh, ow))):
        lay.add(name, shp)
    b = lay.base
    ops = []
    for c in range(C):
        for y in range(hp):
            row = b("xpad") + (c * hp + y) * wp
            if P <= y < P + H:
                if P:
                    ops.append(("reshape", [b("zero"), row, P]))
                ops.append(("reshape", [b("x") + (c * H + y - P) * W, row + P, W]))
                if P:
                    ops.append(("reshape", [b("zero"), row + P + W, P]))
            else:
                ops.append(("reshape", [b("zero"), row, wp]))
    ops.append(("nn.conv2d_nchw", [b("xpad"), b("w"), b("out"), C, hp, wp, O, (S << 24) | (K << 8) | K]))
    return IrFragment({k: lay.regions[k] for k in ("x", "w", "zero")}, ops, lay.regions["out"],
                      consts={"zero": np.zeros(wp, np.float32)})


def refinement(shape: dict) -> dict:
    H, W, C, O, P = shape["H"], shape["W"], shape["C"], shape["O"], shape["P"]
    hp, wp = H + 2 * P, W + 2 * P
    oh, ow = out_hw(shape)
    c, y, x = np.ix_(np.arange(C), np.arange(H), np.arange(W))
    o, o_y, o_x = np.ix_(np.arange(O), np.arange(oh), np.arange(ow))
    return {"x": ("vir_mem (byte pairs)", 2 * ((((c // 8) * hp + y + P) * wp + x + P) * 8 + c % 8)),
            "out": ("scratch_pad_1 (byte pairs)", 2 * ((((o // 8) * oh + o_y) * ow + o_x) * 8 + o % 8))}


def reference(shape: dict, inputs: dict) -> np.ndarray:
    """Relay's ``nn.conv2d`` (NCHW/OIHW, zero padding P, stride S) in float64 on the float inputs,
    rounded to float32: [1, O, OH, OW]."""
    S, P = shape["S"], shape["P"]
    x = np.pad(np.asarray(inputs["x"], np.float64)[0], ((0, 0), (P, P), (P, P)))
    w = np.asarray(inputs["w"], np.float64)
    O, _, K, _ = w.shape
    oh, ow = out_hw(shape)
    out = np.zeros((O, oh, ow))
    for ky in range(K):
        for kx in range(K):
            patch = x[:, ky:ky + S * (oh - 1) + 1:S, kx:kx + S * (ow - 1) + 1:S]       # [C, oh, ow]
            out += np.einsum("oc,cyx->oyx", w[:, :, ky, kx], patch)
    return out[None].astype(np.float32)


def random_inputs(shape: dict, rng: np.random.Generator) -> dict:
    """hlscnn.conv2d's distribution in NCHW/OIHW: activations ~ N(0, 1); weights ~ N(0, 2/fan_in)
    (He), standard deviation capped at 0.5 and values clipped into the weight formats' range."""
    H, W, C, O, K = (shape[d] for d in ("H", "W", "C", "O", "K"))
    std = min(np.sqrt(2 / (K * K * C)), 0.5)
    return {"x": rng.standard_normal((1, C, H, W)).astype(np.float32),
            "w": np.clip(rng.standard_normal((O, C, K, K)) * std, -1.98, 1.98).astype(np.float32)}


def edge_inputs(shape: dict, rng: np.random.Generator) -> list[dict]:
    """Zero activations; negative zeros everywhere; weights at the weight format's extremes."""
    base = random_inputs(shape, rng)
    x, w = base["x"], base["w"]
    top = np.where(rng.integers(0, 2, w.shape) == 1, 1.984375, -2.0).astype(np.float32)
    return [{"x": np.zeros_like(x), "w": w}, {"x": np.full_like(x, -0.0), "w": np.full_like(w, -0.0)},
            {"x": x, "w": top}]


def _non_finite(shape: dict, inputs: dict) -> float:
    return float(sum(int(np.count_nonzero(~np.isfinite(np.asarray(inputs[k], np.float64)))) for k in ("x", "w")))


DATA_CONDITIONS = (DataCondition("finite data", _non_finite, 1.0,
                                 "the measure is the number of NaN or infinite elements of x and w; fixed-point "
                                 "quantisation needs finite numbers"),)


# ----------------------------------------------------------------------------- compiler operand adapters
def match_shape(attrs: dict, shapes: dict, out_shape: tuple) -> dict | None:
    """At ``(nn.conv2d ?x ?w (strides S S) (padding P P P P))`` (NCHW/OIHW, groups 1, dilation 1: the
    pattern is closed): x[1, C, H, W], w[O, C, K, K]; None for a batch other than 1, a non-square
    kernel, or operands that are not 4-D."""
    x, w = shapes["?x"], shapes["?w"]
    if len(x) != 4 or len(w) != 4 or x[0] != 1 or w[2] != w[3] or w[1] != x[1]:
        return None
    pad = tuple(attrs.get("padding", (0, 0, 0, 0)))
    pad = (pad * 4)[:4] if len(pad) == 1 else (pad + pad if len(pad) == 2 else pad)
    if len(set(pad)) != 1:
        return None
    return {"H": x[2], "W": x[3], "C": x[1], "O": w[0], "K": w[2], "S": attrs["strides"][0], "P": int(pad[0])}


def bind_operands(shape: dict, operands: list) -> dict:
    return {"x": operands[0], "w": operands[1]}


def _operands(name: str, shape: dict, inputs: dict) -> tuple[np.ndarray, np.ndarray]:
    """x and w as float64 arrays of the shape's NCHW/OIHW shapes; MappingError naming the tensor
    (wrong shape) or the first non-finite element."""
    H, W, C, O, K = (shape[d] for d in ("H", "W", "C", "O", "K"))
    want = {"x": (1, C, H, W), "w": (O, C, K, K)}
    out = [np.asarray(inputs[k], np.float64) for k in ("x", "w")]
    for k, a in zip(("x", "w"), out):
        if a.shape != want[k]:
            raise MappingError(f"{name}: {k} has shape {a.shape}, expected {want[k]} at shape "
                               + "x".join(str(shape[d]) for d in SHAPE_DIMS))
    for k, a in zip(("x", "w"), out):
        bad = ~np.isfinite(a)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise MappingError(f"{name}: {k}{list(idx)} = {float(a[idx])}: fixed-point quantisation needs finite "
                               "numbers")
    return out[0], out[1]


def make(bits: int) -> Mapping:
    name = "hlscnn.conv2d_nchw" if bits == 16 else "hlscnn.conv2d_nchw_w8"

    def program(shape, inputs):
        """The code generator: quantise (ACT Q16.7; Q16.14 or Q8.6 weights), lay out and pad on the host
        (:func:`build_job`), the HLSCNN stream and its read-back (float32-valued [1, O, OH, OW]);
        ``canonical`` builds the same stream through the driver's element path on object arrays (the
        path the proof runs); ``hints`` name the weight-pull range."""
        from ila.models.port import AccProgram
        from ila.numerics.fixed_point import ACT, weight_format
        x, w = _operands(name, shape, inputs)
        xq, wq = ACT.quantize(x[0]), weight_format(bits).quantize(w)
        job = build_job(xq, wq, shape, bits)

        def canonical():
            j = build_job(xq.astype(object), wq.astype(object), shape, bits)
            return j.commands + j.read_commands
        return AccProgram(job.stream(),
                          lambda reads: ACT.to_float(np.asarray(readback(job, reads), np.int64))[None],
                          canonical=canonical, hints={"pull": job.pull})

    def shape_strategy():
        from hypothesis import strategies as st

        @st.composite
        def shapes(draw):
            # odd, non-square shapes, padding 0..2; at least 2 x 2 outputs and 4 output channels (the
            # Frobenius error of a handful of outputs is dominated by cancellation in single sums)
            k, s, p = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 2))
            oh, ow = draw(st.integers(2, 5)), draw(st.integers(2, 5))
            h = max(1, (oh - 1) * s + k - 2 * p + draw(st.integers(0, s - 1)))
            w = max(1, (ow - 1) * s + k - 2 * p)
            return {"H": h, "W": w, "C": draw(st.integers(1, 12)), "O": draw(st.integers(4, 12)), "K": k, "S": s,
                    "P": p}
        return shapes().filter(lambda s: s["K"] <= min(s["H"], s["W"]) + 2 * s["P"]
                               and min(out_hw(s)) >= 2)

    return Mapping(
        name=name,
        ir_pattern="(nn.conv2d ?x ?w (strides S S) (padding P P P P))",
        description=f"NCHW conv2d with symmetric zero padding on HLSCNN, padding and layout on the host "
                    f"({bits}-bit fixed-point weights, Q16.7 activations)",
        shape_dims=SHAPE_DIMS,
        default_shape={"H": 8, "W": 8, "C": 8, "O": 8, "K": 3, "S": 1, "P": 1},
        side_conditions=side_conditions(bits),
        data_conditions=DATA_CONDITIONS,
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
        # BMC over abstract arithmetic (C = 1): mappings.hlscnn.conv2d_nchw_proof (named, not imported)
        proof=Proof(f"mappings.hlscnn.conv2d_nchw_proof:proof_setup{'' if bits == 16 else '_w8'}",
                    {"H": 3, "W": 3, "C": 1, "O": 2, "K": 2, "S": 1, "P": 1},
                    chc_spec=f"mappings.hlscnn.conv_allsizes:chc_spec{'' if bits == 16 else '_w8'}"),
        mutations="verify.mutations.hlscnn_nchw:conv2d_nchw_mutations",
    )


MAPPING = make(16)
