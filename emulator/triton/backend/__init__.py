"""The emulator as a Triton backend (Triton's ``triton.backends`` entry point, ``warpemu``).

``compiler`` holds the :class:`~triton.backends.compiler.BaseBackend` (Triton's NVIDIA pipeline, stopped at
PTX), ``driver`` the :class:`~triton.backends.driver.DriverBase` (launches the PTX on the emulator). Triton
imports both when it discovers its backends; the driver is active when ``WARPEMU_TRITON=1`` is set, or after
``emulator.triton.activate()``. While it is active the emulator stands in for the CUDA device: the target is
``cuda`` (an H100, sm_90a; ``WARPEMU_TRITON_ARCH=sm_80`` for an A100), and Triton's own NVIDIA backend
steps aside, so that exactly one backend compiles for that target and one driver is active.

This module imports nothing heavy: Triton imports it on every ``import triton``.
"""
from __future__ import annotations

import os

_forced = None              # True/False after activate()/deactivate(); None: the environment decides
_arch = None                # the target chosen by activate(target=...)

TARGETS = {"sm_80": 80, "sm_86": 86, "sm_90": 90, "sm_90a": 90}


def active() -> bool:
    """Whether the emulator is the CUDA device Triton compiles for and launches on."""
    if _forced is not None:
        return _forced
    return os.environ.get("WARPEMU_TRITON", "0").strip().lower() not in ("", "0", "false", "no", "off")


def capability() -> int:
    """The compute capability the emulator presents (90 unless ``WARPEMU_TRITON_ARCH`` or activate say)."""
    name = _arch or os.environ.get("WARPEMU_TRITON_ARCH", "sm_90a")
    if name not in TARGETS:
        from ...errors import UnsupportedError
        raise UnsupportedError(f"WARPEMU_TRITON_ARCH={name!r} is not supported; supported: {', '.join(TARGETS)}")
    return TARGETS[name]


def set_state(on, arch=None):
    global _forced, _arch
    _forced = on
    if arch is not None:
        _arch = arch


def claim_cuda():
    """Make Triton's NVIDIA backend yield the ``cuda`` target (and its driver stay inactive) while the
    emulator is active; it takes the target back when the emulator is deactivated."""
    from triton.backends.nvidia import compiler as nvc
    from triton.backends.nvidia import driver as nvd
    if getattr(nvc.CUDABackend, "_warpemu_yields", False):
        return
    supports = nvc.CUDABackend.__dict__["supports_target"].__func__
    is_active = nvd.CudaDriver.__dict__["is_active"].__func__

    def yielding_supports_target(target):
        return not active() and supports(target)

    def yielding_is_active():
        return not active() and is_active()
    nvc.CUDABackend.supports_target = staticmethod(yielding_supports_target)
    nvd.CudaDriver.is_active = staticmethod(yielding_is_active)
    nvc.CUDABackend._warpemu_yields = True
