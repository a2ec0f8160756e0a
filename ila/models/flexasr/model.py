"""FlexASR top level: AXI-slave interface, architectural state, configuration and data-movement
instructions (flexnlp-ila ``top_input.cc``, ``arch_state_*.cc``, ``config_instr_*.cc``,
``gb_core_store.cc``, ``flex_load.cc``, ``pe_store.cc``)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ila import Ila, bv_const, concat, ite, land, load, store, zext
from ila.models.flexasr import constants as C


@dataclass
class Flex:
    """Handles to the model's inputs and states, shared by the module builders."""
    m: Ila
    wr: object
    rd: object
    addr: object
    data: list
    s: dict = field(default_factory=dict)        # state name -> Expr

    def __getitem__(self, name):
        return self.s[name]

    def new_bv(self, name, width, ila=None):
        v = (ila or self.m).new_bv_state(name, width)
        self.s[name] = v
        return v

    def new_mem(self, name, addr_w, data_w, size, ila=None):
        v = (ila or self.m).new_mem_state(name, addr_w, data_w, size=size)
        self.s[name] = v
        return v

    @property
    def is_write(self):
        """``if_axi_wr & ~if_axi_rd`` as in flexnlp-ila (one BV(1) term, so the simulator indexes
        instructions by their ``addr_in == const`` conjunct rather than by the write flag)."""
        return (self.wr & ~self.rd).eq(1)

    @property
    def is_read(self):
        return (self.rd & ~self.wr).eq(1)

    def data_field(self, first: int, nbytes: int, width: int):
        parts = [self.data[first + k] for k in range(nbytes)]
        v = concat(*reversed(parts)) if nbytes > 1 else parts[0]
        return v[width - 1:0] if width < 8 * nbytes else v


def u32(x):
    """Zero-extend to 32 bits."""
    return zext(x, 32)


def build_top() -> Flex:
    m = Ila("flexasr")
    wr = m.new_bv_input("if_axi_wr", 1)
    rd = m.new_bv_input("if_axi_rd", 1)
    addr = m.new_bv_input("addr_in", 32)
    data = [m.new_bv_input(f"data_in_{k}", 8) for k in range(16)]
    f = Flex(m, wr, rd, addr, data)
    m.set_valid((wr.eq(1) | rd.eq(1)) & addr.uge(C.TOP_BASE) & addr.ule(C.TOP_MAX))
    m.set_fetch(concat(wr, rd, addr))
    for k in range(16):
        f.new_bv(f"data_out_{k}", 8)
    f.new_bv("top_interrupt_request", 1)
    f.new_mem("gb_core_large_buffer", 32, 8, C.GB_LARGE_SIZE)
    f.new_mem("gb_core_small_buffer", 32, 8, C.GB_SMALL_SIZE)
    for p in range(C.NUM_PE):
        f.new_mem(f"pe{p}_weight_buffer", 32, 8, C.PE_WEIGHT_SIZE)
        f.new_mem(f"pe{p}_input_buffer", 32, 8, C.PE_INPUT_SIZE)
        f.new_mem(f"pe{p}_act_buffer", 32, 20, C.PE_ACT_BUF_SIZE)
        f.new_mem(f"pe{p}_core_out", 32, 20, C.PE_CORE_OUT_SIZE)
        f.new_mem(f"pe{p}_accum", 16, 32, C.PE_PARTIAL_SUMS)   # partial sums per (o chunk, lane, k)
        f.new_mem(f"pe{p}_act_regs", 8, 20, 64)          # 4 registers x 16 lanes
    _gb_config(f)
    _pe_config(f)
    _data_movement(f)
    return f


def _cfg(f: Flex, name: str, address: int, layout: dict, prefix: str):
    ins = f.m.new_instr(name)
    ins.set_decode(f.is_write & f.addr.eq(address))
    for fld, (first, nbytes) in layout.items():
        width = C.FIELD_WIDTHS[fld]
        st = f.s.get(f"{prefix}_{fld}") or f.new_bv(f"{prefix}_{fld}", width)
        ins.set_update(st, f.data_field(first, nbytes, width))
    return ins


def _gb_config(f: Flex):
    G = C.GB_FIELDS
    _cfg(f, "CONFIG_GB_CORE_MEM_MNGR_LARGE", C.CFG_MEM_MNGR_LARGE, G["mem_mngr_large"], "gb_core_mem_mngr_large")
    _cfg(f, "CONFIG_GB_CORE_MEM_MNGR_SMALL", C.CFG_MEM_MNGR_SMALL, G["mem_mngr_small"], "gb_core_mem_mngr_small")
    _cfg(f, "CONFIG_GB_LAYER_REDUCE", C.CFG_LAYER_REDUCE, G["layer_reduce"], "gb_layer_reduce")
    _cfg(f, "CONFIG_GB_CONTROL", C.CFG_GB_CONTROL, G["gb_control"], "gb_control")
    _cfg(f, "CONFIG_GB_LAYER_NORM", C.CFG_LAYER_NORM, G["layer_norm"], "gb_layer_norm")
    _cfg(f, "CONFIG_GB_ZERO_PADDING", C.CFG_ZERO_PADDING, G["zero_padding"], "gb_zero_padding")
    _cfg(f, "CONFIG_GB_ATTENTION", C.CFG_ATTENTION, G["attention"], "gb_attention")


