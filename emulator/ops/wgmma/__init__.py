"""wgmma: warpgroup-level asynchronous MMA (sm_90a).

``desc``   matrix descriptors: decoding, the canonical layouts, which shared bytes each core matrix comes from;
``state``  what is in flight per warp and per CTA, the fence rule and the warpgroup's agreement;
``op``     the variants (``isa.wgmma``), the executors of mma_async / fence / commit_group / wait_group.
"""
from . import desc, op, state  # noqa: F401
from .desc import Descriptor, canonical_descriptor, core_matrix_map, make_descriptor  # noqa: F401
from .op import WgmmaOp, get_wgmma  # noqa: F401

__all__ = ["desc", "op", "state", "Descriptor", "canonical_descriptor", "core_matrix_map", "make_descriptor",
           "WgmmaOp", "get_wgmma"]
