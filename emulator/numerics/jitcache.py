"""Whether numba's cache holds a valid compilation of a jitted function (so calling it costs no compile), and
whether a background process is compiling the jitted kernels now (``machine.fastcore.warmup`` tells,
through ``PROBE``): while it does, the executors that have a numpy path (``numerics.tile_numpy``) take it instead of compiling here."""
from __future__ import annotations

import os


def in_cache(disp) -> bool:
    """True when numba's cache holds a valid compilation of ``disp`` for this machine."""
    try:
        cache = disp._cache
        index = cache._cache_file._load_index()
        codegen = disp.targetctx.codegen()
        return any(cache._index_key(key[0], codegen) == key for key in index)
    except Exception:                      # an unreadable or foreign cache: treat as absent
        return False


_PREPARED = []


def prepare():
    """Before the package's first jitted function loads from numba's cache: drop stale cached functions
    (``guard``) and make cache faults fall back to compiling (``harden``). Once per process; every module
    with jitted functions calls it when it is imported, so that ``import emulator`` does not import numba."""
    if _PREPARED:
        return
    _PREPARED.append(True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        guard(root)
    except Exception:                      # noqa: BLE001 (never let the cache check stop an import)
        pass
    try:
        harden(root)
    except Exception:                      # noqa: BLE001 (a numba without these internals: its own behaviour)
        pass
    try:
        lazy_caches(root)
    except Exception:                      # noqa: BLE001 (idem: numba then finds each function's cache at once)
        pass
    if not shortcuts_checked():
        return
    try:
        link_only(root)
    except Exception:                      # noqa: BLE001 (idem: numba then finalizes every helper itself)
        pass
    try:
        scalar_operators()
        quick_flags()
        quick_order()
    except Exception:                      # noqa: BLE001 (idem: numba's own typing)
        pass


# the numba releases whose internals ``link_only`` and the typing shortcuts (``scalar_operators``, ``quick_flags``,
# ``quick_order``) were checked against (tests/test_linkonly.py): they replace pieces of numba's code generation
# and typing for the whole process, so with any other release, or with WARPEMU_NUMBA_SHORTCUTS=0, numba compiles
# and types as it does itself (the same bits, a slower first compile)
CHECKED_NUMBA = ((0, 68),)


def shortcuts_checked() -> bool:
    """True when ``prepare`` applies ``link_only`` and the typing shortcuts in this process."""
    if os.environ.get("WARPEMU_NUMBA_SHORTCUTS", "1").strip() == "0":
        return False
    try:
        import numba
        version = tuple(int(x) for x in numba.__version__.split(".")[:2])
    except Exception:                      # noqa: BLE001 (a development build's version string: not checked)
        return False
    return version in CHECKED_NUMBA


# the options of a jitted helper that only other jitted functions call: numba then builds neither the wrapper
# through which Python would call it nor the C-callable one (their lowering and LLVM passes are compile time
# spent on every helper of the loops and families, for code nothing runs). Calling such a helper from Python
# is not possible: keep it off functions that Python, tests or the executors call.
INNER = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


# ------------------------------------------------------------------------------------------------------------
# An INNER helper is only ever linked into its callers (numba links the callee's optimised LLVM module into the
# caller's, and optimises and emits the whole again), yet numba finalizes its library as for any function:
# machine code that nothing calls, and that object code written to the cache. ``link_only`` gives the package's
# INNER helpers a library that optimises its module for linking and stops there: the callers' code generation
# emits it, as it already did.

LINK_KIND = "warpemu-link"             # the cache entry of such a helper: its module's bitcode


class _NoEnv:
    """The codegen as a link-only library shows it: no environment to set (numba writes the address of a compiled
    function's environment into its machine code, which such a library does not have)."""

    def __init__(self, codegen):
        self._codegen = codegen

    def set_env(self, env_name, env):
        pass

    def __getattr__(self, name):
        return getattr(self._codegen, name)


def _link_only_class():
    from numba.core.codegen import JITCodeLibrary, require_global_compiler_lock

    class LinkOnlyLibrary(JITCodeLibrary):
        """A library whose functions are only linked into other libraries (an INNER helper's): finalizing it
        links its own callees in and optimises the module, and stops there (no machine code); it has no address.
        (Leaving the module passes to the callers too saves as much again, but changes what LLVM inlines: some
        rows of ``benchmarks/bench_rows.py`` ran 7-11 % slower, others 5 % faster.)"""

        def finalize(self):
            require_global_compiler_lock()
            self._raise_if_finalized()
            seen = set()
            for library in self._linking_libraries:
                if library not in seen:
                    self._reload_init.update(library._reload_init)
                    seen.add(library)
                    self._final_module.link_in(library._get_module_for_linking(), preserve=True)
            self._optimize_final_module()  # (its callers' code is as before: they link this optimised module)
            self._final_module.verify()
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            self._finalized = True

        def get_pointer_to_function(self, name):
            self._ensure_finalized()
            return 0                       # (an INNER function has neither wrapper: numba asks for none else)

        @property
        def codegen(self):
            return _NoEnv(self._codegen)

        def serialize_using_object_code(self):
            return (self.name, LINK_KIND, self._get_module_for_linking().as_bitcode())

    return LinkOnlyLibrary


def scalar_operators():
    """numba types every ``+``, ``&``, ``<`` ... by trying, among its templates, NumPy's ufunc rules
    (``NumpyRulesArrayOperator``), which match the operands against the ufunc's loops and only then return
    nothing when no operand is an array: several percent of the loops' typing. Here that template returns nothing at
    once for operands of which none is an array (nor an optional array): the same answer. Idempotent."""
    from numba.core import types
    from numba.core.typing import npydecl
    op = npydecl.NumpyRulesArrayOperator
    if getattr(op, "_warpemu_scalar", False):
        return
    generic = op.generic

    def quick(self, args, kws):
        if kws:
            return generic(self, args, kws)
        for a in args:
            if isinstance(a.type if isinstance(a, types.Optional) else a, types.ArrayCompatible):
                return generic(self, args, kws)
        return None

    quick.__wrapped__ = generic
    op.generic = quick
    op._warpemu_scalar = True


def quick_flags():
    """numba keys its overload implementations by the compile flags (``TargetConfig``), whose hash and equality
    build the dict of all ~40 options every time (``values()``): a few percent of the loops' typing. The hash is
    that of the sorted option names (the same for every instance of a class), kept per class; two configurations
    of one class compare only the options either has set (the others are their defaults on both sides). The same
    answers.
    Idempotent."""
    from numba.core.targetconfig import TargetConfig
    if getattr(TargetConfig, "_warpemu_quick", False):
        return
    eq = TargetConfig.__eq__
    hashes = {}

    def __hash__(self):
        cls = type(self)
        h = hashes.get(cls)
        if h is None:
            h = hashes[cls] = hash(tuple(sorted(self.options)))
        return h

    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is not type(self):
            return eq(self, other)
        a, b = self._values, other._values     # (an option set in neither is its default on both sides)
        opts = self.options
        for k in a.keys() | b.keys():
            d = opts[k].default
            x, y = a.get(k, d), b.get(k, d)
            if not (x is y or x == y):
                return False
        return True

    __eq__.__wrapped__ = eq
    TargetConfig.__hash__ = __hash__
    TargetConfig.__eq__ = __eq__
    TargetConfig._warpemu_quick = True


def quick_order():
    """numba orders a function type's typing templates by target (``utils.order_by_target_specificity``) at every
    call it types, again and again for the same templates: the order is kept here by target and templates (the
    same list; an error, when no template suits the target, is raised each time as numba does). Idempotent."""
    from numba.core import utils
    from numba.core.typing import context
    if getattr(utils, "_warpemu_order", False):
        return
    order = utils.order_by_target_specificity
    memo = {}

    def quick(target, templates, fnkey=""):
        try:
            key = (target, tuple(templates))
            got = memo.get(key)
        except TypeError:                  # (something unhashable: as numba does)
            return order(target, templates, fnkey)
        if got is None:
            got = memo[key] = tuple(order(target, templates, fnkey))
        return list(got)

    quick.__wrapped__ = order
    utils.order_by_target_specificity = quick
    if context.order_by_target_specificity is order:
        context.order_by_target_specificity = quick
    utils._warpemu_order = True


_LINK_ROOTS = []


def link_only(root):
    """The INNER functions (``INNER``: neither wrapper) defined under ``root`` (a folder) are compiled into a library
    that is only linked into their callers (``LinkOnlyLibrary`` above), and cached as LLVM bitcode. Idempotent.
    The bitcode is an entry of numba's own index, keyed as every entry is by the target triple, CPU name and
    features (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``): a cache shared with a machine of another CPU never links
    bitcode optimised for it (``tests/test_cpu_targets.py``)."""
    root = os.path.join(os.path.abspath(root), "")
    if root not in _LINK_ROOTS:
        _LINK_ROOTS.append(root)
    from numba.core import typed_passes
    from numba.core.codegen import JITCodeLibrary
    from llvmlite import binding as ll
    if getattr(typed_passes.BaseNativeLowering, "_warpemu_link_only", False):
        return
    cls = _link_only_class()
    lower = typed_passes.BaseNativeLowering.run_pass
    unserialize = JITCodeLibrary._unserialize.__func__

    def run_pass(self, state):
        f = state.flags
        if state.library is None and f.no_cpython_wrapper and f.no_cfunc_wrapper and not f.no_compile:
            try:
                mine = os.path.abspath(state.func_id.filename).startswith(tuple(_LINK_ROOTS))
            except Exception:              # noqa: BLE001 (no file: not ours)
                mine = False
            if mine:
                state.library = cls(state.targetctx.codegen(), state.func_id.func_qualname)
                state.library.enable_object_caching()
        return lower(self, state)

    def _unserialize(klass, codegen, state):
        if state[1] != LINK_KIND:
            return unserialize(klass, codegen, state)
        lib = cls(codegen, state[0])
        lib._final_module = ll.parse_bitcode(state[2])
        lib._shared_module = lib._final_module
        lib._finalized = True
        return lib

    typed_passes.BaseNativeLowering.run_pass = run_pass
    JITCodeLibrary._unserialize = classmethod(_unserialize)
    typed_passes.BaseNativeLowering._warpemu_link_only = True


_LEAN = []


def lean():
    """numba's compiler pipeline for integer-only code such as the fast engine's loops (a ``pipeline_class``):
    numba's default one without the passes that code never needs (closure inlining, the rewrites after typing,
    literal unrolling and propagation, with-lifting) and without SSA: numba types a variable once for all its
    assignments instead of each assignment apart, and LLVM's own passes turn the variables into registers as before.
    About a third less of numba's own compile time for the warp loop. What it must not meet: a variable assigned
    values of different types (numba would unify them, int64 with uint64 as float64);
    ``tests/test_lean_pipeline.py`` checks that the integer functions compiled with it (the loops, ``fastcore.ldst``)
    type no float at all, and that the others (``tc_row``, ``families.LEAN``) type no variable as none of its
    assignments is typed with SSA. Imports numba: call it from modules that do."""
    if _LEAN:
        return _LEAN[0]
    from numba.core.compiler import CompilerBase
    from numba.core.compiler_machinery import PassManager
    from numba.core import untyped_passes as U, typed_passes as P

    class Lean(CompilerBase):
        def define_pipelines(self):
            pm = PassManager("lean")
            if self.state.func_ir is None:
                pm.add_pass(U.TranslateByteCode, "analyzing bytecode")
                pm.add_pass(U.FixupArgs, "fix up args")
            pm.add_pass(U.IRProcessing, "processing IR")
            pm.add_pass(U.RewriteSemanticConstants, "rewrite semantic constants")
            pm.add_pass(U.DeadBranchPrune, "dead branch pruning")
            pm.add_pass(U.GenericRewrites, "nopython rewrites")
            pm.add_pass(U.RewriteDynamicRaises, "rewrite dynamic raises")
            pm.add_pass(U.InlineInlinables, "inline inlinable functions")
            pm.add_pass(P.NopythonTypeInference, "nopython frontend")
            pm.add_pass(P.InlineOverloads, "inline overloaded functions")
            pm.add_pass(P.IRLegalization, "ensure IR is legal prior to lowering")
            pm.add_pass(P.AnnotateTypes, "annotate types")
            pm.add_pass(P.NativeLowering, "native lowering")
            pm.add_pass(P.NoPythonBackend, "nopython mode backend")
            pm.finalize()
            return [pm]
    _LEAN.append(Lean)
    return Lean

PROBE = [None]          # set by machine.fastcore.warmup: () -> whether its background compile is running


def compiling() -> bool:
    """True while the background process compiles the jitted kernels (``machine.fastcore.warmup`` starts
    it when they are neither compiled nor cached, unless WARPEMU_BACKGROUND_COMPILE=0)."""
    probe = PROBE[0]
    return probe is not None and probe()


# ------------------------------------------------------------------------------------------------------------
# numba checks a cached function against its own source file only, but the fast engine's loops inline code
# from other files (table constants, the mma and cp.async helpers, ...): after an in-place update of those
# files a cached loop would run the old code. ``guard`` keeps a fingerprint of the package's sources next to
# each of its numba cache directories and drops the package's cached functions there when it changes.

STAMP = "warpemu.fingerprint"
# besides the files with cached functions, the folders whose code and constants those functions inline
DEPENDS = (os.path.join("numerics", ""), os.path.join("machine", "fastcore", ""))


def _dummy():
    pass


def _cache_dir(py_file):
    """The directory numba caches the functions of ``py_file`` in (as its locators choose), or None."""
    from numba.core.caching import CacheImpl
    for cls in CacheImpl._locator_classes:
        try:
            loc = cls.from_function(_dummy, py_file)
        except Exception:
            loc = None
        if loc is not None:
            return loc.get_cache_path()
    return None


def guard(root):
    """Drop numba's cached functions of the package under ``root`` when its sources changed since they were
    cached (a fingerprint of the files with cached functions and of the folders in ``DEPENDS``, kept in each
    cache directory). Returns the directories cleared."""
    import glob
    import hashlib
    files = sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True))
    h = hashlib.sha1()
    jitted = []
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        rel = os.path.relpath(f, root)
        if b"cache=True" in data:
            jitted.append(f)
        elif not rel.startswith(DEPENDS):
            continue                       # nothing jitted reads this file
        h.update(rel.encode() + b"\0" + data)
    fp = h.hexdigest()
    dirs = {}
    for f in jitted:
        d = _cache_dir(f)
        if d is not None:
            dirs.setdefault(d, set()).add(os.path.splitext(os.path.basename(f))[0])
    cleared = []
    for d, stems in dirs.items():
        stamp = os.path.join(d, STAMP)
        try:
            with open(stamp) as fh:
                if fh.read() == fp:
                    continue
        except OSError:
            pass
        try:
            for name in os.listdir(d):
                if name.endswith((".nbi", ".nbc")) and name.split(".")[0] in stems:
                    os.remove(os.path.join(d, name))
            with open(stamp, "w") as fh:
                fh.write(fp)
            cleared.append(d)
        except OSError:                    # a cache another process is updating, or read-only: leave it
            pass
    return cleared


