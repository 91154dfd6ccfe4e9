"""TMA box copies in the fast engine's loop (``machine/fastcore/bulkx.py``): both engines bit-identical (global
and shared memory, registers, mbarrier state, instruction counts, errors) on the H100's TMA captures, on corpus
kernels that use TMA, and on random tensor maps; and the tensor copies are really run by the loop (not handed
back) wherever the rows take them."""
import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from emulator import EmulatorError, GlobalMemory, TensorMap, TensorMapError, load_ptx
from emulator.machine.fastcore import table as T, translation
from emulator.machine.fastcore.engine import handback_counts
from engines import differences, memory_of, warp_states
import corpus_lib
import test_tma_hw as hw

SMEM = hw.SMEM
PTX = open(os.path.join(hw.DATA, "tma_kernels.ptx")).read()
_MODULES = {}


def module(fence=True):
    """The capture kernels (tests/data/tma/tma_kernels.ptx); without the stores' fence.proxy.async (a TMA store
    then reads generic writes the async proxy may not see: an error)."""
    if fence not in _MODULES:
        text = PTX
        if not fence:
            text = text.replace("\tfence.proxy.async.shared::cta;\n\tbar.sync 0;\n\t@%p1 cp.async.bulk.tensor",
                                "\tbar.sync 0;\n\t@%p1 cp.async.bulk.tensor")
            assert text != PTX
        _MODULES[fence] = load_ptx(text)
    return _MODULES[fence]


def bulk_handbacks(prog):
    """Times the fast engine handed a cp.async.bulk.tensor row back to the executors."""
    return sum(v for k, v in handback_counts(prog).items() if "bulk.tensor" in k)


def outcome(m, kernel, make_args, engine):
    """Everything a launch leaves behind (engines.launch_outcome's form, with the mbarriers and the copies still
    in flight added), or the error it raised."""
    g = GlobalMemory()
    args = make_args(g)
    out = io.StringIO()
    try:
        r = m.launch(kernel, block=128, shared_bytes=SMEM + 64, gmem=g, args=args, out=out, engine=engine)
    except EmulatorError as e:
        return {"error": (type(e).__name__, str(e)), "memory": memory_of(g)}
    warps, pending = warp_states(r, banks=False)
    mbar = {}
    for ctaid, ws in r.ctas:
        au = ws[0]._cta.async_unit
        mbar[ctaid] = sorted((a, b.expected, b.pending, b.phase, b.tx) for a, b in au.mbarriers.live.items())
        mbar[ctaid].append(("in flight", int(ws[0]._cta.inflight_n), int(ws[0]._cta.smem_inflight.sum()),
                            len(au.pending)))
    return {"memory": memory_of(g), "warps": warps, "stdout": out.getvalue(), "instructions": r.instructions,
            "cp_async": pending, "mbar": mbar}




def same(m, kernel, make_args):
    """Run on both engines; assert every observable is bit-identical; returns (outcome, bulk rows handed back)."""
    ref = outcome(m, kernel, make_args, "reference")
    fast = outcome(m, kernel, make_args, "fast")
    diffs = differences(ref, fast)
    if "error" not in ref and ref["mbar"] != fast["mbar"]:
        diffs.append(f"mbarriers: {ref['mbar']} vs {fast['mbar']}")
    assert not diffs, diffs
    return fast, bulk_handbacks(m.program(kernel))


def capture_args(op, c, tm=None):
    def make(g):
        base = g.upload(hw.gpattern(hw.GBUF[op]))
        t = tm or TensorMap.encode_tiled(c["dtype"], c["rank"], base + c["off"], c["dims"], c["strides"], c["box"],
                                         c["estr"], 0, c["swz"], c["l2"], c["oob"])
        args = [bytes(t)] + c["coords"]
        if op == "load":
            out = g.upload(np.zeros(16 + c["nbytes"], np.uint8))
            return args + [out, c["nbytes"], c["tx"]]
        return args + [c["nbytes"]]
    return make


def _kernel(op, c):
    return f"tma_red_{c['red']}_{c['rank']}d" if op == "reduce" else f"tma_{op}_{c['rank']}d"


