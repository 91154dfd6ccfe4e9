"""emulator.gluon: mma layouts against the emulator's own fragments, ownership, shared offsets, the seed's
helpers, pictures, the convert_layout explainer, errors."""
import math
import subprocess
import sys

import numpy as np
import pytest

from isa.mma import VARIANTS as MMA
from isa.wgmma import VARIANTS as WG
from emulator.gluon import (BlockedLayout, DistributedLinearLayout, DotOperandLayout, GluonLayoutError,
                            NVMMADistributedLayout, NVMMASharedLayout, SliceLayout, SwizzledSharedLayout,
                            TensorMemoryLayout, parse_layout)
from emulator.gluon.convert import explain_convert
from emulator.gluon.linear import apply
from emulator.gluon.show import chunk_read_conflicts, owner_view, shared_view
from emulator.gluon.utils import (get_mma_instr_shape, get_mma_reg_layout, get_nvmma_layout,
                                  get_tmem_32x32b_reg_layout, tmem_32x32b_reg_layout)
from emulator.layouts.swizzle import nvmma


def coords(layout, shape):
    """[warps, 32, registers, rank]: the element each (warp, lane, register) holds."""
    b = layout.to_linear(shape)
    nw, nr = 1 << len(b["warp"]), 1 << len(b["register"])
    w, l, r = np.meshgrid(np.arange(nw), np.arange(32), np.arange(nr), indexing="ij")
    c = apply(b, len(shape), ("register", "lane", "warp"), {"register": r, "lane": l, "warp": w})
    return np.stack(c, -1)


def frag_as_triton(frag, nwarps):
    """isa fragment (n_regs, threads, epr, 2) -> [warps, 32, n_regs * epr, 2] (element e of register r is
    Triton's register r * epr + e)."""
    n_regs, nthr, epr, _ = frag.shape
    f = frag.transpose(1, 0, 2, 3).reshape(nthr, n_regs * epr, 2)
    return f.reshape(nwarps, 32, n_regs * epr, 2)


V2 = NVMMADistributedLayout([2, 0], [1, 1], [16, 8])


@pytest.mark.parametrize("spelling,kw", [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 2),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 2),
    ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 1),
    ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 4),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 4),
])
def test_mma_v2_matches_mma_sync_fragments(spelling, kw):
    v = MMA[spelling]
    m, n, k = v.shape if hasattr(v, "shape") else (16, 8, 8 * kw)
    assert (m, n, k) == (16, 8, 8 * kw)
    assert (coords(V2, [16, 8]) == frag_as_triton(v.fragment("C"), 1)).all()
    assert (coords(DotOperandLayout(0, V2, kw), [16, k]) == frag_as_triton(v.fragment("A"), 1)).all()
    assert (coords(DotOperandLayout(1, V2, kw), [k, 8]) == frag_as_triton(v.fragment("B"), 1)).all()


@pytest.mark.parametrize("n", [8, 64, 128, 256])
def test_mma_v3_matches_wgmma_fragments(n):
    for atype, kw in (("f16", 2), ("tf32", 1), ("e4m3", 4)):
        v = next(x for x in WG.values() if x.n == n and x.atype == atype and x.dtype == "f32")
        L = NVMMADistributedLayout([3, 0], [4, 1], [16, n, v.k])
        assert (coords(L, [64, n]) == frag_as_triton(v.fragment("D"), 4)).all()
        A = DotOperandLayout(0, L, kw)
        assert (coords(A, [64, v.k]) == frag_as_triton(v.fragment("A"), 4)).all()


def test_fragment_comparison_can_fail():
    """k_width 1 (tf32-style) on an f16 m16n8k16 A tile has the right size but the wrong elements."""
    v = MMA["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"]
    got, want = coords(DotOperandLayout(0, V2, 1), [16, 16]), frag_as_triton(v.fragment("A"), 1)
    assert got.shape == want.shape and not (got == want).all()


