"""The sanitizer (docs/sanitize.md): planted bugs against compute-sanitizer's verdicts on an H100, clean twins,
the real-kernel corpus (no false positives), the API, the CLI.

tests/data/sanitize/: ``planted.ptx`` (nvcc -arch=sm_90a -lineinfo of tools/hwcapture/sanitize/planted.cu),
``planted.json`` (launch shapes), ``planted_verdicts.json`` (what compute-sanitizer 2025.3.1 reported for each
kernel under memcheck, racecheck --racecheck-report all, synccheck and initcheck: tools/hwcapture/sanitize)."""
import io
import json
import os
import sys

import numpy as np
import pytest

from emulator import GlobalMemory, Warp, load_ptx
from emulator.errors import EmulatorError, MemoryAccessError, OperandError, WarpSyncError

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "sanitize")
CFG = json.load(open(os.path.join(DATA, "planted.json")))
VERDICTS = json.load(open(os.path.join(DATA, "planted_verdicts.json")))["reports"]
PAIRS = list(CFG["shapes"])

# what the emulator must report on each planted bug (tool, kind class), whatever compute-sanitizer says;
# RAW and WAR are one class ("RW"): which of the two a read-write race shows depends on the order the
# threads happened to run in, on the GPU as here
RW = "RW"
EXPECTED = {
    "raw_2warps": {("racecheck", RW)}, "war_neighbour": {("racecheck", RW)}, "waw_2warps": {("racecheck", "WAW")},
    "reduce_nosync": {("racecheck", RW)}, "broadcast": {("racecheck", RW)}, "bytes_vs_word": {("racecheck", RW)},
    "dynamic_smem": {("racecheck", RW)}, "atomic_vs_store": {("racecheck", "WAW")},
    "intrawarp_nosyncwarp": {("racecheck", RW)}, "named_barrier_arrive": {("racecheck", RW)},
    "mbarrier_early_read": {("racecheck", RW)}, "cpasync_nowait": {("racecheck", RW)},
    "second_phase": {("racecheck", RW)},
    "global_oob_write": {("memcheck", "out-of-bounds")}, "global_oob_read": {("memcheck", "out-of-bounds")},
    "shared_oob_write": {("memcheck", "out-of-bounds")}, "atomic_oob": {("memcheck", "out-of-bounds")},
    "global_misaligned": {("memcheck", "misaligned")}, "shared_misaligned": {("memcheck", "misaligned")},
    "vector_misaligned": {("memcheck", "misaligned")},
    "uninit_global": {("initcheck", "uninitialized-read")}, "uninit_global_half": {("initcheck", "uninitialized-read")},
    "uninit_shared": {("initcheck", "uninitialized-read")},
    "divergent_barrier": {("synccheck", "divergent-barrier")}, "shfl_membermask": {("synccheck", "membermask")},
    "syncwarp_membermask": {("synccheck", "membermask")}, "ballot_membermask": {("synccheck", "membermask")},
    "mbarrier_overarrive": {("synccheck", "mbarrier-overarrival")},
    "cross_cta_waw": {("racecheck", "global-race")}, "cross_cta_raw": {("racecheck", "global-race")},
    "last_block_fence": {("racecheck", "global-race")},
    "bulk_store_nofence": {("asynccheck", "proxy-fence")}, "bulk_roundtrip_nofence": {("asynccheck", "proxy-fence")},
    "bulk_load_early_read": {("racecheck", RW), ("asynccheck", "in-flight-read")},
}
# compute-sanitizer found these planted bugs (the rest it misses: membermask of shfl/vote, races with atomics,
# uninitialised shared memory, out-of-bounds accesses that land in a neighbouring allocation, global races
# between CTAs, missing fences, the async proxy); the table keeps the docs honest
GPU_FOUND = {"raw_2warps", "war_neighbour", "waw_2warps", "reduce_nosync", "broadcast", "bytes_vs_word",
             "dynamic_smem", "intrawarp_nosyncwarp", "named_barrier_arrive", "mbarrier_early_read", "cpasync_nowait",
             "second_phase", "shared_oob_write", "global_misaligned", "shared_misaligned", "vector_misaligned",
             "uninit_global", "uninit_global_half", "divergent_barrier", "syncwarp_membermask",
             "mbarrier_overarrive", "bulk_load_early_read"}


