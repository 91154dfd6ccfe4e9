"""The Triton backend: ``kernel[grid](...)`` with torch CPU tensors runs Triton's PTX on the emulator.

Needs the optional extra (Triton 3.6 and torch); without it the module is skipped. Errors in the user's
terms (the source line from ``.loc``) are checked without Triton too, on nvcc ``-lineinfo`` output.
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from emulator import EmulatorError, GlobalMemory, MemoryAccessError, load_ptx

ROOT = pathlib.Path(__file__).resolve().parent.parent

# nvcc -arch=sm_90a -ptx -lineinfo of:  (1) extern "C" __global__ void k(float* x, int n) {
# (2) int i = threadIdx.x;  (3) float v = x[i] * 2.0f;  (4) x[i + n] = v;  (5) }
NVCC_LINEINFO = """
.version 9.0
.target sm_90a
.address_size 64

.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1
)
{
	.reg .f32 	%f<3>;
	.reg .b32 	%r<3>;
	.reg .b64 	%rd<7>;
	.loc	1 1 0
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u32 	%r1, [k_param_1];
	.loc	1 2 5
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r2, %tid.x;
	.loc	1 3 5
	mul.wide.s32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	add.f32 	%f2, %f1, %f1;
	.loc	1 4 5
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	st.global.f32 	[%rd6], %f2;
	.loc	1 5 1
	ret;
}
	.file	1 "/src/oob.cu"
