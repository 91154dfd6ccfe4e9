"""Integer bit instructions, comparisons, warp shuffles and votes, atomics: each against a plain-Python
transcription of the PTX ISA's pseudo-code, over all 32 lanes."""
import numpy as np
import pytest

from emulator import EmulatorError, GlobalMemory, OperandError, UnsupportedError, Warp, WarpSyncError

RNG = np.random.default_rng(12)
LANES = np.arange(32)


def rand32(n=32):
    v = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    v[:6] = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x00F0F000]
    return v


def warp_with(**regs):
    w = Warp()
    for k, v in regs.items():
        w.write(f"%{k}", v)
    return w


# ------------------------------------------------------------------------------------------------
# bit manipulation

def test_popc_clz_brev_bfind():
    a = rand32()
    w = warp_with(r1=a)
    w.run("popc.b32 %r2, %r1; clz.b32 %r3, %r1; brev.b32 %r4, %r1; bfind.u32 %r5, %r1; bfind.s32 %r6, %r1; "
          "bfind.shiftamt.u32 %r7, %r1")
    for lane, x in enumerate(map(int, a)):
        assert w.read("%r2")[lane] == bin(x).count("1")
        assert w.read("%r3")[lane] == 32 - x.bit_length()
        assert w.read("%r4")[lane] == int(f"{x:032b}"[::-1], 2)
        assert w.read("%r5")[lane] == (x.bit_length() - 1 if x else 0xFFFFFFFF)
        s = x if x < 2 ** 31 else ~x & 0xFFFFFFFF
        assert w.read("%r6")[lane] == (s.bit_length() - 1 if s else 0xFFFFFFFF)
        assert w.read("%r7")[lane] == (31 - (x.bit_length() - 1) if x else 0xFFFFFFFF)


def test_bfe_bfi():
    a, b = rand32(), rand32()
    pos = RNG.integers(0, 40, 32).astype(np.uint32)
    ln = RNG.integers(0, 40, 32).astype(np.uint32)
    w = warp_with(r1=a, r2=b, r3=pos, r4=ln)
    w.run("bfe.u32 %r5, %r1, %r3, %r4; bfe.s32 %r6, %r1, %r3, %r4; bfi.b32 %r7, %r1, %r2, %r3, %r4")
    for lane in range(32):
        x, y, p, n = int(a[lane]), int(b[lane]), int(pos[lane]), int(ln[lane])
        field = [(x >> (p + i)) & 1 if p + i < 32 else None for i in range(32)]
        u = sum(((field[i] or 0) << i) for i in range(min(n, 32)) if field[i] is not None)
        assert w.read("%r5")[lane] == u
        msb = min(p + n - 1, 31)
        sb = (x >> msb) & 1 if n else 0
        s = sum(((field[i] if (i < n and field[i] is not None) else sb) << i) for i in range(32))
        assert w.read("%r6")[lane] == s
        r = y
        for i in range(n):
            if p + i >= 32:
                break
            r = (r & ~(1 << (p + i))) | (((x >> i) & 1) << (p + i))
        assert w.read("%r7")[lane] == r & 0xFFFFFFFF


def test_prmt_and_shf():
    a, b = rand32(), rand32()
    sel = RNG.integers(0, 2 ** 16, 32).astype(np.uint32)
    n = RNG.integers(0, 40, 32).astype(np.uint32)
    w = warp_with(r1=a, r2=b, r3=sel, r4=n)
    w.run("prmt.b32 %r5, %r1, %r2, %r3; shf.l.wrap.b32 %r6, %r1, %r2, %r4; shf.r.clamp.b32 %r7, %r1, %r2, %r4")
    for lane in range(32):
        x, y, s, k = int(a[lane]), int(b[lane]), int(sel[lane]), int(n[lane])
        src = [(x >> (8 * i)) & 0xFF for i in range(4)] + [(y >> (8 * i)) & 0xFF for i in range(4)]
        r = 0
        for i in range(4):
            nib = (s >> (4 * i)) & 0xF
            byte = src[nib & 7]
            if nib & 8:
                byte = 0xFF if byte & 0x80 else 0
            r |= byte << (8 * i)
        assert w.read("%r5")[lane] == r
        both = x | (y << 32)
        assert w.read("%r6")[lane] == ((both << (k & 31)) >> 32) & 0xFFFFFFFF
        assert w.read("%r7")[lane] == (both >> min(k, 32)) & 0xFFFFFFFF


