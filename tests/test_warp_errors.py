"""Every rule a caller can break raises an EmulatorError subclass naming the instruction, lane and rule."""
import numpy as np
import pytest

from emulator import (AlignmentError, AsyncHazardError, EmulatorError, GlobalMemory, MemoryAccessError,
                      OperandError, PTXSyntaxError, UnsupportedError, Warp, WarpOptions)

LDSM = "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0, %r1, %r2, %r3}, [%r8];"


def rows(stride=16):
    return np.arange(32, dtype=np.uint32) * stride


def test_ldmatrix_misaligned_row_names_lane_and_rule():
    w = Warp()
    a = rows()
    a[5] += 8
    w.write("%r8", a)
    with pytest.raises(AlignmentError, match=r"ldmatrix\.sync\.aligned\.m8n8\.x4.*lane 5: row address 0x58 is not 16-byte aligned"):
        w.run(LDSM)


def test_ldmatrix_ignores_addresses_of_unused_lanes():
    w = Warp()
    a = rows()
    a[8:] = 3                       # garbage in lanes 8..31: .x1 reads only lanes 0..7
    w.write("%r8", a)
    w.run("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r0}, [%r8];")


def test_ldmatrix_out_of_shared_memory():
    w = Warp(smem_bytes=512)
    a = rows()
    a[31] = 512
    w.write("%r8", a)
    with pytest.raises(MemoryAccessError, match=r"lane 31: shared address 0x200 \(\+16 bytes\) is outside shared memory \(512 bytes\)"):
        w.run(LDSM)


def test_stmatrix_needs_sm90():
    w = Warp(arch="sm_80")
    with pytest.raises(UnsupportedError, match="stmatrix.*needs sm_90"):
        w.run("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r8], {%r0};")


@pytest.mark.parametrize("text, cls, pattern", [
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0, %r1}, [%r8];", OperandError, "must have 4 registers, it has 2"),
    ("ldmatrix.sync.aligned.m8n8.x8.shared.b16 {%r0}, [%r8];", UnsupportedError, r"unsupported qualifier \.x8; supported: .*\.x4"),
    ("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r0}, [%r8];", UnsupportedError, "sm_100"),
    ("ldmatrix.sync.m8n8.x1.shared.b16 {%r0}, [%r8];", OperandError, r"missing required qualifier \.aligned"),
    ("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%rd0}, [%r8];", OperandError, "must be a 32-bit register"),
    ("cp.async.cg.shared.global [%r8], [%rd1], 8;", OperandError, "cp-size 8 is not allowed with .cg; allowed: 16"),
    ("cp.async.ca.shared.global [%r8], [%rd1], 12;", OperandError, "allowed: 4, 8, 16"),
    ("cp.async.ca.shared.global.L2::512B [%r8], [%rd1], 16;", UnsupportedError, r"unsupported qualifier \.L2::512B"),
    ("cp.async.ca.shared.global [%r8], [%rd1];", OperandError, "found 2 operands"),
    ("cp.async.bulk.shared.global [%r8], [%rd1], 16;", OperandError, "completes on an mbarrier"),
    ("frobnicate.b32 %r1, %r2;", UnsupportedError, "unknown or unsupported instruction 'frobnicate'; did you mean .*docs/supported.md"),
    ("ld.shared.v4.u64 {%rd1, %rd2, %rd3, %rd4}, [%r8];", UnsupportedError, "exceed the 128 bits"),
    ("add.u32 %r1, %r2;", OperandError, "takes 3 operands"),
])
def test_bad_instructions(text, cls, pattern):
    w = Warp()
    with pytest.raises(cls, match=pattern):
        w.run(text)


def test_syntax_error_has_line_and_column():
    w = Warp()
    with pytest.raises(PTXSyntaxError, match=r"line 2, column 47: expected ',' or '}'"):
        w.run("mov.u32 %r1, 0;\nldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r0 %r1}, [%r8];")
    with pytest.raises(PTXSyntaxError, match=r"line 1, column 14: unexpected character '#'"):
        w.run("mov.u32 %r1, #4;")


def test_src_size_larger_than_cp_size():
    g = GlobalMemory()
    base = g.upload(np.zeros(1024, np.uint8))
    w = Warp(gmem=g)
    w.write("%r8", rows())
    w.write("%rd1", base)
    sizes = np.full(32, 4, np.uint32)
    sizes[7] = 17
    w.write("%r9", sizes)
    with pytest.raises(OperandError, match="lane 7: src-size 17 exceeds cp-size 16"):
        w.run("cp.async.ca.shared.global [%r8], [%rd1], 16, %r9;")


def test_cp_async_global_source_out_of_range():
    g = GlobalMemory()
    base = g.upload(np.zeros(64, np.uint8))
    w = Warp(gmem=g)
    w.write("%r8", rows())
    w.write("%rd1", np.uint64(base) + rows().astype(np.uint64))
    with pytest.raises(MemoryAccessError, match="lane 4: global address .* is outside every global allocation"):
        w.run("cp.async.ca.shared.global [%r8], [%rd1], 16;")


def test_cp_async_misaligned_destination():
    g = GlobalMemory()
    w = Warp(gmem=g)
    w.write("%rd1", g.upload(np.zeros(16, np.uint8)))
    w.write("%r8", np.where(np.arange(32) == 3, 4, 0).astype(np.uint32))
    with pytest.raises(AlignmentError, match="lane 3: shared destination address 0x4 is not 16-byte aligned"):
        w.run("cp.async.cg.shared.global [%r8], [%rd1], 16;")


def _cp_setup(options=None):
    g = GlobalMemory()
    src = np.arange(512, dtype=np.uint16)
    w = Warp(gmem=g, options=options)
    w.write("%rd1", np.uint64(g.upload(src)) + rows().astype(np.uint64))
    w.write("%r8", rows())
    w.run("cp.async.cg.shared.global [%r8], [%rd1], 16;")
    return w, src


def test_reading_cp_async_destination_before_wait_is_a_hazard():
    w, _ = _cp_setup()
    with pytest.raises(AsyncHazardError, match=r"ldmatrix.*lane 0: reads shared bytes \[0x0, 0x10\) while a cp.async"):
        w.run(LDSM)
    with pytest.raises(AsyncHazardError, match="overwrites"):
        w.run("st.shared.u32 [%r8], %r1;")
    w.run("cp.async.commit_group; cp.async.wait_group 0;")
    w.run(LDSM)                                    # retired: no hazard now


def test_eager_option_lands_at_issue():
    w, src = _cp_setup(WarpOptions(cp_async="eager"))
    w.run(LDSM)
    assert np.array_equal(w.smem[:512].view(np.uint16), src[:256])


def test_uninitialized_register_option():
    w = Warp(options=WarpOptions(uninitialized="error"))
    with pytest.raises(OperandError, match="register %r5 is read before it is written"):
        w.run("add.u32 %r1, %r5, 1;")
    with pytest.raises(EmulatorError, match="cp_async must be"):
        WarpOptions(cp_async="sometimes")


def test_write_rejects_wrong_shape_and_bad_arch():
    w = Warp()
    with pytest.raises(OperandError, match="expected 32 per-lane values"):
        w.write("%r1", np.arange(31))
    with pytest.raises(UnsupportedError, match="supported: sm_80"):
        Warp(arch="sm_70")


def test_global_download_out_of_range():
    g = GlobalMemory()
    a = g.upload(np.zeros(10, np.uint8))
    with pytest.raises(MemoryAccessError, match="outside every global allocation"):
        g.download(a + 4, 10)
