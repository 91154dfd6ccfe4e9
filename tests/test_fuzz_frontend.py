"""Property: mutated real PTX (nvcc output with tokens dropped, duplicated or swapped, random bytes
spliced in, or cut short) never makes the front end, the compiler or a short launch raise anything but an
EmulatorError.

CI runs a short version; ``WARPEMU_FUZZ_EXAMPLES=100000 pytest tests/test_fuzz_frontend.py`` runs it long.
"""
import io
import os
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator import EmulatorError, GlobalMemory, Warp, load_ptx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = [os.path.join(ROOT, "emulator", "demo", "mma_demo.ptx")] + \
    [os.path.join(ROOT, "tests", "data", "kernels", f"{n}.ptx") for n in ("warp_ops", "float_ops", "cta_sync")]
TEXTS = [open(p).read() for p in SEEDS]
TOKEN = re.compile(r"[A-Za-z0-9_.%$:]+|\s+|.", re.S)
TOKENS = [TOKEN.findall(t) for t in TEXTS]
EXAMPLES = int(os.environ.get("WARPEMU_FUZZ_EXAMPLES", "60"))
COUNT = {"inputs": 0, "accepted": 0, "launched": 0}


def exercise(text):
    """Parse, compile every kernel and launch it briefly; only EmulatorError may escape."""
    COUNT["inputs"] += 1
    try:
        module = load_ptx(text)
        for name in module.kernels:
            prog = module.program(name)
            COUNT["accepted"] += 1
            g = GlobalMemory()
            buf = g.alloc(1 << 16)
            args = [buf if p.ptype in ("u64", "b64", "s64") else 16 for p, _ in prog.kernel_params]
            module.launch(name, grid=(1, 1, 1), block=(32, 1, 1), args=args, gmem=g, out=io.StringIO(),
                          max_instructions=400, shared_bytes=256)
            COUNT["launched"] += 1
    except EmulatorError:
        pass


mutation = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("dup"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("swap"), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6)),
    st.tuples(st.just("bytes"), st.integers(0, 10 ** 6), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("truncate"), st.floats(0, 1)),
)


def mutate(tokens, muts):
    toks = list(tokens)
    for m in muts:
        if not toks:
            break
        i = m[1] % len(toks) if m[0] != "truncate" else 0
        if m[0] == "drop":
            del toks[i]
        elif m[0] == "dup":
            toks.insert(i, toks[i])
        elif m[0] == "swap":
            j = m[2] % len(toks)
            toks[i], toks[j] = toks[j], toks[i]
        elif m[0] == "bytes":
            toks.insert(i, m[2].decode("latin-1"))
        else:
            toks = toks[:int(len(toks) * m[1])]
    return "".join(toks)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, len(TEXTS) - 1), muts=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_ptx_raises_only_emulator_errors(seed, muts):
    exercise(mutate(TOKENS[seed], muts))


# Inline-asm style: instruction statements of the seed kernels, mutated, through Warp.run.
STATEMENTS = sorted({ln.strip() for t in TEXTS for ln in t.splitlines()
                     if ln.strip().endswith(";") and not ln.strip().startswith((".", "//", "{", "}", "$", "(", ")"))})


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(picks=st.lists(st.integers(0, len(STATEMENTS) - 1), min_size=1, max_size=4),
       muts=st.lists(mutation, min_size=0, max_size=3))
def test_mutated_instructions_in_warp_run_raise_only_emulator_errors(picks, muts):
    text = " ".join(STATEMENTS[i] for i in picks)
    COUNT["inputs"] += 1
    try:
        Warp().run(mutate(TOKEN.findall(text), muts))
    except EmulatorError:
        pass


def test_unmutated_seeds_compile_and_launch():
    for text in TEXTS:
        exercise(text)
    assert COUNT["accepted"] >= 5


def test_fuzz_report():
    """Print how many inputs the property saw (run with -s to see it)."""
    print(f"fuzz: {COUNT['inputs']} inputs, {COUNT['accepted']} kernels compiled, {COUNT['launched']} launches "
          f"finished")
    assert COUNT["inputs"] >= 1
    np.testing.assert_equal(COUNT["inputs"] >= COUNT["launched"], True)
