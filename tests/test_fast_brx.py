"""brx.idx in the fast engine's loops (table.BRX) against the reference scheduler (machine.cta), bit for bit:
divergent indices, guards, immediates, loops through a jump table (an interpreter), the error of an index past
the list, random programs; the H100 replays are tests/test_ctrlflow.py's."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import load_ptx
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore import translation
from emulator.machine.fastcore.engine import handback_counts
from engines import compare_engines

EXAMPLES = int(os.environ.get("WARPEMU_FUZZ_EXAMPLES", "60"))


def interp_kernel(rng, ntargets=6, steps=12, guard=True):
    """A bytecode interpreter: each thread reads its program (one opcode a step) and dispatches through a jump
    table; the handlers do arithmetic, some fall through into the next, and the loop goes back to the dispatch."""
    labels = [f"H{k}" for k in range(ntargets)]
    handlers = []
    for k, lab in enumerate(labels):
        op = ["add.u32 %r10, %r10, {c};", "mul.lo.u32 %r10, %r10, {c};", "xor.b32 %r10, %r10, {c};",
              "shl.b32 %r11, %r10, 3; add.u32 %r10, %r10, %r11;", "sub.u32 %r10, %r10, %r0;"][rng.integers(5)]
        body = op.format(c=int(rng.integers(1, 1000)))
        tail = "bra.uni NEXT;" if rng.random() < 0.7 else ""       # else: fall through into the next handler
        handlers.append(f"{lab}:\n    {body}\n    {tail}")
    g = "@%p2 " if guard else ""
    return f""".version 8.5
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 prog)
{{
    .reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<4>;
    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [out];
    ld.param.u64 %rd1, [prog];
    mul.wide.u32 %rd2, %r0, {4 * steps};
    add.u64 %rd3, %rd1, %rd2;
    mov.u32 %r10, %r0;
    mov.u32 %r12, 0;
    ts: .branchtargets {", ".join(labels)};
LOOP:
    mul.wide.u32 %rd4, %r12, 4;
    add.u64 %rd5, %rd3, %rd4;
    ld.global.u32 %r13, [%rd5];
    setp.ne.u32 %p2, %r13, 7;
    and.b32 %r13, %r13, 7;
    min.u32 %r13, %r13, {ntargets - 1};
    {g}brx.idx %r13, ts;
    bra.uni NEXT;
{chr(10).join(handlers)}
NEXT:
    add.u32 %r12, %r12, 1;
    setp.lt.u32 %p1, %r12, {steps};
    @%p1 bra LOOP;
    mul.wide.u32 %rd6, %r0, 4;
    add.u64 %rd7, %rd0, %rd6;
    st.global.u32 [%rd7], %r10;
    ret;
}}
"""


def run(text, prog, nthreads=64):
    module = load_ptx(text)
    ref, fast, diffs = compare_engines(module, "k", 1, nthreads, [np.zeros(nthreads, np.uint32), prog])
    return module, ref, fast, diffs


@pytest.mark.parametrize("guard", [True, False])
def test_an_interpreter_runs_in_the_loop(guard):
    rng = np.random.default_rng(3)
    text = interp_kernel(rng, guard=guard)
    prog = rng.integers(0, 8, 64 * 12, dtype=np.uint64).astype(np.uint32)
    prog[:12 * 8] = 2                                             # warp 0's first 8 threads agree (no divergence)
    module, ref, fast, diffs = run(text, prog)
    assert "error" not in ref and not diffs, diffs
    tr = translation(module.program("k"))
    assert (tr.code[:, T.OP] == T.BRX).sum() == 1
    assert not handback_counts(module.program("k"))
    assert fast["fast_executed"] == fast["instructions"]


def test_an_immediate_index_and_uniform_lanes():
    text = interp_kernel(np.random.default_rng(4), guard=False).replace("brx.idx %r13, ts;", "brx.idx.uni 2, ts;")
    module, ref, fast, diffs = run(text, np.zeros(64 * 12, np.uint32))
    assert "error" not in ref and not diffs, diffs
    assert not handback_counts(module.program("k"))


def test_an_index_past_the_list_is_the_references_error():
    """The row goes back and the reference raises, naming the lane; nothing else differs."""
    text = interp_kernel(np.random.default_rng(5), guard=False).replace("min.u32 %r13, %r13, 5;", "")
    prog = np.zeros(64 * 12, np.uint32)
    prog[12 * 37 + 3] = 6                                         # thread 37's fourth step: index 6 of 6 targets
    module, ref, fast, diffs = run(text, prog)
    assert ref["error"] == fast["error"] and not diffs, diffs
    assert "lane 5: index 6 is past the end of the .branchtargets list (6 labels" in fast["error"][1]


def test_a_wrong_brx_row_is_caught():
    rng = np.random.default_rng(6)
    text = interp_kernel(rng)
    module = load_ptx(text)
    tr = translation(module.program("k"))
    row = np.flatnonzero(tr.code[:, T.OP] == T.BRX)[0]
    tr.code[row, [T.V0, T.V0 + 1]] = tr.code[row, [T.V0 + 1, T.V0]]     # two targets swapped
    prog = rng.integers(0, 8, 64 * 12, dtype=np.uint64).astype(np.uint32)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32), prog])
    assert diffs


@settings(max_examples=max(EXAMPLES // 3, 10), deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), ntargets=st.integers(1, 8), nthreads=st.sampled_from([32, 48, 64]))
def test_random_jump_tables_are_identical_on_both_engines(seed, ntargets, nthreads):
    rng = np.random.default_rng(seed)
    text = interp_kernel(rng, ntargets, steps=int(rng.integers(1, 10)), guard=bool(rng.random() < 0.5))
    prog = rng.integers(0, 8, nthreads * 12, dtype=np.uint64).astype(np.uint32)
    if rng.random() < 0.5:
        prog[:] = prog[0]                                         # every thread the same program
    module, ref, fast, diffs = run(text, prog, nthreads)
    assert "error" not in ref and not diffs, (diffs, text)
    assert not handback_counts(module.program("k"))
