"""The corpus of compiler-written PTX replayed bit for bit against the H100 (tests/data/corpus).

Each case is a kernel as Triton 3.6 or nvcc 13 wrote it (for sm_80 and sm_90a; nvcc also with -lineinfo, -G and
--use_fast_math; CuTe kernels from the CUTLASS headers; production kernels of ThunderKittens, DeepGEMM,
Liger-Kernel and unsloth with their projects' flags; CUTLASS 3 CollectiveBuilder GEMMs), with the outputs an H100
produced from the same PTX text. The default run replays a fixed sample that covers every source, target and flag set; the whole corpus
runs under ``-m slow``. ``corpus_lib.CANNOT_RUN`` lists what does not run yet, and the tests keep it true.
"""
import re

import numpy as np
import pytest

import corpus_lib
from emulator import EmulatorError

CASES = corpus_lib.load_all()
RUNNABLE = sorted(n for n in CASES if n not in corpus_lib.CANNOT_RUN)

# one case per kind of kernel and compiler setting; every source, target and nvcc flag set is covered
SAMPLE = [
    "triton_add_f32_sm80", "triton_axpy_f16_sm90a", "triton_int_div_i64_sm90a", "triton_math_sin_sm80",
    "triton_convert_f32_sm90a", "triton_randint_sm80", "triton_cumsum_f32_sm90a", "triton_histogram_atomic_sm80",
    "triton_row_max_argmax_sm90a", "triton_transpose_f32_sm80", "triton_matmul_f16_sm90a", "triton_matmul_tf32_sm80",
    "triton_matmul_int8_sm90a", "triton_sort_i32_sm80", "triton_atomic_cas_lock_sm90a",
    "nvcc_saxpy_fastmath", "nvcc_reduce_sum_G", "nvcc_int_math_lineinfo", "nvcc_float_math_sm80",
    "nvcc_calls_and_switch_sm90a", "nvcc_cache_hints_sm90a", "nvcc_policy_values_sm90a", "nvcc_pipeline_copy_G",
    "nvcc_warp_collectives_sm90a", "nvcc_dyn_smem_scan_G", "cute_hgemm_tn_sm80", "cute_swizzle_transpose_sm90a",
    "cute_sgemm_nt_sm90a", "cute_wgmma_tn_sm90a", "triton_softmax_sm90a", "triton_math_exp_sm80",
    "triton_flash_attention_sm90a", "triton_math_tanh_sm90a",
    "nvcc_cluster_dsmem_sm90a", "nvcc_cluster_sregs_c221_sm90a", "cute_tutorial_wgmma_tma_tn_sm90a", "nvcc_wmma_tf32_sm90a",
    # third-party kernels the emulator once got wrong (regressions.npz)
    "cute_tutorial_wgmma_cpasync_tn_sm90a", "triton_scaled_dot_e2m1_e4m3_sa_32x32x64_sm90a",
    "triton_liger_layer_norm_f16_1000_sm80", "triton_unsloth_geglu_exact_sm90a",
    # production kernels run from their own PTX with recorded argument bytes (production.npz)
    "nvcc_tk_gemm_bf16_256x512x128_2cta", "nvcc_tk_attn_fwd_causal_d64_n384",
    "nvcc_deepgemm_fp8_1d2d_128x224x512_bn112", "nvcc_deepgemm_fp8_1d2d_256x256x512_mcast_a",
    "triton_liger_cross_entropy_softcap_bf16_sm90a",
    # CUTLASS 3 CollectiveBuilder GEMMs (cutlass.npz): a 2x1 cluster with TMA multicast, and stream-K whose two
    # CTAs share a tile and fix it up through the workspace
    "cutlass_cluster2x1_f16_sm90a", "cutlass_streamk_f16_sm90a",
]


def _check(name):
    case = CASES[name]
    got, _, _ = corpus_lib.replay(case)
    bad = corpus_lib.mismatches(case, got)
    assert not bad, f"{name}: differs from the H100: " + "; ".join(
        f"{k}: {n} bytes, first at byte offsets {offs}" for k, offs, n in bad)


