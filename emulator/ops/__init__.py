"""Instruction executors, one module per instruction family, registered by base opcode.

A family module registers factories with :func:`~emulator.ops.registry.executor`; importing this package
imports every family, so that :func:`compile_instruction` knows them all. See ``registry`` for the contract
between a factory, its environment and the compiled ``fn(warp, mask)``.
"""
from .registry import EXECUTORS, compile_instruction, executor  # noqa: F401

# Import the family modules so that they register themselves.
from . import alu, carry, cvt, datamove, falu, intx, memops, mma, mufu, simd, warpops, wgmma  # noqa: E402,F401
from . import wmma  # noqa: E402,F401  (after mma)
from . import mma_sp  # noqa: E402,F401  (after mma: it extends 'mma' with mma.sp)
from . import bulk, cluster, mbarrier  # noqa: E402,F401  (after datamove and warpops: they extend 'cp' and 'fence')
from . import atomics  # noqa: E402,F401  (after memops: it extends 'st' with st.async)