def _cls(kind):
    return RW if kind in ("RAW", "WAR") else kind


@pytest.fixture(scope="module")
def planted():
    return load_ptx(open(os.path.join(DATA, "planted.ptx")).read())


def run_planted(module, name, sanitize="all", engine="auto"):
    """Launch a planted kernel as the GPU run did: out zeroed, in = 0..n-1, buf allocated and never written.
    Returns (reports, the exception or None)."""
    grid, block, shared = CFG["shapes"][name.rsplit("_", 1)[0]]
    g = GlobalMemory()
    n = CFG["words"]
    out, inp, buf = g.upload(np.zeros(n, np.uint32)), g.upload(np.arange(n, dtype=np.uint32)), g.alloc(4 * n)
    try:
        r = module.launch(name, grid, block, [out, inp, buf, n], gmem=g, shared_bytes=shared, sanitize=sanitize,
                          engine=engine)
        return r.reports, None
    except EmulatorError as e:
        return e.reports, e


def test_the_corpus_is_whole():
    assert len(PAIRS) >= 30 and set(EXPECTED) == set(PAIRS)
    found = {k.rsplit("_", 1)[0] for k in VERDICTS if k.endswith("_bug")}
    assert found == GPU_FOUND
    assert not [k for k in VERDICTS if k.endswith("_ok")], "compute-sanitizer reported on a clean twin"


@pytest.mark.parametrize("pair", PAIRS)
def test_planted_bug_is_reported(planted, pair):
    reports, err = run_planted(planted, pair + "_bug")
    got = {(r.tool, _cls(r.kind)) for r in reports}
    assert EXPECTED[pair] <= got, (EXPECTED[pair], got)
    # every report compute-sanitizer gave, with the same kind (and for races the same severity: between
    # warps an error, between lanes of one warp a warning)
    got_sev = {(r.tool, _cls(r.kind), r.severity) for r in reports}
    for tool, recs in VERDICTS.get(pair + "_bug", {}).items():
        for rec in recs:
            want = (tool, _cls(rec["kind"]), rec["severity"])
            assert want in got_sev, f"compute-sanitizer: {rec['heading']}; emulator: {sorted(got_sev)}"
    for r in reports:
        assert r.message and str(r).startswith("=========")
        if r.tool == "racecheck" and r.kind != "global-race":
            assert (r.first.thread != r.second.thread or "copy" in r.second.op) and r.first.line and r.second.line
            assert r.second.source.split(":")[0] in ("planted.cu", "device_atomic_functions.hpp")


def _facts(reports):
    """What a report says, but for how many hazards it folds (the engines meet a hazard a different number of
    times: the reference scheduler looks at every lane group it picks, the fast engine at its log)."""
    return [(r.tool, r.kind, r.severity, r.space, r.address, r.size, tuple(sorted(r.values.items())),
             *((a.cta, a.warp, a.lane, a.op, a.line) if a is not None else None for a in (r.first, r.second)))
            for r in reports]


AGREE_SAMPLE = {"raw_2warps", "reduce_nosync", "uninit_shared", "uninit_global_half", "cross_cta_raw",
                "cpasync_nowait", "divergent_barrier", "intrawarp_nosyncwarp"}


@pytest.mark.parametrize("pair", [p if p in AGREE_SAMPLE else pytest.param(p, marks=pytest.mark.slow) for p in PAIRS])
def test_engines_agree(planted, pair):
    """The fast engine (its loop logs the accesses, machine.sanitize_fast replays them) reports what the
    reference executors report, with the same threads, lines, addresses and values."""
    from emulator.machine.fastcore import warmup
    warmup.wait()
    for name in (f"{pair}_bug", f"{pair}_ok"):
        (ref, e1), (fast, e2) = (run_planted(planted, name, engine=eng) for eng in ("reference", "fast"))
        assert _facts(fast) == _facts(ref), name
        assert type(e1) is type(e2)


def test_sanitised_launch_runs_on_the_fast_engine(planted):
    from emulator.machine.fastcore import warmup
    from emulator.machine.sanitize_fast import SanFastCTA
    warmup.wait()
    g = GlobalMemory()
    args = [g.upload(np.zeros(128, np.uint32)), g.upload(np.arange(128, dtype=np.uint32)), g.alloc(512), 128]
    res = planted.launch("raw_2warps_bug", 1, 64, args, gmem=g, sanitize="all", engine="fast")
    warps = res.ctas[0][1]
    assert sum(w.fast.executed for w in warps) > 0           # the jitted loop ran the instructions
    assert isinstance(warps[0]._cta.fast_cta, SanFastCTA) or warps[0]._cta.fast_cta is None
    assert [r.kind for r in res.reports] == ["RAW"]


