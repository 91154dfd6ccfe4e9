"""The fast engine's instruction families (emulator/machine/fastcore/families.py): compiled apart from the loops,
only when a kernel's rows need them, and while one is not compiled its rows go to the reference executors with
the same bits."""
import os

import numpy as np
import pytest

from emulator import load_ptx
from emulator.machine.fastcore import families, warmup
from emulator.machine.fastcore import table as T
from emulator.machine.fastcore.engine import handback_counts, translation
from engines import compare_engines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP_ROWS = {T.SLOW, T.BRA, T.EXIT, T.BAR, T.LD, T.ST, T.NOP, T.XROW, T.ATOM, T.HOPX,    # the loop runs these
             T.WGMMA, T.BULKX, T.BRX}   # (wgmma: through wgcall.py, BULKX: bulkcall.py)


def _ptx(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def test_every_opcode_is_run_by_the_loop_or_by_exactly_one_family():
    ops = {v for k, v in vars(T).items() if k in T.NAMES.values() and isinstance(v, int)}
    owned = [op for _, (_, fam_ops) in families.FAMILIES.items() for op in fam_ops]
    assert len(owned) == len(set(owned)), "an opcode in two families"
    assert ops - LOOP_ROWS == set(owned), sorted(T.NAMES[o] for o in (ops - LOOP_ROWS) ^ set(owned))
    assert set(families.ORDER) == set(families.NAMES)
    from emulator.machine.fastcore import loop
    for op, name in families.OF_OPCODE.items():
        assert loop.FAMSLOT[op] == families.SLOT[name]


@pytest.mark.parametrize("path,kernel,expect", [
    ("benchmarks/data/triton_matmul.ptx", "matmul_kernel", ["alu", "mma", "ldmatrix"]),
    ("benchmarks/data/triton_softmax.ptx", "softmax_kernel", ["alu", "alu_f32", "float", "mufu", "shfl"]),
    ("tests/data/kernels/gemm_tiled.ptx", "gemm_tiled", ["alu", "mma", "ldmatrix", "cpasync"]),
])
def test_a_kernel_needs_the_families_of_its_rows_only(path, kernel, expect):
    tr = translation(load_ptx(_ptx(path)).program(kernel))
    assert tr.families == expect


def test_the_float_rows_compile_by_kind():
    """MUFU and the divisions ("mufu"), the conversions ("fcvt") and the other float rows ("float") are three
    families: Triton's sm_90a wgmma matmul, whose only float row is a cvt.rn.f16x2.f32, compiles "fcvt" alone."""
    text = np.load(os.path.join(ROOT, "tests/data/corpus/triton.npz"), allow_pickle=False)[
        "triton_matmul_f16_w8_sm90a__ptx"].tobytes().decode()
    tr = translation(load_ptx(text).program("matmul_kernel"))
    assert "fcvt" in tr.families and "float" not in tr.families and "mufu" not in tr.families
    assert {families.OF_OPCODE[op] for op in T.MUFU_ROWS} == {"mufu"}
    assert [families.OF_OPCODE[op] for op in T.FLOAT_ROWS] == ["float", "float", "farith", "farith"]
    assert families.OF_OPCODE[T.FCVT] == "fcvt" and families.OF_OPCODE[T.MUFU_R] == "mufu_r"


@pytest.mark.parametrize("text,fam,other", [
    ("lg2.approx.f32 {T}, {A}; rsqrt.approx.ftz.f32 {D}, {T};", "mufu_r", "mufu"),
    ("sqrt.approx.f32 {T}, {A}; ex2.approx.f32 {D}, {T};", "mufu_r", None),
    ("fma.rn.ftz.f32 {T}, {A}, {B}, {C}; max.f32 {D}, {T}, {A};", "farith", None),
    ("sub.rn.ftz.f32 {D}, {A}, {B};", "farith", "float"),
    ("div.full.f32 {T}, {A}, {B}; add.f32 {D}, {T}, {C};", "farith", None),
])
def test_lg2_rsqrt_sqrt_and_the_ftz_arithmetic_compile_apart(text, fam, other, monkeypatch):
    """lg2, rsqrt and sqrt ("mufu_r") compile apart from ex2, rcp and the divisions ("mufu": Triton's softmax), the
    .ftz f32 arithmetic and a product or a division contracted with an add ("farith") apart from min/max/neg/abs
    ("float": the softmax's max): a kernel
    compiles only the kinds it has. While the family is not compiled its rows go to the reference executors with
    the same bits; the next launch binds it and runs them all in the loop."""
    import test_fastcore as F
    module = load_ptx(F._form_kernel(text, 2))
    tr = translation(module.program("k"))
    assert fam in tr.families and (other is None or other not in tr.families)
    rng = np.random.default_rng(11)
    grid, arrays = F._inputs(*rng.integers(0, 1 << 32, size=(3, 64), dtype=np.uint64).astype(np.uint32), per=2)
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == fam else real(name, wait))
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.SLOT[fam]] == 0
    rows = [p for p in range(len(tr.code)) if families.OF_OPCODE.get(int(tr.code[p, T.OP])) == fam]
    assert rows and all(tr.handed_back[p] > 0 for p in rows)
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.SLOT[fam]] != 0
    assert fast["fast_executed"] == fast["instructions"]