def test_integer_division_and_remainder_truncate_like_c():
    a = RNG.integers(-10 ** 6, 10 ** 6, 32).astype(np.int32)
    b = RNG.integers(1, 1000, 32).astype(np.int32) * RNG.choice([-1, 1], 32).astype(np.int32)
    w = warp_with(r1=a, r2=b)
    w.run("div.s32 %r3, %r1, %r2; rem.s32 %r4, %r1, %r2; div.u32 %r5, %r1, %r2")
    for lane in range(32):
        x, y = int(a[lane]), int(b[lane])
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
        assert w.read("%r3").view(np.int32)[lane] == q
        assert w.read("%r4").view(np.int32)[lane] == x - q * y
        assert w.read("%r5")[lane] == (x & 0xFFFFFFFF) // (y & 0xFFFFFFFF)
    w.write("%r2", np.where(LANES == 7, 0, 1))
    w.run("div.s32 %r3, %r1, %r2; rem.u32 %r4, %r1, %r2;")        # by zero: all ones, as on the H100
    assert w.read("%r3")[7] == 0xFFFFFFFF and w.read("%r4")[7] == 0xFFFFFFFF
    assert (np.delete(w.read("%r3").view(np.int32), 7) == np.delete(a, 7)).all()


def test_setp_selp_with_bool_ops_and_unordered_compares():
    a = np.array([1.0, np.nan, 2.0, -0.0] * 8, np.float32)
    b = np.array([2.0, 1.0, np.nan, 0.0] * 8, np.float32)
    w = warp_with(f1=a, f2=b, r1=np.arange(32) - 16)
    w.run("setp.lt.f32 %p1, %f1, %f2; setp.ltu.f32 %p2, %f1, %f2; setp.eq.f32 %p3|%p4, %f1, %f2; "
          "setp.gt.and.s32 %p5, %r1, 0, %p2; setp.lo.u32 %p6, %r1, 5; selp.b32 %r2, 10, 20, %p6")
    assert w.read("%p1")[:4].tolist() == [True, False, False, False]
    assert w.read("%p2")[:4].tolist() == [True, True, True, False]
    assert w.read("%p3")[:4].tolist() == [False, False, False, True]
    assert w.read("%p4")[:4].tolist() == [True, True, True, False]
    assert w.read("%p5").tolist() == [(t - 16 > 0) and bool(w.read("%p2")[t]) for t in range(32)]
    assert w.read("%r2").tolist() == [10 if 0 <= t - 16 < 5 else 20 for t in range(32)]


# ------------------------------------------------------------------------------------------------
# shuffles and votes

def shfl_ref(mode, a, b, c):
    """The PTX ISA pseudo-code of shfl.sync for every lane: (d, p)."""
    d, p = [], []
    for lane in range(32):
        bval, cval, seg = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            ok = j <= max_lane
        j = j if ok else lane
        d.append(int(a[j]))
        p.append(ok)
    return d, p


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("b,c", [(1, 0x1F), (3, 0x1F), (5, 0x181F), (2, 0x1C1F), (7, 0), (17, 0x101F), (0, 0x1F)])
def test_shfl_all_modes_and_widths(mode, b, c):
    a = rand32()
    w = warp_with(r1=a)
    w.run(f"shfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, -1;")
    d, p = shfl_ref(mode, a, b, c)
    assert w.read("%r2").tolist() == d
    assert w.read("%p1").tolist() == p


def test_vote_ballot_and_activemask():
    v = (LANES % 3 == 0)
    w = warp_with(p1=v)
    w.run("vote.sync.ballot.b32 %r1, %p1, -1; vote.sync.any.pred %p2, %p1, -1; vote.sync.all.pred %p3, !%p1, -1; "
          "vote.sync.uni.pred %p4, %p1, -1; activemask.b32 %r2;")
    assert w.read("%r1")[0] == sum(1 << t for t in range(32) if t % 3 == 0)
    assert w.read("%p2").all() and not w.read("%p3").any() and not w.read("%p4").any()
    assert w.read("%r2")[0] == 0xFFFFFFFF


def test_warp_sync_errors():
    w = Warp()
    with pytest.raises(WarpSyncError, match="not in membermask 0x0000ffff"):
        w.run("vote.sync.ballot.b32 %r1, %p1, 0xffff;")
    with pytest.raises(OperandError, match=r"needs shfl.sync.\{up,down,bfly,idx\}.b32"):
        w.run("shfl.up.b32 %r1, %r2, 1, 31;")


# ------------------------------------------------------------------------------------------------
# atomics: lanes apply in ascending order

