"""Seeded bugs of the VTA mappings (vta.gemm, vta.add, vta.relu), one or more per layer of the
trusted path their proofs claim (``mappings.vta.common.COVERS``: codegen-bytes, order,
configuration-fields, model-loops; vta.dense's split proof also claims its read-back, see
``dense_mutations``). Each
patches production code (the driver, the mapping's declared output map, or the model) for the
duration of a check; each must be refuted by BMC with a replayed counterexample at the mapping's
proof shape.

Not here, because at the proof shapes they are not bugs: for vta.gemm a permutation of the bytes
inside every 8-byte DRAM word applied by the packer to all tensors alike (``dram_word`` byte
order) permutes the K lanes of x and of every weight row identically, which leaves each dot
product unchanged, and the only other bytes, the micro-ops, are all zero when K <= 16. The gemm
lane bugs below permute lanes differently for x and w (or across weight rows), which a dot product
does see.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from verify.mutations import Mutation, Patch

_DRIVER = "ila.models.vta.driver"
_MODEL = "ila.models.vta.model"
_GEMM = "mappings.vta.gemm"
_EW = "mappings.vta.elementwise"
_MODEL_CACHE = ("ila.models.vta.model:build_vta",)


# ----------------------------------------------------------------------------- codegen bytes
def _reversed_lanes(pack_element):
    """The packer writes the lanes of every SRAM element in reversed order."""
    return lambda lanes, width: pack_element(list(lanes)[::-1], width)


def _input_lane_pairs_swapped(pack_element):
    """The packer swaps adjacent lanes (2i <-> 2i+1, inside one 8-byte DRAM word) of the int8
    input rows (16-lane elements) only; weight tiles (256 lanes) are packed correctly."""
    def mutated(lanes, width):
        lanes = list(lanes)
        if width == 8 and len(lanes) == 16:
            lanes = [lanes[i ^ 1] for i in range(16)]
        return pack_element(lanes, width)
    return mutated


def _big_endian_words(dram_word):
    """Every 8-byte DRAM write carries its bytes in reversed order."""
    return lambda parts: dram_word(list(parts)[::-1])


def _transposed_tiles(weight_tiles):
    """Every 16x16 weight tile stored transposed ([in][out] instead of [out][in])."""
    return lambda wp, *a, **kw: weight_tiles(wp, *a, **kw).transpose(0, 1, 3, 2).copy()


def _swapped_acc_rows(acc_rows):
    """Accumulator rows r and r^1 (when both exist) swapped in the DRAM image: a bijection of
    the operands' row addresses; the LOADs still read rows in order."""
    def mutated(t, rows, lanes):
        out = acc_rows(t, rows, lanes)
        perm = [r ^ 1 if (r ^ 1) < rows else r for r in range(rows)]
        return out[perm]
    return mutated


def _dram_put(change):
    """A ``driver._Dram`` whose ``put`` goes through ``change(dram, buf, elem, data) -> (elem,
    data)`` first."""
    def wrap(cls):
        class Mutated(cls):
            def put(self, buf, elem, data):
                elem, data = change(self, buf, elem, data)
                super().put(buf, elem, data)
        return Mutated
    return wrap


def _input_row_shift(dram, buf, elem, data):
    import numpy as np
    if buf == "inp":
        elem += np.asarray(data).shape[-1] // dram.cfg.lanes("inp")     # kb elements = one row of x
    return elem, data


def _first_acc_operand_shift(dram, buf, elem, data):
    """a[k] (the first accumulator operand) stored where a[k+1] belongs: lanes shifted by one."""
    import numpy as np
    if buf == "acc" and not getattr(dram, "_shifted", False):
        dram._shifted = True
        flat = np.asarray(data, dtype=object).reshape(-1)
        data = np.concatenate([np.zeros(1, dtype=object), flat[:-1]]).reshape(np.shape(data))
    return elem, data


# ----------------------------------------------------------------------------- order
def _last_write_after_instructions(program_commands):
    """The last 8-byte DRAM write of the image is emitted after the instructions (so after the
    LOAD that reads it)."""
    def mutated(prog):
        cmds = program_commands(prog)
        writes = [i for i, c in enumerate(cmds) if c.get("vta_vir_mem_mode_in")]
        if writes:
            cmds.append(cmds.pop(writes[-1]))
        return cmds
    return mutated


# ----------------------------------------------------------------------------- instruction fields
def _field(pick, **changes):
    """The encoder sees instructions for which ``pick(insn)`` holds with ``changes`` (field ->
    f(value)) applied: a generator that emits a wrong instruction field."""
    def wrap(encode):
        def mutated(insn, *a, **kw):
            if pick(insn):
                insn = dataclasses.replace(insn, **{k: f(getattr(insn, k)) for k, f in changes.items()})
            return encode(insn, *a, **kw)
        return mutated
    return wrap