def test_sin_cos_and_tanh_compile_apart_from_the_other_mufu_forms(monkeypatch):
    """sin, cos and tanh (their tables and range reduction) are the "mufu_x" family: Triton's softmax (ex2 and
    div.full) compiles "mufu" alone, a kernel of tanh and sin "mufu_x" alone; while "mufu_x" is not compiled its
    rows go to the reference executors with the same bits, and the next launch binds it."""
    import test_fastcore as F
    path, kernel, *_ = _softmax_case()
    tr = translation(load_ptx(_ptx(path)).program(kernel))
    assert "mufu" in tr.families and "mufu_x" not in tr.families
    assert families.OF_OPCODE[T.MUFU_X] == "mufu_x"
    module = load_ptx(F._form_kernel("tanh.approx.f32 {T}, {A}; sin.approx.f32 {D}, {T};", 2))
    rng = np.random.default_rng(8)
    grid, arrays = F._inputs(*rng.integers(0, 1 << 32, size=(3, 64), dtype=np.uint64).astype(np.uint32), per=2)
    tr = translation(module.program("k"))
    assert tr.families == ["alu", "mufu_x"]
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == "mufu_x" else real(name, wait))
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.SLOT["mufu_x"]] == 0
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] == T.MUFU_X]
    assert len(rows) == 4 and all(tr.handed_back[p] > 0 for p in rows)
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", grid, 32, arrays)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.SLOT["mufu_x"]] != 0
    assert fast["fast_executed"] == fast["instructions"]


def _gemm_case():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    return ("tests/data/kernels/gemm_tiled.ptx", "gemm_tiled", (1, 1, 1), 128,
            [a, b, np.zeros((64, 64), np.float32)], [64, 64, 64], 0)


def _softmax_case():
    x = np.linspace(-5, 5, 4 * 1000, dtype=np.float32).reshape(4, 1000)
    x[1, 7] = np.nan
    x[2, 3] = -np.inf
    return ("benchmarks/data/triton_softmax.ptx", "softmax_kernel", (4,), 128, [x, np.zeros_like(x)],
            [1000, 0, 0], 16)


@pytest.mark.parametrize("missing,case", [("alu", _gemm_case), ("mma", _gemm_case), ("ldmatrix", _gemm_case),
                                          ("cpasync", _gemm_case), ("float", _softmax_case), ("mufu", _softmax_case),
                                          ("shfl", _softmax_case), ("alu_f32", _softmax_case)])
def test_rows_of_a_family_not_compiled_yet_go_to_the_reference_with_the_same_bits(missing, case, monkeypatch):
    path, kernel, grid, block, arrays, scalars, shared = case()
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == missing else real(name, wait))
    module = load_ptx(_ptx(path))
    ref, fast, diffs = compare_engines(module, kernel, grid, block, arrays, scalars, shared_bytes=shared)
    assert not diffs, diffs
    assert fast["fast_executed"] > 0
    tr = translation(module.program(kernel))
    assert tr.mufu_ptr[families.SLOT[missing]] == 0
    ops = set(families.FAMILIES[missing][1])
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] in ops]
    assert rows and sum(int(tr.handed_back[p]) for p in rows) > 0, handback_counts(module.program(kernel))


