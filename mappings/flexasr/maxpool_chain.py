"""flexasr.maxpool_chain: L temporal max pools in one FlexASR program (``mappings.flexasr.pool_chain``)."""
from mappings.flexasr.pool_chain import chain_mapping

MAPPING = chain_mapping("max")
