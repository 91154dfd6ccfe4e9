"""warpemu: a bit-exact emulator of one GPU warp running tensor-core PTX.

Public API (see README.md): Warp, GlobalMemory, EmulatorError, mma, gemm, load_ptx, check_layout.
"""
from .errors import (AlignmentError, AsyncHazardError, EmulatorError, MemoryAccessError, OperandError,
                     PTXSyntaxError, UnsupportedError, WarpSyncError)
from .memory import GlobalMemory
from .warp import SmemAccess, Warp, WarpOptions

__all__ = ["Warp", "WarpOptions", "GlobalMemory", "SmemAccess", "EmulatorError", "PTXSyntaxError",
           "UnsupportedError", "OperandError", "MemoryAccessError", "AlignmentError", "AsyncHazardError",
           "WarpSyncError", "mma", "gemm", "load_ptx", "check_layout"]


def __getattr__(name):
    # Heavier parts load on first use, so that `import emulator` stays quick.
    if name in ("mma", "gemm"):
        from . import tensorcore
        return getattr(tensorcore, name)
    if name == "load_ptx":
        from .kernel import load_ptx
        return load_ptx
    if name == "check_layout":
        from .layouts import check_layout
        return check_layout
    raise AttributeError(f"module 'emulator' has no attribute {name!r}")