def _replace_when(insn, field: str, cond, new):
    """``insn`` with ``field`` = ``new`` where ``cond`` holds (ints: decided now; a term: an ite)."""
    from ila.expr import Expr, bv_const, ite
    old = getattr(insn, field)
    if isinstance(cond, Expr):
        def w(v):
            return v if isinstance(v, Expr) else bv_const(v, 32)
        new = ite(cond, w(new), w(old))
    elif not cond:
        new = old
    return dataclasses.replace(insn, **{field: new})


def _some_sizes(field: str, when, value):
    """The generator's accumulating GEMM (``dense_instructions``, whose sizes are ints, or terms in
    the all-sizes proof) has ``field`` = ``value(kb, mb, rows)`` where ``when(kb, mb, rows)`` holds:
    a configuration field wrong only at some sizes. ``when`` and ``value`` get the sizes as ints or
    32-bit terms alike."""
    def wrap(dense_instructions):
        def mutated(kb, mb, bases, chunks, **kw):
            insns = dense_instructions(kb, mb, bases, chunks, **kw)
            k = 0
            for i, insn in enumerate(insns):
                if type(insn).__name__ == "GemmInsn" and not insn.reset:
                    rows = chunks[k][1]
                    k += 1
                    insns[i] = _replace_when(insn, field, when(kb, mb, rows), value(kb, mb, rows))
            return insns
        return mutated
    return wrap


def _alu_some_sizes(field: str, when, value):
    """The generator's element-wise ALU loop (``elementwise_instructions``, ``rows`` an int or a
    term) has ``field`` = ``value(rows)`` where ``when(rows)`` holds."""
    def wrap(elementwise_instructions):
        def mutated(op, rows, bases, **kw):
            return [_replace_when(i, field, when(rows), value(rows)) if type(i).__name__ == "AluInsn" else i
                    for i in elementwise_instructions(op, rows, bases, **kw)]
        return mutated
    return wrap


def _ge(x, c):
    """x >= c for an int, x >=u c for a term."""
    from ila.expr import Expr
    return x.uge(c) if isinstance(x, Expr) else x >= c


def _is(kind: str, **fields):
    def pick(insn):
        return type(insn).__name__ == kind and all(getattr(insn, k, None) == v for k, v in fields.items())
    return pick


# ----------------------------------------------------------------------------- model, declared map
def _unsigned_int8_operands(sext):
    """The model's GEMM zero-extends its int8 operands (every 8-bit sign extension is a zero
    extension)."""
    from ila import zext

    def mutated(e, width):
        return zext(e, width) if e.sort.width == 8 else sext(e, width)
    return mutated


def _big_endian_lanes(load_le):
    """The model's LOADs assemble multi-byte lanes big-endian."""
    def mutated(mem, addr, nbytes):
        if nbytes == 1:
            return load_le(mem, addr, 1)
        from ila import concat, load
        return concat(*[load(mem, addr + b) for b in range(nbytes)])
    return mutated


def _plus(delta):
    return lambda entries: (lambda shape: entries(shape) + delta)


def _common(what: str) -> list[Mutation]:
    return [
        Mutation("lane_order", "codegen-bytes", "driver: the packer writes every SRAM element's lanes in reversed order",
                 (Patch(_DRIVER, "pack_element", _reversed_lanes),)),
        Mutation("write_after_instructions", "order", f"driver: the last 8-byte DRAM write ({what}) is emitted after "
                 "the instructions", (Patch(_DRIVER, "program_commands", _last_write_after_instructions),)),
    ]


def _readback_lanes_rotated(acc_program):
    """The driver's read-back takes lane l of every accumulator row it read from lane l + 1
    (cyclically): the stream is right, the result is assembled wrong."""
    def mutated(prog, entries):
        p = acc_program(prog, entries)
        return dataclasses.replace(p, readback=lambda reads: p.readback([np.roll(np.asarray(r), -1) for r in reads]))
    return mutated


