"""Data-movement instructions that feed the tensor cores: what exists, keyed by canonical PTX spelling.

Spellings follow the PTX ISA sections "ldmatrix", "stmatrix" and "cp.async". Source text may order the
qualifiers differently (ptxas accepts `.x4.m8n8`); the emulator puts them in canonical order and looks
the result up here.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class MatrixOp:
    """ldmatrix / stmatrix .m8n8 .b16: `nmat` 8x8 matrices of 16-bit elements, one 32-bit register each."""
    spelling: str
    op: str            # 'ldmatrix' or 'stmatrix'
    nmat: int          # .x1/.x2/.x4
    trans: bool
    intro: str         # first architecture that has it
    row_bytes: int = 16
    row_align: int = 16

    @property
    def operands(self):
        regs = "{" + ", ".join(f"r{j}" for j in range(self.nmat)) + "}"
        return (regs, "[addr]") if self.op == "ldmatrix" else ("[addr]", regs)


def _matrix_spelling(op, num, trans, space):
    return f"{op}.sync.aligned.m8n8.{num}{'.trans' if trans else ''}{space}.b16"


# Canonical order: op .sync .aligned .shape .num [.trans] [.ss] .type
MATRIX_OPS = {
    s.spelling: s
    for op, intro in (("ldmatrix", "sm_75"), ("stmatrix", "sm_90"))
    for num, n in (("x1", 1), ("x2", 2), ("x4", 4))
    for trans in (False, True)
    for space in ("", ".shared", ".shared::cta")        # no state space: a generic address into shared
    for s in [MatrixOp(_matrix_spelling(op, num, trans, space), op, n, trans, intro)]
}
MATRIX_QUALIFIERS = (("sync",), ("aligned",), ("m8n8",), ("x1", "x2", "x4"), ("trans",), ("shared", "shared::cta"),
                     ("b16",))

# Spellings that exist on newer GPUs only, with the reason the errors give.
MATRIX_NEWER = {
    "m16n16": "the .m16n16 .b8 shapes need sm_100+",
    "m8n16": "the .m8n16 .b8 shapes need sm_100+",
    "m16n8": "the .m16n8 .b8 stmatrix shape needs sm_100+",
}

# movmatrix: transpose one 8x8 .b16 matrix held in registers (row r, columns 2c, 2c+1 in lane 4r + c, as
# ldmatrix leaves it); sm_75+ (PTX ISA 7.8).  The only spelling ptxas 13.0 accepts.
MOVMATRIX_OPS = {"movmatrix.sync.aligned.m8n8.trans.b16": "sm_75"}


@dataclass(frozen=True)
class CpAsyncOp:
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}."""
    spelling: str
    cache: str             # 'ca' (L1+L2) or 'cg' (L2 only); a caching hint, no effect on the bytes
    cp_sizes: tuple        # allowed cp-size values
    intro: str = "sm_80"


CP_ASYNC_OPS = {
    s.spelling: s
    for cache, sizes in (("ca", (4, 8, 16)), ("cg", (16,)))
    for space in (".shared", ".shared::cta")
    for s in [CpAsyncOp(f"cp.async.{cache}{space}.global", cache, sizes)]
}
# Optional qualifiers after .global: .L2::cache_hint (adds a 64-bit cache-policy operand) and a prefetch size.
CP_ASYNC_HINTS = ("L2::cache_hint",)
CP_ASYNC_PREFETCH = ("L2::64B", "L2::128B", "L2::256B")
CP_ASYNC_GROUP_OPS = {
    "cp.async.commit_group": 0,      # operand count
    "cp.async.wait_group": 1,
    "cp.async.wait_all": 0,
}

# ld / st: vector widths and element types accepted around the tensor-core instructions.
LD_ST = {
    "spaces": ("shared", "shared::cta", "global", "local", "param", "const", None),
    "vectors": {None: 1, "v2": 2, "v4": 4, "v8": 8},
    "types": ("b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
              "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"),
    "max_bits": 128,                         # per lane, per access
    # qualifiers that change nothing the emulator observes (caching, ordering, eviction hints)
    "hints": ("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "weak", "volatile", "relaxed", "acquire",
              "release", "mmio", "cta", "gpu", "sys", "cluster", "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first",
              "L1::evict_last", "L1::no_allocate", "L2::evict_first", "L2::evict_last", "L2::evict_normal",
              "L2::64B", "L2::128B", "L2::256B", "L2::cache_hint"),
}
