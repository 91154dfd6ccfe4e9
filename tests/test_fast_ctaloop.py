"""CTAs with mbarrier waits and named barriers in the fast engine's CTA loop (``fastcore/ctaloop.py``): a ``try_wait``
whose phase has not completed parks its lanes in the loop, which runs the other warps in the Python scheduler's order
and wakes them when the phase completes; ``bar.sync``/``bar.arrive`` with a thread count or a register-numbered
barrier arrive in the loop. Both engines must leave the same memory, registers, PCs, instruction counts, shared-memory
log, errors and deadlock reports (``engines.compare_engines``), and such CTAs must stay in the loop (hand-overs to
the Python scheduler are counted)."""
import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import corpus_lib
from emulator import load_ptx
from emulator.machine import cta as cta_mod
from emulator.machine.fastcore import engine as E, table as T, translation
from engines import compare_engines, differences, replay_outcome

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"


class HandOvers:
    """Counts the CTAs the CTA loop gives to the Python scheduler (``FastCTA._handoff``) and the CTA loops started."""

    def __init__(self, monkeypatch):
        self.n = collections.Counter()
        real_h, real_r = E.FastCTA._handoff, E.FastCTA.run
        n = self.n

        def handoff(fc, cta, k, parked, python_yield=False):
            n["handoff"] += 1
            return real_h(fc, cta, k, parked, python_yield)

        def run(fc, cta, **kw):
            n["cta_loop"] += 1
            return real_r(fc, cta, **kw)
        monkeypatch.setattr(E.FastCTA, "_handoff", handoff)
        monkeypatch.setattr(E.FastCTA, "run", run)


# -- random warp-specialised pipelines: mbarriers, named barriers, deadlocks ---------------------------------------

