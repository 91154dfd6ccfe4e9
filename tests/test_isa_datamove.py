"""Every spelling in the data-movement tables runs, in canonical and in shuffled qualifier order."""
import itertools

import numpy as np
import pytest

from emulator import GlobalMemory, UnsupportedError, Warp
from isa.datamove import CP_ASYNC_OPS, MATRIX_OPS

LANE = np.arange(32, dtype=np.uint32)


def _matrix_text(spelling, order=None):
    spec = MATRIX_OPS[spelling]
    head, *mods = spelling.split(".")
    if order is not None:
        mods = [mods[i] for i in order]
    regs = "{" + ", ".join(f"%r{j}" for j in range(spec.nmat)) + "}"
    opcode = ".".join([head] + mods)
    return (f"{opcode} {regs}, [%r8];" if spec.op == "ldmatrix" else f"{opcode} [%r8], {regs};"), spec


@pytest.mark.parametrize("spelling", sorted(MATRIX_OPS))
def test_matrix_spellings_agree_with_canonical_form(spelling):
    rng = np.random.default_rng(len(spelling))
    text, spec = _matrix_text(spelling)
    order = list(range(len(spelling.split(".")) - 1))
    rng.shuffle(order)
    shuffled, _ = _matrix_text(spelling, order)
    results = []
    for t in (text, shuffled):
        w = Warp()
        w.smem[:] = rng.integers(0, 256, w.smem.size, dtype=np.uint8) if not results else results[0][0]
        w.write("%r8", rng.permutation(64)[:32].astype(np.uint32) * 16 if not results else results[0][1])
        for j in range(4):
            w.write(f"%r{j}", LANE * 0x01010101 + j)
        start = (w.smem.copy(), w.read("%r8"))
        w.run(t)
        results.append((start[0], start[1], w.smem.copy(), [w.read(f"%r{j}") for j in range(spec.nmat)]))
    (_, _, m0, r0), (_, _, m1, r1) = results
    assert np.array_equal(m0, m1) and all(np.array_equal(a, b) for a, b in zip(r0, r1))


@pytest.mark.parametrize("spelling", sorted(CP_ASYNC_OPS))
def test_cp_async_spellings(spelling):
    spec = CP_ASYNC_OPS[spelling]
    for size, hint in itertools.product(spec.cp_sizes, ("", ".L2::128B")):
        g = GlobalMemory()
        src = np.arange(32 * 16, dtype=np.uint8)
        w = Warp(gmem=g)
        w.write("%rd1", np.uint64(g.upload(src)) + LANE.astype(np.uint64) * size)
        w.write("%r8", LANE * size)
        w.run(f"{spelling}{hint} [%r8], [%rd1], {size}; cp.async.wait_all;")
        assert np.array_equal(w.smem[:32 * size], src[:32 * size])


def test_arch_availability():
    w = Warp(arch="sm_80")
    w.write("%r8", LANE * 16)
    w.run("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r0}, [%r8];")
    with pytest.raises(UnsupportedError, match="needs sm_90"):
        w.run("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r8], {%r0};")