# ------------------------------------------------------------------------------------------------------------
# A cache that cannot be read or written (a full disk, a read-only folder, a truncated or foreign file) must
# not stop a launch: ``harden`` makes numba's cache loads and saves for this package's functions fall back to
# compiling without the cache, with one warning per process.

_WARNED = []


def _warn_once(what, path, exc):
    if not _WARNED:
        _WARNED.append(path)
        import warnings
        warnings.warn(f"warpemu: numba's cache in {path} could not be {what} ({type(exc).__name__}: "
                      f"{str(exc)[:120]}); compiling without it", RuntimeWarning, stacklevel=4)


NO_ANNOTATION = "(warpemu: the type annotation is not kept in numba's cache)"


def harden(root):
    """Guard numba's cache loads and saves of the functions defined under ``root``. Idempotent."""
    from numba.core.caching import Cache
    if getattr(Cache, "_warpemu_hardened", False):
        return
    load, save = Cache.load_overload, Cache.save_overload

    def ours(cache):
        try:
            return os.path.abspath(cache._py_func.__code__.co_filename).startswith(root)
        except Exception:                  # noqa: BLE001 (not a plain Python function: not ours)
            return False

    def load_overload(self, sig, target_context):
        if not ours(self):
            return load(self, sig, target_context)
        try:
            # numba refreshes the target context before every cache load (it installs every typing and lowering
            # registry: about 0.3 s of CPU, the largest part of a warm process's first launch); loading a compiled
            # function needs none of them, only the reference-counting runtime's symbols (which that refresh
            # would register first), and every compile refreshes the context itself first
            from numba.core.runtime import rtsys
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        except Exception as e:             # noqa: BLE001 (unpickling errors, OSError, foreign data)
            _warn_once("read", getattr(self, "_cache_path", "?"), e)
            return None                    # numba compiles, as on a cache miss

    def save_overload(self, sig, data):
        if not ours(self):
            return save(self, sig, data)
        try:
            # numba keeps the text of the function's type annotation (every line with the types of its variables)
            # in the cache, for ``inspect_types`` of a cached function: about half of what reducing a compiled
            # function to its cache entry costs (0.1 s of a first launch), and nothing reads it; a placeholder
            data = data._replace(type_annotation=NO_ANNOTATION)
        except Exception:                  # noqa: BLE001 (not a CompileResult: as numba has it)
            pass
        try:
            return save(self, sig, data)
        except Exception as e:             # noqa: BLE001 (a full disk, a read-only folder)
            _warn_once("written", getattr(self, "_cache_path", "?"), e)
            return None

    Cache.load_overload, Cache.save_overload = load_overload, save_overload
    Cache._warpemu_hardened = True