def _tensor_module(want):
    """A random tensor-core kernel of tests/test_fastcore.py with mma rows of opcode ``want`` (MMA or MMA_X)."""
    import test_fastcore as F
    for seed in range(200):
        rng = np.random.default_rng(seed)
        text = F.tensor_kernel(rng)
        module = load_ptx(text, validate=False)
        if want in translation(module.program("k")).code[:, T.OP]:
            return module, F.random_inputs(rng, 32)
    raise AssertionError("no such kernel")


def test_each_mma_form_is_in_the_family_that_compiles_only_its_code():
    """f16/bf16 (and e4m3/e5m2 before sm_90) decode through the lookup tables with C the first accumulator: MMA,
    the ``mma`` family; tf32 (decoded arithmetically) and sm_90's fp8 (C added last): MMA_X, ``mma_ext``."""
    from emulator.machine.fastcore.translate import r_mma  # noqa: F401 (the rule under test)
    cases = {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": T.MMA,
             "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": T.MMA,
             "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16": T.MMA,
             "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32": T.MMA_X,
             "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32": T.MMA_X}
    for spelling, op in cases.items():
        f16acc = ".f16.f16.f16.f16" in spelling
        d = "{%r0, %r1}" if f16acc else "{%r0, %r1, %r2, %r3}"
        text = f"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{{
    .reg .b32 %r<12>;
    {spelling} {d}, {{%r4, %r5, %r6, %r7}}, {{%r8, %r9}}, {d};
    ret;
}}"""
        tr = translation(load_ptx(text).program("k"))
        assert list(tr.code[:, T.OP]).count(op) == 1, spelling
        assert tr.families == [families.OF_OPCODE[op]], spelling
    assert families.OF_OPCODE[T.MMA] == "mma" and families.OF_OPCODE[T.MMA_X] == "mma_ext"


@pytest.mark.parametrize("missing,want", [("mma", T.MMA), ("mma_ext", T.MMA_X)])
def test_mma_rows_of_a_form_not_compiled_yet_go_to_the_reference(missing, want, monkeypatch):
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == missing else real(name, wait))
    module, arrays = _tensor_module(want)
    ref, fast, diffs = compare_engines(module, "k", 1, 32, arrays)
    assert not diffs, diffs
    tr = translation(module.program("k"))
    assert tr.mufu_ptr[families.SLOT[missing]] == 0
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] == want]
    assert rows and all(tr.handed_back[p] > 0 for p in rows)


def _apart_case(name):
    """(module, block, arrays, scalars) of a kernel whose rows call the function ``name`` of families.APART."""
    if name in ("xrow", "atom", "rare", "memplan"):   # ("rare": rarecall.rare_c, on the ATOM rows; "memplan":
        import test_fastcore_scalarx as X               # memplan.plan_c, the atomics' addresses)
        if name in ("atom", "rare", "memplan"):
            return load_ptx(X.ATOM_KERNEL.replace("BODY", X.ATOMS["add.u32"])), 128, X._atom_inputs("add.u32"), ()
        rng = np.random.default_rng(3)
        words = rng.integers(0, 1 << 32, size=(32, 4), dtype=np.uint64).astype(np.uint32)
        return load_ptx(X.form_kernel(X.FORMS["lop3 96"], 1)), 32, [words, np.zeros(32, np.uint32)], ()
    if name == "hopper":
        import test_fast_async as H
        return load_ptx(H.ELECT), 64, [np.zeros(64 * 8, np.uint32)], [0, 0]
    if name == "brx":                   # (loop.brx_c: a jump-table interpreter)
        import test_fast_brx as BX
        rng = np.random.default_rng(3)
        text = BX.interp_kernel(rng)
        return load_ptx(text), 64, [np.zeros(64, np.uint32),
                                    rng.integers(0, 8, 64 * 12, dtype=np.uint64).astype(np.uint32)], ()
    import test_fastcore_wgmma as WG
    rng = np.random.default_rng(11)
    return load_ptx(WG.wgmma_kernel(rng, 6), validate=False), 128, WG._inputs(rng, 128, True), ()


@pytest.mark.parametrize("name,op", [("xrow", T.XROW), ("atom", T.ATOM), ("hopper", T.HOPX), ("wgmma", T.WGMMA),
                                     ("rare", T.ATOM), ("memplan", T.ATOM), ("brx", T.BRX), ("memx", T.ST)])
def test_the_functions_compiled_apart_are_bound_as_the_families(name, op, monkeypatch):
    """xcall.py's, hopcall.py's and wgcall.py's functions (and the others of ``families.APART``: brx.idx, the
    shared stores beside the async proxy, on a wgmma kernel) come through ``warmup.family`` (the compile lock, and
    engine="auto" never compiles them while another process compiles): while one is missing its rows go to
    the reference executors (a wgmma kernel's CTAs to the Python scheduler), with the same bits."""
    module, block, arrays, scalars = _apart_case(name)
    tr = translation(module.program("k"))
    assert name in tr.apart and op in tr.code[:, T.OP]
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: 0 if n == name else real(n, wait))
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT[name]] == 0
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] == op and (op != T.HOPX or tr.code[p, T.X] != 0)]
    assert rows and sum(int(tr.handed_back[p]) for p in rows) > 0
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)     # bound by the next launch
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT[name]] != 0


