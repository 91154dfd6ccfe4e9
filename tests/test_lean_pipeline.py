"""The pipeline the fast engine's loops compile with (``numerics.jitcache.lean``: numba's own without SSA and
without the passes those loops never need). Without SSA numba gives a variable one type for all its assignments,
unifying them (int64 with uint64 as float64): every function compiled with it must type no float."""
import re

import numpy as np
import pytest
from numba import njit, types
from numba.core import compiler, cpu
from numba.core.compiler_machinery import AnalysisPass, PassManager, register_pass
from numba.core.registry import cpu_target

from emulator.numerics.jitcache import lean

_TYPED = {}


@register_pass(mutates_CFG=False, analysis_only=True)
class _KeepTypes(AnalysisPass):
    _name = "warpemu_keep_types"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        _TYPED["typemap"] = dict(state.typemap)
        _TYPED["calltypes"] = dict(state.calltypes)
        return False


class _Stop(Exception):
    pass


@register_pass(mutates_CFG=False, analysis_only=True)
class _StopHere(AnalysisPass):
    _name = "warpemu_stop_after_typing"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        raise _Stop()


def lean_types(fn, sig, base=None, nrt=False):
    """The types numba's lean pipeline (or the pipeline ``base``) gives the variables of ``fn`` (a python
    function) for the argument types ``sig``: its passes up to type inference, then nothing compiled (``nrt``:
    with numba's reference-counting runtime, as the functions of ``families.APART`` compile)."""
    base = lean() if base is None else base

    class Typing(base):
        def define_pipelines(self):
            full = base.define_pipelines(self)[0]
            pm = PassManager("lean typing")
            for cls, desc in full.passes:
                pm.add_pass(cls, desc)
                if cls.__name__ == "NopythonTypeInference":
                    break
            pm.add_pass(_KeepTypes, "keep the types")
            pm.add_pass(_StopHere, "stop")
            pm.finalize()
            return [pm]
    _TYPED.clear()
    flags = compiler.Flags()
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    flags.nrt = nrt
    try:
        compiler.compile_extra(cpu_target.typing_context, cpu_target.target_context, fn, sig, None, flags, {},
                               pipeline_class=Typing)
    except Exception as e:          # noqa: BLE001 (numba wraps the stop in its own error)
        if "_Stop" not in repr(e) and not isinstance(e, _Stop) and "warpemu_stop_after_typing" not in str(e):
            raise
    return _TYPED["typemap"]


def ssa_types(fn, sig, nrt=False):
    """The types numba's default pipeline (with SSA: each assignment of a variable typed apart) gives ``fn``."""
    return lean_types(fn, sig, compiler.Compiler, nrt)


def unified(lean_map, ssa_map):
    """The variables the lean pipeline types as none of their assignments is typed with SSA (``x`` there, ``x.1``,
    ``x.2``... with SSA): what typing all of a variable's assignments at once made of them."""
    bad = {}
    for name, ty in lean_map.items():
        seen = {t for k, t in ssa_map.items()
                if k == name or (k.startswith(name + ".") and k[len(name) + 1:].isdigit())}
        if seen and ty not in seen:
            bad[name] = (str(ty), sorted(map(str, seen)))
    return bad


def floats(typemap):
    return {k: str(v) for k, v in typemap.items()
            if isinstance(v, (types.Float, types.Complex, types.Optional)) or "float" in str(v)}


def test_the_check_finds_a_variable_unified_to_a_float():
    def mixed(a, b):
        v = a              # int64
        if b[0] > 0:
            v = b[0]       # uint64: one variable for both, without SSA unified as float64
        return v
    sig = (types.int64, types.Array(types.uint64, 1, "C"))
    got = floats(lean_types(mixed, sig))
    assert got and "float64" in got.values()


def test_the_loops_type_no_float():
    import emulator.machine.module  # noqa: F401 (sets the warm-up launches)
    from emulator.machine.fastcore import families, ldst, loop, memplan, pickcall, warmup
    families.address("alu", warmup.lock())
    warmup._compile_loops("cta")              # (from the cache when it holds them): the loops' signatures
    lean_types(memplan.plan_c, memplan.SIG.args)    # (types memplan._mem_plan, compiled apart from the loops)
    lean_types(pickcall.pick_c, pickcall.SIG.args)  # (types pickcall._pick, compiled apart from the loops)
    lean_fns = [d for mod in (loop, ldst, memplan, pickcall) for d in vars(mod).values()
                if getattr(getattr(d, "_compiler", None), "pipeline_class", None) is loop.LEAN]
    names = [d.py_func.__name__ for d in lean_fns]
    assert set(names) >= {"run", "run_cta", "_pick", "_mem_plan", "fill_ctx", "_check_bars", "plan", "load", "store"}
    # the loops first: typing them types (or loads) the helpers they call, whose signatures come next
    lean_fns.sort(key=lambda d: d.py_func.__name__ not in ("run", "run_cta"))
    checked = []
    for d in lean_fns:
        for sig in d.signatures:
            got = floats(lean_types(d.py_func, sig))
            assert not got, f"{d.py_func.__name__}: variables typed as floats without SSA: {got}"
            checked.append(d.py_func.__name__)
    assert set(checked) >= {"run", "run_cta", "_pick", "_mem_plan", "plan", "load", "store"}