# ------------------------------------------------------------------------------------------------------------
# numba finds a cached function's place in its cache when the function is decorated: for each of the package's
# jitted functions (~230 with the launch path) a stat of its source, a ``makedirs`` and a temporary file written and
# removed (to see that the folder is writable), 0.03-0.04 s of a process's CPU, though a warm launch loads only the
# loops (the families are C callbacks with caches of their own; the helpers are linked into both). ``lazy_caches`` makes that search happen on the function's first compile
# or cache load instead; a function whose cache cannot be placed then compiles without one (numba itself would
# have refused the import).


def _where(py_func):
    from numba.core import config
    try:
        return config.CACHE_DIR or os.path.dirname(py_func.__code__.co_filename)
    except Exception:                      # noqa: BLE001
        return "?"


class LazyCache:
    """A jitted function's numba cache (``FunctionCache``), made on first use."""

    __slots__ = ("_py_func", "_real")

    def __init__(self, py_func):
        self._py_func = py_func
        self._real = None

    def _get(self):
        real = self._real
        if real is None:
            from numba.core.caching import FunctionCache, NullCache
            try:
                real = FunctionCache(self._py_func)
            except Exception as e:         # noqa: BLE001 (no writable place for it: compile without a cache)
                _warn_once("placed", _where(self._py_func), e)
                real = NullCache()
            self._real = real
        return real

    @property
    def made(self) -> bool:
        """Whether the cache was needed in this process (tests)."""
        return self._real is not None

    def __getattr__(self, name):
        return getattr(self._get(), name)