def test_corpus_is_whole():
    assert len(CASES) >= 210
    for name, case in CASES.items():
        cfg = case["config"]
        assert case["ptx"].lstrip().startswith(("//", ".version")), name
        assert "H100" in cfg["gpu"] or "H200" in cfg["gpu"], name      # sm_90 (the H200 is the same GH100 chip)
        assert set(case["out"]) == set(cfg["outputs"]) and case["out"], name
        assert cfg["source"] in ("triton", "nvcc", "cute", "cutlass") and name.startswith(cfg["source"] + "_"), name
    sources = {c["config"]["source"] for c in CASES.values()}
    assert sources == {"triton", "nvcc", "cute", "cutlass"}


def test_sample_covers_every_setting():
    assert set(SAMPLE) <= set(RUNNABLE), sorted(set(SAMPLE) - set(RUNNABLE))
    settings = {(c["config"]["source"], c["config"].get("flags") or c["config"]["target"]) for c in CASES.values()}
    covered = {(CASES[n]["config"]["source"], CASES[n]["config"].get("flags") or CASES[n]["config"]["target"])
               for n in SAMPLE}
    assert covered == settings, sorted(settings - covered)


@pytest.mark.parametrize("name", SAMPLE)
def test_sample_matches_h100(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_corpus_matches_h100(name):
    _check(name)


def test_cannot_run_names_real_cases():
    assert set(corpus_lib.CANNOT_RUN) <= set(CASES), sorted(set(corpus_lib.CANNOT_RUN) - set(CASES))
    for name, why in corpus_lib.CANNOT_RUN.items():
        assert re.match(r"(refused: line \d+, column \d+: \S+|differs: .+) -- \S", why), (name, why)


@pytest.mark.parametrize("name", sorted(corpus_lib.CANNOT_RUN))
def test_cannot_run_list_is_true(name):
    """A listed case must still fail as its entry says: refused at that line and column with that construct,
    or run and differ. As soon as it runs and matches the H100, this fails: take it off the list."""
    why = corpus_lib.CANNOT_RUN[name]
    case = CASES[name]
    if why.startswith("refused: "):
        where = why[len("refused: "):].split(" -- ")[0]
        with pytest.raises(EmulatorError) as e:
            got, _, _ = corpus_lib.replay(case)
            if not corpus_lib.mismatches(case, got):
                pytest.fail(f"{name} now runs and matches the H100: remove it from CANNOT_RUN")
            pytest.fail(f"{name} now runs (but differs from the H100): update its CANNOT_RUN entry")
        assert str(e.value).startswith(where), f"{name}: expected the refusal '{where}', got: {e.value}"
    else:
        got, _, _ = corpus_lib.replay(case)
        bad = corpus_lib.mismatches(case, got)
        assert bad, f"{name} now matches the H100: remove it from CANNOT_RUN"
        listed = why[len("differs: "):].split(" -- ")[0]
        assert listed == ", ".join(f"{k} ({n} bytes)" for k, _, n in bad), (name, bad)


def test_recorded_addresses_place_the_arrays():
    """A production case passes its arrays inside recorded argument bytes (ThunderKittens' globals struct: three
    gl<> with their TMA descriptors, built by its host code on the H100): the replay maps each array where it was
    on the GPU (the config's ``at``). Moved anywhere else, the same bytes no longer give the H100's answer."""
    import copy
    case = CASES["nvcc_tk_gemm_bf16_256x512x128_2cta"]
    assert set(case["config"]["at"]) == {"A", "B", "C"}
    moved = copy.deepcopy(case)
    moved["config"]["at"] = {k: v + (1 << 20) for k, v in case["config"]["at"].items()}
    try:
        got, _, _ = corpus_lib.replay(moved)
    except EmulatorError:
        return
    assert corpus_lib.mismatches(case, got)


def test_replay_is_independent_of_target_for_the_default_machine():
    """.target sm_80 PTX runs on the H100 model by default: its tensor-core results are the H100's."""
    case = CASES["triton_matmul_f16_f32out_sm80"]
    assert "sm_80" in case["ptx"]
    got, _, _ = corpus_lib.replay(case)
    assert not corpus_lib.mismatches(case, got)
    got80, _, _ = corpus_lib.replay(case, arch="sm_80")
    assert corpus_lib.mismatches(case, got80), "the A100 model should differ from the H100 on this matmul"
    assert np.isfinite(got80["c"]).all()