"""


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_lineinfo_error_names_the_cuda_line(engine):
    g = GlobalMemory()
    x = g.upload(np.zeros(32, np.float32))
    with pytest.raises(MemoryAccessError, match=r"line 28, column 2: st.global.f32.*lane 0: .* \[at /src/oob.cu:4\]$"):
        load_ptx(NVCC_LINEINFO).launch("k", grid=1, block=32, args=[x, 1000], gmem=g, engine=engine)


def test_without_lineinfo_the_message_is_unchanged():
    text = "\n".join(line for line in NVCC_LINEINFO.splitlines() if ".loc" not in line and ".file" not in line)
    g = GlobalMemory()
    x = g.upload(np.zeros(32, np.float32))
    with pytest.raises(MemoryAccessError) as e:
        load_ptx(text).launch("k", grid=1, block=32, args=[x, 1000], gmem=g)
    assert "[at " not in str(e.value)


def test_host_mapping_keeps_alignment_and_aliasing():
    from emulator.triton.hostmem import HostMapping
    base = np.zeros(100, np.uint8)
    a, b, c = base[3:50], base[10:90], np.zeros(8, np.float32)
    m = HostMapping()
    pa, pb, pc = m.place([a, b, c])
    assert pb - pa == 7                                   # one buffer: views alias
    assert pa % 256 == base.ctypes.data % 256 + 3 - (256 if base.ctypes.data % 256 + 3 >= 256 else 0)
    m.gmem.write(pb, np.array([42], np.uint8))
    assert base[10] == 42 and a[7] == 42                  # written in place, seen through both views
    assert m.place([None])[0] == 0
    with pytest.raises(EmulatorError, match="pointer argument"):
        m.place([object()])


# -- with Triton -----------------------------------------------------------------------------------------
def _triton():
    triton = pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    if triton.__version__ != "3.6.0":
        pytest.skip(f"the backend is built for Triton 3.6.0, not {triton.__version__}")
    return triton, torch


@pytest.fixture
def tt():
    triton, torch = _triton()
    import emulator.triton as et
    was = et.is_active()
    et.activate()
    yield triton, torch
    if not was:
        et.deactivate()


def _add_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y, z, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(z + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
    return add


def test_grid_call_on_torch_tensors_views_and_aliases(tt):
    triton, torch = tt
    add = _add_kernel()
    g = torch.Generator().manual_seed(0)
    for dt in (torch.float32, torch.bfloat16, torch.float16, torch.int32):
        x = torch.randn(300, generator=g).to(dt) if dt.is_floating_point else torch.arange(300, dtype=dt)
        y = torch.randn(300, generator=g).to(dt) if dt.is_floating_point else torch.arange(300, dtype=dt) * 3
        z = torch.empty_like(x)
        add[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, y, z, 300, BLOCK=128)
        assert torch.equal(z.view(torch.int8 if dt.itemsize == 1 else z.dtype), (x + y).view(z.dtype)), dt
    a = torch.arange(64, dtype=torch.float32)
    ref = a[1:] + a[1:]
    add[(1,)](a[1:], a[1:], a[:-1], 63, BLOCK=64)          # sliced views of one storage, written in place
    assert torch.equal(a[:-1], ref)
    x, y, z = torch.randn(1000), torch.randn(1000), torch.empty(1000)
    k = add[(4,)](x, y, z, 1000, BLOCK=256, num_ctas=2, num_warps=2)   # clusters of 2 CTAs (sm_90)
    assert torch.equal(z, x + y) and k.metadata.num_ctas == 2 and ".reqnctapercluster 2" in k.asm["ptx"]


def test_error_names_the_python_line(tt):
    triton, torch = tt
    import triton.language as tl

    @triton.jit
    def bad(x, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        tl.store(x + i + n, tl.load(x + i) + 1)          # the faulty line
    line = bad.fn.__code__.co_firstlineno + 3
    with pytest.raises(MemoryAccessError) as e:
        bad[(1,)](torch.zeros(64), 1000, BLOCK=64)
    msg = str(e.value)
    assert msg.startswith("line ") and "st.global" in msg and "lane " in msg
    assert f"[at {__file__}:{line}: tl.store(x + i + n, tl.load(x + i) + 1)" in msg


def test_autotune_heuristics_and_device_assert(tt, capsys):
    triton, torch = tt
    import triton.language as tl
    from emulator.triton.backend.driver import cost_counter

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 128}, num_warps=4)],
                     key=["n"])
    @triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
    @triton.jit
    def scale(x, y, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        if EVEN:
            tl.store(y + i, tl.load(x + i) * 2)
        else:
            tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)
    x = torch.randn(256)
    y = torch.empty(256)
    before = cost_counter()
    scale[lambda m: (triton.cdiv(256, m["BLOCK"]),)](x, y, 256)
    assert torch.equal(y, x * 2)
    assert cost_counter() > before
    # the cost is deterministic: the warp instructions issued, in H100 milliseconds; the cheapest config wins
    from emulator.triton.backend.driver import INSTRUCTIONS_PER_MS
    timings = {c.kwargs["BLOCK"]: t[0] for c, t in scale.configs_timings.items()}
    assert all(float(t * INSTRUCTIONS_PER_MS).is_integer() or abs(t * INSTRUCTIONS_PER_MS - round(
        t * INSTRUCTIONS_PER_MS)) < 1e-6 for t in timings.values())
    assert timings[scale.best_config.kwargs["BLOCK"]] == min(timings.values())

    @triton.jit
    def check(x, BLOCK: tl.constexpr):
        v = tl.load(x + tl.arange(0, BLOCK))
        tl.device_print("v", v)
        tl.device_assert(v < 5, "v too big")
    from emulator.errors import DeviceAssertError
    with pytest.raises(DeviceAssertError, match=r"lane 5: .*test_triton_backend.py:\d+: .*Assertion `v too big` failed"):
        check[(1,)](torch.arange(8, dtype=torch.int32), BLOCK=8, num_warps=1, debug=True)
    assert "pid (0, 0, 0) idx (0) v: 0" in capsys.readouterr().out
    check[(1,)](torch.arange(8, dtype=torch.int32), BLOCK=8, num_warps=1)    # debug off: no assert
    capsys.readouterr()


def test_tensor_descriptor_fp8_and_reinterpret(tt):
    triton, torch = tt
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def tile(desc, out, M: tl.constexpr, N: tl.constexpr):
        t = desc.load([16, 32])
        tl.store(out + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], t)
    src = torch.randn(64, 64)
    out = torch.empty(16, 32)
    k = tile[(1,)](TensorDescriptor.from_tensor(src, [16, 32]), out, 16, 32)
    assert "cp.async.bulk.tensor" in k.asm["ptx"] and torch.equal(out, src[16:32, 32:64])
    assert 16 <= k.n_regs <= 255 and k.n_spills == 0

    @triton.jit
    def to_f32(x, y, n: tl.constexpr):
        i = tl.arange(0, n)
        tl.store(y + i, tl.load(x + i).to(tl.float32))
    f8 = torch.arange(-8, 8, dtype=torch.float32).to(torch.float8_e4m3fn)
    o = torch.zeros(16)
    to_f32[(1,)](f8, o, 16)
    assert torch.equal(o, f8.float())
    u = torch.arange(16, dtype=torch.int32)
    to_f32[(1,)](triton.reinterpret(u, tl.float32), o, 16)
    assert torch.equal(o.view(torch.int32), u)


def test_launch_hooks_see_launch_metadata(tt):
    triton, torch = tt
    import triton.language as tl
    from triton import knobs
    seen = []

    def meta(grid, kernel, args):
        return {"name": f"copy n={args['n']}", "bytes": 8 * args["n"]}

    @triton.jit(launch_metadata=meta)
    def copy(x, y, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        tl.store(y + i, tl.load(x + i, mask=i < n), mask=i < n)
    knobs.runtime.launch_enter_hook = lambda lm: seen.append(lm.get())
    try:
        copy[(1,)](torch.ones(16), torch.zeros(16), 16, BLOCK=16)
    finally:
        knobs.runtime.launch_enter_hook = None
    assert seen and seen[0]["name"] == "copy n=16" and seen[0]["bytes"] == 128


@pytest.mark.slow
def test_entry_point_activates_with_no_code_change(tmp_path):
    _triton()
    # what `pip install warpemu` writes: the triton.backends entry point of pyproject.toml
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points."triton.backends"]\nwarpemu = "emulator.triton.backend"' in text
    info = tmp_path / "warpemu-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: warpemu\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[triton.backends]\nwarpemu = emulator.triton.backend\n")
    prog = ("import torch, triton, triton.language as tl\n"
            "@triton.jit\ndef k(x):\n    tl.store(x + tl.arange(0, 4), tl.arange(0, 4) * 3)\n"
            "x = torch.zeros(4, dtype=torch.int32); k[(1,)](x)\n"
            "print(type(triton.runtime.driver.active).__name__, x.tolist())\n")
    (tmp_path / "prog.py").write_text(prog)
    env = dict(os.environ, WARPEMU_TRITON="1", PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    out = subprocess.run([sys.executable, str(tmp_path / "prog.py")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.stdout.strip().endswith("WarpemuDriver [0, 3, 6, 9]"), out.stderr[-2000:]


# -- Triton's tutorials, in small (slow: they compile several kernels) -------------------------------------
@pytest.mark.slow
def test_tutorial_fused_softmax_and_autotuned_matmul(tt):
    """The kernels of Triton's tutorials 02 (fused softmax) and 03 (matrix multiplication, autotuned, 128x128x128
    on the tensor cores), written the tutorials' way and checked against torch."""
    triton, torch = tt
    import triton.language as tl

    @triton.jit
    def softmax(out, inp, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr, num_stages: tl.constexpr):
        start = tl.program_id(0)
        for row in tl.range(start, n_rows, tl.num_programs(0), num_stages=num_stages):
            cols = tl.arange(0, BLOCK)
            x = tl.load(inp + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
            x = x - tl.max(x, axis=0)
            num = tl.exp(x)
            tl.store(out + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)
    x = torch.randn(37, 781)
    y = torch.empty_like(x)
    softmax[(16,)](y, x, x.stride(0), y.stride(0), 37, 781, BLOCK=1024, num_stages=2, num_warps=8)
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-6, atol=1e-6)

    @triton.autotune(configs=[triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3),
                              triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=3)],
                     key=["M", "N", "K"])
    @triton.jit
    def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr):
        pm = tl.program_id(0) // tl.cdiv(N, BN)
        pn = tl.program_id(0) % tl.cdiv(N, BN)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(a + rm[:, None] * sam + (k * BK + rk)[None, :] * sak)
            y = tl.load(b + (k * BK + rk)[:, None] * sbk + rn[None, :] * sbn)
            acc = tl.dot(x, y, acc)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))
    g = torch.Generator().manual_seed(3)
    a = torch.randn(128, 128, generator=g).half()
    b = torch.randn(128, 128, generator=g).half()
    c = torch.empty(128, 128, dtype=torch.float16)
    matmul[lambda m: (triton.cdiv(128, m["BM"]) * triton.cdiv(128, m["BN"]),)](
        a, b, c, 128, 128, 128, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=1e-2, atol=5e-2)
    assert matmul.best_config.kwargs["BM"] in (64, 128)