_LAZY_ROOTS = []


def lazy_caches(root):
    """numba's caches of the jitted functions defined under ``root`` (a folder) are made on their first use
    (``LazyCache``). Idempotent."""
    from numba.core.dispatcher import Dispatcher
    root = os.path.join(os.path.abspath(root), "")
    if root not in _LAZY_ROOTS:
        _LAZY_ROOTS.append(root)
    if getattr(Dispatcher, "_warpemu_lazy", False):
        return
    enable = Dispatcher.enable_caching

    def enable_caching(self):
        try:
            mine = os.path.abspath(self.py_func.__code__.co_filename).startswith(tuple(_LAZY_ROOTS))
        except Exception:                  # noqa: BLE001 (not a plain Python function: not ours)
            mine = False
        if not mine:
            return enable(self)
        self._cache = LazyCache(self.py_func)

    enable_caching.__wrapped__ = enable
    Dispatcher.enable_caching = enable_caching
    Dispatcher._warpemu_lazy = True


# ------------------------------------------------------------------------------------------------------------
# One compile per machine: the process that compiles the package's jitted functions holds ``LOCK_NAME`` in
# numba's cache directory, and the others see it held (``CompileLock.busy``) and do not compile the same code
# beside it. With ``fcntl`` the lock is an advisory ``flock``: the kernel drops it when its holder dies, so a
# killed compile leaves no stale lock. Without ``fcntl`` the file itself is the lock (``O_CREAT | O_EXCL``,
# holding the holder's pid); a file whose process is gone, or older than ``STALE_S``, is stale and removed.