def test_the_grid_loop_types_no_float():
    import emulator.machine.module  # noqa: F401
    from emulator import GlobalMemory, load_ptx
    from emulator.machine.fastcore import gridloop, loop
    assert gridloop.grid_loop._compiler.pipeline_class is loop.LEAN
    if not gridloop.grid_loop.signatures:     # a launch of several CTAs that need no Python: the grid loop's types
        m = load_ptx(_TWO_CTAS)
        g = GlobalMemory()
        out = g.upload(np.zeros(64, np.uint32))
        m.launch("k", (2,), 32, [out], gmem=g, engine="fast")
        assert (g.download(out, 256).view(np.uint32) == np.arange(64)).all()
    assert gridloop.grid_loop.signatures
    for sig in gridloop.grid_loop.signatures:
        got = floats(lean_types(gridloop.grid_loop.py_func, sig))
        assert not got, f"grid_loop: variables typed as floats without SSA: {got}"


_TWO_CTAS = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    shl.b32 %r3, %r2, 5;
    add.u32 %r3, %r3, %r1;
    mul.wide.u32 %rd2, %r3, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


def test_the_check_finds_a_variable_unified_across_its_assignments():
    def mixed(a, b):
        v = a              # int64, then uint64: without SSA one variable, float64, and ``a`` with it
        if b[0] > 0:
            v = b[0]
        return v
    sig = (types.int64, types.Array(types.uint64, 1, "C"))
    assert unified(lean_types(mixed, sig), ssa_types(mixed, sig)) == {"a": ("float64", ["int64"])}


def test_the_mma_row_types_each_variable_as_its_assignments():
    """numerics.tc_row (the mma.sync rows, binary64 arithmetic) compiles with the lean pipeline too: its floats are
    real, so the check is that no variable gets a type that none of its assignments has with SSA. The signatures
    are the ones the fast engine's mma families (``mmax.entry``, ``mmaext.entry``) call the functions with, then
    those of the functions they call, in turn."""
    from numba.core.dispatcher import Dispatcher
    from emulator.numerics import tc_row
    lean_fns = {d.py_func: d for d in vars(tc_row).values()
                if getattr(getattr(d, "_compiler", None), "pipeline_class", None) is tc_row.LEAN}
    assert {f.__name__ for f in lean_fns} >= {"tile", "decode", "encode", "store", "add_c"}
    from emulator.machine.fastcore import ccall, mmaext, mmax
    todo = [(mmax.entry, tuple(ccall.SIG.args)), (mmaext.entry, tuple(ccall.SIG.args))]
    done = set()
    checked = set()
    while todo:
        fn, sig = todo.pop()
        if (fn, sig) in done:
            continue
        done.add((fn, sig))
        typed = ssa_types(fn, sig)
        if fn in lean_fns:
            got = unified(lean_types(fn, sig), typed)
            assert not got, f"{fn.__name__}: variables typed without SSA as none of their assignments: {got}"
            checked.add(fn.__name__)
        for expr, csig in _TYPED["calltypes"].items():
            if getattr(expr, "op", None) != "call" or csig is None:
                continue
            fty = typed.get(expr.func.name)
            disp = getattr(fty, "dispatcher", None)
            if isinstance(disp, Dispatcher) and disp.py_func.__module__ == tc_row.__name__:
                todo.append((disp.py_func, tuple(csig.args)))
    assert checked >= {"tile", "decode", "encode", "store", "add_c"}


def test_the_lean_families_type_each_variable_as_its_assignments():
    """The instruction families compiled with the lean pipeline (``families.LEAN``: their entries, as cfuncs of
    ``ccall.SIG``) type no variable as none of its assignments is typed with SSA (``alu`` has float compares: the
    check is the unification one, not "no float")."""
    from emulator.machine.fastcore import ccall, families
    assert "alu" in families.LEAN
    for name in families.LEAN:
        if name in families.APART:          # (a signature of its own: wgmma, the next test)
            continue
        fn = families._entry(name)
        got = unified(lean_types(fn, tuple(ccall.SIG.args)), ssa_types(fn, tuple(ccall.SIG.args)))
        assert not got, f"{name}: variables typed without SSA as none of their assignments: {got}"


def test_the_wgmma_function_types_each_variable_as_its_assignments():
    """wgcall.wg_c (the CTA loop's wgmma steps, ``families.LEAN``; compiled with numba's runtime, as the functions of
    ``families.APART`` are) types no float, and no variable as none of its assignments is typed with SSA, but for
    a temporary index tuple whose literal integer becomes int64 (the same values)."""
    from emulator.machine.fastcore import families, wgcall
    assert "wgmma" in families.LEAN and "wgmma" in families.APART
    sig = tuple(wgcall.SIG.args)
    lean_map = lean_types(wgcall.wg_c, sig, nrt=True)
    assert not floats(lean_map)

    def widened(t):
        return re.sub(r"Literal\[int\]\(-?\d+\)", "int64", t)
    bad = {k: v for k, v in unified(lean_map, ssa_types(wgcall.wg_c, sig, nrt=True)).items()
           if not all(widened(t) == widened(v[0]) for t in v[1])}
    assert not bad, f"wg_c: variables typed without SSA as none of their assignments: {bad}"


