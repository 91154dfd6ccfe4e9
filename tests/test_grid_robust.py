"""launch(workers=N) where worker processes cannot be made, or where CTA order is part of the result, and
forked workers that end with their parent."""
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.machine import grid as G

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORE = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pout)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [pout];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mad.lo.s32 %r3, %r1, 32, %r2;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


def _store_in_pool_worker(_):
    g = GlobalMemory()
    out = g.alloc(4 * 32 * 4)
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_ptx(STORE).launch("k", grid=(4, 1, 1), block=(32, 1, 1), args=[out], gmem=g, workers=2)
    return g.download(out, 4 * 32 * 4).view(np.uint32).tolist(), [str(w.message) for w in caught]


def test_workers_inside_a_daemonic_process_run_serially_with_a_warning():
    with multiprocessing.get_context("fork").Pool(1) as pool:
        values, warned = pool.map(_store_in_pool_worker, [0])[0]
    assert values == list(range(128))
    assert any("daemonic" in w for w in warned)


@pytest.mark.parametrize("line, why", [
    ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 64;", "bulk"),
    ("cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 64;", "bulk"),
    ("atom.global.add.u32 %r2, [%rd1], 1;", "atomics"),
])
def test_kernels_whose_cta_order_matters_are_serial_only(line, why):
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
            " .reg .b32 %r<4>; .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [p];\n mov.u32 %r1, 0;\n mov.u32 %r3, 0;\n"
            f" {line}\n ret;\n}}\n")
    prog = load_ptx(text).program("k")
    assert why in G.serial_only(prog)


def test_plain_stores_may_run_on_workers():
    assert G.serial_only(load_ptx(STORE).program("k")) is None


SPIN = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pout)
{
    .reg .b32 %r<4>; .reg .pred %p<2>; .reg .b64 %rd<2>;
    mov.u32 %r1, 0;
LOOP:
    add.s32 %r1, %r1, 1;
    setp.lt.s32 %p1, %r1, 2000000000;
    @%p1 bra LOOP;
    ld.param.u64 %rd1, [pout];
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to find the workers")
def test_forked_workers_end_when_the_launching_process_is_killed():
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        from emulator import GlobalMemory, load_ptx
        g = GlobalMemory()
        out = g.alloc(4)
        print("go", flush=True)
        load_ptx({SPIN!r}).launch("k", grid=(4, 1, 1), block=(32, 1, 1), args=[out], gmem=g, workers=2,
                                  engine="reference", max_instructions=1 << 40)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "go"
        children = []
        deadline = time.time() + 120
        while len(children) < 2 and time.time() < deadline:
            time.sleep(0.2)
            children = _children(proc.pid)
        assert len(children) >= 2, "the launch never forked its workers"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.time() + 10
        while any(_alive(c) for c in children) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(_alive(c) for c in children), "workers outlived their parent"
    finally:
        if proc.poll() is None:
            proc.kill()


def _children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(d))
            except OSError:
                pass
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
