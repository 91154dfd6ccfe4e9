"""warpemu: a bit-exact emulator of GPU warps running PTX.

Public API (see README.md and docs/api.md): Warp, GlobalMemory, EmulatorError, mma, gemm, load_ptx,
check_layout.

The package is layered (docs/architecture.md); each layer imports only from the layers below it:
``errors`` < ``numerics`` < ``frontend`` < ``memory`` < ``ops`` < ``machine`` < ``layouts`` < the API
modules (``tiles``, ``cute``) < ``cli``.
"""
# numba loads with the first module that has jitted functions (each calls numerics.jitcache.prepare, which drops
# stale cached functions and hardens the cache first): `import emulator` alone stays light.
from .errors import (AlignmentError, AsyncHazardError, DeviceAssertError, EmulatorError, MBarrierError,
                     MemoryAccessError, OperandError, ProxyError, PTXSyntaxError, PTXValidationError, TensorMapError, UnsupportedError,
                     WarpSyncError)
from .machine.warp import Warp, WarpOptions
from .memory import GlobalMemory, SmemAccess
from .memory.tensormap import TensorMap

__all__ = ["Warp", "WarpOptions", "GlobalMemory", "SmemAccess", "EmulatorError", "PTXSyntaxError", "PTXValidationError",
           "UnsupportedError", "OperandError", "MemoryAccessError", "AlignmentError", "AsyncHazardError",
           "WarpSyncError", "ProxyError", "MBarrierError", "TensorMapError", "TensorMap", "DeviceAssertError", "mma",
           "gemm", "wgmma", "load_ptx", "check_layout", "Trace", "Debugger", "warmup"]


def __getattr__(name):
    # Heavier parts load on first use, so that `import emulator` stays quick.
    if name in ("mma", "gemm"):
        from . import tiles
        return getattr(tiles, name)
    if name == "wgmma":
        from .wgmma_tiles import wgmma
        return wgmma
    if name == "load_ptx":
        from .machine.module import load_ptx
        return load_ptx
    if name == "Trace":
        from .machine.tracing import Trace
        return Trace
    if name == "Debugger":
        from .machine.debugger import Debugger
        return Debugger
    if name == "warmup":
        from .machine import module  # noqa: F401 (the warm-up launches)
        from .machine.fastcore.warmup import warmup
        return warmup
    if name == "check_layout":
        from .layouts.fragments import check_layout
        return check_layout
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