@pytest.mark.parametrize("pair", PAIRS)
def test_clean_twin_is_silent(planted, pair):
    reports, err = run_planted(planted, pair + "_ok")
    assert err is None and reports == [], [str(r) for r in reports]


def test_fatal_errors_carry_the_reports(planted):
    reports, err = run_planted(planted, "global_oob_write_bug")
    assert isinstance(err, MemoryAccessError) and err.reports is reports
    (r,) = reports
    assert (r.tool, r.kind, r.first.lane, r.first.warp) == ("memcheck", "out-of-bounds", 31, 3)
    assert "MEMCHECK SUMMARY: 1 error" in err.sanitizer_summary
    reports, err = run_planted(planted, "mbarrier_overarrive_bug")
    assert isinstance(err, WarpSyncError) and "deadlock" in str(err)
    over = [r for r in reports if r.kind == "mbarrier-overarrival"]
    assert over and over[0].count == 32 and "arrived in phase 1" in over[0].message


def test_tools_are_selective(planted):
    """Only the tools asked for report; a rule whose tool is off still raises as without a sanitizer."""
    assert run_planted(planted, "raw_2warps_bug", "initcheck") == ([], None)
    reports, _ = run_planted(planted, "raw_2warps_bug", ("racecheck",))
    assert [(r.kind, r.severity, r.first.warp, r.second.warp) for r in reports] == [("RAW", "error", 0, 1)]
    # without synccheck the launch runs as without a sanitizer: the lanes that skip the barrier run on to
    # the exit first (docs/kernels.md, Convergence), so nothing is raised or reported
    assert run_planted(planted, "divergent_barrier_bug", "racecheck") == ([], None)
    reports, err = run_planted(planted, "divergent_barrier_bug", "synccheck")
    assert err is None and [r.kind for r in reports] == ["divergent-barrier"]


def test_race_report_names_both_sides(planted):
    reports, _ = run_planted(planted, "raw_2warps_bug", "racecheck")
    (r,) = reports
    assert (r.space, r.address, r.size) == ("shared", 0, 4)
    assert (r.first.op, r.first.cta, r.first.warp, r.first.lane) == ("write", (0, 0, 0), 0, 0)
    assert (r.second.op, r.second.warp, r.second.lane) == ("read", 1, 0)
    assert r.first.source == r.second.source == "planted.cu:29"
    assert "st.shared.u32" in r.first.text and "ld.shared.u32" in r.second.text
    assert r.count == 1 and r.values["memory"] == 0
    text = str(r)
    assert "RAW hazard" in text and "warp 0, lane 0" in text and "warp 1, lane 0" in text


def test_summary(planted):
    g = GlobalMemory()
    res = planted.launch("intrawarp_nosyncwarp_bug", 1, 32, [g.upload(np.zeros(128, np.uint32)),
                                                          g.upload(np.arange(128, dtype=np.uint32)), g.alloc(512),
                                                          128], gmem=g, sanitize="all")
    s = res.sanitizer_summary()
    assert "RACECHECK SUMMARY: 1 hazard(s) displayed (0 error(s), 1 warning(s))" in s
    assert "INITCHECK SUMMARY: 0 error(s)" in s and len(s.splitlines()) == 5


