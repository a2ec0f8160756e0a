"""Seeded bugs of hlscnn.conv2d / conv2d_w8, one or more per layer of the trusted path
(``verify.scope``); each must be refuted by the BMC proof (one input channel)."""
from __future__ import annotations

import numpy as np

from verify.mutations import Mutation, Patch

_DRIVER = "ila.models.hlscnn.driver"


def _operands(change):
    """Wrap conv2d_program so that ``change(x_raw, w_raw)`` edits its operands first."""
    def wrap(conv2d_program):
        def mutated(x_raw, w_raw, **kw):
            x, w = change(np.asarray(x_raw, dtype=object), np.asarray(w_raw, dtype=object))
            return conv2d_program(x, w, **kw)
        return mutated
    return wrap


def _stream(change):
    """Wrap conv2d_program so that ``change(job)`` edits the emitted job."""
    def wrap(conv2d_program):
        def mutated(*a, **kw):
            job = conv2d_program(*a, **kw)
            change(job)
            return job
        return mutated
    return wrap


def _output_base(job):
    from ila.models.hlscnn.driver import cfg_write
    at = cfg_write("AccelConvOutputsBaseAddr", 0)
    job.commands[:] = [cfg_write("AccelConvOutputsBaseAddr", 16) if c == at else c for c in job.commands]


def _relu_on(job):
    from ila.models.hlscnn.driver import cfg_write
    from ila.models.hlscnn.model import REG_ID, SLAVE_BASE
    addr = SLAVE_BASE + 4 * REG_ID["AccelConvChannelConfig"]
    at = [k for k, c in enumerate(job.commands) if c.get("top_slave_addr_in") == addr]
    if at:
        job.commands[at[-1]] = cfg_write("AccelConvChannelConfig", 1 << 17)


def _readback_base(job):
    for c in job.read_commands:
        c["top_slave_addr_in"] += 16


def _byte_order(element_bytes):
    return lambda v, n: list(reversed(element_bytes(v, n)))


def _readback_shift(readback):
    def mutated(job, reads):
        out = readback(job, reads)
        return np.roll(out, -1, axis=1)      # IR out[y, x] gets the pixel (y, x + 1)
    return mutated


def _swap_filters(x, w):
    return x, (w[[1, 0] + list(range(2, w.shape[0]))] if w.shape[0] > 1 else w)


def conv2d_mutations() -> dict[str, Mutation]:
    M = [
        Mutation("element_byte_order", "codegen-bytes", "generator: the two bytes of every element are swapped "
                 "(big-endian packing)", (Patch(_DRIVER, "_element_bytes", _byte_order),)),
        Mutation("transposed_kernel", "codegen-bytes", "generator: each K x K kernel is stored transposed",
                 (Patch(_DRIVER, "conv2d_program", _operands(lambda x, w: (x, w.transpose(0, 2, 1, 3)))),)),
        Mutation("filters_swapped", "codegen-bytes", "generator: filters 0 and 1 swap places in the weight image",
                 (Patch(_DRIVER, "conv2d_program", _operands(_swap_filters)),)),
        Mutation("activation_row_off_by_one", "codegen-bytes",
                 "generator: activation row y is written where row y + 1 belongs",
                 (Patch(_DRIVER, "conv2d_program", _operands(lambda x, w: (np.roll(x, 1, axis=0), w))),)),
        Mutation("output_base_off_by_one", "configuration-fields",
                 "generator: the outputs base register is one 16-byte beat (one pixel) too far",
                 (Patch(_DRIVER, "conv2d_program", _stream(_output_base)),)),
        Mutation("relu_enabled", "configuration-fields",
                 "generator: the channel configuration register enables the unit's ReLU (negative outputs become 0)",
                 (Patch(_DRIVER, "conv2d_program", _stream(_relu_on)),)),
        Mutation("wrong_readback_base", "read-back", "driver: the outputs are read from one 16-byte beat further",
                 (Patch(_DRIVER, "conv2d_program", _stream(_readback_base)),)),
        Mutation("output_pixel_off_by_one", "read-back",
                 "driver: the read-back hands out[y, x] the pixel (y, x + 1)",
                 (Patch(_DRIVER, "readback", _readback_shift),)),
    ]
    return {m.name: m for m in M}


def conv2d_w8_mutations() -> dict[str, Mutation]:
    return conv2d_mutations()
