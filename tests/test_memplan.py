"""The warp loop's slow load/store plan (``fastcore.memplan``) is compiled apart and bound only for the kernels that
may need it: the common rows (.param, shared with copies in flight, global, generic) are planned in the loop."""
import os

import numpy as np

from emulator import GlobalMemory, load_ptx
from emulator.machine.fastcore import families, warmup
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore.engine import translation

from engines import compare_engines
import test_families as F
import test_local_fast as L

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _local_module():
    return load_ptx(L.kernel("""
    st.local.v4.u32 [%rd9], {%r4, %r3, %r2, %r1};
    ld.local.v2.u32 {%r10, %r11}, [%rd9+8];
    st.global.v2.u32 [%rd4], {%r10, %r11};
"""))


def test_only_kernels_with_slow_rows_bind_the_slow_plan():
    for path, kernel in (("benchmarks/data/triton_matmul.ptx", "matmul_kernel"),
                         ("tests/data/kernels/gemm_tiled.ptx", "gemm_tiled"),
                         ("benchmarks/data/triton_softmax.ptx", "softmax_kernel")):
        tr = translation(load_ptx(open(os.path.join(ROOT, path)).read()).program(kernel))
        assert "memplan" not in tr.apart, path
    tr = translation(_local_module().program("k"))
    assert "memplan" in tr.apart


def test_param_and_in_flight_shared_rows_run_in_the_loop():
    """Triton's ld.param rows and nvcc's gemm (shared memory read while cp.async copies are in flight) hand nothing
    back without the slow plan."""
    path, kernel, grid, block, arrays, scalars, shared = F._gemm_case()
    module = load_ptx(open(os.path.join(ROOT, path)).read())
    ref, fast, diffs = compare_engines(module, kernel, grid, block, arrays, scalars, shared_bytes=shared)
    assert not diffs, diffs
    tr = translation(module.program(kernel))
    assert tr.mufu_ptr[families.APART_SLOT["memplan"]] == 0
    assert int(tr.handed_back.sum()) == 0
    ld = (tr.code[:, T.OP] == T.LD) & (tr.code[:, T.X] == T.PARAM)
    assert ld.any() and tr.fast[np.flatnonzero(ld)].all()


def test_local_rows_go_to_the_reference_until_the_slow_plan_is_bound(monkeypatch):
    module = _local_module()
    rng = np.random.default_rng(5)
    inp = rng.integers(0, 1 << 32, 64 * 16, dtype=np.uint64).astype(np.uint32)
    arrays = [np.zeros(64 * 16, np.uint32), inp]
    tr = translation(module.program("k"))
    local = [p for p in range(len(tr.code)) if tr.code[p, T.OP] in (T.LD, T.ST) and tr.code[p, T.X] == T.LOCAL]
    assert len(local) == 2 and all(tr.fast[p] for p in local)
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: 0 if n == "memplan" else real(n, wait))
    ref, fast, diffs = compare_engines(module, "k", 1, 64, arrays)
    assert not diffs, diffs
    assert "error" not in ref and "error" not in fast
    assert tr.mufu_ptr[families.APART_SLOT["memplan"]] == 0
    assert all(int(tr.handed_back[p]) > 0 for p in local)
    before = [int(tr.handed_back[p]) for p in local]
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, arrays)      # bound by the next launch
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT["memplan"]] != 0
    assert [int(tr.handed_back[p]) for p in local] == before and "error" not in fast
    g = GlobalMemory()
    out, src = g.upload(arrays[0]), g.upload(inp)
    module.launch("k", 1, 64, [out, src], gmem=g, engine="fast")
    got = g.download(out, arrays[0].nbytes).view(np.uint32).reshape(64, 16)
    words = inp.reshape(64, 16)
    assert (got[:, 0] == words[:, 5]).all() and (got[:, 1] == words[:, 4]).all()