def test_alloc_is_uninitialised_until_written(planted):
    g = GlobalMemory()
    n = 128
    out, inp, buf = g.upload(np.zeros(n, np.uint32)), g.upload(np.arange(n, dtype=np.uint32)), g.alloc(4 * n)
    r = planted.launch("uninit_global_half_bug", 1, 64, [out, inp, buf, n], gmem=g, sanitize="initcheck")
    assert [x.address for x in r.reports] == [buf + 4 * 63]    # words 32..63: thread 0 reads word 63 first
    g.write(buf + 128, np.zeros(32, np.uint32))           # the host writes the half the kernel does not
    r = planted.launch("uninit_global_half_bug", 1, 64, [out, inp, buf, n], gmem=g, sanitize="initcheck")
    assert not r.reports
    g.write(buf, np.zeros(64, np.uint32))
    r = planted.launch("uninit_global_bug", 1, 64, [out, inp, buf, n], gmem=g, sanitize="initcheck")
    assert not r.reports
    b2 = g.alloc(4 * n)
    r = planted.launch("uninit_global_bug", 1, 64, [out, inp, b2, n], gmem=g, sanitize="initcheck")
    assert [x.address for x in r.reports][:1] == [b2]
    b3 = g.alloc(4 * n, fill=0)                            # an explicit fill is a write (cudaMemset)
    assert not planted.launch("uninit_global_bug", 1, 64, [out, inp, b3, n], gmem=g, sanitize="initcheck").reports
    b4 = g.alloc(4 * n)
    planted.launch("uninit_global_bug", 1, 64, [out, inp, b4, n], gmem=g)      # unwatched: may write anything
    assert not planted.launch("uninit_global_bug", 1, 64, [out, inp, b4, n], gmem=g, sanitize="initcheck").reports


def test_warp_run_sanitize():
    w = Warp()
    text = """
    mov.u32 %r1, %laneid;
    shl.b32 %r2, %r1, 2;
    st.shared.u32 [%r2], %r1;
    xor.b32 %r3, %r2, 4;
    ld.shared.u32 %r4, [%r3];
    """
    reps = w.run(text, sanitize="racecheck")
    assert [(r.kind, r.severity) for r in reps] == [("RAW", "warning")]
    assert w.run(text) is None                             # no sanitizer: as before
    reps = Warp().run("add.u32 %r1, %r9, 1;", sanitize="initcheck")
    assert [(r.space, r.kind) for r in reps] == [("register", "uninitialized-read")] and "%r9" in reps[0].message
    reps = Warp().run("mov.u32 %r1, 1;\nshfl.sync.idx.b32 %r2, %r1, 0, 31, 0xffff;", sanitize="synccheck")
    assert [r.kind for r in reps] == ["membermask"]
    with pytest.raises(WarpSyncError):
        Warp().run("mov.u32 %r1, 1;\nshfl.sync.idx.b32 %r2, %r1, 0, 31, 0xffff;")


def test_sanitize_argument():
    w = Warp()
    for bad in ("racecheq", ("memcheck", 3), (), 5):
        with pytest.raises(OperandError, match="sanitize"):
            w.run("mov.u32 %r1, 1;", sanitize=bad)


def test_cli_sanitize(tmp_path, capsys):
    from emulator.cli import main
    p = tmp_path / "k.ptx"
    p.write_text(open(os.path.join(DATA, "planted.ptx")).read())
    rc = main(["run", str(p), "--kernel", "raw_2warps_bug", "--block", "64", "--arg", "zeros:u32:128",
               "--arg", "zeros:u32:128", "--arg", "empty:u32:128", "--arg", "128", "--sanitize", "all"])
    out = capsys.readouterr().out
    assert rc == 1 and "RAW hazard" in out and "RACECHECK SUMMARY: 1 hazard(s) displayed (1 error(s)" in out
    assert "planted.cu:29" in out
    rc = main(["run", str(p), "--kernel", "raw_2warps_ok", "--block", "64", "--arg", "zeros:u32:128",
               "--arg", "zeros:u32:128", "--arg", "empty:u32:128", "--arg", "128", "--sanitize", "racecheck"])
    out = capsys.readouterr().out
    assert rc == 0 and "RACECHECK SUMMARY: 0 hazard(s)" in out


# -- the real-kernel corpus: no false positives ---------------------------------------------------------
sys.path.insert(0, HERE)
import corpus_lib  # noqa: E402

SAMPLE = ["nvcc_reduce_sum_sm90a", "nvcc_transpose_smem_sm80", "nvcc_histogram_smem_sm90a", "nvcc_pipeline_copy_sm80",
          "triton_tl_histogram_sm90a", "triton_sum2d_sm80", "cute_scale_copy_sm90a", "nvcc_cluster_dsmem_sm90a"]


def _corpus_clean(name):
    cases = _corpus_clean.cases = getattr(_corpus_clean, "cases", None) or corpus_lib.load_all()
    got, res, _ = corpus_lib.replay(cases[name], sanitize="all")
    assert res.reports == [], "\n".join(map(str, res.reports))
    assert corpus_lib.mismatches(cases[name], got) == []


