"""A fixed sample of the fuzzers of tools/fuzz/ (fuzzlib.py says what the inputs are): mutated compiler PTX
loaded and launched, mutated Warp.run programs, public functions and the command line called with arguments
of the wrong kind. Every input must work or raise an EmulatorError. ``python tools/fuzz/run.py`` is the long
run (it prints the counts); ``WARPEMU_FUZZ_SAMPLE=N`` makes this sample N inputs per kind."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "fuzz"))
import fuzzlib  # noqa: E402

N = int(os.environ.get("WARPEMU_FUZZ_SAMPLE", "0"))
SAMPLE = {"warp": N or 400, "api": N or 300, "ptx": N or 12, "types": N or 300, "grammar": N or 12}


@pytest.mark.parametrize("kind", fuzzlib.KINDS)
def test_fuzz_sample_raises_only_emulator_errors(kind):
    crashes = [(seed,) + bad for seed in range(SAMPLE[kind]) if (bad := fuzzlib.check(kind, seed))]
    assert not crashes, "\n".join(f"{kind}:{s} {e} at {w}\n    {r[:300]}" for s, e, w, r in crashes[:5])


def test_the_fuzzer_can_fail():
    # an input that raises something else is reported as a crash, with where it happened
    def boom(rng):
        return (lambda: {}["x"]), "boom"
    fuzzlib.GENERATORS["boom"] = boom
    try:
        fuzzlib.KINDS += ("boom",)
        bad = fuzzlib.check("boom", 0)
    finally:
        fuzzlib.KINDS = fuzzlib.KINDS[:-1]
        del fuzzlib.GENERATORS["boom"]
    assert bad is not None and bad[0].startswith("KeyError")
