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
             T.STMATRIX, T.WGMMA, T.BULKX}          # (wgmma: through wgcall.py, BULKX: bulkcall.py)


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
    ("benchmarks/data/triton_softmax.ptx", "softmax_kernel", ["alu", "float", "shfl"]),
    ("tests/data/kernels/gemm_tiled.ptx", "gemm_tiled", ["alu", "mma", "ldmatrix", "cpasync"]),
])
def test_a_kernel_needs_the_families_of_its_rows_only(path, kernel, expect):
    tr = translation(load_ptx(_ptx(path)).program(kernel))
    assert tr.families == expect


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
                                          ("cpasync", _gemm_case), ("float", _softmax_case),
                                          ("shfl", _softmax_case)])
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
    for module, _ in families.FAMILIES.values():
        with open(os.path.join(ROOT, "emulator", "machine", "fastcore", f"{module}.py"), "rb") as f:
            assert b"cache=True" in f.read(), module