def test_the_tma_rows_type_each_variable_as_its_assignments():
    """``fastcore.bulkx`` (the TMA box copies: ``bulkcall.bulk_c``, ``bulkcall.mc_c``) compiles its functions with the
    lean pipeline: none types a variable as none of its assignments is typed with SSA, nor a float. The signatures
    are those the two C-callable entries call them with, then those of the functions they call, in turn."""
    from numba.core.dispatcher import Dispatcher
    from emulator.machine.fastcore import bulkcall, bulkx
    lean_fns = {d.py_func for d in vars(bulkx).values()
                if getattr(getattr(d, "_compiler", None), "pipeline_class", None) is bulkx.LEAN}
    want = {"bulk_rows", "pump", "groups", "_load", "_store", "_multicast", "_complete", "_decode", "_record"}
    assert {f.__name__ for f in lean_fns} >= want
    todo = [(bulkcall.bulk_c, tuple(bulkcall.SIG.args)), (bulkcall.mc_c, tuple(bulkcall.SIG.args))]
    done, checked = set(), set()
    while todo:
        fn, sig = todo.pop()
        if (fn, sig) in done:
            continue
        done.add((fn, sig))
        typed = ssa_types(fn, sig, nrt=fn not in lean_fns)     # (the entries make their arrays with carray)
        calls = dict(_TYPED["calltypes"])
        if fn in lean_fns:
            lean_map = lean_types(fn, sig)
            got = unified(lean_map, typed)
            assert not got, f"{fn.__name__}: variables typed without SSA as none of their assignments: {got}"
            assert not floats(lean_map), f"{fn.__name__}: variables typed as floats: {floats(lean_map)}"
            checked.add(fn.__name__)
        for expr, csig in calls.items():
            if getattr(expr, "op", None) != "call" or csig is None:
                continue
            disp = getattr(typed.get(expr.func.name), "dispatcher", None)
            if isinstance(disp, Dispatcher) and disp.py_func.__module__ == bulkx.__name__:
                todo.append((disp.py_func, tuple(csig.args)))
    assert checked >= want, want - checked


def test_the_register_helpers_and_the_small_families_type_each_variable_as_its_assignments():
    """``fastcore.regs`` (the register reads and writes every family and both loops link), ``shfl``, ``cpasync`` and
    the ``alu_f32`` entry compile with the lean pipeline: none types a variable as none of its assignments is
    typed with SSA (``regs._scatter``'s bit walk once named its lane as the lane loops above it, uint64 against
    int64: float64 without SSA). The signatures are those the families' entries and ``memplan.plan_c`` call them
    with, then those of the functions they call, in turn."""
    from numba.core.dispatcher import Dispatcher
    from emulator.machine.fastcore import ccall, cpasync, families, memplan, regs, shfl
    assert {"alu_f32", "shfl", "cpasync"} <= set(families.LEAN)
    mine = {regs.__name__, shfl.__name__, cpasync.__name__}
    lean_fns = {d.py_func for mod in (regs, shfl, cpasync) for d in vars(mod).values()
                if getattr(getattr(d, "_compiler", None), "pipeline_class", None) is regs.LEAN}
    assert {f.__name__ for f in lean_fns} >= {"_rd", "_gather", "_scatter", "_copy_src", "_copy_dst", "_shfl",
                                              "cp_step", "_wait"}
    entries = {families._entry(n) for n in ("alu_f32", "shfl", "cpasync")}
    todo = [(families._entry(n), tuple(ccall.SIG.args)) for n in ("alu", "alu_f32", "shfl", "cpasync")]
    todo.append((memplan.plan_c, tuple(memplan.SIG.args)))
    done, checked = set(), set()
    while todo:
        fn, sig = todo.pop()
        if (fn, sig) in done:
            continue
        done.add((fn, sig))
        nrt = fn is memplan.plan_c
        typed = ssa_types(fn, sig, nrt=nrt)
        calls = dict(_TYPED["calltypes"])
        if fn in lean_fns or fn in entries:
            got = unified(lean_types(fn, sig, nrt=nrt), typed)
            assert not got, f"{fn.__name__}: variables typed without SSA as none of their assignments: {got}"
            checked.add(fn.__name__)
        for expr, csig in calls.items():
            if getattr(expr, "op", None) != "call" or csig is None:
                continue
            disp = getattr(typed.get(expr.func.name), "dispatcher", None)
            if isinstance(disp, Dispatcher) and (disp.py_func.__module__ in mine or disp is memplan._mem_plan):
                todo.append((disp.py_func, tuple(csig.args)))
    assert checked >= {"_rd", "_gather", "_scatter", "_copy_src", "_copy_dst", "_shfl", "cp_step", "_wait",
                       "entry_f32", "entry"}, checked
