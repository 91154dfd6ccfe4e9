"""Bounded resources: grids iterated lazily, LaunchResult keeping only the CTAs asked for, and the memory a
loaded kernel holds per instruction."""
import gc
import time
import tracemalloc

import numpy as np
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.errors import EmulatorError, OperandError
from emulator.machine import grid as G
from emulator.machine import module as M
from emulator.machine import program as P
from test_grid_robust import STORE      # the same store-per-thread kernel

RET = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k() { ret; }
"""


def test_ctaids_lazy_sequence():
    ids = G.CtaIds((3, 2, 2))
    want = [(x, y, z) for z in range(2) for y in range(2) for x in range(3)]
    assert len(ids) == 12 and list(ids) == want
    assert ids[5] == want[5] and ids[-1] == want[-1]
    assert list(ids[4:9]) == want[4:9] and len(ids[4:9]) == 5 and ids[4:9][-1] == want[8]
    assert [list(c) for c in G.chunks(ids, 2)] == [want[a:b] for a, b in ((0, 1), (1, 3), (3, 4), (4, 6),
                                                                           (6, 7), (7, 9), (9, 10), (10, 12))]
    huge = G.CtaIds((2**31 - 1, 65535, 65535))
    assert len(huge) == (2**31 - 1) * 65535 * 65535
    assert huge[-1] == (2**31 - 2, 65534, 65534)
    assert sum(len(c) for c in G.chunks(huge, 3)) == len(huge)


def test_largest_grid_ends_at_the_instruction_limit_in_bounded_memory():
    m = load_ptx(RET)
    gc.collect()
    tracemalloc.start()
    t = time.process_time()
    with pytest.raises(EmulatorError, match=r"instruction limit \(1000 warp instructions"):
        m.launch("k", grid=(2**31 - 1, 65535, 65535), max_instructions=1000, engine="reference")
    dt = time.process_time() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert dt < 10 and peak < 20e6, (dt, peak)


def _store(keep=None, keep_ctas=None, workers=1, grid=5):
    g = GlobalMemory()
    out = g.alloc(grid * 32 * 4)
    kw = {} if keep is None else {"keep": keep}
    if keep_ctas is not None:
        kw["keep_ctas"] = keep_ctas
    r = load_ptx(STORE).launch("k", grid=(grid, 1, 1), args=[out], gmem=g, engine="reference", workers=workers,
                               **kw)
    assert (g.download(out, grid * 128).view(np.uint32) == np.arange(grid * 32)).all()     # the same whatever is kept
    return r


@pytest.mark.parametrize("keep,keep_ctas,n", [(None, None, 5), ("all", None, 5), ("last", None, 1),
                                              ("none", None, 0), (None, True, 5), (None, False, 0),
                                              ("none", False, 0)])
def test_keep(keep, keep_ctas, n):
    r = _store(keep, keep_ctas)
    assert len(r.ctas) == n and len(r.async_units) == n
    if keep == "last":
        ctaid, warps = r.ctas[0]
        assert ctaid == (4, 0, 0) and warps[0].read("%r1")[0] == 4


def test_keep_last_with_workers_is_the_serial_last_cta():
    r = _store("last", workers=2, grid=8)
    assert [c for c, _ in r.ctas] == [(7, 0, 0)]
    assert (np.asarray(r.ctas[0][1][0].read("%r3")) == 7 * 32 + np.arange(32)).all()


def test_default_keeps_the_last_cta_of_a_large_grid(monkeypatch):
    monkeypatch.setattr(M, "KEEP_ALL_MAX", 4)
    r = _store(grid=5)
    assert [c for c, _ in r.ctas] == [(4, 0, 0)]
    assert any("keeps the last CTA only" in n for n in r.notes)
    assert len(_store(grid=4).ctas) == 4


@pytest.mark.parametrize("kw,msg", [({"keep": "some"}, "keep must be 'all', 'last' or 'none'"),
                                    ({"keep": 1}, "keep must be"),
                                    ({"keep_ctas": "yes"}, "keep_ctas must be True or False"),
                                    ({"keep": "all", "keep_ctas": False}, "disagree")])
def test_keep_errors(kw, msg):
    with pytest.raises(OperandError, match=msg):
        load_ptx(RET).launch("k", **kw)


def _long_kernel(n):
    body = []
    for i in range(n // 4):
        body += [f"add.s32 %r1, %r1, {i & 7};", "mul.lo.s32 %r2, %r1, 3;", "xor.b32 %r3, %r3, %r2;",
                 "setp.lt.u32 %p1, %r3, 100;"]
    return (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p) {\n"
            ".reg .b32 %r<4>; .reg .b64 %rd<3>; .reg .pred %p<2>;\nmov.u32 %r1, %tid.x;\nmov.u32 %r3, 0;\n"
            + "\n".join(body) + "\nmov.u32 %r1, %tid.x;\nld.param.u64 %rd1, [p];\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd1, %rd1, %rd2;\n"
            "st.global.u32 [%rd1], %r3;\nret;\n}\n")


def test_ops_past_the_first_ones_compile_on_use(monkeypatch):
    monkeypatch.setattr(P, "EAGER_FNS", 8)
    text = _long_kernel(200)
    m = load_ptx(text)
    prog = m.program("k")
    ops = [op for op in prog.code if op.kind == "op"]
    assert all(op._fn is not None for op in ops[:6]) and all(op._fn is None for op in ops[10:])
    outs = []
    for eager in (8, 10_000):
        monkeypatch.setattr(P, "EAGER_FNS", eager)
        g = GlobalMemory()
        out = g.alloc(128)
        load_ptx(text).launch("k", args=[out], gmem=g, engine="reference")
        outs.append(g.download(out, 128).view(np.uint32))
    assert (outs[0] == outs[1]).all()
    # errors of a late instruction are still raised when the program is compiled
    bad = text.replace("xor.b32 %r3, %r3, %r2;", "xor.b32 %r3, %r3, %rd2;", 1)
    bad = bad[::-1].replace(";2r% ,3r% ,3r% ,23b.rox", ";2dr% ,3r% ,3r% ,23b.rox", 1)[::-1]
    with pytest.raises(EmulatorError, match="xor"):
        load_ptx(bad).program("k")


@pytest.mark.slow
def test_memory_per_instruction_of_a_loaded_kernel():
    """What a loaded and compiled kernel holds grows by less than 1 KB per PTX instruction."""
    sizes, held = (2200, 4200), []
    for n in sizes:
        text = _long_kernel(n)
        gc.collect()
        tracemalloc.start()
        m = load_ptx(text)
        m.program("k")
        del text
        gc.collect()
        held.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
        del m
    per = (held[1] - held[0]) / (sizes[1] - sizes[0])
    print(f"{per:.0f} bytes per instruction")
    assert 0 < per < 1024, per


def test_executor_must_have_submit():
    """Found by the fuzz runner: launch(executor=True) raised an AttributeError."""
    with pytest.raises(OperandError, match="executor must be"):
        load_ptx(RET).launch("k", grid=(2, 1, 1), executor=True)
