"""docs/supported.md's coverage table of the PTX ISA for sm_90a stays true (isa/coverage.py): every executed entry's
sample runs in a kernel, every refused one raises an error that names it."""
import pytest

from emulator import GlobalMemory, load_ptx
from emulator.errors import PTXSyntaxError, TensorMapError, UnsupportedError
from isa.coverage import COVERAGE, KERNEL


def _launch(sample):
    m = load_ptx(KERNEL.replace("@SAMPLE@", sample))
    g = GlobalMemory()
    buf = g.alloc(4096, fill=0)
    m.launch("k", grid=(1, 1, 1), block=(128, 1, 1), args=[buf], gmem=g, max_instructions=100_000)


RUN = [e for e in COVERAGE if e[2] == "run"]
REFUSED = [e for e in COVERAGE if e[2] == "refused"]


def test_every_entry_is_complete():
    assert {e[2] for e in COVERAGE} == {"run", "refused"}
    for name, sample, status, why, match in COVERAGE:
        assert sample and why and (status == "run") == (match == ""), name


@pytest.mark.parametrize("entry", RUN, ids=lambda e: e[0][:40])
def test_executed_entries_run(entry):
    if ".tensor." in entry[1]:           # the sample has no tensor map: the copy runs and checks it
        with pytest.raises(TensorMapError, match="tensor map"):
            _launch(entry[1])
        return
    _launch(entry[1])


@pytest.mark.parametrize("entry", REFUSED, ids=lambda e: e[0][:40])
def test_refused_entries_raise(entry):
    with pytest.raises((UnsupportedError, PTXSyntaxError)) as e:
        _launch(entry[1])
    assert entry[4] in str(e.value)
