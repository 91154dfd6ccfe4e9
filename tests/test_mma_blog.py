"""The blog-style walk through: A and B go global -> shared with cp.async, into registers with ldmatrix,
through one mma.sync, and D is compared with numpy.

The numpy comparison is a sanity check with a tolerance, to show how close tensor-core results are;
it is not the proof of exactness (that is the H100 replay in test_mma_captures.py).  The same D is also
required to equal, bit for bit, the tile-level ``emulator.mma`` of the same inputs."""
import numpy as np

from emulator import GlobalMemory, Warp
from emulator.tiles import mma
from isa.fragments import unpack
from isa.mma import VARIANTS

INSTR = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"


def run_through_shared_memory(A, B, C):
    v = VARIANTS[INSTR]
    g = GlobalMemory()
    ga, gb = g.upload(A), g.upload(B)
    w = Warp(gmem=g)
    lane = np.arange(32)
    w.write("%rd1", (ga + 16 * lane).astype(np.uint64))          # A: 512 bytes, 16 per lane
    w.write("%r10", (16 * lane).astype(np.uint32))
    w.write("%rd2", (gb + 16 * (lane % 16)).astype(np.uint64))   # B: 256 bytes, lanes 0-15 (16-31 repeat)
    w.write("%r11", (512 + 16 * (lane % 16)).astype(np.uint32))
    j, r = lane // 8, lane % 8                                    # ldmatrix row addresses
    w.write("%r12", ((r + 8 * (j % 2)) * 32 + 16 * (j // 2)).astype(np.uint32))
    w.write("%r13", (512 + 16 * (lane % 16)).astype(np.uint32))
    c_regs = np.zeros((4, 32), np.uint32)
    f = v.fragment("C")
    for i in range(4):
        c_regs[i] = C.view(np.uint32)[f[i, :, 0, 0], f[i, :, 0, 1]]
        w.write(f"%f{4 + i}", c_regs[i])
    w.run("""
        cp.async.cg.shared.global [%r10], [%rd1], 16;
        cp.async.cg.shared.global [%r11], [%rd2], 16;
        cp.async.commit_group;
        cp.async.wait_group 0;
        ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0, %r1, %r2, %r3}, [%r12];
        ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r4, %r5}, [%r13];
    """)
    w.run(f"{INSTR} {{%f0,%f1,%f2,%f3}}, {{%r0,%r1,%r2,%r3}}, {{%r4,%r5}}, {{%f4,%f5,%f6,%f7}};")
    d = np.stack([w.read(f"%f{i}") for i in range(4)])
    return unpack(v, "D", d).astype(np.uint32).view(np.float32)


def test_cp_async_ldmatrix_mma_against_numpy():
    rng = np.random.default_rng(2024)
    for _ in range(4):
        A = rng.standard_normal((16, 16)).astype(np.float16)
        B = rng.standard_normal((16, 8)).astype(np.float16)
        C = rng.standard_normal((16, 8)).astype(np.float32)
        D = run_through_shared_memory(A, B, C)
        # exact: the same bits as the tile-level API
        assert np.array_equal(D.view(np.uint32), mma(INSTR, A, B, C).view(np.uint32))
        # sanity, with a tolerance: close to an exact (float64) numpy GEMM, within a few f32 ulps
        R = A.astype(np.float64) @ B.astype(np.float64) + C
        err = np.abs(D - R) / np.maximum(np.abs(R), 1)
        assert err.max() < 2e-6
        # where they differ: never more than the terms' truncation below the largest exponent allows
        assert (D != R.astype(np.float32)).any() or err.max() == 0
