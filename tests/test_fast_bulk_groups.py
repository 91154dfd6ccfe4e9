"""The fast engine's CTA loop completes its TMA copies itself (``machine/fastcore/bulkx.py``: ``pump`` at a round's
end and at the CTA's end, ``groups`` for ``cp.async.bulk.commit_group`` / ``wait_group{.read} N``): random bulk
async-group pipelines of several warps and lanes (stores into overlapping boxes, commits, waits of every depth,
reductions and non-tensor bulk stores that the executors complete, stores outside every allocation) give the
reference engine's bits (memory, registers, issue counts, shared-memory log, errors), and the held-out TMA kernels
(tests/data/heldout_tma.npz, tests/data/tma_edge.npz: Triton's tutorial and tests, never tuned on) the H100's."""
import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import corpus_lib
from emulator import EmulatorError, GlobalMemory, TensorMap, load_ptx
from emulator.machine import cta as cta_mod
from emulator.memory import tma
from engines import differences, memory_of, warp_states

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
ROWS, COLS, BOX = 16, 37, 8         # an f32 tensor of 16 x 37 (rows padded to 40), 8 x 8 boxes
PITCH = 160


def program(warps):
    """PTX: warp k runs ``warps[k]``, a list of ("store", box, x, y, lanes) / ("red", ...) / ("bulk", box, lanes) /
    ("commit", lanes) / ("wait", n, read, lanes) / ("peek", off, spread) / ("bar",): lanes issue when their lane id
    is below ``lanes``; a peek folds the tensor's word at off + lane * spread into a register of every lane."""
    body = []
    for k, ops in enumerate(warps):
        body.append(f"\tsetp.ne.u32 %p1, %r2, {k};\n\t@%p1 bra W{k}_END;")
        for i, op in enumerate(ops):
            if op[0] == "bar":
                continue
            lanes = op[-1]
            body.append(f"\tsetp.lt.u32 %p2, %r3, {lanes};")
            if op[0] in ("store", "red"):
                _, box, x, y, _ = op
                body.append(f"\tadd.u32 %r10, %r1, {box * 256};\n\tmov.u32 %r11, {x};\n\tmov.u32 %r12, {y};")
                if op[0] == "store":
                    body.append("\t@%p2 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group "
                                "[%rd2, {%r11, %r12}], [%r10];")
                else:
                    body.append("\t@%p2 cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group "
                                "[%rd2, {%r11, %r12}], [%r10];")
            elif op[0] == "bulk":
                body.append(f"\tadd.u32 %r10, %r1, {op[1] * 256};\n\tadd.u64 %rd5, %rd4, {op[1] * 64};")
                body.append("\t@%p2 cp.async.bulk.global.shared::cta.bulk_group [%rd5], [%r10], 16;")
            elif op[0] == "commit":
                body.append("\t@%p2 cp.async.bulk.commit_group;")
            elif op[0] == "peek":          # every lane reads a word of the tensor: what the copies wrote so far
                body.append(f"\tmul.wide.u32 %rd7, %r3, {op[2]};\n\tadd.u64 %rd7, %rd7, %rd6;\n"
                            f"\tadd.u64 %rd7, %rd7, {op[1]};\n\tld.global.u32 %r20, [%rd7];\n"
                            f"\txor.b32 %r21, %r21, %r20;\n\tshf.l.wrap.b32 %r21, %r21, %r21, 5;")
            else:
                body.append(f"\t@%p2 cp.async.bulk.wait_group{'.read' if op[2] else ''} {op[1]};")
        body.append(f"W{k}_END:")
        if any(op[0] == "bar" for op in ops):
            body.append("\tbar.sync 0;")
    return """.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];
.visible .entry groups(.param .align 64 .b8 groups_tmap[128], .param .u64 groups_raw, .param .u64 groups_t)
.reqntid 128
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<32>;
\t.reg .b64 %rd<8>;
\tmov.b64 %rd1, groups_tmap;
\tcvta.param.u64 %rd2, %rd1;
\tld.param.u64 %rd4, [groups_raw];
\tld.param.u64 %rd6, [groups_t];
\tmov.u32 %r21, 0;
\tmov.u32 %r1, smem;
\tmov.u32 %r4, %tid.x;
\tshr.u32 %r2, %r4, 5;
\tand.b32 %r3, %r4, 31;
\tshl.b32 %r5, %r4, 2;
FILL:
\tsetp.ge.u32 %p3, %r5, 2048;
\t@%p3 bra FILLED;
\tadd.u32 %r6, %r1, %r5;
\tmul.lo.u32 %r7, %r5, 2654435761;
\tshr.u32 %r7, %r7, 9;
\tst.shared.u32 [%r6], %r7;
\tadd.u32 %r5, %r5, 512;
\tbra FILL;
FILLED:
\tfence.proxy.async.shared::cta;
\tbar.sync 0;
""" + "\n".join(body) + "\n\tret;\n}\n"


