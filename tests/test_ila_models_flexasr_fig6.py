"""Must-show 4: the FlexASR instruction of the paper's Figure 6 (``pe_0_cfg_mngr``) in the DSL."""
from ila import Ila, concat, extract
from ila.sim import Simulator

PE_0_CFG_MNGR_ADDR = 0x34400020     # PE0 base 0x34000000 + mem-manager-1 offset 0x00400000 + 0x20


def build():
    m = Ila("flexasr-ila")
    wr, rd = m.new_bv_input("top_if_wr", 1), m.new_bv_input("top_if_rd", 1)
    addr = m.new_bv_input("top_addr_in", 32)
    data = m.new_bv_input("top_data_in", 128)
    is_valid = m.new_bv_state("pe_0_is_valid", 1)
    is_bias = m.new_bv_state("pe_0_is_bias", 1)
    num_v_in = m.new_bv_state("pe_0_mngr_num_v_in", 8)
    base_wgt = m.new_bv_state("pe_0_mngr_base_wgt", 16)
    m.new_mem_state("gb_large_buffer", 32, 8, size=1 << 20)
    instr = m.new_instr("pe_0_cfg_mngr")
    is_write = wr.eq(1) & rd.eq(0)
    instr.set_decode(is_write & addr.eq(PE_0_CFG_MNGR_ADDR))
    instr.set_update(is_valid, data[0])            # bit fields of the 128-bit data input
    instr.set_update(is_bias, data[8])
    instr.set_update(num_v_in, data[23:16])
    instr.set_update(base_wgt, concat(extract(data, 47, 40), extract(data, 39, 32)))
    return m


def test_pe_0_cfg_mngr_decodes_on_its_address_and_takes_bit_fields():
    m = build()
    ins = m.instr("pe_0_cfg_mngr")
    assert {s.name for s in ins.updates} == {"pe_0_is_valid", "pe_0_is_bias", "pe_0_mngr_num_v_in", "pe_0_mngr_base_wgt"}
    sim = Simulator(m)
    data = (0xBEEF << 32) | (0x04 << 16) | (1 << 8) | 1 | (0xFFFF << 100)
    assert sim.step({"top_if_wr": 1, "top_addr_in": PE_0_CFG_MNGR_ADDR, "top_data_in": data}) == "pe_0_cfg_mngr"
    assert sim.state["pe_0_is_valid"] == 1 and sim.state["pe_0_is_bias"] == 1
    assert sim.state["pe_0_mngr_num_v_in"] == 4 and sim.state["pe_0_mngr_base_wgt"] == 0xBEEF
    # a write to another address, or a read, does not decode
    assert sim.step({"top_if_wr": 1, "top_addr_in": PE_0_CFG_MNGR_ADDR + 0x10, "top_data_in": 0}, allow_idle=True) is None
    assert sim.step({"top_if_wr": 1, "top_if_rd": 1, "top_addr_in": PE_0_CFG_MNGR_ADDR}, allow_idle=True) is None
    assert sim.state["pe_0_mngr_num_v_in"] == 4
