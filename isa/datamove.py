"""Data-movement instructions that feed the tensor cores: what exists, with its rules as data.

Spellings follow the PTX ISA (sections "ldmatrix", "stmatrix", "cp.async"). Qualifier order in source
text may vary; the emulator normalises it against these tables.
"""

# ldmatrix / stmatrix: .shape .num [.trans] [.ss] .type
LDMATRIX = {
    "intro": {"ldmatrix": "sm_75", "stmatrix": "sm_90"},
    "shapes": ("m8n8",),                      # m16n16/m8n16 .b8 forms are sm_100+
    "nums": {"x1": 1, "x2": 2, "x4": 4},      # matrices per instruction
    "types": ("b16",),
    "state_spaces": ("shared", "shared::cta"),  # omitted: generic address that must point to shared
    "row_bytes": 16,                          # each row: 8 x 16-bit elements, 16-byte aligned
    "sync": ("sync", "aligned"),              # both required; warp-wide
}

# Unsupported spellings we know of, with the reason given in errors.
LDMATRIX_NOT_SUPPORTED = {
    "m16n16": "the .m16n16 .b8 shapes need sm_100+",
    "m8n16": "the .m8n16 .b8 shapes need sm_100+",
    "m16n8": "the .m16n8 .b8 stmatrix shape needs sm_100+",
}

# cp.async.{ca,cg}.shared{::cta}.global{.level::cache_hint}{.level::prefetch_size}
#   [dst], [src], cp-size{, src-size | , ignore-src}{, cache-policy}
CP_ASYNC = {
    "intro": "sm_80",
    "cache_ops": {"ca": (4, 8, 16), "cg": (16,)},   # allowed cp-size per cache operator
    "prefetch": ("L2::64B", "L2::128B", "L2::256B"),
    "cache_hint": ("L2::cache_hint",),
    "dst_spaces": ("shared", "shared::cta"),
    "src_spaces": ("global",),
    "group_ops": ("commit_group", "wait_group", "wait_all"),
}

# ld / st: vector widths and element types accepted around the tensor-core instructions.
LD_ST = {
    "spaces": ("shared", "shared::cta", "global", "local", "param", "const", None),
    "vectors": {None: 1, "v2": 2, "v4": 4, "v8": 8},
    "types": ("b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
              "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"),
    "max_bits": 128,                         # per lane, per access (v8 only with 16-bit elements)
    # qualifiers that change nothing the emulator observes (caching, ordering, eviction hints)
    "hints": ("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "weak", "volatile", "relaxed", "acquire",
              "release", "cta", "gpu", "sys", "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first",
              "L1::evict_last", "L1::no_allocate", "L2::evict_first", "L2::evict_last", "L2::evict_normal",
              "L2::64B", "L2::128B", "L2::256B", "L2::cache_hint"),
}