def gemm_mutations() -> dict[str, Mutation]:
    M = _common("of the weights") + [
        Mutation("readback_lanes_rotated", "read-back",
                 "driver: the read-back takes every accumulator lane from the next lane of its row (cyclically)",
                 (Patch("mappings.vta.common", "acc_program", _readback_lanes_rotated),)),
        Mutation("input_lane_pairs_swapped", "codegen-bytes",
                 "driver: the packer swaps adjacent lanes inside each DRAM word of the input rows (not the weights)",
                 (Patch(_DRIVER, "pack_element", _input_lane_pairs_swapped),)),
        Mutation("weight_block_transposed", "codegen-bytes",
                 "generator: every 16x16 weight tile is stored transposed (a bijective address permutation)",
                 (Patch(_DRIVER, "weight_tiles", _transposed_tiles),)),
        Mutation("input_row_off_by_one", "codegen-bytes", "generator: input row n is stored where row n + 1 belongs",
                 (Patch(_DRIVER, "_Dram", _dram_put(_input_row_shift)),)),
        Mutation("gemm_uop_end_short", "configuration-fields",
                 "generator: the accumulating GEMM's uop_end is one short (the last K block is not multiplied)",
                 (Patch(_DRIVER, "encode", _field(_is("GemmInsn", reset=0), uop_end=lambda v: v - 1)),)),
        Mutation("output_entry_off_by_one", "model-loops",
                 "declared output map: IR out[n, m] is compared with the accumulator entry of out[n, m + 1]",
                 (Patch(_GEMM, "acc_index", _plus(1)),)),
        Mutation("unsigned_mac", "model-loops", "model: GEMM zero-extends its int8 operands",
                 (Patch(_MODEL, "sext", _unsigned_int8_operands),), _MODEL_CACHE),
    ] + allsizes_mutations()
    return {m.name: m for m in M}


def allsizes_mutations() -> list[Mutation]:
    """Configuration fields wrong only at some sizes, which the fixed-shape proofs' shapes do not
    reach (checked by the all-sizes proof, whose counterexample search finds a shape)."""
    return [
        Mutation("wgt_factor_short_some_sizes", "configuration-fields",
                 "generator: the accumulating GEMM's wgt_factor_in is kb - 1 when K has 3 or more blocks of 16 "
                 "(K > 32): the second output block reads the wrong weight tiles",
                 (Patch(_DRIVER, "dense_instructions",
                        _some_sizes("wgt_factor_in", lambda kb, mb, rows: _ge(kb, 3), lambda kb, mb, rows: kb - 1)),)),
        Mutation("iter_out_short_near_max", "configuration-fields",
                 "generator: the accumulating GEMM's iter_out is one short when x has 1024 rows or more (near the "
                 "largest N the input SRAM allows): the last row is not accumulated",
                 (Patch(_DRIVER, "dense_instructions",
                        _some_sizes("iter_out", lambda kb, mb, rows: _ge(rows, 1024), lambda kb, mb, rows: rows - 1)),)),
    ]


def _elementwise(op: str) -> list[Mutation]:
    return _common("of the last operand") + [
        Mutation("word_byte_order", "codegen-bytes", "driver: every 8-byte DRAM write carries its bytes reversed",
                 (Patch(_DRIVER, "dram_word", _big_endian_words),)),
        Mutation("generator_address_permutation", "codegen-bytes",
                 "generator: accumulator rows r and r^1 of the operands swapped in the DRAM image (a bijection)",
                 (Patch(_DRIVER, "acc_rows", _swapped_acc_rows),)),
        Mutation("input_element_off_by_one", "codegen-bytes",
                 "generator: a[k] is stored where a[k + 1] belongs (4 bytes further)",
                 (Patch(_DRIVER, "_Dram", _dram_put(_first_acc_operand_shift)),)),
        Mutation("output_row_off_by_one", "model-loops",
                 "declared output map: IR out[k] is compared with the accumulator entry one row (16 entries) further",
                 (Patch(_EW, "acc_entries", _plus(16)),)),
        Mutation("big_endian_lanes", "model-loops", "model: LOAD assembles each int32 lane big-endian",
                 (Patch(_MODEL, "_load_le", _big_endian_lanes),), _MODEL_CACHE),
    ]


def alu_allsizes_mutations() -> list[Mutation]:
    """The element-wise ALU loop's configuration fields wrong only at some sizes (checked by the
    all-sizes proofs of vta.add and vta.relu; their fixed proof shape, 2 rows, is correct)."""
    return [
        Mutation("alu_iter_out_short_some_sizes", "configuration-fields",
                 "generator: the ALU loop's iter_out is rows - 1 from 5 accumulator rows on (n > 64): the last row "
                 "is not computed",
                 (Patch(_DRIVER, "elementwise_instructions",
                        _alu_some_sizes("iter_out", lambda rows: _ge(rows, 5), lambda rows: rows - 1)),)),
        Mutation("alu_iter_out_short_near_max", "configuration-fields",
                 "generator: the ALU loop's iter_out is rows - 1 from 1000 accumulator rows on (near the largest n "
                 "the accumulator allows)",
                 (Patch(_DRIVER, "elementwise_instructions",
                        _alu_some_sizes("iter_out", lambda rows: _ge(rows, 1000), lambda rows: rows - 1)),)),
    ]


