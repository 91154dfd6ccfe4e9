"""Held-out kernels that keep per-thread data in .local memory, replayed against an H100 on both engines
(tests/data/local_heldout.npz, built by tools/hwcapture/corpus/heldout_local.py; docs/corpus.md): FlagDNN's
Triton sin/cos/tan kernels on large arguments (libdevice's Payne-Hanek reduction keeps its table in local
memory), NVIDIA's cuda-samples interval Newton solver (a per-thread work stack indexed at run time, f64 with
directed roundings), and a probe of every local access width. The fast engine runs every instruction of them in
its loops: none is handed back."""
import os

import numpy as np
import pytest

import corpus_lib
from emulator.machine.fastcore.engine import handback_counts

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "local_heldout.npz")
CASES = corpus_lib.load_npz(DATA)
DEFAULT = {("ptx_local_widths", "fast"), ("ptx_local_widths", "reference"), ("triton_flagdnn_unary_tan_f32_sm90a", "fast")}


def _replay(name, engine):
    case = CASES[name]
    got, res, _ = corpus_lib.replay(case, engine=engine)
    assert not corpus_lib.mismatches(case, got), (name, engine, corpus_lib.mismatches(case, got))
    return res


def _handed_back(res):
    out = {}
    for prog in {id(w.program): w.program for _, ws in res.ctas for w in ws}.values():
        for k, v in handback_counts(prog).items():
            out[k] = out.get(k, 0) + v
    return out


@pytest.mark.parametrize("name, engine", [pytest.param(n, e, marks=() if (n, e) in DEFAULT else pytest.mark.slow)
                                          for n in sorted(CASES) for e in ("fast", "reference")])
def test_held_out_local_memory_kernels_match_the_h100(name, engine):
    res = _replay(name, engine)
    if engine == "fast":
        assert not _handed_back(res)               # (the interval solver's f64 min/max and directed products too)


def test_the_held_out_set_is_what_the_docs_say():
    assert len(CASES) == 19
    srcs = {c["config"]["source"] for c in CASES.values()}
    assert srcs == {"triton", "nvcc", "ptx"}
    assert all(c["config"]["gpu"].startswith("NVIDIA H100") for c in CASES.values())
    for name, c in CASES.items():
        assert ".local" in c["ptx"], name
        assert any(np.asarray(v).any() for v in c["out"].values()), name