@pytest.mark.parametrize("name", SAMPLE)
def test_corpus_sample_has_no_reports(name):
    _corpus_clean(name)


# Triton's e2m1 upcast in tl.dot_scaled reads registers that nothing writes (LLVM's undef, a byte permute of
# don't-care bytes): initcheck reports exactly that, which is true of the PTX (compute-sanitizer does not check
# registers); the output still equals the H100's
UNDEF_REGISTER_READS = {f"triton_scaled_dot_{a}_e2m1_sb_32x32x64_sm90a" for a in ("bf16", "e4m3", "e5m2", "fp16")}
# DeepGEMM's fp8 GEMM with BLOCK_N=112 reads the second B scale from shared memory in every block, but writes it
# only in blocks that straddle two 128-wide scale blocks: a true read of shared memory nothing wrote, whose value
# does not reach the output (the outputs equal the H100's; compute-sanitizer's initcheck does not follow shared
# memory)
UNINIT_SHARED_READS = {"nvcc_deepgemm_fp8_1d2d_128x224x512_bn112"}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(corpus_lib.load_all()) - set(corpus_lib.CANNOT_RUN)))
def test_corpus_has_no_reports(name):
    if name not in UNDEF_REGISTER_READS | UNINIT_SHARED_READS:
        return _corpus_clean(name)
    cases = corpus_lib.load_all()
    got, res, _ = corpus_lib.replay(cases[name], sanitize="all")
    assert res.reports and {(r.tool, r.kind) for r in res.reports} == {("initcheck", "uninitialized-read")}
    what = "register" if name in UNDEF_REGISTER_READS else "shared byte"
    assert all(what in r.message and "nothing wrote" in r.message for r in res.reports)
    assert corpus_lib.mismatches(cases[name], got) == []


# -- planted bugs written in Triton (tools/hwcapture/sanitize/planted_triton.py; Triton 3.6 PTX for sm_90a) ----
TRITON = json.load(open(os.path.join(DATA, "planted_triton.json")))
TRITON_EXPECTED = {"tt_same_slots": ("racecheck", "global-race"), "tt_mask_past_end": ("memcheck", "out-of-bounds"),
                   "tt_uninit_buf": ("initcheck", "uninitialized-read")}


@pytest.mark.parametrize("pair", sorted(TRITON_EXPECTED))
def test_planted_triton(pair):
    from emulator.triton import run_ptx
    got = {}
    for which in ("bug", "ok"):
        k = TRITON["kernels"][f"{pair}_{which}"]
        g = GlobalMemory()
        n = TRITON["words"]
        out, inp, buf = g.upload(np.zeros(n, np.int32)), g.upload(np.arange(n, dtype=np.int32)), g.alloc(4 * n)
        try:
            res, _ = run_ptx(k["ptx"], k["entry"], k["grid"], [out, inp, buf, n], num_warps=k["num_warps"],
                             shared=k["shared"], gmem=g, scratch=k["scratch"], sanitize="all")
            got[which] = res.reports
        except EmulatorError as e:
            got[which] = e.reports
    assert [(r.tool, r.kind) for r in got["bug"]] == [TRITON_EXPECTED[pair]]
    assert got["ok"] == []


def test_barrier_counts_that_disagree():
    ptx = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .pred %p<2>;
    .reg .b64 %rd<2>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra A;
    bar.sync 1, 96;
    bra.uni B;
A:
    bar.sync 1, 64;