def ws_program(rng, nwarps):
    """Warp 0 produces into S stages (every lane, an elected lane with expect_tx/complete_tx, or a count), warps
    1.. consume (try_wait spins on full[], arrivals on empty[]), the consumers meet at a named barrier with a thread
    count (immediate or register, its number immediate or in a register; bar.sync or barrier.sync, or the producer
    arriving with bar.arrive), and now and then a broken rule: a missing arrival, a parity nobody reaches, a
    second thread count for a barrier, a count that is not a multiple of 32, a non-uniform barrier number."""
    S = int(rng.integers(1, 4))
    R = int(rng.integers(1, 3 * S + 2))
    C = nwarps - 1
    pform = int(rng.integers(0, 3))
    nform = int(rng.integers(0, 4))             # named barrier: imm/imm, reg count, reg number, producer arrives
    inject = int(rng.integers(0, 10))           # 0: missing arrival, 1: unreachable parity, 2: second count,
    #                                             3: bad count, 4: non-uniform number; else none
    full_count = {0: 32, 1: 1, 2: 32}[pform]
    empty_count = 32 * C - (1 if inject == 0 else 0)
    out = []
    L = out.append
    L(".visible .entry k(.param .u64 out)\n{")
    L("    .reg .pred %p<8>;\n    .reg .b32 %r<40>;\n    .reg .b64 %rd<16>;")
    L("    .shared .align 8 .b64 full[4];\n    .shared .align 8 .b64 empty[4];\n    .shared .align 16 .b32 data[128];")
    L("    ld.param.u64 %rd1, [out];\n    mov.u32 %r1, %tid.x;\n    and.b32 %r2, %r1, 31;\n    shr.u32 %r3, %r1, 5;")
    L("    mov.u32 %r10, 0;\n    mov.u64 %rd10, 0;\n    setp.eq.u32 %p1, %r1, 0;")
    for s in range(S):
        L(f"    @%p1 mbarrier.init.shared::cta.b64 [full+{8 * s}], {full_count};")
        L(f"    @%p1 mbarrier.init.shared::cta.b64 [empty+{8 * s}], {empty_count};")
    L("    fence.mbarrier_init.release.cluster;\n    bar.sync 0;")
    nthreads = 32 * C
    L(f"    mov.u32 %r30, {nthreads + (32 if inject == 3 else 0) + (5 if inject == 3 else 0)};")
    L("    mov.u32 %r31, 1;")
    L("    add.u32 %r32, %r3, 1;")                  # a number that differs between warps (inject 4)
    lab = [0]

    mixed = rng.random() < 0.3                  # some waits spin on test_wait (the Python scheduler takes over)

    def wait(kind, s, par):
        lab[0] += 1
        op = "test_wait" if mixed and rng.random() < 0.3 else "try_wait"
        L(f"W{lab[0]}:\n    mbarrier.{op}.parity.shared::cta.b64 %p3, [{kind}+{8 * s}], {par};")
        L(f"    @!%p3 bra W{lab[0]};")

    def named(who):
        bid = "%r32" if inject == 4 else ("%r31" if nform == 2 else "1")
        cnt = "%r30" if nform in (1, 2) or inject == 3 else str(nthreads + (32 if nform == 3 else 0))
        if who == "p":
            L(f"    bar.arrive {bid}, {cnt};")
        elif inject == 2:
            L(f"    setp.eq.u32 %p6, %r3, 1;\n    @%p6 bar.sync {bid}, {cnt};\n    @!%p6 bar.sync {bid}, "
              f"{nthreads + 32};")
        else:
            L(f"    {'barrier.sync' if rng.integers(0, 2) else 'bar.sync'} {bid}, {cnt};")
    L("    setp.ne.u32 %p5, %r3, 0;\n    @%p5 bra CONSUMER;")
    for r in range(R):                          # producer (warp 0)
        s = r % S
        wait("empty", s, ((r // S) & 1) ^ 1)
        L(f"    mad.lo.u32 %r8, %r2, {r + 7}, {r * 13 + 1};\n    shl.b32 %r5, %r2, 2;\n    mov.u32 %r6, data;")
        L(f"    add.u32 %r6, %r6, %r5;\n    st.shared.u32 [%r6+{128 * s}], %r8;")
        if pform == 0:
            L(f"    mbarrier.arrive.shared::cta.b64 %rd3, [full+{8 * s}];\n    add.u64 %rd10, %rd10, %rd3;")
        elif pform == 1:
            L(f"    elect.sync %r9|%p4, -1;\n    @%p4 mbarrier.arrive.expect_tx.shared::cta.b64 _, [full+{8 * s}], 64;")
            L(f"    @%p4 mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [full+{8 * s}], 64;")
        else:
            L(f"    setp.eq.u32 %p4, %r2, 0;\n    @%p4 mbarrier.arrive.shared::cta.b64 _, [full+{8 * s}], 32;")
        if nform == 3 and r == R // 2:
            named("p")
    L("    bra.uni DONE;\nCONSUMER:")
    for r in range(R + (1 if inject == 1 else 0)):
        s = r % S
        wait("full", s, (r // S) & 1)
        L(f"    shl.b32 %r5, %r2, 2;\n    mov.u32 %r6, data;\n    add.u32 %r6, %r6, %r5;")
        L(f"    ld.shared.u32 %r7, [%r6+{128 * s}];\n    add.u32 %r10, %r10, %r7;\n    mul.lo.u32 %r10, %r10, 3;")
        L(f"    mbarrier.arrive.shared::cta.b64 %rd2, [empty+{8 * s}];\n    xor.b64 %rd10, %rd10, %rd2;")
        if r == R // 2:
            named("c")
    L("DONE:\n    mul.wide.u32 %rd4, %r1, 16;\n    add.s64 %rd5, %rd1, %rd4;")
    L("    st.global.u64 [%rd5], %rd10;\n    st.global.u32 [%rd5+8], %r10;\n    ret;\n}")
    return HEAD + "\n".join(out) + "\n", inject


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 31 - 1), nwarps=st.integers(2, 5))
def test_random_warp_specialised_pipelines_stay_in_the_cta_loop(seed, nwarps):
    """Both engines identical; a pipeline that runs to its end never leaves the CTA loop (unless a test_wait spins:
    then the Python scheduler goes on, its try_wait stalls too); a deadlock or a broken rule is the reference's
    report, naming each warp."""
    rng = np.random.default_rng(seed)
    src, inject = ws_program(rng, nwarps)
    module = load_ptx(src)
    assert translation(module.program("k")).cta_ok
    mp = pytest.MonkeyPatch()
    try:
        ho = HandOvers(mp)
        ref, fast, diffs = compare_engines(module, "k", 1, 32 * nwarps, [np.zeros(32 * nwarps * 16, np.uint8)])
    finally:
        mp.undo()
    assert not diffs, diffs
    if "error" in ref:
        assert inject <= 4, ref["error"]
    elif "test_wait" not in src:
        assert ho.n["cta_loop"] == 1 and ho.n["handoff"] == 0, ho.n


WAITS = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 mode)
{
    .reg .pred %p<8>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<8>;
    .shared .align 8 .b64 bar[2];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [mode];
    mov.u32 %r1, %tid.x;
    shr.u32 %r3, %r1, 5;
    setp.eq.u32 %p1, %r1, 0;
    setp.eq.u32 %p2, %r9, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 64;
    @%p1 mbarrier.init.shared::cta.b64 [bar+8], 65;
    bar.sync 0;
    setp.eq.u32 %p3, %r3, 0;
    @%p3 bra SECOND;
    mbarrier.arrive.shared::cta.b64 %rd2, [bar];         // phase 0 of bar completes with warp 0's arrivals
W0:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [bar], 0;
    @!%p4 bra W0;
    setp.eq.u32 %p5, %r9, 1;
    @%p5 bra WAIT8;                                        // mode 1: waits on bar+8, which needs 65 arrivals
    setp.eq.u32 %p5, %r9, 2;
@%p5 bra WAIT1;                                            // mode 2: waits for a phase nobody completes
    mov.u32 %r10, 7;
    bra.uni DONE;
WAIT8:
    mbarrier.arrive.shared::cta.b64 %rd3, [bar+8];
W8:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [bar+8], 0;
    @!%p4 bra W8;
    bra.uni DONE;
WAIT1:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [bar], 1;
    @!%p4 bra WAIT1;
    bra.uni DONE;
SECOND:
    mov.u32 %r10, 0;
    mov.u32 %r11, 0;
LOOP:                                                      // warp 0 works before it arrives: warp 1 stalls
    add.u32 %r10, %r10, %r11;
    add.u32 %r11, %r11, 1;
    setp.lt.u32 %p6, %r11, 40;
    @%p6 bra LOOP;
    mbarrier.arrive.shared::cta.b64 %rd2, [bar];
    setp.eq.u32 %p5, %r9, 3;
    @%p5 bra TRAPPED;                                      // mode 3: a handed-back instruction mid-CTA
    bra.uni DONE;
TRAPPED:
    mov.u64 %rd6, %clock64;                                // (the executor reads the clock)
    cvt.u32.u64 %r12, %rd6;
    add.u32 %r10, %r10, %r12;
DONE:
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd1, %rd4;
    st.global.u32 [%rd5], %r10;
    ret;
}
"""


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_waits_deadlocks_and_hand_backs(mode, monkeypatch):
    """A warp stalls at a try_wait while the other works, and wakes; a missing arrival and a parity nobody reaches
    are the reference's deadlock reports (the CTA is handed to the Python scheduler, which names each waiting warp);
    an instruction handed back to the executors in the middle of the CTA keeps it in the loop."""
    module = load_ptx(WAITS)
    ho = HandOvers(monkeypatch)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [mode])
    assert not diffs, diffs
    if mode in (1, 2):
        kind, msg = ref["error"]
        assert kind == "WarpSyncError" and "deadlock" in msg and "warp 1 lanes 0-31" in msg, msg
        assert "mbarrier.try_wait.parity.shared::cta.b64 %p4" in msg and "waits for" in msg, msg
        assert ho.n["handoff"] == 1, ho.n
    else:
        assert "error" not in ref, ref["error"]
        assert ho.n["handoff"] == 0 and ho.n["cta_loop"] == 1, ho.n
        if mode == 3:
            from emulator.machine.fastcore.engine import handback_counts
            assert handback_counts(module.program("k")).get("mov.u64", 0) >= 1


@pytest.mark.parametrize("mode", [0, 1])
def test_the_waits_compiled_apart_are_bound_on_first_need(mode, monkeypatch):
    """The stalls, wakes and yields (ctaloop.cta_c, "ctawait") are compiled apart from the CTA loop and bound only for
    kernels that can wait: while the function is missing the CTAs run on the Python scheduler with the same bits,
    and the next launch runs them in the CTA loop."""
    from emulator.machine.fastcore import families, warmup
    from emulator.machine.fastcore.engine import translation
    module = load_ptx(WAITS)
    tr = translation(module.program("k"))
    assert "ctawait" in tr.apart
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: 0 if n == "ctawait" else real(n, wait))
    ho = HandOvers(monkeypatch)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [mode])
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT["ctawait"]] == 0 and ho.n["cta_loop"] == 0, ho.n
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [mode])
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT["ctawait"]] != 0 and ho.n["cta_loop"] == 1, ho.n


NAMED = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 1;
    bar.sync %r2, 64;
    add.u32 %r3, %r1, 5;
    bar.sync 2, 64;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


def test_counted_barriers_bind_their_operands_apart(monkeypatch):
    """A counted or register-numbered barrier's operands are read by ctaloop.bar_c ("ctabar"), compiled apart and
    bound only for kernels with one: while it is missing the warp loop hands the barrier back and the Python
    scheduler arrives, with the same bits; the next launch stays in the CTA loop."""
    from emulator.machine.fastcore import families, warmup
    from emulator.machine.fastcore.engine import translation
    module = load_ptx(NAMED)
    tr = translation(module.program("k"))
    assert "ctabar" in tr.apart and "ctawait" not in tr.apart
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: 0 if n == "ctabar" else real(n, wait))
    ho = HandOvers(monkeypatch)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [])
    assert not diffs, diffs
    assert "error" not in ref, ref
    assert tr.mufu_ptr[families.APART_SLOT["ctabar"]] == 0 and ho.n["handoff"] == 1, ho.n
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [])
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT["ctabar"]] != 0 and ho.n["handoff"] == 1 and ho.n["cta_loop"] == 2, ho.n


def test_kernels_that_never_wait_do_not_bind_the_waits():
    """An sm_80 kernel (bar.sync only) runs in the CTA loop without ctaloop.cta_c."""
    from emulator.machine.fastcore.engine import translation
    module = load_ptx(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
                      "    .reg .b32 %r<4>;\n    .reg .b64 %rd<4>;\n    ld.param.u64 %rd1, [out];\n"
                      "    mov.u32 %r1, %tid.x;\n    bar.sync 0;\n    mul.wide.u32 %rd2, %r1, 4;\n"
                      "    add.s64 %rd3, %rd1, %rd2;\n    st.global.u32 [%rd3], %r1;\n    ret;\n}\n")
    tr = translation(module.program("k"))
    assert "ctawait" not in tr.apart and "ctabar" not in tr.apart and tr.cta_ok
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [])
    assert not diffs, diffs


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_a_stall_the_loop_does_not_make_is_the_reference_s(mode, monkeypatch):
    """A test_wait that fails yields in the reference (its lanes step aside): the CTA goes to the Python scheduler,
    with the loop's stalls and barrier counts, and the outcome is the same; the try_wait stalls after it are the
    scheduler's (the warp loop hands them back)."""
    src = WAITS.replace("W0:\n    mbarrier.try_wait", "W0:\n    mbarrier.test_wait")
    module = load_ptx(src)
    ho = HandOvers(monkeypatch)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [mode])
    assert not diffs, diffs
    assert ho.n["handoff"] == 1
    assert ("error" in ref) == (mode != 0)


def test_the_comparison_can_fail():
    """A wrong model (a try_wait that reads the other parity) changes what the fast engine does."""
    from emulator.machine.fastcore import asyncx
    module = load_ptx(WAITS)
    tr = translation(module.program("k"))
    rows = np.flatnonzero((tr.code[:, T.OP] == T.HOPX) & (tr.code[:, T.X] == asyncx.K_MB_WAIT))
    assert rows.size and (tr.code[rows, T.B] == -3).all()
    tr.imm[rows, 1] ^= np.uint64(1)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64, np.uint32)], [0])
    assert diffs


