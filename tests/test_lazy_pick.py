"""The warp loop's lane-group pick (fastcore/pickcall.py) is compiled apart and bound the first time a kernel's lanes
diverge: a kernel whose warps never diverge never binds it, a divergent one binds it at its first divergence (in
the CTA loop, and in the warp loop run alone), and while it cannot be bound (another process compiles) the engine
picks in Python and the reference runs the group's instruction, with the same bits."""
import os

import numpy as np
import pytest

from emulator import load_ptx
from emulator.machine.fastcore import families, warmup
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore.engine import translation
from engines import compare_engines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLOT = families.APART_SLOT["pick"]

# odd and even lanes take different paths and meet again, the odd ones through a barrier of 32 threads (two warps'
# odd lanes): the loop must pick among lane groups, and the even lanes at the join wait for lanes parked at the
# barrier (no group can run: the warp's turn ends)
DIVERGE = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<3>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r6, [n];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    mov.u32 %r3, 7;
    @%p1 bra EVEN;
    add.u32 %r3, %r1, 100;
    barrier.sync 1, 32;
    mov.u32 %r4, 0;
LOOP:
    add.u32 %r3, %r3, %r4;
    add.u32 %r4, %r4, 1;
    setp.lt.u32 %p2, %r4, %r1;
    @%p2 bra LOOP;
    bra.uni JOIN;
EVEN:
    mul.lo.u32 %r3, %r1, 3;
    xor.b32 %r3, %r3, %r6;
JOIN:
    add.u32 %r3, %r3, 1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""

# the same divergence in a kernel with a call (the CTA loop cannot run it: its warps run in the warp loop alone)
CALLS = """
.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 r) twice(.param .b32 x)
{
    .reg .b32 %a<2>;
    ld.param.b32 %a0, [x];
    add.s32 %a1, %a0, %a0;
    st.param.b32 [r], %a1;
    ret;
}
.visible .entry k(.param .u64 p, .param .u32 n)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<3>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 x; st.param.b32 [x], %r1;
    .param .b32 r;
    call.uni (r), twice, (x);
    ld.param.b32 %r3, [r];
    }
    and.b32 %r2, %r1, 3;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra SKIP;
    mul.lo.u32 %r3, %r3, 5;
    mov.u32 %r4, 0;
LOOP:
    add.u32 %r3, %r3, %r4;
    add.u32 %r4, %r4, 1;
    setp.lt.u32 %p2, %r4, %r1;
    @%p2 bra LOOP;
SKIP:
    add.u32 %r3, %r3, 1;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


def _case(text, block):
    module = load_ptx(text)
    tr = translation(module.program("k"))
    return module, tr, [np.zeros(block, np.uint32)], [np.uint32(0x55)]


def _loop_rows(tr):
    """The rows the loop runs itself (the call and its .param traffic go to the Python scheduler anyway)."""
    return tr.code[:, T.OP] != T.SLOW


@pytest.mark.parametrize("text,block,cta_loop", [(DIVERGE, 64, True), (DIVERGE, 128, True), (CALLS, 64, False)])
def test_a_divergent_kernel_binds_the_pick_at_its_first_divergence(text, block, cta_loop, monkeypatch):
    module, tr, arrays, scalars = _case(text, block)
    assert tr.cta_ok == cta_loop
    asked = []
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: asked.append(name) or real(name, wait))
    tr.mufu_ptr[SLOT] = 0                       # (the translation may be another test's: unbound again)
    before = tr.handed_back.copy()
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)
    assert not diffs, diffs
    assert tr.mufu_ptr[SLOT] != 0 and asked.count("pick") == 1
    rows = _loop_rows(tr)                       # bound, then the loop picks: nothing more went to the reference
    assert (tr.handed_back[rows] == before[rows]).all()
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)
    assert not diffs, diffs
    assert asked.count("pick") == 1             # (bound once for the translation)


@pytest.mark.parametrize("text,block", [(DIVERGE, 64), (DIVERGE, 128), (CALLS, 64)])
def test_while_the_pick_cannot_be_bound_python_picks_with_the_same_bits(text, block, monkeypatch):
    from emulator.machine.fastcore import engine
    module, tr, arrays, scalars = _case(text, block)
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == "pick" else real(name, wait))
    picked = []
    python_pick = engine.python_pick
    monkeypatch.setattr(engine, "python_pick", lambda w: (lambda g: picked.append(g) or g)(python_pick(w)))
    tr.mufu_ptr[SLOT] = 0
    before = tr.handed_back.copy()
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)
    assert not diffs, diffs
    assert tr.mufu_ptr[SLOT] == 0
    assert any(g is not None for g in picked)
    if text is DIVERGE:                         # (the even lanes at the join, the odd ones at the barrier: no group)
        assert any(g is None for g in picked)
    rows = _loop_rows(tr)                       # the groups' instructions ran on the reference executors
    assert tr.handed_back[rows].sum() > before[rows].sum()
    assert fast["fast_executed"] > 0            # and the rest in the loop
    monkeypatch.setattr(warmup, "family", real)
    before = tr.handed_back.copy()
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)     # the next launch binds it
    assert not diffs, diffs
    assert tr.mufu_ptr[SLOT] != 0 and (tr.handed_back[rows] == before[rows]).all()


def test_a_kernel_whose_warps_never_diverge_never_binds_the_pick(monkeypatch):
    with open(os.path.join(ROOT, "benchmarks/data/triton_matmul.ptx")) as f:
        module = load_ptx(f.read())
    tr = translation(module.program("matmul_kernel"))
    tr.mufu_ptr[SLOT] = 0
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == "pick" else real(name, wait))
    a, b = np.ones((64, 64), np.float16), np.ones((64, 64), np.float16)
    ref, fast, diffs = compare_engines(module, "matmul_kernel", (1, 1), 128, [a, b, np.zeros((64, 64), np.float32)],
                                       [64, 64, 64, 64, 1, 64, 1, 64, 1, 0, 0], shared_bytes=16384)
    assert not diffs, diffs
    assert tr.mufu_ptr[SLOT] == 0 and tr.handed_back.sum() == 0


def test_auto_binds_the_pick_only_when_nobody_else_compiles(monkeypatch):
    from emulator.machine.fastcore import engine
    module, tr, _, _ = _case(DIVERGE, 64)
    got = []
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: got.append((name, wait)) or (1234 if wait else 0))
    monkeypatch.setattr(warmup, "compiling", lambda: True)
    tr.mufu_ptr[SLOT] = 0
    assert not engine.bind_pick(tr, False) and got == [("pick", False)]
    assert engine.bind_pick(tr, True) and tr.mufu_ptr[SLOT] == 1234           # engine="fast": compiled now
    tr.mufu_ptr[SLOT] = 0
    monkeypatch.setattr(warmup, "compiling", lambda: False)                  # nobody compiles: here, now
    assert engine.bind_pick(tr, False) and got[-1] == ("pick", True)
    tr.mufu_ptr[SLOT] = 0
