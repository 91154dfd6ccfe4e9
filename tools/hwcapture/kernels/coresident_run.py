"""Run the kernels of tests/data/kernels/coresident.ptx (tools/hwcapture/kernels/coresident.cu) on the GPU
from that PTX text and write every buffer before and after, for tests/test_coresident.py to replay.

    python tools/hwcapture/kernels/coresident_run.py PTX OUT.npz      # needs a GPU and cupy

Each case is a list of launches on shared buffers (``cases()``, numpy only, so the test builds the same
launches from the file's metadata). Every case runs three times; the file records whether the three runs gave
the same bytes. The deadlock case (more CTAs than resident, on a grid barrier) is never run here: it hangs.
"""
import ctypes
import json
import sys
import time

import numpy as np


def cases():
    """[(name, buffers, launches)]: buffers are the initial arrays; a launch is (kernel, grid, block,
    dynamic shared bytes, args, pdl) with args ("b", index) or ("i", int)."""
    rng = np.random.default_rng(22)
    out = []

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    M = N = 32
    K = 256
    for rev in (0, 1):
        bufs = [f32(M, K), f32(K, N), np.zeros((M, N), np.float32), np.zeros(4, np.int32)]
        out.append((f"splitk_sem_{'reverse' if rev else 'forward'}", bufs,
                    [("splitk_sem", (4, 4, 1), (128, 1, 1), 0,
                      [("b", 0), ("b", 1), ("b", 2), ("b", 3), ("i", M), ("i", N), ("i", K), ("i", rev)], False)]))
    for m, n, k, g in ((32, 32, 160, 6), (32, 48, 224, 8)):
        tiles = (m // 16) * (n // 16)
        bufs = [f32(m, k), f32(k, n), np.zeros((m, n), np.float32),
                np.zeros(tiles * (k // 16) * 256, np.float32), np.zeros(tiles, np.int32)]
        out.append((f"streamk_{m}x{n}x{k}_grid{g}", bufs,
                    [("streamk_fixup", (g, 1, 1), (128, 1, 1), 0,
                      [("b", 0), ("b", 1), ("b", 2), ("b", 3), ("b", 4), ("i", m), ("i", n), ("i", k)], False)]))
    for g, smem, rounds in ((132, 200 * 1024, 3), (40, 64, 4)):
        x = np.zeros((rounds + 1) * g, np.float32)
        x[:g] = f32(g)
        out.append((f"grid_barrier_{g}", [x, np.zeros(1, np.int32)],
                    [("grid_barrier", (g, 1, 1), (64, 1, 1), smem, [("b", 0), ("b", 1), ("i", rounds)], False)]))
    g = 48
    out.append(("cas_lock", [np.zeros(1, np.float32), np.zeros(1, np.int32), np.zeros(1, np.int32),
                             np.zeros(1, np.int32), np.arange(1, g + 1, dtype=np.float32)],
                [("cas_lock", (g, 1, 1), (32, 1, 1), 0, [("b", i) for i in range(5)], False)]))
    g = 16
    out.append(("cas_ring", [np.zeros(1, np.float32), np.zeros(g, np.float32), np.full(1, 1000, np.int32), f32(g)],
                [("cas_ring", (g, 1, 1), (32, 1, 1), 0, [("b", i) for i in range(4)], False)]))
    out.append(("nap_chain", [np.zeros(g, np.float32), np.zeros(g, np.int32), f32(g)],
                [("nap_chain", (g, 1, 1), (32, 1, 1), 0, [("b", i) for i in range(3)], False)]))
    n = 1000
    out.append(("pdl", [f32(n), np.zeros(n, np.float32), np.zeros(n, np.float32)],
                [("pdl_primary", (8, 1, 1), (128, 1, 1), 0, [("b", 0), ("b", 1), ("i", n)], False),
                 ("pdl_secondary", (8, 1, 1), (128, 1, 1), 0, [("b", 1), ("b", 2), ("i", n)], True)]))
    return out


class _Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int), ("rest", ctypes.c_char * 60)]


class _Config(ctypes.Structure):
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint), ("bx", ctypes.c_uint),
                ("by", ctypes.c_uint), ("bz", ctypes.c_uint), ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attr)), ("nattrs", ctypes.c_uint)]


