"""vta.relu: int32 relu (ALU MAX with immediate 0) on VTA (see mappings.vta.elementwise)."""
from mappings.vta.elementwise import make

MAPPING = make("relu")
