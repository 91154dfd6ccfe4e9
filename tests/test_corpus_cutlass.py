"""CUTLASS 3 CollectiveBuilder GEMMs (tests/data/corpus/cutlass.npz), beyond the byte-for-byte replay that
test_corpus.py does for every case: the set covers every kernel family it claims, the recorded launches hold
what makes each family what it is (clusters, stream-K fix-ups through the workspace), and the replay really
reads the recorded inputs at the recorded addresses, so a changed input or a missing address is seen."""
import numpy as np
import pytest

import corpus_lib
from emulator import GlobalMemory, MemoryAccessError, load_ptx

CASES = corpus_lib.load_all(only=["cutlass.npz"])
SMALL = "cutlass_cluster1x2_f16_sm90a"      # the fastest replay

# the kernel family of each case, as its mangled kernel name spells it
FAMILIES = {
    "cutlass_ws_f16_f32out_sm90a": "24KernelTmaWarpSpecializedE",
    "cutlass_pingpong_bf16_sm90a": "32KernelTmaWarpSpecializedPingpongE",
    "cutlass_cooperative_f16_sm90a": "35KernelTmaWarpSpecializedCooperativeE",
    "cutlass_cluster2x1_f16_sm90a": "35KernelTmaWarpSpecializedCooperativeE",
    "cutlass_cluster1x2_f16_sm90a": "24KernelTmaWarpSpecializedE",
    "cutlass_fp8_e4m3_cooperative_sm90a": "MainloopSm90TmaGmmaWarpSpecializedFP8",
    "cutlass_fp8_e5m2_e4m3_pingpong_fastaccum_sm90a": "KernelTmaWarpSpecializedPingpongFP8FastAccum",
    "cutlass_streamk_f16_sm90a": "StreamKScheduler",
    "cutlass_splitk3_f16_sm90a": "StreamKScheduler",
    "cutlass_evt_bias_relu_f16_sm90a": "LinCombPerRowBiasEltAct",
}


def test_every_family_is_there():
    assert set(CASES) == set(FAMILIES)
    for name, case in CASES.items():
        cfg = case["config"]
        assert FAMILIES[name] in cfg["kernel"] or FAMILIES[name] in case["ptx"], name
        assert cfg["kernel"].startswith("_ZN7cutlass13device_kernel"), name
        assert [a[0] for a in cfg["args"]] == ["bytes"], name           # the Params, as the host built them
        assert set(cfg["at"]) == set(case["in"]), name                  # every buffer at its GPU address
        params = bytes.fromhex(cfg["args"][0][1])
        for buf in ("a", "b", "d"):        # the Params hold the buffers' device addresses (in the tensor maps)
            assert cfg["at"][buf].to_bytes(8, "little") in params, (name, buf)
    assert CASES["cutlass_cluster2x1_f16_sm90a"]["config"]["cluster"] == [2, 1, 1]
    assert CASES["cutlass_cluster1x2_f16_sm90a"]["config"]["cluster"] == [1, 2, 1]
    assert "multicast::cluster" in CASES["cutlass_cluster2x1_f16_sm90a"]["ptx"]


@pytest.mark.parametrize("name", ["cutlass_streamk_f16_sm90a", "cutlass_splitk3_f16_sm90a"])
def test_ctas_shared_tiles_on_the_h100(name):
    """The H100 left partial sums in the workspace: CTAs computed parts of one tile and fixed it up, so the
    replay has to keep them resident together."""
    case = CASES[name]
    assert not case["in"]["workspace"].any()
    assert np.count_nonzero(case["out"]["workspace"]) > 10_000
    assert case["config"]["grid"][1] > 1


def test_a_changed_input_changes_exactly_its_row():
    """The comparison can fail: one element of A changed changes the row of D it feeds, and only that row."""
    case = dict(CASES[SMALL], **{"in": dict(CASES[SMALL]["in"])})
    a = case["in"]["a"].copy()
    a[5 * 256 + 17] = np.float16(3.0)          # A is 256 x 256, row-major: row 5
    case["in"]["a"] = a
    got, _, _ = corpus_lib.replay(case)
    d, want = got["d"].reshape(256, 256), case["out"]["d"].reshape(256, 256)
    rows = np.flatnonzero((d.view(np.uint16) != want.view(np.uint16)).any(axis=1))
    assert rows.tolist() == [5], rows


def test_recorded_params_need_the_recorded_addresses():
    """Without the arrays at their GPU addresses the tensor maps in the recorded Params point at nothing: the
    first TMA load says so, naming the instruction and the address."""
    case = CASES[SMALL]
    cfg = case["config"]
    g = GlobalMemory()
    for arr in case["in"].values():
        g.upload(arr)
    with pytest.raises(MemoryAccessError, match=r"line \d+, column \d+: cp\.async\.bulk\.tensor.*global address "
                                                 r"0x[0-9a-f]+ .*outside every global allocation"):
        load_ptx(case["ptx"]).launch(cfg["kernel"], cfg["grid"], cfg["block"], [bytes.fromhex(cfg["args"][0][1])],
                                     gmem=g, shared_bytes=cfg["shared"], cluster=tuple(cfg["cluster"]))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cutlass_streamk_f16_sm90a", "cutlass_splitk3_f16_sm90a"])
@pytest.mark.parametrize("seed", [1, 2])
def test_fixups_equal_the_h100_under_seeded_schedules(name, seed):
    """The deterministic reduction orders the fix-ups itself: any interleaving of the resident CTAs gives the
    H100's bytes, in the outputs and in the workspace."""
    got, _, _ = corpus_lib.replay(CASES[name], schedule=("random", seed))
    assert not corpus_lib.mismatches(CASES[name], got)


@pytest.mark.slow
def test_workers_give_the_serial_bytes():
    got, _, _ = corpus_lib.replay(CASES["cutlass_cooperative_f16_sm90a"], workers=2)
    assert not corpus_lib.mismatches(CASES["cutlass_cooperative_f16_sm90a"], got)
