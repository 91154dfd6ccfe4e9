"""Triton's NVIDIA compiler pipeline (ttir, ttgir, llir, ptx), stopped at PTX: the emulator runs the PTX.

The last stage, ``emu``, is the PTX text as the bytes the driver loads (Triton keeps a kernel's binary
under the backend's ``binary_ext``); ``kernel.asm["ptx"]`` stays the PTX text. Triton's memory and disk
caches work as for any backend; the cache key names this backend (``warpemu``), so a cache shared with real
GPU runs never mixes the two.
"""
from __future__ import annotations

import functools

from triton.backends.nvidia import compiler as _nvidia

from . import active, claim_cuda

if active():
    claim_cuda()


class WarpemuBackend(_nvidia.CUDABackend):
    """Compiles for the ``cuda`` target while the emulator is active (Triton's own NVIDIA backend yields)."""

    @staticmethod
    def supports_target(target):
        if target.backend == "cuda" and active():
            claim_cuda()
            return True
        return False

    def __init__(self, target) -> None:
        super().__init__(target)
        self.binary_ext = "emu"

    def add_stages(self, stages, options, language):
        super().add_stages(stages, options, language)
        stages.pop("cubin", None)
        stages["emu"] = lambda src, metadata: src.encode()

    @functools.lru_cache()
    def hash(self):
        return f"warpemu-ptx-{self.target.arch}"
