"""The package's INNER helpers (``numerics.jitcache.INNER``: no wrapper, only called by other jitted code) are
compiled into link-only libraries (``jitcache.link_only``): no machine code of their own, cached as bitcode, linked
into each caller, which optimises and emits them as before. And numba's typing shortcuts (``scalar_operators``,
``quick_flags``, ``quick_order``) give numba's own answers."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from emulator.numerics import jitcache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = textwrap.dedent('''
    import numpy as np
    from numba import njit
    from emulator.numerics.jitcache import INNER

    @njit(cache=True, **INNER)
    def twist(a, k):
        s = np.uint64(0)
        for i in range(a.shape[0]):
            s = (s * np.uint64(0x9E3779B97F4A7C15) + a[i] + np.uint64(k)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        return s

    @njit(cache=True)
    def first(a):
        return twist(a, np.int64(3))

    @njit(cache=True)
    def second(a):
        return twist(a, np.int64(5)) ^ np.uint64(1)
''')

CHILD = textwrap.dedent('''
    import json, sys
    import numpy as np
    from emulator.numerics import jitcache
    jitcache.prepare()
    jitcache.link_only(sys.argv[1])
    sys.path.insert(0, sys.argv[1])
    import lk
    a = np.arange(1, 40, dtype=np.uint64) * np.uint64(0x1234567)
    out = {}
    for name in sys.argv[2:]:
        out[name] = int(getattr(lk, name)(a))
    ov = list(lk.twist.overloads.values())
    out["library"] = type(ov[0].library).__name__ if ov else None
    out["address"] = ov[0].library.get_pointer_to_function(ov[0].fndesc.llvm_func_name) if ov else None
    out["twist_hits"] = sum(lk.twist.stats.cache_hits.values())
    print(json.dumps(out))
''')


def _twist(a, k):
    s = 0
    for x in a:
        s = (s * 0x9E3779B97F4A7C15 + int(x) + k) & 0xFFFFFFFFFFFFFFFF
    return s


def _run(tmp, *names):
    import json
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "cache"),
               PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp / "src"), *names], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# (prepare applies them only for the numba releases they were checked against; any other keeps numba's own code)
needs_checked = pytest.mark.skipif(not jitcache.shortcuts_checked(),
                                   reason="a numba release outside jitcache.CHECKED_NUMBA: numba's own code runs")


def test_shortcuts_only_for_checked_numba_and_opt_out(tmp_path):
    """``prepare`` leaves numba as it is with WARPEMU_NUMBA_SHORTCUTS=0 or a release it was not checked against, and
    the package still runs (a fresh process, an INNER helper compiled: numba's own library)."""
    child = textwrap.dedent("""
        import json, sys
        import numpy as np
        from emulator.numerics import jitcache
        if sys.argv[1] == "other":
            import numba
            numba.__version__ = "0.1.0"
        jitcache.prepare()
        from numba import njit
        from numba.core.typing import npydecl
        from emulator.machine.fastcore import loop

        @njit
        def caller(pc):
            return loop._one_group(pc, np.int64(0xFFFFFFFF), np.int64(0xFFFFFFFF))

        got = int(caller(np.full(32, 7, np.int16)))
        cres = next(c for sig, c in loop._one_group.overloads.items() if str(sig[0].dtype) == "int16")
        print(json.dumps([jitcache.shortcuts_checked(), type(cres.library).__name__, got,
                          getattr(npydecl.NumpyRulesArrayOperator, "_warpemu_scalar", False)]))
    """)
    for how in ("off", "other"):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / how),
                   PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
        if how == "off":
            env["WARPEMU_NUMBA_SHORTCUTS"] = "0"
        out = subprocess.run([sys.executable, "-c", child, how], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        import json
        assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, "JITCodeLibrary", 7, False], how


