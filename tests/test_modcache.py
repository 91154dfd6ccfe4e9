"""The module cache (emulator/machine/modcache.py): a second load_ptx of the same text reuses the parsed module,
its programs and their translations, and nothing a module or a launch writes."""
import gc
import threading

import numpy as np
import pytest

import corpus_lib
from emulator import GlobalMemory, OperandError, PTXValidationError, load_ptx
from emulator.machine import modcache
from emulator.machine.fastcore import translation

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# every launch adds 1 to gv (initially 5) and to a .global declared inside the function (initially 0), and
# writes what each held before, per thread, through a .local depot
COUNTER = HEAD + """
.global .align 4 .u32 gv = 5;
.visible .entry k(.param .u64 out)
{
    .global .align 4 .u32 fv;
    .local .align 4 .b8 depot[8];
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd1, %rd1, %rd2;
    mov.u64 %rd3, depot;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    atom.global.add.u32 %r2, [gv], 1;
    atom.global.add.u32 %r3, [fv], 1;
    st.local.u32 [%rd3], %r2;
    st.local.u32 [%rd3+4], %r3;
    ld.local.u32 %r4, [%rd3];
    ld.local.u32 %r5, [%rd3+4];
    st.global.v2.u32 [%rd1], {%r4, %r5};
DONE:
    ret;
}
"""


@pytest.fixture(autouse=True)
def fresh_cache():
    modcache.clear()
    yield
    modcache.clear()


def _count(module, g):
    out = g.upload(np.zeros(2, np.uint32))
    module.launch("k", 1, 32, [out], gmem=g, engine="fast")
    return g.download(out, 8).view(np.uint32).tolist()


def test_a_reload_reuses_the_programs_and_translations():
    a = load_ptx(COUNTER)
    pa = a.program("k")
    before = modcache.stats()["hits"]
    b = load_ptx(COUNTER)
    assert modcache.stats()["hits"] == before + 1
    assert b.info is not a.info and b.info.functions is a.info.functions     # parsed once
    pb = b.program("k")
    assert pb is pa
    assert translation(pb) is translation(pa)
    # the off switches: a load of its own
    c = load_ptx(COUNTER, cache=False)
    assert c.program("k") is not pa
    with pytest.raises(OperandError, match="cache must be True or False"):
        load_ptx(COUNTER, cache="yes")


def test_module_variables_and_writes_stay_with_their_module():
    g = GlobalMemory()
    a = load_ptx(COUNTER)
    assert _count(a, g) == [5, 0]
    assert _count(a, g) == [6, 1]          # a's variables in g keep what a's launches wrote
    b = load_ptx(COUNTER)                  # the same text, cached: its own variables, initial values intact
    assert b.program("k") is a.program("k")
    assert "fv" in b.info.variables        # (declared inside the function: each module gets it)
    assert _count(b, g) == [5, 0]
    assert _count(a, g) == [7, 2]
    assert b.global_address("gv", g) != a.global_address("gv", g)
    assert _count(b, GlobalMemory()) == [5, 0]
    # a module that never compiled the program still gets the program's variables when it takes it
    c = load_ptx(COUNTER)
    assert "fv" not in c.info.variables
    c.program("k")
    assert "fv" in c.info.variables


def test_options_and_architectures_are_part_of_the_key():
    a = load_ptx(COUNTER)
    for other in (load_ptx(COUNTER, arch="sm_80"), load_ptx(COUNTER, validate=False),
                  load_ptx(COUNTER + "\n// another text\n")):
        assert other.program("k") is not a.program("k")
        assert translation(other.program("k")) is not translation(a.program("k"))
    assert load_ptx(COUNTER, arch="sm_80").program("k").arch == "sm_80"
    assert load_ptx(COUNTER, arch="sm_90").program("k") is a.program("k")    # (sm_90 is the default)


def test_off_switches_and_bounds(monkeypatch):
    monkeypatch.setenv("WARPEMU_MODULE_CACHE", "0")
    assert load_ptx(COUNTER).program("k") is not load_ptx(COUNTER).program("k")
    monkeypatch.delenv("WARPEMU_MODULE_CACHE")
    assert load_ptx(COUNTER).program("k") is load_ptx(COUNTER).program("k")
    old = modcache.MAX_ENTRIES, modcache.MAX_CHARS
    try:
        modcache.configure(max_entries=2)
        texts = [COUNTER + f"// {i}\n" for i in range(3)]
        progs = [load_ptx(t).program("k") for t in texts]
        assert modcache.stats()["entries"] == 2
        assert load_ptx(texts[2]).program("k") is progs[2]
        assert load_ptx(texts[0]).program("k") is not progs[0]       # the least recently used went first
        modcache.configure(max_chars=len(COUNTER) + 10)
        assert modcache.stats()["entries"] == 1
        modcache.configure(max_entries=0)
        assert not modcache.enabled()
        assert load_ptx(COUNTER).program("k") is not load_ptx(COUNTER).program("k")
        with pytest.raises(OperandError, match="max_entries must be an integer"):
            modcache.configure(max_entries=-1)
    finally:
        modcache.configure(*old)


def test_the_collector_state_is_restored_even_on_error():
    bad = HEAD + ".visible .entry k()\n{\n    frobnicate.u32 %r1;\n}\n"
    was = gc.isenabled()
    try:
        for state in (False, True):
            (gc.enable if state else gc.disable)()
            load_ptx(COUNTER + f"// {state}\n", cache=False).program("k")
            assert gc.isenabled() is state
            with pytest.raises(PTXValidationError):
                load_ptx(bad)
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()


def test_two_modules_of_one_text_in_two_threads_give_the_h100_bits():
    case = corpus_lib.load_all(["triton.npz"])["triton_matmul_f16_sm80"]
    corpus_lib.replay(case, engine="fast")            # cached: both threads take its program and translation
    results, errors = [None, None], []

    def work(i):
        try:
            results[i] = [corpus_lib.replay(case, engine="fast")[0] for _ in range(2)]
        except BaseException as e:       # (reported by the main thread)
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for runs in results:
        for got in runs:
            assert corpus_lib.mismatches(case, got) == []
