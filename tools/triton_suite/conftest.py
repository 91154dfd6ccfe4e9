"""pytest set-up for running Triton's own language tests (python/test/unit/language) on a machine without a
GPU: ``WARPEMU_TRITON=1 pytest --device cpu ...`` (the emulator) or ``TRITON_INTERPRET=1 pytest --device cpu``
(Triton's interpreter). Copied beside the test files by ``tools/triton_suite/run.py``.

It provides what Triton's own ``python/test/conftest.py`` provides (the ``--device`` option and fixtures) and,
where torch has no CUDA, answers the few ``torch.cuda`` questions the tests ask about the GPU
(``get_device_capability``, ``get_device_name``, ``device``) as an H100 would: a harness shim, not part of the
product. Both modes get the same shim.
"""
import contextlib
import os
import tempfile

import pytest
import torch

_EMULATOR = os.environ.get("WARPEMU_TRITON", "0") not in ("", "0")

if not torch.cuda.is_available():
    _cc = (8, 0) if os.environ.get("WARPEMU_TRITON_ARCH", "sm_90a") == "sm_80" else (9, 0)
    torch.cuda.get_device_capability = lambda device=None: _cc
    torch.cuda.get_device_name = lambda device=None: "NVIDIA H100 80GB HBM3" if _cc == (9, 0) else "NVIDIA A100"
    torch.cuda.device = lambda device=None: contextlib.nullcontext()
    torch.cuda.synchronize = lambda device=None: None

if _EMULATOR:
    import triton.backends
    import emulator.triton as _et
    from emulator.triton.backend.compiler import WarpemuBackend
    if not any(b.compiler is WarpemuBackend for b in triton.backends.backends.values()):
        _et.activate()              # the package is not installed: register the backend here


def pytest_configure(config):
    config.addinivalue_line("markers", "interpreter: indicate whether interpreter supports the test")


def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cuda")


@pytest.fixture
def device(request):
    return request.config.getoption("--device")


@pytest.fixture
def fresh_triton_cache():
    with tempfile.TemporaryDirectory() as tmpdir:
        from triton import knobs
        with knobs.cache.scope(), knobs.runtime.scope():
            knobs.cache.dir = tmpdir
            yield tmpdir


@pytest.fixture
def fresh_knobs():
    from triton._internal_testing import _fresh_knobs_impl
    fresh_function, reset_function = _fresh_knobs_impl()
    try:
        yield fresh_function()
    finally:
        reset_function()


@pytest.fixture
def fresh_knobs_except_libraries():
    from triton._internal_testing import _fresh_knobs_impl
    fresh_function, reset_function = _fresh_knobs_impl(skipped_attr={"build", "nvidia", "amd"})
    try:
        yield fresh_function()
    finally:
        reset_function()


@pytest.fixture
def with_allocator():
    import triton
    from triton.runtime._allocation import NullAllocator
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=dev))
    try:
        yield
    finally:
        triton.set_allocator(NullAllocator())


def _short(nodeid):
    """``test_core.py::test_x[...]`` whatever directory pytest took as its root."""
    head, sep, tail = nodeid.partition("::")
    return head.rsplit("/", 1)[-1] + sep + tail


def pytest_collection_modifyitems(config, items):
    """``TRITON_SUITE_IDS=file``: run only the test ids listed in the file (one a line), in the file's order."""
    path = os.environ.get("TRITON_SUITE_IDS")
    if not path:
        return
    with open(path) as f:
        wanted = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    order = {t: i for i, t in enumerate(wanted)}
    keep = [it for it in items if _short(it.nodeid) in order]
    drop = [it for it in items if _short(it.nodeid) not in order]
    keep.sort(key=lambda it: order[_short(it.nodeid)])
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


_outcomes = {}


def pytest_runtest_logreport(report):
    """``TRITON_SUITE_LOG=file``: one JSON line per test as it finishes (id, outcome, seconds, the error's last
    line), so that a run cut short still leaves its results."""
    path = os.environ.get("TRITON_SUITE_LOG")
    if not path:
        return
    import json
    st = _outcomes.setdefault(report.nodeid, {"outcome": "passed", "seconds": 0.0, "error": ""})
    st["seconds"] += report.duration
    if report.skipped and st["outcome"] == "passed":
        st["outcome"] = "skipped"
        st["error"] = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    elif report.failed:
        st["outcome"] = "failed" if report.when == "call" else "error"
        st["error"] = (report.longreprtext.strip().splitlines() or [""])[-1][:400]
    if report.when == "teardown":
        with open(path, "a") as f:
            f.write(json.dumps({"id": _short(report.nodeid), **st}) + "\n")


@pytest.fixture(autouse=True)
def _cpu_time_cap():
    """``TRITON_SUITE_CPU_CAP=seconds``: a test that uses more CPU time than this fails ("over the CPU-time
    cap"), in both modes alike; CPU time, not wall time, so that a loaded machine does not decide."""
    cap = float(os.environ.get("TRITON_SUITE_CPU_CAP", "0") or 0)
    if cap <= 0:
        yield
        return
    import signal

    def over(signum, frame):
        raise TimeoutError(f"over the CPU-time cap of {cap:g} s")
    old = signal.signal(signal.SIGPROF, over)
    signal.setitimer(signal.ITIMER_PROF, cap)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