LOCK_NAME = "warpemu.compile.lock"
STALE_S = 3600.0

try:
    import fcntl as _fcntl
except ImportError:                        # pragma: no cover (Windows)
    _fcntl = None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):     # another user's live process, or a platform without signal 0
        return True
    return True


class CompileLock:
    """The compile lock of one cache directory. ``acquire(blocking)`` returns whether this process holds it
    now; ``busy()`` tells whether another process holds it. A directory that cannot hold the file (read-only,
    missing) gives a lock that is never busy and is always acquired (each process then compiles for itself,
    as numba does)."""

    def __init__(self, directory):
        self.path = os.path.join(directory, LOCK_NAME) if directory else None
        self._fd = None
        self._depth = 0                    # nested acquisitions by this process

    @property
    def held(self):
        return self._fd is not None

    def acquire(self, blocking=False) -> bool:
        if self._fd is not None:
            self._depth += 1
            return True
        if self.path is None:
            return True
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        except OSError:
            return True
        if _fcntl is not None:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError:
                return True                # no lock possible here: compile as numba would
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | (0 if blocking else _fcntl.LOCK_NB))
            except OSError:
                os.close(fd)
                return False
            try:
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
            except OSError:
                pass
            self._fd = fd
            return True
        import time
        while True:                        # pragma: no cover (no fcntl)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                if self._stale():
                    try:
                        os.remove(self.path)
                    except OSError:
                        pass
                    continue
                if not blocking:
                    return False
                time.sleep(0.2)
                continue
            except OSError:
                return True
            os.write(fd, str(os.getpid()).encode())
            self._fd = fd
            return True

    def _stale(self):                      # pragma: no cover (no fcntl)
        import time
        try:
            with open(self.path) as fh:
                pid = int(fh.read().strip() or 0)
            age = time.time() - os.path.getmtime(self.path)
        except (OSError, ValueError):
            return True
        return pid <= 0 or not _alive(pid) or age > STALE_S

    def release(self):
        if self._depth:
            self._depth -= 1
            return
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if _fcntl is not None:
            try:
                _fcntl.flock(fd, _fcntl.LOCK_UN)
            finally:
                os.close(fd)
            return
        os.close(fd)                       # pragma: no cover (no fcntl)
        try:
            os.remove(self.path)
        except OSError:
            pass

    def busy(self) -> bool:
        """True while another process holds the lock (it is compiling)."""
        if self._fd is not None or self.path is None:
            return False
        if _fcntl is not None:
            try:
                fd = os.open(self.path, os.O_RDWR)
            except OSError:
                return False               # no file: nobody ever compiled here
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except OSError:
                return True
            finally:
                os.close(fd)               # closing drops the probe's lock
            return False
        return os.path.exists(self.path) and not self._stale()    # pragma: no cover (no fcntl)

    def __enter__(self):
        self.acquire(blocking=True)
        return self

    def __exit__(self, *exc):
        self.release()
