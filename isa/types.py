"""PTX fundamental types: width in bits and kind (b: untyped bits, u: unsigned, s: signed, f: float,
pred: predicate). The register-width rule for undeclared names follows nvcc's naming."""

TYPES = {
    "pred": (1, "pred"),
    "b8": (8, "b"), "b16": (16, "b"), "b32": (32, "b"), "b64": (64, "b"), "b128": (128, "b"),
    "u8": (8, "u"), "u16": (16, "u"), "u32": (32, "u"), "u64": (64, "u"),
    "s8": (8, "s"), "s16": (16, "s"), "s32": (32, "s"), "s64": (64, "s"),
    "f16": (16, "f"), "f16x2": (32, "f"), "bf16": (16, "f"), "bf16x2": (32, "f"),
    "u16x2": (32, "u"), "s16x2": (32, "s"), "tf32": (32, "f"), "f32": (32, "f"), "f64": (64, "f"),
    "e4m3": (8, "f"), "e5m2": (8, "f"), "e4m3x2": (16, "f"), "e5m2x2": (16, "f"),
}

# Register widths by nvcc's naming, first match wins (docs/api.md: %p predicate, %rd/%fd 64-bit,
# %rs/%h 16-bit, every other name 32-bit).
NAME_WIDTHS = (("%rd", 64), ("%fd", 64), ("%rs", 16), ("%h", 16), ("%p", 1))

# Special registers: name -> width in bits.
SPECIAL_REGISTERS = {
    "%laneid": 32, "%warpid": 32, "%nwarpid": 32, "%smid": 32, "%nsmid": 32, "%gridid": 64,
    "%clock": 32, "%clock64": 64, "%globaltimer": 64, "%lanemask_eq": 32, "%lanemask_lt": 32,
    "%lanemask_le": 32, "%lanemask_gt": 32, "%lanemask_ge": 32, "%dynamic_smem_size": 32,
    "%total_smem_size": 32,
    **{f"%{r}.{c}": 32 for r in ("tid", "ntid", "ctaid", "nctaid") for c in "xyz"},
    # thread-block clusters (sm_90)
    **{f"%{r}.{c}": 32 for r in ("cluster_ctaid", "cluster_nctaid", "clusterid", "nclusterid") for c in "xyz"},
    "%cluster_ctarank": 32, "%cluster_nctarank": 32, "%is_explicit_cluster": 1,
    "%globaltimer_lo": 32, "%globaltimer_hi": 32, "%aggr_smem_size": 32, "%current_graph_exec": 64,
    **{f"%reserved_smem_offset_{x}": 32 for x in ("begin", "end", "cap", "0", "1")},
    **{f"%pm{i}": 32 for i in range(8)}, **{f"%pm{i}_64": 64 for i in range(8)},
    **{f"%envreg{i}": 32 for i in range(32)},
}


def type_width(t: str) -> int:
    return TYPES[t][0]


def type_kind(t: str) -> str:
    return TYPES[t][1]


def name_width(name: str) -> int:
    """Width in bits of an undeclared register, from nvcc's naming convention."""
    for prefix, width in NAME_WIDTHS:
        if name.startswith(prefix):
            return width
    return 32
