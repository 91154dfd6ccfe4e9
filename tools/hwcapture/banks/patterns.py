"""The shared-memory access patterns the bank-conflict harness measures.

``python patterns.py > patterns.txt`` writes one line per launch for ``banks.cu``
(``<kernel> <active-lane mask, hex> <32 byte offsets>``); ``PATTERNS`` is imported by
``collect.py`` to pair every launch with its addresses when the Nsight Compute CSV comes back.
"""
import numpy as np

# kernel -> (op, PTX instruction, bytes per lane, number of 8x8 matrices)
KERNELS = {
    "k_ld_u8": ("ld", "ld.shared.u8", 1, 0),
    "k_ld_u16": ("ld", "ld.shared.u16", 2, 0),
    "k_ld_u32": ("ld", "ld.shared.u32", 4, 0),
    "k_ld_v2": ("ld", "ld.shared.v2.u32", 8, 0),
    "k_ld_v4": ("ld", "ld.shared.v4.u32", 16, 0),
    "k_st_u8": ("st", "st.shared.u8", 1, 0),
    "k_st_u16": ("st", "st.shared.u16", 2, 0),
    "k_st_u32": ("st", "st.shared.u32", 4, 0),
    "k_st_v2": ("st", "st.shared.v2.u32", 8, 0),
    "k_st_v4": ("st", "st.shared.v4.u32", 16, 0),
    "k_atom_add_u32": ("atom", "atom.shared.add.u32", 4, 0),
    "k_ldsm_x1": ("ldmatrix", "ldmatrix.sync.aligned.m8n8.x1.shared.b16", 16, 1),
    "k_ldsm_x2": ("ldmatrix", "ldmatrix.sync.aligned.m8n8.x2.shared.b16", 16, 2),
    "k_ldsm_x4": ("ldmatrix", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 16, 4),
    "k_ldsm_x1_t": ("ldmatrix", "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16", 16, 1),
    "k_ldsm_x2_t": ("ldmatrix", "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 16, 2),
    "k_ldsm_x4_t": ("ldmatrix", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 16, 4),
    "k_stsm_x1": ("stmatrix", "stmatrix.sync.aligned.m8n8.x1.shared.b16", 16, 1),
    "k_stsm_x2": ("stmatrix", "stmatrix.sync.aligned.m8n8.x2.shared.b16", 16, 2),
    "k_stsm_x4": ("stmatrix", "stmatrix.sync.aligned.m8n8.x4.shared.b16", 16, 4),
    "k_stsm_x1_t": ("stmatrix", "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16", 16, 1),
    "k_stsm_x2_t": ("stmatrix", "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 16, 2),
    "k_stsm_x4_t": ("stmatrix", "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 16, 4),
    "k_cpca_4": ("cp.async.ca", "cp.async.ca.shared.global", 4, 0),
    "k_cpca_8": ("cp.async.ca", "cp.async.ca.shared.global", 8, 0),
    "k_cpca_16": ("cp.async.ca", "cp.async.ca.shared.global", 16, 0),
    "k_cpcg_16": ("cp.async.cg", "cp.async.cg.shared.global", 16, 0),
    "k_cpca_4_src": ("cp.async.ca", "cp.async.ca.shared.global", 4, 0),
    "k_cpca_8_src": ("cp.async.ca", "cp.async.ca.shared.global", 8, 0),
    "k_cpca_16_src": ("cp.async.ca", "cp.async.ca.shared.global", 16, 0),
    "k_none": (None, "(no shared-memory instruction)", 0, 0),
}

L = np.arange(32)
FULL = (1 << 32) - 1


def _mask(bits):
    return int(sum(1 << int(i) for i in np.nonzero(bits)[0]))


def _lanewise(w):
    """Access patterns for ld/st/atom/cp.async of ``w`` bytes per lane: name -> (offsets, mask)."""
    rng = np.random.default_rng(1000 + w)
    W = max(w, 4)
    pats = {
        "contiguous": (L * w, FULL),
        "stride2": (L * 2 * w, FULL),
        "stride4": (L * 4 * w, FULL),
        "stride8": (L * 8 * w, FULL),
        "stride32": (L * 32 * w, FULL),
        "row128": (L * 128, FULL),
        "padded_row132": (L * 132 if w <= 4 else L * (128 + w), FULL),
        "word_stride2": (L * 8 if w <= 8 else L * 32, FULL),
        "uniform": (np.zeros(32, int), FULL),
        "pairs_xor1": ((L >> 1) * 2 * W, FULL),
        "pairs_xor2": (((L & ~3) | ((L & 1) << 1)) // 2 * W, FULL),
        "pairs_xor4": (((L >> 3) * 4 + (L & 3)) * W, FULL),
        "quads_xor3": ((L >> 2) * W, FULL),
        "broadcast_mod4": ((L & 3) * W, FULL),
        "reversed": ((31 - L) * w, FULL),
        "xor_swizzle": (((L >> 3) * 128 + (((L & 7) ^ (L >> 3)) * 16)) // 16 * w * 1 if w == 16
                        else (L // 8) * 256 + ((L % 8) ^ (L // 8)) * w, FULL),
        "col_of_rowmajor_8x8": (L * 8 * max(w, 2), FULL),
        "half_active": (L * 4 * w, 0x0000FFFF),
        "odd_active": (L * 32 * w, 0xAAAAAAAA),
        "one_lane": (L * w, 0x00000020),
        "no_lane": (L * w, 0),
        "random_a": ((rng.permutation(2048 // w)[:32] * w), FULL),
        "random_b": ((rng.integers(0, 16384 // w, 32) * w), FULL),
        "random_masked": ((rng.integers(0, 4096 // w, 32) * w), int(rng.integers(1, FULL))),
    }
    if w < 4:
        pats["same_word"] = ((L % (4 // w)) * w + (L // (4 // w)) * 128, FULL)
        pats["subword_packed"] = (L * w, FULL)
        pats["subword_spread"] = (L * w * 4 * 32 // 32, FULL)
    return pats


def _rows(nmat):
    """Row-address patterns for ldmatrix/stmatrix (lane 8j+r gives matrix j row r): name -> offsets."""
    rng = np.random.default_rng(77 + nmat)
    j, r = L >> 3, L & 7
    return {
        "contiguous_rows": L * 16,
        "rows128": j * 16 + r * 128,
        "rows144_padded": j * 16 + r * 144,
        "rows128_xor_swizzled": r * 128 + ((j ^ r) & 7) * 16,
        "rows64": j * 16 + r * 64,
        "rows64_xor_swizzled": r * 64 + ((j ^ (r >> 1)) & 3) * 16 + (r & 1) * 0,
        "rows256": j * 16 + r * 256,
        "rows32": j * 16 + r * 32,
        "tile_16x16_f16": (L & 15) * 32 + (L >> 4) * 16,
        "tile_16x16_f16_padded": (L & 15) * 48 + (L >> 4) * 16,
        "all_same_row": np.zeros(32, int),
        "matrix_same_rows": r * 16,
        "random": rng.permutation(1024)[:32] * 16,
    }


# Kernels in the order they are measured (most informative first, so a cut-short run still says most),
# with the subset of patterns each gets (None: all of them).
_FEW_LANEWISE = ["contiguous", "stride2", "stride32", "row128", "padded_row132", "uniform", "pairs_xor1",
                 "broadcast_mod4", "xor_swizzle", "half_active", "random_a", "random_masked",
                 "same_word", "subword_packed", "subword_spread"]
_FEW_ROWS = ["contiguous_rows", "rows128", "rows144_padded", "rows128_xor_swizzled", "all_same_row", "random"]
ORDER = [
    ("k_ld_u32", None), ("k_ld_v2", None), ("k_ld_v4", None),
    ("k_st_u32", None), ("k_st_v2", None), ("k_st_v4", None),
    ("k_ldsm_x1", None), ("k_ldsm_x2", None), ("k_ldsm_x4", None),
    ("k_stsm_x1", None), ("k_stsm_x2", None), ("k_stsm_x4", None),
    ("k_cpca_4", None), ("k_cpca_8", None), ("k_cpca_16", None), ("k_cpcg_16", _FEW_LANEWISE[:6]),
    ("k_ldsm_x1_t", _FEW_ROWS), ("k_ldsm_x2_t", _FEW_ROWS), ("k_ldsm_x4_t", _FEW_ROWS),
    ("k_stsm_x1_t", _FEW_ROWS), ("k_stsm_x2_t", _FEW_ROWS), ("k_stsm_x4_t", _FEW_ROWS),
    ("k_ld_u8", _FEW_LANEWISE), ("k_ld_u16", _FEW_LANEWISE), ("k_st_u8", _FEW_LANEWISE),
    ("k_st_u16", _FEW_LANEWISE), ("k_atom_add_u32", None),
]


_SRC_DEST = ["contiguous", "stride2", "stride8", "stride32", "uniform", "pairs_xor1", "pairs_xor2",
             "quads_xor3", "broadcast_mod4", "xor_swizzle", "padded_row132", "random_a", "random_b",
             "random_masked"]


def _sources(w):
    """Global source layouts for the cp.async *_src kernels: name -> 32 byte offsets."""
    rng = np.random.default_rng(500 + w)
    return {"src_contiguous": L * w, "src_stride16": L * 16, "src_line_per_lane": L * 128,
            "src_reversed": (31 - L) * w, "src_permuted": rng.permutation(32) * w}


def build():
    """Every launch as (kernel, pattern name, 32 byte offsets, active-lane mask[, 32 source offsets])."""
    pats = [("k_none", "baseline", L * 4, FULL)]
    for k, subset in ORDER:
        op, _, w, nmat = KERNELS[k]
        if op in ("ldmatrix", "stmatrix"):
            items = [(name, (offs, FULL)) for name, offs in _rows(nmat).items()]
        else:
            items = list(_lanewise(w).items())
        for name, (offs, mask) in items:
            if subset is not None and name not in subset:
                continue
            offs = np.asarray(offs, dtype=np.int64) % 32768
            offs -= offs % w  # keep every access naturally aligned
            pats.append((k, name, offs, mask))
    for k in ("k_cpca_4_src", "k_cpca_8_src", "k_cpca_16_src"):
        w = KERNELS[k][2]
        lanewise = _lanewise(w)
        for sname, src in _sources(w).items():
            for name in _SRC_DEST:
                offs, mask = lanewise[name]
                offs = np.asarray(offs, dtype=np.int64) % 32768
                offs -= offs % w
                pats.append((k, f"{name}/{sname}", offs, mask, np.asarray(src, dtype=np.int64)))
    return pats


PATTERNS = build()

if __name__ == "__main__":
    for k, name, offs, mask, *src in PATTERNS:
        print(k, format(mask, "x"), " ".join(str(int(a)) for a in np.concatenate([offs] + src)))