@needs_checked
def test_inner_helper_is_link_only_and_cached_as_bitcode(tmp_path):
    """One process compiles ``first`` (and its INNER helper, link-only: no address, cached as bitcode); the next
    compiles ``second`` with the helper loaded from the cache and linked in; the third loads both callers. Every
    result is the readable one."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lk.py").write_text(MODULE)
    a = np.arange(1, 40, dtype=np.uint64) * np.uint64(0x1234567)
    want1, want2 = _twist(a, 3), _twist(a, 5) ^ 1
    r = _run(tmp_path, "first")
    assert r["first"] == want1
    assert r["library"] == "LinkOnlyLibrary" and r["address"] == 0 and r["twist_hits"] == 0
    r = _run(tmp_path, "second")                 # the helper from the cache (bitcode), linked into a new caller
    assert r["second"] == want2 and r["twist_hits"] == 1 and r["library"] == "LinkOnlyLibrary"
    r = _run(tmp_path, "first", "second")        # both callers from the cache: the helper is not needed
    assert (r["first"], r["second"]) == (want1, want2) and r["twist_hits"] == 0 and r["library"] is None


@needs_checked
def test_package_inner_helpers_are_link_only():
    """The fast engine's own helpers are link-only (one compiled here for a signature of its own, through a
    caller)."""
    from numba import njit
    from emulator.machine.fastcore import loop

    @njit
    def caller(pc, live, come):
        return loop._one_group(pc, live, come)

    pc = np.full(32, 7, np.int32)
    assert caller(pc, np.int64(0xFFFFFFFF), np.int64(0xFFFFFFFF)) == 7
    pc[3] = 8
    assert caller(pc, np.int64(0xFFFFFFFF), np.int64(0xFFFFFFFF)) == -1
    cres = next(c for sig, c in loop._one_group.overloads.items() if str(sig[0].dtype) == "int32")
    assert type(cres.library).__name__ == "LinkOnlyLibrary"
    assert cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name) == 0


def test_link_only_leaves_other_code_alone():
    """A function with a wrapper, or outside the roots given, keeps numba's own library."""
    from numba import njit
    jitcache.prepare()

    @njit(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    def inner(x):
        return x + 1

    @njit
    def outer(x):
        return inner(x) * 2

    assert outer(20) == 42
    (_, cres), = inner.overloads.items()
    assert type(cres.library).__name__ == "JITCodeLibrary"


def test_quick_flags_answer_as_numba():
    """Equality and hash of compile flags against their definition (the dicts of all options), on random pairs."""
    import random
    from numba.core.compiler import Flags
    jitcache.prepare()
    eq = Flags.__eq__
    assert getattr(eq, "__wrapped__", None) is not None          # (the shortcut is installed)
    names = [k for k, o in Flags.options.items() if o.type is bool]
    rng = random.Random(7)
    seen = set()
    for _ in range(2000):
        a, b = Flags(), Flags()
        for f in (a, b):
            for k in rng.sample(names, rng.randint(0, 5)):
                setattr(f, k, rng.random() < 0.5)
        want = {k: getattr(a, k) for k in a.options} == {k: getattr(b, k) for k in b.options}
        assert (a == b) == want == eq.__wrapped__(a, b)
        assert hash(a) == hash(b) == hash(tuple(sorted({k: getattr(a, k) for k in a.options})))
        seen.add(want)
    assert seen == {True, False}


def test_scalar_operators_and_template_order_answer_as_numba():
    """The ufunc operator template: nothing for scalars, numba's answer when an operand is an array; the template
    order: numba's for the operators' function types (the first time and from the memo)."""
    import operator
    from numba import types
    from numba.core import utils
    from numba.core.registry import cpu_target
    from numba.core.target_extension import get_local_target
    from numba.core.typing import npydecl
    jitcache.prepare()
    ctx = cpu_target.typing_context
    ctx.refresh()
    tmpl = ctx._lookup_global(operator.add).templates
    ufunc = next(t for t in tmpl if issubclass(t, npydecl.NumpyRulesArrayOperator))(ctx)
    generic = npydecl.NumpyRulesArrayOperator.generic
    arr = types.Array(types.float32, 1, "C")
    for args in ((types.int64, types.uint64), (types.float32, types.float32), (arr, types.float32),
                 (types.int32, arr), (types.Optional(arr), types.int64)):
        assert generic(ufunc, args, {}) == generic.__wrapped__(ufunc, args, {})
    assert generic(ufunc, (types.int64, types.int64), {}) is None
    assert generic(ufunc, (arr, types.float32), {}) is not None
    order = utils.order_by_target_specificity
    target = get_local_target(ctx)
    for op in (operator.add, operator.and_, operator.lt, operator.getitem):
        templates = ctx._lookup_global(op).templates
        for _ in range(2):
            assert order(target, templates, "x") == order.__wrapped__(target, templates, "x")