B:
    ret;
}
"""
    m = load_ptx(ptx)
    g = GlobalMemory()
    with pytest.raises(WarpSyncError, match="thread counts 64 and 96"):
        m.launch("k", 1, 64, [g.alloc(4)], gmem=g)
    r = m.launch("k", 1, 64, [g.alloc(4)], gmem=g, sanitize="synccheck")
    assert [(x.kind, x.first.warp) for x in r.reports] == [("barrier-count", 1)]


def test_wgmma_operands_need_the_proxy_fence():
    """A real Triton wgmma kernel (corpus) with its fence.proxy.async taken out: the wgmma reads shared memory
    that st.shared wrote through the generic proxy."""
    import copy
    case = corpus_lib.load_all()["triton_matmul_int8_64x64_sm90a"]
    assert case["ptx"].count("fence.proxy.async") == 1
    _, res, _ = corpus_lib.replay(case, sanitize="asynccheck")
    assert res.reports == []
    cut = copy.copy(case)
    cut["ptx"] = "\n".join(l for l in case["ptx"].splitlines() if "fence.proxy.async" not in l)
    _, res, _ = corpus_lib.replay(cut, sanitize="asynccheck")
    kinds = {(r.kind, r.second.text.split()[0].split(".")[0]) for r in res.reports}
    assert kinds == {("proxy-fence", "wgmma")}, [str(r) for r in res.reports]
    assert res.reports[0].first.op == "write (generic proxy)" and "st.shared" in res.reports[0].first.text


# -- more planted bugs: ldmatrix and stmatrix in the race check, global races inside one CTA ---------------
# tools/hwcapture/sanitize/planted_more.cu, compiled as planted.cu; compute-sanitizer 2025.3.1 on an H100 saw the
# ldmatrix race (racecheck RAW error) and neither the stmatrix race nor the conflicting global stores (racecheck
# follows shared memory only)
MORE = json.load(open(os.path.join(DATA, "planted_more.json")))
MORE_VERDICTS = json.load(open(os.path.join(DATA, "planted_more_verdicts.json")))["reports"]
MORE_EXPECTED = {"ldmatrix_read": ("racecheck", RW, "error"), "stmatrix_write": ("racecheck", RW, "error"),
                 "global_intra_cta": ("racecheck", "global-race", "error")}


@pytest.fixture(scope="module")
def planted_more():
    return load_ptx(open(os.path.join(DATA, "planted_more.ptx")).read())


def run_more(module, name, engine):
    grid, block, shared = MORE["shapes"][name.rsplit("_", 1)[0]]
    g = GlobalMemory()
    n = MORE["words"]
    out, inp, buf = g.upload(np.zeros(n, np.uint32)), g.upload(np.arange(n, dtype=np.uint32)), g.alloc(4 * n)
    r = module.launch(name, grid, block, [out, inp, buf, n], gmem=g, shared_bytes=shared, sanitize="all",
                      engine=engine)
    return r.reports, g.download(out, 4 * n).view(np.uint32)


@pytest.mark.parametrize("pair", sorted(MORE["shapes"]))
def test_more_planted(planted_more, pair):
    from emulator.machine.fastcore import warmup
    warmup.wait()
    tool, kind, sev = MORE_EXPECTED[pair]
    for engine in ("reference", "fast"):
        bug, _ = run_more(planted_more, f"{pair}_bug", engine)
        assert {(r.tool, _cls(r.kind), r.severity) for r in bug} == {(tool, kind, sev)}, [str(r) for r in bug]
        for t, reps in MORE_VERDICTS.get(f"{pair}_bug", {}).items():      # what compute-sanitizer saw
            assert {(t, _cls(v["kind"]), v["severity"]) for v in reps} <= {(r.tool, _cls(r.kind), r.severity)
                                                                           for r in bug}
        (r,) = bug
        assert (r.first.warp, r.second.warp) == (0, 1) and r.first.op == "write"
        assert r.second.op == ("write" if pair == "global_intra_cta" else "read")
        ok, out = run_more(planted_more, f"{pair}_ok", engine)
        assert ok == [] and f"{pair}_ok" not in MORE_VERDICTS
    assert set(MORE_VERDICTS) == {"ldmatrix_read_bug"}


def test_global_race_same_value_is_benign():
    """Two warps of one CTA store the same word to one global address with nothing between them (a replicated
    layout): no hazard; different words: a WAW hazard, on both engines."""
    from emulator.machine.fastcore import warmup
    warmup.wait()
    text = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 v) {
  .reg .b32 %r<4>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  mov.u32 %r2, %tid.x;
  shr.u32 %r3, %r2, 5;
  mul.lo.u32 %r3, %r3, %r1;
  st.global.u32 [%rd1], %r3;
  ret;
}"""
    m = load_ptx(text)
    for engine in ("reference", "fast"):
        for v, kinds in ((0, []), (1, [("global-race", "error")])):
            g = GlobalMemory()
            res = m.launch("k", 1, 64, [g.upload(np.zeros(1, np.uint32)), v], gmem=g, sanitize="racecheck",
                           engine=engine)
            assert [(r.kind, r.severity) for r in res.reports] == kinds, (engine, v)
