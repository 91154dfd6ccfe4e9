"""The warp machine: registers, memory, address arithmetic, cp.async groups."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from emulator import AsyncHazardError, GlobalMemory, Warp

LANE = np.arange(32, dtype=np.uint32)


def test_register_widths_follow_declarations_and_naming():
    w = Warp()
    w.run(".reg .b64 %x<2>; mov.b64 %x1, 0x123456789;")
    assert w.read("%x1").dtype == np.uint64 and w.read("%x1")[0] == 0x123456789
    w.write("%rd3", 2**40)
    w.write("%rs1", 0xABCD)
    w.write("%h2", np.float16(1.5))
    w.write("%p1", LANE % 2 == 0)
    w.write("%f1", np.float32(1.0))
    assert w.read("%rd3").dtype == np.uint64
    assert w.read("%rs1").dtype == np.uint16
    assert w.read("%h2")[0] == 0x3E00
    assert w.read("%p1").dtype == np.bool_
    assert w.read("%f1")[0] == 0x3F800000


def test_upload_alignment_and_roundtrip():
    g = GlobalMemory()
    a = g.upload(np.arange(3, dtype=np.uint8))
    b = g.upload(np.arange(256, dtype=np.float16))
    assert a % 256 == 0 and b % 256 == 0 and a != b
    assert np.array_equal(g.download(b, 512).view(np.float16), np.arange(256, dtype=np.float16))


def test_ld_st_vectors_generic_and_address_arithmetic():
    g = GlobalMemory()
    data = np.arange(32 * 4, dtype=np.uint32)
    base = g.upload(data)
    out = g.alloc(32 * 16)
    w = Warp(gmem=g)
    w.write("%rd1", base)
    w.write("%rd2", out)
    w.run("""
        mov.u32 %r1, %laneid;
        mul.wide.u32 %rd3, %r1, 16;
        add.s64 %rd4, %rd1, %rd3;
        ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd4];
        shl.b32 %r2, %r1, 4;
        st.shared.v4.u32 [%r2], {%r7, %r6, %r5, %r4};
        ld.shared.v2.u32 {%r8, %r9}, [%r2+8];
        add.s64 %rd5, %rd2, %rd3;
        st.u32 [%rd5+4], %r8;          // generic address into global
        ld.u32 %r10, [%r2];            // generic address into shared
    """)
    assert np.array_equal(w.read("%r8"), data.reshape(32, 4)[:, 1])
    assert np.array_equal(w.read("%r10"), data.reshape(32, 4)[:, 3])
    assert np.array_equal(g.download(out, 512).view(np.uint32).reshape(32, 4)[:, 1], data.reshape(32, 4)[:, 1])


def test_guarded_execution_and_sign_extension():
    w = Warp()
    w.write("%p1", LANE < 4)
    w.smem[:2] = [0xFE, 0xFF]                       # -2 as s16
    w.run("@%p1 ld.shared.s16 %r1, [0]; @!%p1 mov.u32 %r1, 7;")
    r = w.read("%r1")
    assert list(r[:4]) == [0xFFFFFFFE] * 4 and set(r[4:]) == {7}


def test_mov_pack_unpack():
    w = Warp()
    w.write("%rs1", 0x1111)
    w.write("%rs2", 0x2222)
    w.run("mov.b32 %r1, {%rs1, %rs2}; mov.b32 {%rs3, %rs4}, %r1;")
    assert w.read("%r1")[0] == 0x22221111 and w.read("%rs4")[0] == 0x2222


def test_cp_async_groups_retire_oldest_first():
    g = GlobalMemory()
    src = g.upload(np.arange(2048, dtype=np.uint8))
    w = Warp(gmem=g)
    w.write("%rd1", np.uint64(src) + LANE.astype(np.uint64) * 16)
    w.write("%r8", LANE * 16)
    w.write("%r9", LANE * 16 + 512)
    w.run("""cp.async.ca.shared.global [%r8], [%rd1], 16; cp.async.commit_group;
             cp.async.ca.shared.global [%r9], [%rd1+512], 8, 3; cp.async.commit_group;
             cp.async.wait_group 1;""")
    assert np.array_equal(w.smem[:512], np.arange(512, dtype=np.uint8))      # group 0 landed
    with pytest.raises(AsyncHazardError):
        w.run("ld.shared.u8 %r1, [%r9];")                                   # group 1 still in flight
    w.run("cp.async.wait_all;")
    got = w.smem[512:1024].reshape(32, 16)
    want = np.zeros((32, 16), np.uint8)
    want[:, :3] = (np.arange(512, 1024).reshape(32, 16)[:, :3] & 0xFF)
    assert np.array_equal(got, want)                                        # 3 bytes copied, 5 zero-filled, rest untouched


def test_ldmatrix_iota_matches_ptx_fragment_formula():
    """Lane l, register j holds M_j[l//4][2(l%4)] | M_j[l//4][2(l%4)+1] << 16 (and the transpose with .trans)."""
    w = Warp()
    w.smem[:2048] = np.arange(1024, dtype=np.uint16).view(np.uint8)
    w.write("%r8", LANE * 16)
    w.run("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0,%r1,%r2,%r3}, [%r8];"
          "ldmatrix.sync.aligned.x4.trans.m8n8.shared.b16 {%r4,%r5,%r6,%r7}, [%r8];")
    g, t = LANE // 4, LANE % 4
    for j in range(4):
        m = 64 * j
        assert np.array_equal(w.read(f"%r{j}"), (m + 8 * g + 2 * t) | ((m + 8 * g + 2 * t + 1) << 16))
        assert np.array_equal(w.read(f"%r{4 + j}"), (m + 16 * t + g) | ((m + 16 * t + 8 + g) << 16))


def test_stmatrix_inverts_ldmatrix():
    rng = np.random.default_rng(0)
    w = Warp()
    rowaddr = (rng.permutation(64)[:32] * 16).astype(np.uint32)
    for j in range(4):
        w.write(f"%r{j}", rng.integers(0, 2**32, 32, dtype=np.uint32))
    w.write("%r8", rowaddr)
    w.run("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r8], {%r0,%r1,%r2,%r3};"
          "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r4,%r5,%r6,%r7}, [%r8];")
    for j in range(4):
        assert np.array_equal(w.read(f"%r{j}"), w.read(f"%r{4 + j}"))


def test_smem_log_records_shared_instructions_only():
    w = Warp()
    w.write("%r8", LANE * 16)
    w.run("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r0,%r1}, [%r8]; add.u32 %r2, %r0, 1; st.shared.u32 [%r8], %r2;")
    log = w._smem_log
    assert [(r.op, r.width, r.nmat, int(r.mask.sum())) for r in log] == [("ldmatrix", 16, 2, 16), ("st", 4, 0, 32)]


u32 = st.integers(0, 2**32 - 1)


@settings(max_examples=200, deadline=None)
@given(a=u32, b=u32, c=u32, s=st.integers(0, 40))
def test_integer_ops_match_python(a, b, c, s):
    w = Warp()
    w.write("%r1", a)
    w.write("%r2", b)
    w.write("%r3", c)
    w.write("%r4", s)
    w.run("""add.u32 %r10, %r1, %r2; sub.u32 %r11, %r1, %r2; mul.lo.u32 %r12, %r1, %r2; mul.hi.u32 %r13, %r1, %r2;
             mul.wide.u32 %rd1, %r1, %r2; mad.lo.u32 %r14, %r1, %r2, %r3; shl.b32 %r15, %r1, %r4; shr.u32 %r16, %r1, %r4;
             shr.s32 %r17, %r1, %r4; and.b32 %r18, %r1, %r2; xor.b32 %r19, %r1, %r2; min.s32 %r20, %r1, %r2;
             mul.wide.s32 %rd2, %r1, %r2""")
    m = 2**32 - 1
    sa, sb = (a ^ 2**31) - 2**31, (b ^ 2**31) - 2**31
    r = lambda n: int(w.read(n)[0])
    assert r("%r10") == (a + b) & m and r("%r11") == (a - b) & m
    assert r("%r12") == (a * b) & m and r("%r13") == (a * b) >> 32 and r("%rd1") == a * b
    assert r("%r14") == (a * b + c) & m
    assert r("%r15") == ((a << s) & m if s < 32 else 0) and r("%r16") == (a >> s if s < 32 else 0)
    assert r("%r17") == (sa >> min(s, 31)) & m
    assert r("%r18") == a & b and r("%r19") == a ^ b and r("%r20") == min(sa, sb) & m
    assert r("%rd2") == (sa * sb) & (2**64 - 1)
