"""hlscnn.conv2d_nchw_w8: the front-end's padded NCHW conv2d on the original 8-bit-weight HLSCNN design
(see mappings.hlscnn.conv2d_nchw)."""
from mappings.hlscnn.conv2d_nchw import make

MAPPING = make(8)