def add_mutations() -> dict[str, Mutation]:
    M = _elementwise("add") + alu_allsizes_mutations() + [
        Mutation("alu_src_factor", "configuration-fields",
                 "generator: the ALU ADD's src_factor_out is 0 (every row adds the first row of b)",
                 (Patch(_DRIVER, "encode", _field(_is("AluInsn"), src_factor_out=lambda v: 0)),)),
    ]
    return {m.name: m for m in M}


def relu_mutations() -> dict[str, Mutation]:
    M = _elementwise("relu") + alu_allsizes_mutations() + [
        Mutation("relu_immediate", "configuration-fields", "generator: the ALU MAX's immediate is -1 instead of 0",
                 (Patch(_DRIVER, "encode", _field(_is("AluInsn"), imm=lambda v: v - 1)),)),
    ]
    return {m.name: m for m in M}


def _last_pass_row_short(passes):
    """The tiling drops the last row of the last pass (when it has more than one): that output
    row is computed by no pass. Each pass is still a correct vta.gemm program, so only the
    tiling lemma of ``--method chc`` sees it (BMC of a one-pass shape proves the pass)."""
    def mutated(shape):
        out = passes(shape)
        rows, cols = out[-1]
        if rows.stop - rows.start > 1:
            out[-1] = (slice(rows.start, rows.stop - 1), cols)
        return out
    return mutated


def _readback_rows_rotated(int_program):
    """The whole program's read-back places the result rows one row down, cyclically (every pass's
    stream and its own read-back are right; only the assembly of out[N, M] is wrong)."""
    def mutated(shape, qx, qw):
        prog = int_program(shape, qx, qw)
        return dataclasses.replace(prog, readback=lambda reads: np.roll(prog.readback(reads), 1, axis=0))
    return mutated


def _runner_weight_rows_rotated(int_program):
    """The runner's whole program builds its passes from the weight rows one row up (cyclically),
    while the pass programs of ``dense.pass_programs`` (each a correct vta.gemm program, what BMC of
    a pass runs) and the read-back are right: only the split proof's lemma that the emitted stream
    is, pass by pass, its piece's on the pass's own operands sees it."""
    def mutated(shape, qx, qw):
        return int_program(shape, qx, np.roll(np.asarray(qw), -1, axis=0))
    return mutated


def dense_mutations() -> dict[str, Mutation]:
    """vta.dense runs vta.gemm's driver on int8 codes, pass by pass, read at vta.gemm's output
    map: the gemm bugs, seeded in the same production code, are its bugs too (refuted by BMC at
    its proof shape), one tiling bug, one bug in the runner's assembly of the passes' streams and
    one in the read-back's assembly of the passes (refuted by ``--method chc``, see
    :data:`CHC_ONLY`)."""
    allsizes = {m.name for m in allsizes_mutations()}          # vta.gemm's all-sizes proof's, not these proofs'
    M = [m for m in gemm_mutations().values() if m.name not in allsizes] + [
        Mutation("last_pass_row_short", "model-loops",
                 "tiling: the last pass ends one row early (an output row computed by no pass)",
                 (Patch("mappings.vta.dense", "passes", _last_pass_row_short),)),
        Mutation("readback_rows_rotated", "read-back",
                 "the read-back of the whole program puts every result row one row down (cyclically)",
                 (Patch("mappings.vta.dense", "int_program", _readback_rows_rotated),)),
        Mutation("runner_weight_rows_rotated", "codegen-bytes",
                 "the whole program's passes are built from the weight rows one row up (cyclically); the pass "
                 "programs BMC checks are right",
                 (Patch("mappings.vta.dense", "int_program", _runner_weight_rows_rotated),)),
    ]
    return {m.name: m for m in M}


# seeded bugs that BMC of one pass cannot see by construction: refuted by --method chc (the name of
# the lemma of the split proof that fails)
# bugs only the all-sizes proof reaches (vta.gemm's fixed proof shape is correct under them)
ALLSIZES_ONLY = {"vta.gemm": tuple(m.name for m in allsizes_mutations()),
                 **{n: tuple(m.name for m in alu_allsizes_mutations()) for n in ("vta.add", "vta.relu")}}
CHC_ONLY = {"vta.gemm": ("readback_lanes_rotated",),
            "vta.dense": ("last_pass_row_short", "readback_rows_rotated", "readback_lanes_rotated",
                          "runner_weight_rows_rotated")}
CHC_LEMMA = {"last_pass_row_short": "tiling", "readback_rows_rotated": "read-back assembles",
             "runner_weight_rows_rotated": "its piece's on its own operands",
             "readback_lanes_rotated": "read-back"}
