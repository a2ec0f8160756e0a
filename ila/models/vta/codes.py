"""Codes shared by the VTA model (:mod:`ila.models.vta.model`) and its loop summaries
(:mod:`ila.models.vta.summaries`): the child ILA's operation codes (state ``vta_child_op``; 0 = idle),
the SRAM buffer of each memory type and the state holding each buffer. Source: the model's own
encoding (the 3LA VTA ILA's child structure); memory types from ``ila.models.vta.isa``."""
from __future__ import annotations

from ila.models.vta.isa import ALU_OPCODES, MEM_ACC, MEM_INP, MEM_UOP, MEM_WGT

C_IDLE = 0
C_LOAD = {MEM_UOP: 1, MEM_WGT: 2, MEM_INP: 3, MEM_ACC: 4}
C_STORE = 5
C_GEMM_RESET = 6
C_GEMM = 7
C_ALU = {op: 8 + op for op in ALU_OPCODES}
CHILD_OP_W = 4

BUF_OF = {MEM_UOP: "uop", MEM_WGT: "wgt", MEM_INP: "inp", MEM_ACC: "acc"}
MEM_STATE = {"uop": "vta_uop_mem", "wgt": "vta_wgt_mem", "inp": "vta_inp_mem", "acc": "vta_acc_mem"}