# -- the corpus's warp-specialised kernels --------------------------------------------------------------------------

class BulkRows:
    """Counts the TMA box copies (``BULKX`` rows) the loops hand back to the executors, and the instructions handed
    back to the Python executors by spelling (``CTA._step``)."""

    def __init__(self, monkeypatch):
        self.back = collections.Counter()
        real = cta_mod.CTA._step
        back = self.back

        def step(cta, w, p, mask, together):
            op = cta.prog.code[p]
            back[op.instr.opcode if op.kind == "op" else op.kind] += 1
            return real(cta, w, p, mask, together)
        monkeypatch.setattr(cta_mod.CTA, "_step", step)
        from emulator.machine.fastcore import bulkx
        self.allocs = allocs = []
        real_alloc = bulkx.Staging._alloc

        def alloc(stage, *sizes):
            allocs.append(sizes)
            real_alloc(stage, *sizes)
        monkeypatch.setattr(bulkx.Staging, "_alloc", alloc)

    def tma(self):
        return sum(k for n, k in self.back.items() if n.startswith(("cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor")))


def _check_corpus(name, monkeypatch):
    case = corpus_lib.load_all()[name]
    got_r, ref = replay_outcome(case, "reference")
    ho = HandOvers(monkeypatch)
    rows = BulkRows(monkeypatch)
    got_f, fast = replay_outcome(case, "fast")
    if name not in corpus_lib.CANNOT_RUN:
        assert corpus_lib.mismatches(case, got_r) == [] and corpus_lib.mismatches(case, got_f) == []
    diffs = differences(ref, fast, clusters=corpus_lib.in_clusters(case))
    if name in corpus_lib.ORDER_DEPENDENT:
        diffs = [d for d in diffs if ": register " not in d]
    assert not diffs, diffs
    ho.n["tma_back"] = rows.tma()
    ho.n["grown"] = max(len(rows.allocs) - 1, 0)   # (a copy that does not fit the staging area goes back; it grows)
    return ho.n