def _launch_pdl(fn, grid, block, smem, args):
    """cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (6) = 1."""
    cuda = ctypes.CDLL("libcuda.so.1")
    vals = [ctypes.c_uint64(v) if k == "p" else ctypes.c_int(v) for k, v in args]
    ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
    attr = _Attr(6, b"", 1, b"")
    cfg = _Config(*grid, *block, smem, None, ctypes.pointer(attr), 1)
    rc = cuda.cuLaunchKernelEx(ctypes.byref(cfg), ctypes.c_void_p(fn.ptr), ptrs, None)
    if rc != 0:
        raise RuntimeError(f"cuLaunchKernelEx: {rc}")


OCC_KERNELS = ["splitk_sem", "streamk_fixup", "grid_barrier", "cas_lock", "nap_chain"]
OCC_BLOCKS = [32, 64, 96, 128, 256, 384, 512, 640, 1024]
OCC_SMEM = [0, 1000, 20000, 48 * 1024, 100 * 1024, 150000, 200 * 1024, 227 * 1024 - 1024]


def occupancy_table(mod, cp):
    """[kernel index, threads, dynamic shared bytes, registers, static shared bytes, CTAs per SM] as the
    driver's occupancy calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor) gives them."""
    drv = cp.cuda.driver
    rows = []
    for k, name in enumerate(OCC_KERNELS):
        fn = mod.get_function(name)
        regs = drv.funcGetAttribute(4, fn.ptr)             # CU_FUNC_ATTRIBUTE_NUM_REGS
        static = drv.funcGetAttribute(1, fn.ptr)           # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
        drv.funcSetAttribute(fn.ptr, 8, 227 * 1024 - static)
        for b in OCC_BLOCKS:
            for sm in OCC_SMEM:
                if sm + static > 227 * 1024:
                    continue
                rows.append([k, b, sm, regs, static, drv.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, b, sm)])
    return np.array(rows, np.int64)


def main(ptx, out):
    import cupy as cp
    mod = cp.cuda.function.Module()
    mod.load(open(ptx, "rb").read())
    props = cp.cuda.runtime.getDeviceProperties(0)
    res = {"meta": json.dumps({"gpu": props["name"].decode(), "sms": int(props["multiProcessorCount"]),
                               "occupancy_kernels": OCC_KERNELS,
                               "cases": [[name, launches] for name, _, launches in cases()]})}
    try:
        res["occupancy"] = occupancy_table(mod, cp)
        print("occupancy table", res["occupancy"].shape, flush=True)
    except Exception as e:          # the captures below matter more
        print("occupancy table failed:", type(e).__name__, e, flush=True)
    for name, bufs, launches in cases():
        runs = []
        for rep in range(3):
            dev = [cp.asarray(b) for b in bufs]
            cp.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            for kernel, grid, block, smem, args, pdl in launches:
                fn = mod.get_function(kernel)
                if smem > 48 * 1024:
                    cp.cuda.driver.funcSetAttribute(fn.ptr, 8, smem)     # MAX_DYNAMIC_SHARED_SIZE_BYTES
                vals = [dev[v] if k == "b" else np.int32(v) for k, v in args]
                if pdl:
                    _launch_pdl(fn, grid, block, smem, [("p", dev[v].data.ptr) if k == "b" else ("i", v) for k, v in args])
                else:
                    fn(grid, block, tuple(vals), shared_mem=smem)
            cp.cuda.runtime.deviceSynchronize()
            dt = time.perf_counter() - t0
            runs.append([cp.asnumpy(d) for d in dev])
        same = all(all(np.array_equal(a.view(np.uint8), b.view(np.uint8)) for a, b in zip(r, runs[0]))
                   for r in runs)
        for i, b in enumerate(bufs):
            res[f"{name}/in{i}"] = b
            res[f"{name}/out{i}"] = runs[0][i]
        res[f"{name}/same"] = np.array(same)
        print(name, "finished", "same bytes in 3 runs" if same else "RUNS DIFFER", f"{dt * 1e3:.2f} ms", flush=True)
        np.savez_compressed(out, **res)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