def _captures(op, sample):
    cs = [c for c in hw.cases(op) if c["status"] != "timeout"]
    if not sample:
        return cs
    ok = [c for c in cs if c["status"] == "ok"]
    return ok[::6 if op == "load" else 2] + [c for c in cs if c["status"] != "ok"][::12]


def _replay_capture(op, c):
    """One capture on both engines: identical; the H100's bytes where it ran the copy, an error where it faulted;
    the loop ran the copy itself."""
    prog = module().program(_kernel(op, c))
    before = bulk_handbacks(prog)
    got, back = same(module(), _kernel(op, c), capture_args(op, c))
    back -= before
    ok = c["status"] == "ok" and c["estr"][0] == 1
    if not ok:
        assert got.get("error", ("",))[0] == "TensorMapError", got.get("error")
        return "refused"
    assert "error" not in got, got["error"]
    if op != "load" and hw.footprint(c) > c["nbytes"]:
        return "unreplayable"
    mem = dict(got["memory"])
    base = min(mem)
    if op == "load":
        want = c["out"][16:]
        out = [b for b in mem if b != base][0]
        have = mem[out][16:16 + want.size]
    else:
        want = c["out"]
        have = mem[base][c["off"]:c["off"] + want.size]
    assert np.array_equal(have, want), (c["i"], np.flatnonzero(have != want)[:8])
    assert back == 0, f"the loop handed the tensor copy back {back} time(s)"
    return "match"


@pytest.mark.parametrize("op", ["load", "store", "reduce"])
def test_captures_sample(op):
    """A sample of the H100's captures of each kind: both engines bit-identical, equal to the H100."""
    seen = [_replay_capture(op, c) for c in _captures(op, True)]
    assert seen.count("match") >= 1 and len(seen) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("op", ["load", "store", "reduce"])
def test_captures_all(op):
    seen = [_replay_capture(op, c) for c in _captures(op, False)]
    assert seen.count("match") >= 5


def test_rows_are_translated():
    """The tiled loads, stores and reductions become BULKX rows."""
    for kernel, want in (("tma_load_3d", T.BULKX), ("tma_store_5d", T.BULKX), ("tma_red_xor_2d", T.BULKX)):
        prog = module().program(kernel)
        tr = translation(prog)
        ops = {prog.code[p].instr.opcode: tr.code[p, T.OP] for p in range(len(prog.code))
               if prog.code[p].kind == "op" and "bulk.tensor" in prog.code[p].instr.opcode}
        assert ops and set(ops.values()) == {want}, ops


def test_store_kernels_run_in_the_cta_loop():
    """A CTA whose bulk copies are stores (no mbarrier) runs in the jitted CTA loop: the stores staged there, the
    async-groups handed back, the copies completed where the Python scheduler completes them; the H100's bytes."""
    c = next(c for c in hw.cases("store") if c["status"] == "ok" and c["estr"][0] == 1 and c["rank"] >= 2 and
             hw.footprint(c) <= c["nbytes"])
    kernel = _kernel("store", c)
    assert translation(module().program(kernel)).cta_ok
    g = GlobalMemory()
    args = capture_args("store", c)(g)
    r = module().launch(kernel, block=128, shared_bytes=SMEM + 64, gmem=g, args=args, engine="fast")
    assert all(ws[0]._cta.fast_cta is not None for _, ws in r.ctas)        # no hand-over to the Python scheduler
    base = min(g._bases)
    assert np.array_equal(g.download(base + c["off"], c["out"].size), c["out"])


def test_unfenced_store_is_reported_by_both():
    """A TMA store of bytes written by st.shared with no fence.proxy.async since: the same ProxyError."""
    c = next(c for c in hw.cases("store") if c["status"] == "ok" and c["estr"][0] == 1)
    ref = outcome(module(False), _kernel("store", c), capture_args("store", c), "reference")
    fast = outcome(module(False), _kernel("store", c), capture_args("store", c), "fast")
    assert ref["error"][0] == "ProxyError" and ref["error"] == fast["error"]


