"""warpemu: a bit-exact emulator of GPU warps running PTX.

Public API (see README.md and docs/api.md): Warp, GlobalMemory, EmulatorError, mma, gemm, load_ptx,
check_layout.

The package is layered (docs/architecture.md); each layer imports only from the layers below it:
``errors`` < ``numerics`` < ``frontend`` < ``memory`` < ``ops`` < ``machine`` < ``layouts`` < the API
modules (``tiles``, ``cute``) < ``cli``.
"""
import os as _os

from .numerics import jitcache as _jitcache

try:                    # numba's caches of this package are dropped when its sources changed (jitcache.guard)
    _jitcache.guard(_os.path.dirname(_os.path.abspath(__file__)))
except Exception:       # never let the cache check stop an import
    pass
try:                    # an unreadable or unwritable cache falls back to compiling (jitcache.harden)
    _jitcache.harden(_os.path.dirname(_os.path.abspath(__file__)))
except Exception:       # noqa: BLE001 (a numba without these internals: its own behaviour)
    pass

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
        from .machine.fastcore.warmup import warmup
        return warmup
    if name == "check_layout":
        from .layouts.fragments import check_layout
        return check_layout
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