def test_atomics_apply_in_lane_order_on_shared_and_global():
    w = Warp()
    w.smem[:4] = 0
    w.write("%r1", np.zeros(32, np.uint32))
    w.write("%r2", LANES + 1)
    w.run("atom.shared.add.u32 %r3, [%r1], %r2; atom.shared.exch.b32 %r4, [%r1+4], %r2")
    assert w.read("%r3").tolist() == [sum(range(1, t + 1)) for t in range(32)]
    assert w.read("%r4").tolist() == [0] + list(range(1, 32))
    assert int(w.smem[:4].view(np.uint32)[0]) == 528 and int(w.smem[4:8].view(np.uint32)[0]) == 32
    g = w.gmem
    addr = g.upload(np.array([5, 0], np.uint32))
    w.write("%rd1", np.full(32, addr, np.uint64))
    w.write("%r5", np.where(LANES % 2 == 0, 5, 9))
    w.run("atom.global.cas.b32 %r6, [%rd1], %r5, %r2; red.global.max.s32 [%rd1+4], %r2; "
          "atom.global.inc.u32 %r7, [%rd1+4], 40")
    # lane 0: 5 == 5 -> 1; lanes after compare against 1, 1, ... (never equal) and see 1
    assert w.read("%r6").tolist() == [5] + [1] * 31
    assert w.read("%r7").tolist() == [32 + t if 32 + t <= 40 else (32 + t) % 41 for t in range(32)]
    with pytest.raises(UnsupportedError, match=r"atom.cas.u32 is not an sm_90a form; the .cas forms: "):
        w.run("atom.global.cas.u32 %r6, [%rd1], %r5, %r2;")


def test_atomic_float_add_rounds_each_step():
    w = Warp()
    w.smem[:4] = np.array([1.0], np.float32).view(np.uint8)
    w.write("%r1", np.zeros(32, np.uint32))
    w.write("%f1", np.full(32, 2.0 ** -24, np.float32))
    w.run("red.shared.add.f32 [%r1], %f1;")
    # 1 + 2^-24 rounds back to 1 (ties to even) at every step
    assert w.smem[:4].view(np.float32)[0] == 1.0


@pytest.mark.parametrize("ptype,one,want", [("bf16", 0x3F80, 0x4200), ("f16", 0x3C00, 0x5000),
                                             ("bf16x2", 0x3F803F80, 0x42004200)])
def test_atomic_half_float_add_is_a_float_add(ptype, one, want):
    # 32 lanes add 1.0 to one cell: 32.0 (bf16 is a float type, not bits: atom.add.noftz.bf16)
    w = Warp()
    w.write("%r1", np.zeros(32, np.uint32))
    w.write("%r2", np.full(32, one, np.uint32))
    reg = "%r2" if ptype.endswith("x2") else "%rs2"
    if reg == "%rs2":
        w.write("%rs2", np.full(32, one, np.uint16))
    w.run(f"red.shared.add.noftz.{ptype} [%r1], {reg};")
    nbytes = 4 if ptype.endswith("x2") else 2
    assert int(w.smem[:nbytes].view(np.uint32 if nbytes == 4 else np.uint16)[0]) == want


def test_elect_and_no_op_instructions():
    w = Warp()
    w.write("%rd1", 0)
    w.run("elect.sync %r1|%p1, -1; prefetch.global.L2 [%rd1]; griddepcontrol.wait; fence.proxy.async; "
          "membar.gl; nanosleep.u32 10;")
    assert w.read("%r1").tolist() == [0] * 32
    assert w.read("%p1").tolist() == [True] + [False] * 31
    with pytest.raises(OperandError, match="takes an address"):
        w.run("prefetch.global.L2 %rd1;")


def test_atomic_cas_b16():
    # atom.cas.b16 (Triton's float16 atomic_cas): lane 0 swaps, the others see its value (ptxas rejects exch.b16)
    g = GlobalMemory()
    x = g.upload(np.array([5, 9], np.uint16))
    w = Warp(gmem=g)
    w.write("%rd1", np.full(32, x, np.uint64))
    w.write("%rs2", np.full(32, 5, np.uint16))
    w.write("%rs3", np.arange(32, dtype=np.uint16) + 100)
    w.run("atom.global.acquire.gpu.cas.b16 %rs1, [%rd1], %rs2, %rs3;")
    assert g.download(x, 4).view(np.uint16).tolist() == [100, 9]
    assert w.read("%rs1").tolist() == [5] + [100] * 31
    with pytest.raises(EmulatorError, match=r"exch.b16 is not an sm_90a form"):
        w.run("atom.global.exch.b16 %rs1, [%rd1], %rs2;")