@st.composite
def pipelines(draw):
    nwarps = 4
    small = draw(st.integers(0, 9)) == 0            # the tensor's allocation ends early: a store raises
    warps = []
    for _ in range(nwarps):
        ops = []
        for _ in range(draw(st.integers(0, 10))):
            kind = draw(st.sampled_from(["store"] * 5 + ["commit"] * 3 + ["wait"] * 3 + ["peek"] * 3 +
                                        ["red", "bulk", "bar"]))
            lanes = draw(st.sampled_from([1, 1, 1, 2, 3, 32]))
            if kind in ("store", "red"):
                ops.append((kind, draw(st.integers(0, 7)), 4 * draw(st.integers(0, 10)), draw(st.integers(0, 12)),
                            lanes))
            elif kind == "bulk":
                ops.append((kind, draw(st.integers(0, 7)), lanes))
            elif kind == "commit":
                ops.append((kind, draw(st.sampled_from([32, 32, 1, 3]))))
            elif kind == "peek":              # lane i reads the word at off + i * spread
                ops.append((kind, 4 * draw(st.integers(0, 19)), 80) if not small else (kind, 4 * draw(st.integers(0, 31)), 4))
            elif kind == "wait":
                ops.append((kind, draw(st.sampled_from([0, 0, 1, 2])), draw(st.booleans()),
                            draw(st.sampled_from([32, 32, 1, 3]))))
            else:
                ops.append(("bar",))
        warps.append(ops)
    return warps, small