def test_a_wrong_copy_would_be_caught():
    """The comparison can fail: a fast-engine load whose tensor map differs in one bit of the swizzle mode gives
    other shared-memory bytes than the reference with the right map."""
    c = next(c for c in hw.cases("load") if c["status"] == "ok" and c["swz"] == 3 and c["rank"] == 2)
    kernel = _kernel("load", c)
    ref = outcome(module(), kernel, capture_args("load", c), "reference")
    wrong = dict(c, swz=2, box=[c["box"][0] // 2] + c["box"][1:])
    fast = outcome(module(), kernel, capture_args("load", wrong), "fast")
    assert differences(ref, fast)


# -- random tensor maps ------------------------------------------------------------------------------------------

ES = {k: TensorMap(k, 1, 0, (1,), (), (1,), (1,)).element_size for k in range(13)}


@st.composite
def tensor_maps(draw):
    dtype = draw(st.integers(0, 12))
    es = ES[dtype]
    rank = draw(st.integers(1, 5))
    swz = draw(st.integers(0, 3))
    span = {0: 256 * es, 1: 32, 2: 64, 3: 128}[swz]
    inner_units = draw(st.integers(1, max(1, min(span, 256 * es) // 16)))
    box0 = max(1, inner_units * 16 // es)
    box = [box0] + [draw(st.integers(1, 6)) for _ in range(rank - 1)]
    estr = [draw(st.sampled_from([1, 1, 1, 1, 2]))] + [draw(st.integers(1, 3)) for _ in range(rank - 1)]
    dims = [draw(st.integers(1, 3 * box0))] + [draw(st.integers(1, 9)) for _ in range(rank - 1)]
    strides, s = [], -(-dims[0] * es // 16) * 16 + 16 * draw(st.integers(0, 2))
    for k in range(1, rank):
        strides.append(s)
        s = s * dims[k] + 16 * draw(st.integers(0, 1))
    oob = draw(st.integers(0, 1)) if dtype in (6, 7, 8, 9, 10, 11, 12) else 0
    coords = [draw(st.one_of(st.integers(0, dims[k] - 1), st.integers(-box[k] - 2, dims[k] + 1)))
              for k in range(rank)]
    if draw(st.booleans()):                  # mostly 16-byte aligned boxes; sometimes not (the H100 faults)
        coords[0] = coords[0] // max(1, 16 // es) * max(1, 16 // es)
    off = 16 * draw(st.integers(0, 4))
    return dict(dtype=dtype, rank=rank, swz=swz, box=box, estr=estr, dims=dims, strides=strides, oob=oob,
                coords=coords + [0] * (5 - rank), off=off, extent=s)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(tensor_maps(), st.sampled_from(["load", "store"]))
def test_random_boxes(c, op):
    """Random tensor maps (types, ranks, strides, swizzles, element strides, boxes partly or wholly outside the
    tensor, misaligned starts): both engines agree bit for bit, errors included."""
    try:
        tm0 = TensorMap.encode_tiled(c["dtype"], c["rank"], 1 << 20, c["dims"], c["strides"], c["box"], c["estr"], 0,
                                     c["swz"], 0, c["oob"])
    except TensorMapError:
        assume(False)
    n = [-(-b // e) for b, e in zip(c["box"], c["estr"])]
    pitch = max(n[0] * ES[c["dtype"]], {0: 0, 1: 32, 2: 64, 3: 128}[c["swz"]])
    foot = int(np.prod(n[1:])) * pitch
    nbytes = min(-(-foot // 4) * 4, SMEM)

    def make(g):
        base = g.upload(hw.gpattern(c["off"] + c["extent"] + 64))
        tm = TensorMap.encode_tiled(c["dtype"], c["rank"], base + c["off"], c["dims"], c["strides"], c["box"],
                                    c["estr"], 0, c["swz"], 0, c["oob"])
        args = [bytes(tm)] + c["coords"]
        if op == "load":
            return args + [g.upload(np.zeros(16 + nbytes, np.uint8)), nbytes, tm0.box_bytes]
        return args + [nbytes]
    kernel = f"tma_{op}_{c['rank']}d"
    before = bulk_handbacks(module().program(kernel))
    got, after = same(module(), kernel, make)
    if "error" not in got:                   # a copy the H100 makes: the loop made it too
        assert after == before


@st.composite
def edge_loads(draw):
    """Loads whose rows are cut: swizzled boxes several 16-byte chunks wide that straddle the tensor's edges in
    every dimension (the fill before and after a row's run of elements read from the tensor), element strides,
    the TFLOAT32 types and the NaN fill."""
    c = draw(tensor_maps())
    es = ES[c["dtype"]]
    c["swz"] = draw(st.integers(1, 3))
    span = {1: 32, 2: 64, 3: 128}[c["swz"]]
    c["box"][0] = max(1, draw(st.integers(1, span // 16)) * 16 // es)
    c["dims"][0] = draw(st.integers(1, 2 * c["box"][0]))
    s = -(-c["dims"][0] * es // 16) * 16
    c["strides"] = []
    for k in range(1, c["rank"]):
        c["strides"].append(s)
        s *= c["dims"][k]
    c["extent"] = s
    step = max(1, 16 // es)
    for k in range(c["rank"]):
        lo, hi = -c["box"][k] - 1, c["dims"][k] + 1
        c["coords"][k] = draw(st.one_of(st.integers(lo, 0), st.integers(c["dims"][k] - c["box"][k], hi)))
    c["coords"][0] = c["coords"][0] // step * step
    return c


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(edge_loads())
def test_random_loads_cut_at_the_edges(c):
    """Swizzled loads cut by the tensor's edges: both engines agree bit for bit (the staged rows are moved as runs:
    the fill, the elements read, the TFLOAT32 rounding, the landing by shared-memory runs)."""
    test_random_boxes.hypothesis.inner_test(c, "load")


# -- corpus kernels with TMA ----------------------------------------------------------------------------------------

FAST = ["triton_tma_matmul_sm90a"]
SLOW = ["cute_tutorial_wgmma_tma_tn_sm90a", "cute_tutorial_wgmma_tma_nt_sm90a", "cutlass_ws_f16_f32out_sm90a",
        "cutlass_cooperative_f16_sm90a", "cutlass_pingpong_bf16_sm90a", "cutlass_evt_bias_relu_f16_sm90a",
        "cutlass_fp8_e4m3_cooperative_sm90a", "cutlass_fp8_e5m2_e4m3_pingpong_fastaccum_sm90a",
        "cutlass_streamk_f16_sm90a", "cutlass_splitk3_f16_sm90a", "cutlass_cluster1x2_f16_sm90a",
        "cutlass_cluster2x1_f16_sm90a", "nvcc_tk_gemm_bf16_256x512x128_2cta", "nvcc_tk_gemm_fp8_256x512x256_2cta",
        "nvcc_tk_attn_fwd_causal_d128_n384", "nvcc_deepgemm_bf16_128x256x512", "nvcc_cluster_dsmem_sm90a"]
_CASES = {}


def _corpus(name):
    if not _CASES:
        _CASES.update(corpus_lib.load_all())
    return _CASES[name]


def _corpus_both(name):
    case = _corpus(name)
    got_r, res_r, out_r = corpus_lib.replay(case, engine="reference")
    got_f, res_f, out_f = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got_f) == [] and corpus_lib.mismatches(case, got_r) == []
    for k in got_r:
        assert got_r[k].tobytes() == got_f[k].tobytes(), k
    assert out_r == out_f
    # (the engines interleave a cluster's CTAs differently, so their waits re-issue a different number of times:
    # docs/speed.md; a launch without clusters issues the same instructions on both)
    assert res_r.instructions == res_f.instructions or corpus_lib.in_clusters(case)
    progs = {id(w.program): w.program for _, ws in res_f.ctas for w in ws}
    return sum(bulk_handbacks(p) for p in progs.values())


@pytest.mark.parametrize("name", FAST)
def test_corpus_fast_sample(name):
    """The Triton TMA matmul: both engines identical and equal to the H100; its TMA loads and store stay in the
    loop."""
    assert _corpus_both(name) == 0


def test_the_rows_wait_for_their_function(monkeypatch):
    """bulkcall.py's function is bound as the instruction families are (families.APART "bulk"): while it is
    missing (another process compiling it), the TMA rows go to the executors, with the same bits; the next launch
    binds it."""
    from emulator.machine.fastcore import warmup
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: 0 if n == "bulk" else real(n, wait))
    assert _corpus_both(FAST[0]) > 0
    monkeypatch.setattr(warmup, "family", real)
    assert _corpus_both(FAST[0]) == 0


def test_a_small_staging_area_grows(monkeypatch):
    """A copy that does not fit the staging area goes back to the executor, and the area grows: the same bits."""
    from emulator.machine.fastcore import bulkx
    sizes = []
    real = bulkx.Staging._alloc

    def alloc(self, nrec, ndata, nidx):
        sizes.append((nrec, ndata, nidx))
        real(self, *((1, 16, 1) if len(sizes) == 1 else (nrec, ndata, nidx)))
    monkeypatch.setattr(bulkx.Staging, "_alloc", alloc)
    back = _corpus_both(FAST[0])
    assert len(sizes) >= 2 and 0 < back <= len(sizes)


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_corpus_tma_kernels(name, monkeypatch):
    """Both engines identical and equal to the H100; the tensor copies stay in the loop, but for the copies that
    did not fit the staging area while it grew (and multicast copies, which go back to the executor)."""
    from emulator.machine.fastcore import bulkx
    grown = []
    real = bulkx.Staging._alloc

    def alloc(self, *sizes):
        grown.append(sizes)
        real(self, *sizes)
    monkeypatch.setattr(bulkx.Staging, "_alloc", alloc)
    back = _corpus_both(name)
    if "cluster" not in name and "deepgemm" not in name:
        assert back <= len(grown) - 1, (back, grown)



MCAST = "nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_b"      # (clusters of 2, A multicast to both CTAs)


def _fast_replay(name):
    """A corpus kernel on the fast engine: equal to the H100's bytes; its program."""
    case = _corpus(name)
    got, res, _ = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got) == []
    return res.ctas[0][1][0].program


def test_multicast_loads_bind_their_function_only_where_they_occur(monkeypatch):
    """The multicast loads run in a function compiled apart (bulkcall.mc_c, "bulk_mc", slot bulkx.MCSLOT) that
    only kernels with such loads bind: while it is missing the multicast rows go back to the executor (the H100's
    bytes all the same), the next launch binds it and nothing goes back; a TMA kernel without multicast never asks
    for it."""
    from emulator.machine.fastcore import bulkx, families, warmup
    real = warmup.family
    asked = []
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: asked.append(n) or (0 if n == "bulk_mc" else
                                                                                     real(n, wait)))
    prog = _fast_replay(MCAST)
    tr = translation(prog)
    assert "bulk_mc" in tr.apart and "bulk" in tr.apart and "bulk_mc" in asked
    assert tr.mufu_ptr[bulkx.MCSLOT] == 0 and bulk_handbacks(prog) > 0
    monkeypatch.setattr(warmup, "family", real)
    prog = _fast_replay(MCAST)
    tr = translation(prog)
    assert tr.mufu_ptr[bulkx.MCSLOT] == families.address("bulk_mc", warmup.lock()) != 0
    assert bulk_handbacks(prog) == 0
    # a plain TMA kernel (loads and a store, no multicast) asks for "bulk" but never for "bulk_mc"
    asked.clear()
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: asked.append(n) or real(n, wait))
    prog = _fast_replay(FAST[0])
    tr = translation(prog)
    assert T.BULKX in tr.code[:, T.OP] and bulk_handbacks(prog) == 0
    assert "bulk" in asked and "bulk_mc" not in asked and "bulk_mc" not in tr.apart
    assert tr.mufu_ptr[bulkx.MCSLOT] == 0 and tr.mufu_ptr[families.APART_SLOT["bulk"]] != 0
