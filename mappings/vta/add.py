"""vta.add: int32 element-wise add on the VTA ALU (see mappings.vta.elementwise)."""
from mappings.vta.elementwise import make

MAPPING = make("add")