def _cluster(case):
    """A kernel launched in clusters of more than one CTA (its CTAs run in the CTA loop one at a time, under the
    cluster's scheduler, machine/cluster.py)."""
    return corpus_lib.in_clusters(case)


def _ws_cases():
    cases = corpus_lib.load_all()
    return sorted(n for n, c in cases.items() if "mbarrier.try_wait" in c["ptx"] or "cp.async.bulk" in c["ptx"])


FAST_SAMPLE = ["nvcc_deepgemm_bf16_128x256x512"]          # (about 4 s; the others under -m slow)


def _in_the_loop(name, n):
    """CTAs run in the CTA loop from start to end, their TMA copies in it too, the multicast copies of clusters
    included (but for a copy that found the staging area full while it grew)."""
    assert n["cta_loop"] >= 1 and n["handoff"] == 0 and n["tma_back"] <= n["grown"], (name, n)


@pytest.mark.parametrize("name", FAST_SAMPLE)
def test_corpus_tma_mbarrier_kernels_in_the_cta_loop(name, monkeypatch):
    """The corpus's TMA and mbarrier kernels (Triton, CuTe, CUTLASS warp-specialised, ThunderKittens, DeepGEMM): the
    H100's outputs and the reference's state on the fast engine, every CTA in the loop to its end."""
    n = _check_corpus(name, monkeypatch)
    assert not _cluster(corpus_lib.load_all()[name])
    _in_the_loop(name, n)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in _ws_cases() if n not in FAST_SAMPLE])
