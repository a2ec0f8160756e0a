"""hlscnn.conv2d_w8: conv2d on the original 8-bit-weight HLSCNN design (see mappings.hlscnn.conv2d)."""
from mappings.hlscnn.conv2d import make

MAPPING = make(8)
