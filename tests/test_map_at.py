import numpy as np, pytest
from emulator import GlobalMemory, load_ptx
from emulator.errors import MemoryAccessError
def test_map_at():
    g = GlobalMemory()
    a = g.alloc(100)
    x = np.arange(16, dtype=np.uint32)
    at = 0x7F2A_1234_5600
    assert g.map(x, at=at) == at
    b = g.upload(np.ones(4, np.uint32)); c = g.map(np.zeros(8, np.uint8), phase=3)
    assert len({a, b, c, at}) == 4
    bases = [b_ for b_, _ in g.allocations()]
    assert bases == sorted(bases)
    assert g.download(at + 4, 4).view(np.uint32)[0] == 1
    with pytest.raises(MemoryAccessError, match="inside the allocation"):
        g.map(np.zeros(4, np.uint8), at=at + 8)
    with pytest.raises(MemoryAccessError, match="overlap"):
        g.map(np.zeros(64, np.uint8), at=at - 16)
    # allocations placed after a block of exact-address ones skip over them
    y = np.zeros(1 << 12, np.uint8)
    lo = GlobalMemory.BASE + (1 << 20)
    g2 = GlobalMemory()
    g2.map(y, at=GlobalMemory.BASE + 256)
    z = g2.alloc(1 << 16)
    assert z >= GlobalMemory.BASE + 256 + (1 << 12)
    bases = [b_ for b_, _ in g2.allocations()]
    assert bases == sorted(bases)
def test_map_at_kernel():
    ptx = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p){
.reg .b64 %rd<3>; .reg .b32 %r<3>;
ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x; mul.wide.u32 %rd2, %r1, 4; add.s64 %rd1, %rd1, %rd2;
ld.global.u32 %r2, [%rd1]; add.u32 %r2, %r2, 7; st.global.u32 [%rd1], %r2; ret; }"""
    g = GlobalMemory()
    g.alloc(64)
    x = np.arange(32, dtype=np.uint32)
    at = 0x7FFF_0000_1000
    g.map(x, at=at)
    load_ptx(ptx).launch("k", grid=1, block=32, args=[at], gmem=g)
    assert (x == np.arange(32) + 7).all()