def outcome(ptx, small, engine):
    m = load_ptx(ptx)
    g = GlobalMemory()
    base = g.upload(np.arange(ROWS * PITCH // 4, dtype=np.float32) if not small else np.zeros(64, np.float32))
    raw = g.upload(np.zeros(1024, np.uint8))
    tm = TensorMap.encode_tiled(7, 2, base, [COLS, ROWS], [PITCH], [BOX, BOX], [1, 1], 0, 0, 0, 0)
    try:
        r = m.launch("groups", block=128, shared_bytes=2048, gmem=g, args=[bytes(tm), raw, base], out=io.StringIO(),
                     engine=engine)
    except EmulatorError as e:
        return {"error": (type(e).__name__, str(e)), "memory": memory_of(g)}
    warps, pending = warp_states(r)
    return {"memory": memory_of(g), "warps": warps, "stdout": "", "instructions": r.instructions, "cp_async": pending}


class Steps:
    """The instructions the CTA scheduler runs in Python (hand-backs), by spelling."""

    def __init__(self, monkeypatch):
        self.names = []
        real = cta_mod.CTA._step

        def step(cta, w, p, mask, together):
            op = cta.prog.code[p]
            self.names.append(op.instr.opcode if op.kind == "op" else op.kind)
            return real(cta, w, p, mask, together)
        monkeypatch.setattr(cta_mod.CTA, "_step", step)


def _check(warps, small, monkeypatch):
    ptx = program(warps)
    ref = outcome(ptx, small, "reference")
    steps = Steps(monkeypatch)
    fast = outcome(ptx, small, "fast")
    diffs = differences(ref, fast)
    assert not diffs, diffs
    return ref, steps.names


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(pipelines())
def test_random_bulk_group_pipelines(p):
    with pytest.MonkeyPatch.context() as mp:
        warps, small = p
        _, names = _check(warps, small, mp)
        simple = not small and not any(op[0] in ("red", "bulk") for ops in warps for op in ops)
        if simple:          # stores, commits and waits only: nothing goes back to Python
            assert not [n for n in names if "bulk" in n], names


def test_groups_and_pumps_run_in_the_loop(monkeypatch):
    """Overlapping stores of two warps, committed and waited in several depths, some left to the CTA's end: the
    reference's bytes, and no bulk instruction handed back."""
    warps = [[("store", 0, 0, 0, 1), ("commit", 32), ("store", 1, 4, 2, 3), ("store", 2, 32, 8, 1), ("commit", 32),
              ("peek", 0, 80), ("wait", 1, True, 32), ("peek", 8, 80), ("store", 3, 36, 12, 2), ("commit", 1),
              ("wait", 0, False, 32), ("peek", 12, 80)],
             [("store", 4, 0, 0, 2), ("store", 5, 4, 2, 1), ("peek", 4, 80), ("commit", 2), ("bar",)],
             [("peek", 16, 80), ("bar",)], [("bar",)]]
    ref, names = _check(warps, False, monkeypatch)
    assert "error" not in ref
    assert not [n for n in names if "bulk" in n], names


def test_what_the_loop_leaves_to_python(monkeypatch):
    """A reduction among the copies a wait completes, and a non-tensor bulk store (the executor's copy, so the
    loop's copies after it go to the async unit), go back; a store outside every allocation raises as the reference
    does."""
    warps = [[("store", 0, 0, 0, 1), ("red", 1, 4, 0, 1), ("commit", 1), ("wait", 0, False, 1)],
             [("bulk", 2, 1), ("store", 3, 8, 0, 1), ("commit", 1), ("wait", 0, True, 1)], [], []]
    ref, names = _check(warps, False, monkeypatch)
    assert "error" not in ref and any("bulk" in n for n in names)
    ref, _ = _check([[("store", 0, 8, 8, 1), ("commit", 1), ("wait", 0, False, 1)], [], [], []], True, monkeypatch)
    assert ref["error"][0] == "MemoryAccessError", ref["error"]


# -- held-out kernels: the H100's bytes, both engines ----------------------------------------------------------------

def _held_out():
    return corpus_lib.load_npz(os.path.join(DATA, "heldout_tma.npz"))


def _edge():
    return corpus_lib.load_npz(os.path.join(DATA, "tma_edge.npz"))


def _replay_both(case):
    outs = {e: corpus_lib.replay(case, engine=e) for e in ("reference", "fast")}
    for e, (got, res, _) in outs.items():
        assert corpus_lib.mismatches(case, got) == [], e
    assert outs["reference"][1].instructions == outs["fast"][1].instructions


@pytest.mark.parametrize("name", ["heldout_padding_nan_sm90a"])
def test_held_out_sample(name):
    _replay_both(_held_out()[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["heldout_load3d_f16_sm90a", "heldout_persistent_f16_sm90a",
                                  "heldout_persistent_f16_subtile_partial_sm90a", "heldout_persistent_fp8_sm90a",
                                  "heldout_store3d_f32_sm90a"])
def test_held_out_all(name):
    _replay_both(_held_out()[name])


def test_tma_store_writes_whole_chunks():
    """f32 x 119, f16 x 117 and u8 x 113 rows: the H100's stores write to the end of the last 16-byte chunk, its
    loads fill exactly past the tensor; both engines."""
    for name, case in sorted(_edge().items()):
        _replay_both(case)


def test_the_chunk_rule_is_what_matches(monkeypatch):
    """Element-exact store clipping (what the emulator did before the measurement) mismatches the H100."""
    monkeypatch.setattr(tma, "store_extent", lambda dim0, es: dim0)
    case = _edge()["triton_store_float32_119_sm90a"]
    got, _, _ = corpus_lib.replay(case, engine="reference")
    bad = corpus_lib.mismatches(case, got)
    assert bad and bad[0][0] == "o"