def test_the_apart_slots_are_the_loops():
    from emulator.machine.fastcore import bulkx, loop, rarecall
    loops = {"xrow": loop.XSLOT, "atom": loop.ASLOT, "wgmma": loop.WSLOT, "hopper": loop.HSLOT, "bulk": loop.BSLOT,
             "ctawait": loop.CSLOT, "ctabar": loop.BARSLOT, "rare": loop.RSLOT, "memplan": loop.MSLOT,
             "cluster": rarecall.CLSLOT, "bulk_mc": bulkx.MCSLOT, "bulk_s2s": bulkx.SCSLOT, "pick": loop.PSLOT,
             "brx": loop.BRXSLOT, "memx": loop.XMSLOT,
             # dsmemx.py's functions take memplan's and atom's slots in the kernels that may reach another CTA
             "dsmem": loop.MSLOT, "dsmem_atom": loop.ASLOT}
    assert {k: v for k, v in families.APART_SLOT.items() if k not in families.WG_TILES + ("wg_fix",)} == loops
    # wgmma's tile functions (wgcall.wg_c finds them in the pointer array): after the loops' slots, one each
    tiles = sorted(families.APART_SLOT[k] for k in families.WG_TILES)
    assert tiles == list(range(loop.BSLOT + 1, loop.CSLOT))
    assert (loop.CSLOT, loop.BARSLOT, loop.RSLOT, loop.MSLOT, rarecall.CLSLOT, bulkx.MCSLOT, bulkx.SCSLOT, loop.PSLOT,
            loop.BRXSLOT, loop.XMSLOT) == tuple(range(families.NPTRS - 11, families.NPTRS - 1))
    # the float tiles' fix-ups (wgcall.wg_fix, whose slot wg_c hands the tile functions): the last
    assert families.APART_SLOT["wg_fix"] == families.NPTRS - 1


def test_a_family_filled_later_is_used_by_the_next_launch(monkeypatch):
    path, kernel, grid, block, arrays, scalars, shared = _softmax_case()
    module = load_ptx(_ptx(path))
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == "float" else real(name, wait))
    compare_engines(module, kernel, grid, block, arrays, scalars, shared_bytes=shared)
    tr = translation(module.program(kernel))
    assert tr.mufu_ptr[families.SLOT["float"]] == 0
    monkeypatch.setattr(warmup, "family", real)
    before = tr.handed_back.copy()
    ref, fast, diffs = compare_engines(module, kernel, grid, block, arrays, scalars, shared_bytes=shared)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.SLOT["float"]] != 0
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] in T.FLOAT_ROWS]
    assert all(tr.handed_back[p] == before[p] for p in rows)


