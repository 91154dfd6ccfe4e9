"""Memory spaces and their state: global memory, shared-memory bounds and alignment rules, the gather /
scatter primitives the executors use, and the H100's shared-memory bank model.

Nothing here executes instructions; executors (``emulator.ops``) and the machine (``emulator.machine``)
build on it.
"""
from .banks import SmemAccess
from .spaces import (LANES, MAX_ALLOC_BYTES, MAX_LOCAL_BYTES, MAX_SHARED_BYTES, GlobalMemory, check_alignment, check_bounds, count_rows, gather, global_gather,
                     global_scatter, scatter)

__all__ = ["LANES", "MAX_ALLOC_BYTES", "MAX_LOCAL_BYTES", "MAX_SHARED_BYTES", "GlobalMemory", "SmemAccess", "check_alignment", "check_bounds", "gather", "scatter",
           "global_gather", "global_scatter", "count_rows"]