def test_all_corpus_tma_mbarrier_kernels_in_the_cta_loop(name, monkeypatch):
    _in_the_loop(name, _check_corpus(name, monkeypatch))


# -- mbarrier.init / inval in the CTA loop -------------------------------------------------------------------------

INITS = HEAD + """
.visible .entry k(.param .u64 out, .param .u32 mode)
{
    .reg .pred %p<8>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<8>;
    .shared .align 8 .b64 bar[12];
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r9, [mode];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    shr.u32 %r3, %r1, 5;
    mov.u32 %r4, bar;
    setp.lt.u32 %p1, %r2, 6;                    // lanes 0-5 of warp 0: six barriers at once (the table grows)
    setp.eq.u32 %p2, %r3, 0;
    and.pred %p1, %p1, %p2;
    shl.b32 %r5, %r2, 3;
    add.u32 %r6, %r4, %r5;
    mad.lo.u32 %r7, %r2, 32, 32;                // counts 32, 64, ... (lane 1: both warps complete its phase)
    setp.eq.u32 %p3, %r9, 1;
    @%p3 add.u32 %r6, %r6, 4;                   // mode 1: misaligned
    setp.eq.u32 %p3, %r9, 2;
    @%p3 mov.u32 %r7, 0;                        // mode 2: a count of 0
    @%p1 mbarrier.init.shared::cta.b64 [%r6], %r7;
    @%p1 mbarrier.init.shared::cta.b64 [%r6], %r7;           // again: the same rows
    bar.sync 0;
    @%p2 mbarrier.inval.shared::cta.b64 [bar+16];           // warp 0 frees barrier 2 (every lane: once)
    @%p2 mbarrier.inval.shared::cta.b64 [bar+88];           // an address without a barrier: nothing
    setp.eq.u32 %p4, %r2, 0;
    and.pred %p4, %p4, %p2;
    @%p4 mbarrier.init.shared::cta.b64 [bar+80], 64;         // takes the free row
    bar.sync 0;
    mbarrier.arrive.shared::cta.b64 %rd2, [bar+8];
    mbarrier.arrive.shared::cta.b64 %rd3, [bar+80];
W:
    mbarrier.try_wait.parity.shared::cta.b64 %p5, [bar+80], 0;
    @!%p5 bra W;
    setp.eq.u32 %p6, %r9, 3;
@%p6 bra DEAD;
    mbarrier.try_wait.parity.shared::cta.b64 %p5, [bar+8], 0;
    bra.uni DONE;
DEAD:                                                         // mode 3: wait on the invalidated barrier
    mbarrier.try_wait.parity.shared::cta.b64 %p5, [bar+24], 0;
    @!%p5 bra DEAD;
DONE:
    selp.u32 %r10, 1, 0, %p5;
    mul.wide.u32 %rd4, %r1, 16;
    add.s64 %rd5, %rd1, %rd4;
    st.global.v2.u64 [%rd5], {%rd2, %rd3};
    ret;
}
"""


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_mbarrier_init_and_inval_run_in_the_cta_loop(mode, monkeypatch):
    """Per-lane barriers initialised at once (the table grows: Python adds the rows), again on the same rows, one
    invalidated and its row taken by a new barrier: the same states, errors and deadlock reports on both engines;
    the inits and invals that need no new rows run in the loop."""
    from emulator.machine.fastcore.engine import handback_counts
    module = load_ptx(INITS)
    monkeypatch.setattr(E, "MBAR_ROWS", 4)      # (the table the loop starts with: 4 rows, too few for the lanes)
    ho = HandOvers(monkeypatch)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 16, np.uint8)], [mode])
    assert not diffs, diffs
    back = handback_counts(module.program("k"))
    if mode in (1, 2):
        assert ref["error"][0] == "MBarrierError", ref["error"]
    elif mode == 3:
        assert ref["error"][0] == "WarpSyncError" and "deadlock" in ref["error"][1], ref["error"]
    else:
        assert "error" not in ref, ref["error"]
        assert ho.n["handoff"] == 0
        assert sum(v for k, v in back.items() if k.startswith("mbarrier")) == 1, back   # (the growing init)


def test_the_cta_loop_starts_with_room_for_its_barriers(monkeypatch):
    """A CTA that initialises its barriers in the loop finds room for them (engine.MBAR_ROWS): no hand-back."""
    from emulator.machine.fastcore.engine import handback_counts
    module = load_ptx(INITS)
    ref, fast, diffs = compare_engines(module, "k", 1, 64, [np.zeros(64 * 16, np.uint8)], [0])
    assert not diffs, diffs
    back = handback_counts(module.program("k"))
    assert not any(k.startswith("mbarrier") for k in back), back