def _pe_config(f: Flex):
    P = C.PE_FIELDS
    for p in range(C.NUM_PE):
        b = C.pe_base(p)
        _cfg(f, f"PE{p}_CONFIG_RNN_LAYER_SIZING", b + C.PE_CFG_RNN_LAYER_SIZING, P["rnn_layer_sizing"],
             f"pe{p}_rnn_layer_sizing")
        _cfg(f, f"PE{p}_CONFIG_MEM_MNGR_FIRST", b + C.PE_CFG_MEM_MNGR[1], P["mem_mngr"], f"pe{p}_mem_mngr_1")
        _cfg(f, f"PE{p}_CONFIG_MEM_MNGR_SECOND", b + C.PE_CFG_MEM_MNGR[2], P["mem_mngr"], f"pe{p}_mem_mngr_2")
        _cfg(f, f"PE{p}_CONFIG_ACT_MNGR", b + C.PE_CFG_ACT_MNGR, P["act_mngr"], f"pe{p}_act_mngr")
        for half, name in ((0, "0_15"), (1, "16_31")):
            ins = f.m.new_instr(f"PE{p}_CONFIG_ACT_VECTOR_{name}")
            ins.set_decode(f.is_write & f.addr.eq(b + C.PE_CFG_ACT_VECTOR[half]))
            for k in range(16):
                st = f.new_bv(f"pe{p}_act_inst_{16 * half + k}", 8)
                ins.set_update(st, f.data[k])


def _window(f: Flex, lo: int, last: int):
    return f.addr.uge(lo) & f.addr.ule(last)


def _store16(mem, base, data):
    for k in range(16):
        mem = store(mem, base + k, data[k])
    return mem


def _data_movement(f: Flex):
    off_large = u32(f.addr[19:0])
    off_small = u32(f.addr[13:0])
    big, small = f["gb_core_large_buffer"], f["gb_core_small_buffer"]
    i = f.m.new_instr("GB_CORE_STORE_LARGE")
    i.set_decode(f.is_write & _window(f, C.GB_LARGE_BASE, C.GB_LARGE_LAST))
    i.set_update(big, _store16(big, off_large, f.data))
    i = f.m.new_instr("GB_CORE_STORE_SMALL")
    i.set_decode(f.is_write & _window(f, C.GB_SMALL_BASE, C.GB_SMALL_LAST))
    i.set_update(small, _store16(small, off_small, f.data))
    for name, mem, off, lo, last in (("GB_CORE_LOAD_LARGE", big, off_large, C.GB_LARGE_BASE, C.GB_LARGE_LAST),
                                     ("GB_CORE_LOAD_SMALL", small, off_small, C.GB_SMALL_BASE, C.GB_SMALL_LAST)):
        i = f.m.new_instr(name)
        i.set_decode(f.is_read & _window(f, lo, last))
        for k in range(16):
            i.set_update(f[f"data_out_{k}"], load(mem, off + k))
    for p in range(C.NUM_PE):
        b = C.pe_base(p)
        for name, mem, offset, size in (
                (f"PE{p}_CORE_STORE_WEIGHT_BUFFER", f[f"pe{p}_weight_buffer"], C.PE_WEIGHT_OFFSET, C.PE_WEIGHT_SIZE),
                (f"PE{p}_CORE_STORE_INPUT_BUFFER", f[f"pe{p}_input_buffer"], C.PE_INPUT_OFFSET, C.PE_INPUT_SIZE)):
            i = f.m.new_instr(name)
            i.set_decode(f.is_write & _window(f, b + offset, b + offset + size - 16))
            i.set_update(mem, _store16(mem, f.addr - (b + offset), f.data))


# ----------------------------------------------------------------------------- shared helpers
def large_base(f: Flex, mem_idx):
    """Byte base address of GB large-buffer memory index ``mem_idx`` (2 bits): base_large_k << 4."""
    b = [u32(f[f"gb_core_mem_mngr_large_base_large_{k}"]) << 4 for k in range(4)]
    return ite(mem_idx.eq(0), b[0], ite(mem_idx.eq(1), b[1], ite(mem_idx.eq(2), b[2], b[3])))


def small_base(f: Flex, k: int):
    return u32(f[f"gb_core_mem_mngr_small_base_small_{k}"]) << 4


def tiled_addr(base, t, v, num_v):
    """byte_addr(t, v) = base + 16*((t mod 16) + floor(t/16)*num_v*16) + 256*v (all 32-bit)."""
    t32, n32 = u32(t), u32(num_v)
    out = base + (((t32 & 15) + (t32.lshr(4) * n32 << 4)) << 4)
    if isinstance(v, int):
        return out + (v << 8) if v else out
    return out + (u32(v) << 8)


def bool_flag(x):
    return x.eq(1)


def start_instr(f: Flex, name: str, address: int, is_valid, valid_flag, fsm_state, first_state: int):
    """A start trigger: decodes on a write to ``address`` while the unit's config is valid; sets the
    child's valid flag and FSM state and clears the interrupt."""
    i = f.m.new_instr(name)
    i.set_decode(land(f.is_write, f.addr.eq(address), is_valid.eq(1)))
    i.set_update(valid_flag, bv_const(1, 1))
    i.set_update(fsm_state, bv_const(first_state, fsm_state.width))
    i.set_update(f["top_interrupt_request"], bv_const(0, 1))
    return i
