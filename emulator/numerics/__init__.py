"""Bit-exact mma.sync arithmetic.

``params``     number formats and the one per-architecture parameter table (L, F, e_zero, rounding);
``reference``  the readable definition in plain Python integers (the spec);
``fast``       the same primitives jitted with numba (integer arithmetic), for the integer, binary64 and
               m8n8k4 .f16 forms;
``gemm_fast``  the tensor-core and fp8 forms: per instruction, batched across instructions, and whole GEMMs.

Tests prove the jitted paths equal to the reference, and both equal to H100 captures.
"""