def test_owner_blocked_example():
    L = BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    o = L.owner([64, 64])
    assert o.replication == 1
    # thread 32w + 8r + c/4 ... : lane = 8 * (row % 4) + (col % 32) // 4, warp = (row // 4) % 4
    i, j = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    assert (o.lane[..., 0] == 8 * (i % 4) + (j % 32) // 4).all()
    assert (o.warp[..., 0] == (i // 4) % 4).all()
    assert (o.register[..., 0] == (j % 4) + 4 * (j // 32) + 8 * (i // 16)).all()
    assert o.holders(0, 5) == [(1, 1, 0, 0)]


def test_owner_replication_and_slice():
    L = BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    o = L.owner([8, 8])                       # CTA tile 16 x 32: each element held 2 * 4 = 8 times
    assert o.replication == 8
    s = SliceLayout(1, L).owner([64])         # the 8 lanes of a row hold the same row index
    assert s.replication == 8 and sorted(set(s.lane[5].tolist())) == [8, 9, 10, 11, 12, 13, 14, 15]
    # every holder really holds the element
    c = coords(L, [8, 8])
    for (a, b) in ((0, 0), (3, 7), (7, 4)):
        for r, l, w, _ in o.holders(a, b):
            assert tuple(c[w, l, r]) == (a, b)


def test_distributed_linear_roundtrip():
    L = BlockedLayout([2, 2], [8, 4], [2, 2], [0, 1])
    b = L.to_linear([32, 64])
    D = DistributedLinearLayout(b["register"], b["lane"], b["warp"], b["block"], [32, 64])
    assert D.to_linear([32, 64]) == b
    assert (D.owner([32, 64]).thread == L.owner([32, 64]).thread).all()
    with pytest.raises(GluonLayoutError, match="describes shape"):
        D.to_linear([64, 64])


def test_nvmma_shared_matches_the_wgmma_swizzle():
    """Triton's NVMMA shared layout of a row-major tile with W-byte rows is CuTe's Swizzle<log2(W/16),4,3> on
    byte offsets (emulator.layouts.swizzle.nvmma, itself checked against the wgmma descriptor captures)."""
    for w in (32, 64, 128):
        for bits in (8, 16, 32):
            cols = 8 * w // bits
            off = NVMMASharedLayout(w, bits).byte_offset([64, cols])
            sw = nvmma(w)
            want = np.array([[sw(r * w + c * bits // 8) for c in range(cols)] for r in range(64)])
            assert (off == want).all(), (w, bits)


def test_nvmma_bank_conflicts():
    # reading 8 rows of one 16-byte chunk column: unswizzled 128-byte rows conflict 8 ways, swizzles spread
    assert sum(r.conflicts for _, r in chunk_read_conflicts(NVMMASharedLayout(0, 16), [8, 64])) == 56
    for w in (32, 64, 128):
        assert sum(r.conflicts for _, r in chunk_read_conflicts(NVMMASharedLayout(w, 16), [8, 64])) == 0
    assert "0 bank conflicts" in shared_view(NVMMASharedLayout(128, 16), [8, 64]).text()


def test_swizzled_shared_offsets_are_a_bijection():
    L = SwizzledSharedLayout(8, 2, 4, [1, 0])
    off = L.offsets([32, 64])
    assert sorted(off.ravel().tolist()) == list(range(32 * 64))
    assert off[2, 0] == 2 * 64 + 8 and off[0, 9] == 9


def test_seed_utilities():
    assert get_mma_instr_shape([128, 256], "float16") == (128, 256, 16)
    assert get_mma_instr_shape([64, 64], "float8e4nv") == (64, 64, 32)
    assert get_mma_instr_shape([256, 512], "float32") == (128, 256, 8)
    assert get_nvmma_layout([128, 64], "float16").swizzle_byte_width == 128      # 128 bytes per row
    assert get_nvmma_layout([128, 32], "float16").swizzle_byte_width == 64
    assert get_nvmma_layout([128, 16], "float16").swizzle_byte_width == 32
    assert get_nvmma_layout([128, 8], "float16").swizzle_byte_width == 0
    assert get_nvmma_layout([4, 64], "float16").swizzle_byte_width == 0          # fewer than 8 rows
    t = get_nvmma_layout([64, 128], "float16", order=[0, 1])
    assert t.transposed and t.swizzle_byte_width == 128
    assert repr(get_mma_reg_layout([128, 128], 4)) == "BlockedLayout([1, 128], [32, 1], [4, 1], [0, 1])"
    assert repr(get_mma_reg_layout([128, 128], 8)) == "BlockedLayout([1, 64], [32, 1], [4, 2], [0, 1])"
    assert repr(get_mma_reg_layout([64, 64], 4)) == "BlockedLayout([1, 32], [16, 2], [4, 1], [0, 1])"


def _message_ok(reg_layout, tmem, shape):
    """tcgen05.ld.32x32b: thread i of warp w reads TMEM lane 32 * (w % 4) + i, and only that lane. Where lanes
    16-31 are empty (one 64-row block) the load is the 16x32bx2 form: threads i and i + 16 read lane i, two
    column halves."""
    o = reg_layout.owner(shape)
    lane = o.lane[..., 0] % 16 if tmem.upper_half_empty(shape) else o.lane[..., 0]
    want = 32 * (o.warp[..., 0] % 4) + lane
    return bool((tmem.lanes(shape) == want).all())


@pytest.mark.parametrize("m", [64, 128])
@pytest.mark.parametrize("n", [32, 64, 128, 256])
@pytest.mark.parametrize("nw", [4, 8])
def test_seed_tmem_layout_against_the_32x32b_message(m, n, nw):
    """Triton 3.9's own register layout for TMEM loads (tmem_32x32b_reg_layout, checked against Triton in
    test_gluon_triton) always obeys the message's lane rule. The seed's helper obeys it for M = 128 and for a
    single 64-row block; with several M = 64 blocks it gives lanes 16-31 the second half of the columns of the
    same rows, while Triton 3.9 keeps the next 64-row block in TMEM lanes 16-31 (modelled from published
    semantics, not measured)."""
    for shape in ([m, n], [2 * m, n], [m, 2 * n]):
        tm = TensorMemoryLayout((m, n), 1)
        assert _message_ok(tmem_32x32b_reg_layout(tm, shape, nw), tm, shape)
        seed = get_tmem_32x32b_reg_layout((m, n, 16), shape, nw)
        assert _message_ok(seed, tm, shape) == (m == 128 or shape == [m, n]), (shape, seed)
        if nw == 4 and (m == 128 or shape == [m, n]):       # then it is Triton's layout, thread for thread
            assert (seed.owner(shape).thread == tmem_32x32b_reg_layout(tm, shape, nw).owner(shape).thread).all()


def test_tmem_32x32b_lane_rule():
    """Thread i of warp w reads TMEM lane 32 * (w % 4) + i (the 32x32b message), modelled."""
    T = TensorMemoryLayout((128, 64), 1)
    R = tmem_32x32b_reg_layout(T, [128, 64], 4)
    o = R.owner([128, 64])
    rows = np.arange(128)[:, None]
    assert (o.thread[..., 0] == rows).all()


def test_convert_explainer():
    mma = NVMMADistributedLayout([2, 0], [2, 2], [16, 8])
    bl = BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    r = explain_convert(mma, bl, [64, 64])
    assert sum(r.counts.values()) == 4096 and r.counts["across warps"] > 0
    assert "shared memory" in r.route
    plain = r.conflicts
    r2 = explain_convert(mma, bl, [64, 64], scratch=SwizzledSharedLayout(8, 1, 8, [1, 0]))
    assert r2.conflicts < plain and r2.conflicts == 0
    same = explain_convert(bl, BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]), [64, 64])
    assert same.counts["in thread"] == 4096 and same.route.startswith("nothing")
    v3 = NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16])
    assert explain_convert(v3, DotOperandLayout(0, v3, 2), [64, 64]).route.startswith("nothing")
    # an intra-warp transpose of a 32x32 tile held by one warp: lanes only
    a = BlockedLayout([1, 1], [1, 32], [1, 1], [1, 0])
    b = BlockedLayout([1, 1], [32, 1], [1, 1], [0, 1])
    r3 = explain_convert(a, b, [32, 32])
    assert r3.counts["across warps"] == 0 and r3.counts["across lanes"] > 0
    assert "=" in r3.view().text() and "L" in r3.view().text()


def test_owner_view_text():
    t = owner_view(NVMMADistributedLayout([2, 0], [1, 1], [16, 8]), [16, 8]).text().splitlines()
    assert t[2].split()[1:5] == ["T0:r0", "T0:r1", "T1:r0", "T1:r1"]
    assert t[10].split()[1:3] == ["T0:r2", "T0:r3"]                # row 8: registers 2, 3


@pytest.mark.parametrize("text,rule", [
    ("BlockedLayout([1, 4], [4, 4], [4, 1], [1, 0])", "multiplies to 16"),
    ("BlockedLayout([1, 3], [4, 8], [4, 1], [1, 0])", "powers of two"),
    ("BlockedLayout([1, 4], [4, 8], [4, 1], [0, 0])", "permutation"),
    ("NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 16])", "instr_shape"),
    ("NVMMADistributedLayout(version=[3, 0], warps_per_cta=[2, 1], instr_shape=[16, 64, 16])", "warpgroups"),
    ("NVMMADistributedLayout(version=[5, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])", "TensorMemory"),
    ("DotOperandLayout(1, NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], "
     "instr_shape=[16, 64, 16]), 2)", "shared memory"),
    ("NVMMASharedLayout(96, 16)", "0, 32, 64 or 128"),
    ("BlockedLayout([1], [32], [4], [0], cga_layout=[[3]])", "cga_layout basis"),
    ("BlockedLayout([1], [32], [4], [0], cga_layout=4)", "cga_layout 4"),
    ("Foo(1)", "unknown constructor"),
    ("BlockedLayout(__import__('os'))", "unknown constructor '__import__'"),
    ("BlockedLayout(x, [32], [4], [0])", "only layout constructors"),
])
def test_errors(text, rule):
    with pytest.raises(GluonLayoutError, match=rule):
        parse_layout(text)


def test_shape_errors():
    L = BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    with pytest.raises(GluonLayoutError, match="power of two"):
        L.to_linear([48, 64])
    with pytest.raises(GluonLayoutError, match="rank"):
        L.to_linear([64])
    with pytest.raises(GluonLayoutError, match="128-byte swizzle needs"):
        NVMMASharedLayout(128, 16).to_linear([64, 32])


def test_fuzz_owner_is_consistent():
    """Random blocked/mma layouts and shapes: owner() lists exactly the slots whose coordinate is the element."""
    rng = np.random.default_rng(14)
    for _ in range(40):
        spt = [int(2 ** rng.integers(0, 3)) for _ in range(2)]
        t0 = int(2 ** rng.integers(0, 6))
        wpc = [int(2 ** rng.integers(0, 3)) for _ in range(2)]
        L = BlockedLayout(spt, [t0, 32 // t0], wpc, list(rng.permutation(2)))
        shape = [int(2 ** rng.integers(0, 7)) for _ in range(2)]
        o = L.owner(shape)
        c = coords(L, shape)
        n_slots = c.shape[0] * c.shape[1] * c.shape[2]
        assert o.replication * math.prod(shape) == n_slots
        i, j = int(rng.integers(shape[0])), int(rng.integers(shape[1]))
        for r, l, w, _ in o.holders(i, j):
            assert tuple(c[w, l, r]) == (i, j)


def test_cli_show_gluon(tmp_path, capsys):
    from emulator.cli import main
    assert main(["show", "--gluon", "BlockedLayout([1,4],[4,8],[4,1],[1,0])", "--shape", "16x16"]) == 0
    assert "T0:r0" in capsys.readouterr().out.splitlines()[2]
    svg = tmp_path / "b.svg"
    assert main(["show", "--gluon", "NVMMASharedLayout(128, 16)", "--shape", "8x64", "--svg", str(svg)]) == 0
    assert svg.read_text().startswith("<svg")
    assert main(["show", "--gluon", "NVMMADistributedLayout(version=[2,0], warps_per_cta=[2,2], instr_shape=[16,8])",
                 "--convert", "BlockedLayout([1,8],[4,8],[4,1],[1,0])"]) == 0
    out = capsys.readouterr().out
    assert "across warps" in out and "conflicts" in out


def test_cli_show_gluon_as_a_command():
    out = subprocess.run([sys.executable, "-m", "emulator", "show", "--gluon",
                          "BlockedLayout([1,4],[4,8],[4,1],[1,0])", "--shape", "64x64"],
                         capture_output=True, text=True, check=True).stdout
    assert len(out.splitlines()) == 64 + 3


def test_fuzz_bad_input_is_a_clear_error():
    """Random constructor texts and shapes: either a layout that answers, or a GluonLayoutError, nothing else."""
    rng = np.random.default_rng(7)
    ctors = ["BlockedLayout", "SliceLayout", "NVMMADistributedLayout", "DotOperandLayout", "NVMMASharedLayout",
             "SwizzledSharedLayout", "TensorMemoryLayout", "DistributedLinearLayout"]

    def arg(depth):
        k = rng.integers(0, 6)
        if k == 0 and depth < 2:
            return f"{rng.choice(ctors)}({', '.join(arg(depth + 1) for _ in range(rng.integers(0, 5)))})"
        if k in (1, 2):
            return "[" + ", ".join(str(int(2 ** rng.integers(0, 6))) for _ in range(rng.integers(0, 4))) + "]"
        if k == 3:
            return str(int(rng.integers(-2, 300)))
        if k == 4:
            return "[[0, 1], [1, 0]]"
        return rng.choice(["True", "'x'", "1.5", "(64, 64)", "None"])
    valid = ["BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])", "NVMMASharedLayout(128, 16)",
             "NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16])", "SwizzledSharedLayout(8, 2, 4, [1, 0])",
             "DotOperandLayout(0, NVMMADistributedLayout([2, 0], [2, 2], [16, 8]), 2)",
             "TensorMemoryLayout((64, 64), 1)",
             "SliceLayout(1, BlockedLayout([2, 2], [8, 4], [2, 2], [0, 1]))",
             "BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=[[1, 0]])",
             "NVMMASharedLayout(128, 16, cga_layout=[[0, 1], [1, 0]])",
             "DotOperandLayout(1, NVMMADistributedLayout([2, 0], [2, 2], [16, 8], cga_layout=[[1, 0]]), 2)"]
    import re

    def mutate(t):
        nums = list(re.finditer(r"\d+", t))
        m = nums[int(rng.integers(len(nums)))]
        return t[:m.start()] + str(int(rng.choice([0, 1, 2, 3, 4, 8, 16, 32, 64]))) + t[m.end():]
    answered = 0
    for i in range(600):
        if i % 2:
            text = mutate(str(rng.choice(valid)))
        else:
            text = f"{rng.choice(ctors)}({', '.join(arg(1) for _ in range(rng.integers(0, 6)))})"
        shape = [int(2 ** rng.integers(0, 8)) for _ in range(rng.integers(1, 3))]
        try:
            L = parse_layout(text)
            L.to_linear(shape)
            if hasattr(L, "owner"):
                L.owner(shape)
            answered += 1
        except GluonLayoutError:
            pass
    assert answered > 0


def test_fuzz_convert_counts():
    rng = np.random.default_rng(3)
    for _ in range(12):
        ls = []
        for _ in range(2):
            t0 = int(2 ** rng.integers(0, 6))
            w0 = int(2 ** rng.integers(0, 3))
            ls.append(BlockedLayout([int(2 ** rng.integers(0, 3)), int(2 ** rng.integers(0, 3))], [t0, 32 // t0],
                                    [w0, 4 // w0], list(rng.permutation(2))))
        shape = [int(2 ** rng.integers(3, 7)) for _ in range(2)]
        r = explain_convert(ls[0], ls[1], shape, elem_bits=int(rng.choice([8, 16, 32])))
        assert sum(r.counts.values()) == 4 * 32 * ls[1].registers(shape)
        assert (r.counts["across warps"] > 0) == bool(r.stores)
        for rec in r.stores + r.loads:
            assert rec.wavefronts >= rec.phases and rec.conflicts == rec.wavefronts - rec.phases


def test_tmem_view():
    from emulator.gluon.show import tmem_view
    t = tmem_view(TensorMemoryLayout((64, 8), 1), [128, 8]).text().splitlines()
    assert t[2].split()[2:4] == ["0,0", "0,1"] and t[18].split()[2] == "64,0"    # lane 16: the second block
    t = tmem_view(TensorMemoryLayout((64, 8), 1), [64, 8]).text().splitlines()
    assert t[18].split()[2] == "-"                                             # one block: lanes 16-31 empty


def test_several_ctas():
    L = BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=[[1, 0]])
    b = L.to_linear([64, 64])
    assert b["block"] == [[32, 0]]                  # CTA 1 holds rows 32-63
    o = L.owner([64, 64])
    assert (o.block[:32, :, 0] == 0).all() and (o.block[32:, :, 0] == 1).all()
    assert "B1:T0:r0" in owner_view(L, [64, 64]).text()
    S = NVMMASharedLayout(128, 16, cga_layout=[[0, 1]])
    assert (S.blocks([64, 128])[:, 64:] == 1).all() and S.offsets([64, 128]).max() == 64 * 64 - 1
    with pytest.raises(GluonLayoutError, match="one CTA"):
        explain_convert(L, BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]), [64, 64])
    with pytest.raises(GluonLayoutError, match="power of two"):
        BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=[[3, 0]])