@pytest.mark.slow
def test_triton_suite_sample():
    """A sample of Triton 3.6's own language tests (tools/triton_suite/slow_ids.txt: ids the H100 passes),
    run unchanged with WARPEMU_TRITON=1 from a copy of the test files (TRITON_TESTS_DIR: a directory holding
    test_core.py ... test_tuple.py of Triton 3.6; tools/triton_suite/README.md says how to get them)."""
    _triton()
    src = os.environ.get("TRITON_TESTS_DIR")
    if not src or not (pathlib.Path(src) / "test_core.py").exists():
        pytest.skip("set TRITON_TESTS_DIR to Triton 3.6's python/test/unit/language (tools/triton_suite/README.md)")
    import shutil
    suite = ROOT / "tools" / "triton_suite"
    work = pathlib.Path(src)
    shutil.copy(suite / "conftest.py", work / "conftest.py")
    ids = [line.strip() for line in (suite / "slow_ids.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    log = work / "slow_run.jsonl"
    if log.exists():
        log.unlink()
    env = dict(os.environ, WARPEMU_TRITON="1", TRITON_SUITE_IDS=str(suite / "slow_ids.txt"),
               TRITON_SUITE_LOG=str(log), PYTHONPATH=str(ROOT))
    files = sorted({i.split("::")[0] for i in ids})
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--device", "cpu", "--tb=no",
                    *files], cwd=work, env=env, capture_output=True, text=True, timeout=3600)
    import json
    got = {json.loads(line)["id"]: json.loads(line)["outcome"] for line in log.read_text().splitlines()}
    assert set(got) == set(ids)
    assert [i for i in ids if got[i] != "passed"] == []