def test_auto_never_compiles_a_family_while_another_process_compiles(monkeypatch):
    compiled = []
    monkeypatch.setattr(families, "cached", lambda name: False)
    monkeypatch.setattr(families, "address", lambda name, lock: compiled.append(name) or 1234)
    monkeypatch.setattr(warmup, "compiling", lambda: True)
    assert warmup.family("mma", wait=False) == 0 and compiled == []
    assert warmup.family("mma", wait=True) == 1234 and compiled == ["mma"]       # engine="fast" compiles now
    monkeypatch.setattr(warmup, "compiling", lambda: False)
    monkeypatch.setattr(warmup, "background", lambda: True)                       # nobody compiles: a child starts
    assert warmup.family("shfl", wait=False) == 0 and compiled == ["mma"]
    monkeypatch.setattr(warmup, "background", lambda: False)                      # no child allowed: here
    assert warmup.family("shfl", wait=False) == 1234 and compiled == ["mma", "shfl"]


def test_a_compiled_family_is_found_in_the_cache():
    families.address("alu", warmup.lock())
    assert families.cached("alu")
    assert families.address("alu", warmup.lock()) == families._CFUNCS["alu"].address


def test_the_cache_guard_sees_every_family_module():
    """numerics/jitcache.guard drops the cached functions of the files that say ``cache=True`` when the sources
    change: a family module must say it, or its cached function would outlive an update of what it inlines."""
    for module, _ in list(families.FAMILIES.values()) + [(m, None) for m, _, _ in families.APART.values()]:
        with open(os.path.join(ROOT, "emulator", "machine", "fastcore", f"{module.split(':')[0]}.py"), "rb") as f:
            assert b"cache=True" in f.read(), module


def test_stmatrix_rows_wait_for_their_family(monkeypatch):
    """stmatrix runs in its own family (ldm.entry_st): while it is not compiled its rows go to the reference
    executor with the same bits, and the next launch binds it."""
    import test_fastcore as F
    rng = np.random.default_rng(4)
    text = next(t for t in (F.tensor_kernel(rng, 12) for _ in range(20)) if "stmatrix" in t)
    module = load_ptx(text, validate=False)
    arrays = F.random_inputs(np.random.default_rng(5), 32)
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda name, wait=True: 0 if name == "stmatrix" else real(name, wait))
    ref, fast, diffs = compare_engines(module, "k", 1, 32, arrays)
    assert not diffs, diffs
    tr = translation(module.program("k"))
    assert "stmatrix" in tr.families and tr.mufu_ptr[families.SLOT["stmatrix"]] == 0
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] == T.STMATRIX]
    assert rows and sum(int(tr.handed_back[p]) for p in rows) > 0
    monkeypatch.setattr(warmup, "family", real)
    before = tr.handed_back.copy()
    ref, fast, diffs = compare_engines(module, "k", 1, 32, arrays)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.SLOT["stmatrix"]] != 0
    assert all(tr.handed_back[p] == before[p] for p in rows)       # (none goes back now)


def test_a_missing_wgmma_tile_function_keeps_the_cta_on_the_python_scheduler(monkeypatch):
    """wgmma's tile arithmetic is compiled apart by form (wgcall.py; families.WG_TILES): while the one a kernel
    needs is missing, its CTAs run on the Python scheduler (the wgmma rows go to the executors), with the same
    bits; the next launch binds it."""
    module, block, arrays, scalars = _apart_case("wgmma")
    tr = translation(module.program("k"))
    tiles = [n for n in tr.apart if n in families.WG_TILES]
    assert tiles and set(tiles) <= set(families.APART)
    name = tiles[0]
    real = warmup.family
    monkeypatch.setattr(warmup, "family", lambda n, wait=True: 0 if n == name else real(n, wait))
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT[name]] == 0
    rows = [p for p in range(len(tr.code)) if tr.code[p, T.OP] == T.WGMMA]
    assert rows and sum(int(tr.handed_back[p]) for p in rows) > 0
    monkeypatch.setattr(warmup, "family", real)
    ref, fast, diffs = compare_engines(module, "k", 1, block, arrays, scalars)
    assert not diffs, diffs
    assert tr.mufu_ptr[families.APART_SLOT[name]] != 0
