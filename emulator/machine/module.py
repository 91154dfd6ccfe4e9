"""A loaded PTX module and its launches: names, module variables, parameters, the grid loop."""
import atexit
import copy
import functools
import gc
import os
import re
import struct
import sys
import weakref

import numpy as np

from isa.targets import DEFAULT_ARCH, parse_target
from isa.types import TYPES
from ..errors import (EmulatorError, OperandError, PTXSyntaxError, PTXValidationError, UnsupportedError)
from ..frontend.module import parse_module, source_of_line
from ..frontend.ptx import deep_scopes
from ..frontend.validate import validate_module
from ..memory import LANES, MAX_SHARED_BYTES, GlobalMemory
from .warp import ARCHS, WarpOptions
from .cta import CTA
from .program import Program
from .result import LaunchResult
from .fastcore import warmup as _warmup
from . import residency as _residency
from .residency import occupancy, run_grid


ENGINES = ("auto", "fast", "reference")

_LAZY = {}      # "engine", "grid", "gridloop": those modules once a launch needed them (not at import: numba)
_CTAIDS = {}    # a grid (the checked dim3) -> its CtaIds (read-only: a launch slices or indexes it)


def _lazy(name):
    """``fastcore.engine``, ``machine.grid`` or ``fastcore.gridloop``, imported on first use and kept (an import
    statement in a function costs a few µs at every launch)."""
    got = _LAZY.get(name)
    if got is None:
        if name == "engine":
            from .fastcore import engine as got
        elif name == "grid":
            from . import grid as got
        else:
            from .fastcore import gridloop as got
        _LAZY[name] = got
    return got

_AT_LINE = re.compile(r"^line (\d+), column \d+: ")


def with_source(text, e):
    """An error raised while a kernel runs names, after the PTX line, the source line the module's debug information
    (``.loc``, ``nvcc -lineinfo``, Triton) gives for it (``launch``): ``... [at kernel.py:12]``.

    ``e`` with the source position of the PTX line its message names appended (the same ``e`` when the
    module has no line information there)."""
    msg = str(e)
    m = _AT_LINE.match(msg)
    if m is None or " [at " in msg:
        return e
    where = source_of_line(text, int(m.group(1)))
    if where is None:
        return e
    import linecache
    code = linecache.getline(where[0], where[1]).strip()
    e.args = (f"{msg} [at {where[0]}:{where[1]}" + (f": {code}" if code else "") + "]",) + tuple(e.args[1:])
    e.source = where
    return e


def load_ptx(text: str, arch: str | None = None, validate: bool = True, cache: bool = True) -> "Module":
    """Parse a PTX module (``nvcc -ptx`` output) and return a :class:`Module`. ``arch`` is the machine emulated:
    the H100 (``"sm_90"``) unless named, whatever the module's ``.target``.
    ``validate``: check the whole module as ptxas does and raise :class:`PTXValidationError` for what ptxas
    rejects (docs/kernels.md, "Validation"). ``False`` skips those rules, for PTX the emulator can run although
    ptxas refuses it (the executors still refuse what they cannot run).
    ``cache``: reuse what an earlier load of the same text built (the parsed module, its programs and their fast-engine
    translations; ``machine.modcache``, docs/speed.md); ``False`` parses and translates afresh. Either way the module's
    variables, and every launch's memory, are its own."""
    if not isinstance(text, str):
        raise OperandError(f"load_ptx: expected the PTX text (a str), not {type(text).__name__}")
    if arch is not None and not isinstance(arch, str):
        raise UnsupportedError(f"load_ptx: arch must be a string such as 'sm_90', not {arch!r}")
    if not isinstance(cache, (bool, np.bool_)):
        raise OperandError(f"load_ptx: cache must be True or False, not {cache!r}")
    return Module(text, arch, validate, bool(cache))


def _warm_launches(which="both"):
    """Tiny launches on the fast engine (``fastcore.warmup.KERNEL``): one the CTA loop runs (``which``: "cta"),
    one it cannot (a call: "warp"), or both; numba compiles the loops they run."""
    m = load_ptx(_warmup.KERNEL)
    g = GlobalMemory()
    a = g.alloc(64 * 4)
    if which in ("cta", "both"):
        m.launch("k", 1, 64, [a, 0], gmem=g, engine="fast")
        if not (g.download(a, 256).view(np.uint32) == np.arange(64)).all():
            raise AssertionError("the fast engine's warm-up launch (CTA loop) computed a wrong result")
    if which in ("warp", "both"):
        m.launch("kc", 1, 32, [a], gmem=g, engine="fast")
        if not (g.download(a, 128).view(np.uint32) == 2 * np.arange(32)).all():
            raise AssertionError("the fast engine's warm-up launch (warp loop) computed a wrong result")


_warmup.WARM_LAUNCHES[0] = _warm_launches


def _own_variables(info):
    """A shallow copy of the parsed module ``info`` with a variable table of its own (what a module, the module
    cache or a cached program may add to without touching the others')."""
    own = copy.copy(info)
    own.variables = dict(info.variables)
    return own


class _Scope:
    """What a cached program keeps of the module that compiled it: the parsed module, its variable table as the
    program saw it (``Program.module``)."""
    __slots__ = ("info",)

    def __init__(self, info):
        self.info = _own_variables(info)


class _no_cyclic_gc:
    """No cyclic garbage collection while a module is parsed or a program compiled: they make many objects and no
    garbage cycles, and a collection would walk them all, again and again. The caller's setting is restored on
    the way out, an error included."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()
        return False


def quick_exit():
    """At interpreter exit (an ``atexit`` handler, once this module is imported): collect the garbage there is, as
    the interpreter's own shutdown would (finalizers run, files close), then move every object still alive into
    the collector's permanent generation (``gc.freeze``). Python's shutdown then tears its modules down without
    walking the ~100,000 objects numba, its compiled functions and a launch keep alive in several full
    collections: about 0.2 s of CPU off the end of every process that launched a kernel, a third of a warm
    process's whole cost. What it changes: an object that becomes cyclic garbage only while the modules are
    torn down is freed by the operating system without its finalizer, which Python does not promise to run at
    exit either. ``WARPEMU_QUICK_EXIT=0`` leaves the shutdown as it is."""
    gc.collect()
    gc.freeze()


if os.environ.get("WARPEMU_QUICK_EXIT", "1").strip() != "0":
    atexit.register(quick_exit)


def _load_unvalidated(text, arch=None):
    """``load_ptx(..., validate=False)`` by name (what the workers of a launch of such a module load)."""
    return Module(text, arch, False)


class Module:
    """A loaded PTX module: its kernels, functions and module variables."""

    def __init__(self, text: str, arch: str | None = None, validate: bool = True, cache: bool = True):
        self.text = text
        self._validate = validate
        from . import modcache
        key = modcache.key(text, arch or DEFAULT_ARCH, validate) if cache and modcache.enabled() else None
        self._cached = modcache.lookup(key) if key is not None else None
        if self._cached is not None:                # (checked when it was first loaded; its variable table is ours)
            self.info = _own_variables(self._cached.info)
            self.target = self._cached.target
        else:
            self._parse(text, validate)
        # the machine emulated is the caller's choice, the H100 by default: .target only says which
        # instructions the module may use
        self.arch = arch or DEFAULT_ARCH
        if self.arch not in ARCHS:
            raise UnsupportedError(f"load_ptx: architecture {self.arch!r} is not supported; supported: "
                                   f"{', '.join(ARCHS)}")
        if key is not None and self._cached is None:
            self._cached = modcache.store(key, _own_variables(self.info), self.target)
        self._programs = {}
        self._resolved = {}               # kernel names as launches give them -> entry names
        self._san = None                  # the sanitizer of the launch under way (machine.sanitize)
        # gmem -> {name: address} of the module variables placed in it (a launch's memory dropped by its caller is
        # not kept alive by the module)
        self._globals = weakref.WeakKeyDictionary()
        self._function_vars = set()
        self._shapes = {}                 # a launch's arguments of plain ints -> its checked shape (launch)
        self._plans = {}                  # the same key -> its _LaunchPlan, or None (a shape the plans do not take)

    def _parse(self, text, validate):
        """Parse and validate the text (``info``, ``target``)."""
        try:
            with deep_scopes(), _no_cyclic_gc():
                self.info = parse_module(text)
                if validate:
                    validate_module(self.info)
        except PTXSyntaxError as e:        # everything ptxas refuses at load is a PTXValidationError
            if isinstance(e, PTXValidationError):
                raise
            raise PTXValidationError(str(e)) from None
        for v in self.info.variables.values():          # names in initializers: functions and variables
            for _, width, name, tok in v.relocs:
                other = self.info.variables.get(name)
                if name not in self.info.functions and (other is None or other.space not in ("global", "const")):
                    raise PTXValidationError(f"line {tok.line}, column {tok.col}: initializer of {v.name}: {name} is "
                                             f"not a function or a .global/.const variable of this module")
        self.target = None
        if self.info.target:
            try:
                self.target = parse_target(self.info.target)[0]
            except ValueError as e:
                raise UnsupportedError(f"load_ptx: {e}") from None

    def __repr__(self):
        ks = self.kernels
        shown = ", ".join(ks[:4]) + (f", ... ({len(ks)} in all)" if len(ks) > 4 else "")
        return (f"<Module {self.arch}" + (f" (.target {self.info.target})" if self.info.target else "") +
                f": kernel(s) {shown or 'none'}; {len(self.info.functions)} function(s), "
                f"{len(self.info.variables)} module variable(s)>")

    # -- names -------------------------------------------------------------------------------------
    @property
    def kernels(self):
        return [n for n, f in self.info.functions.items() if f.kind == "entry"]

    def resolve(self, name: str) -> str:
        """The entry name for a mangled or plain name (``ptx_mma_shared`` -> ``_Z14ptx_mma_shared...``)."""
        if not isinstance(name, str):
            raise OperandError(f"launch: the kernel name must be a string, not {name!r}")
        hit = self._resolved.get(name)
        if hit is not None:
            return hit
        ks = self.kernels
        if name in ks:
            self._resolved[name] = name
            return name
        hits = [k for k in ks if _plain_name(k) == name]
        if len(hits) == 1:
            self._resolved[name] = hits[0]
            return hits[0]
        if len(hits) > 1:
            raise OperandError(f"launch: {name!r} is ambiguous: {', '.join(hits)}")
        raise OperandError(f"launch: no kernel named {name!r}; kernels: {', '.join(ks) or 'none'}")

    def program(self, name: str) -> Program:
        entry = self.resolve(name)
        prog = self._programs.get(entry)
        if prog is None:
            cached = self._cached
            got = cached.program(entry) if cached is not None else None
            if got is None:
                before = set(self.info.variables)
                with deep_scopes(), _no_cyclic_gc():
                    prog = Program(self, self.info.functions[entry], self.arch)
                added = [v for n, v in self.info.variables.items() if n not in before]
                if cached is not None:
                    prog.module = _Scope(self.info)     # (a cached program keeps no module alive)
                    got = cached.keep_program(entry, prog, added)
            if got is not None:         # the module variables the program's functions declare become ours too
                prog, added = got
                for v in added:
                    self.info.variables.setdefault(v.name, v)
                tr = getattr(prog, "_fast", None)
                if tr is not None:
                    tr.handed_back[:] = 0       # (handback_counts: since this load)
            self._programs[entry] = prog
        return prog

    def _variables(self, gmem):
        addrs = self._globals.get(gmem)
        variables = self.info.variables
        if addrs is not None:           # (every .global/.const variable placed in gmem: nothing to look at)
            placed = self.__dict__.get("_placed")
            if placed is not None and placed[0] == len(variables) and placed[1] == len(addrs):
                return addrs
        else:
            addrs = {}
        for v in variables.values():
            if v.space in ("global", "const") and v.name not in addrs:
                a = gmem.alloc(max(v.size, 1))
                getattr(gmem, "_uninit", {}).pop(a, None)   # module variables start zeroed or initialised
                if v.init is not None:
                    gmem.write(a, np.frombuffer(v.init, np.uint8))
                addrs[v.name] = a
                if v.relocs:
                    self._relocate(v, a, gmem, addrs)
        self._globals[gmem] = addrs
        # (the variable table only grows, by names: with as many entries, the same .global/.const variables)
        self._placed = (len(variables), sum(v.space in ("global", "const") for v in variables.values()))
        return addrs

    def _relocate(self, v, at, gmem, addrs):
        """Write the addresses a variable's initializer names: functions (FUNCTION_BASE...), .global and
        .const variables (allocated here first when they are not yet)."""
        from .program import function_address
        for off, width, name, tok in v.relocs:
            if name in self.info.functions:
                value = function_address(self.info, name)
            else:
                other = self.info.variables.get(name)
                if other is None or other.space not in ("global", "const"):
                    raise OperandError(f"line {tok.line}, column {tok.col}: initializer of {v.name}: {name} is not a "
                                       f"function or a .global/.const variable of this module")
                if name not in addrs:
                    addrs[name] = gmem.alloc(max(other.size, 1))
                    if other.init is not None:
                        gmem.write(addrs[name], np.frombuffer(other.init, np.uint8))
                    if other.relocs:
                        self._relocate(other, addrs[name], gmem, addrs)
                value = addrs[name]
            if width == 4 and value >= 1 << 32:
                raise OperandError(f"line {tok.line}, column {tok.col}: initializer of {v.name}: the address of "
                                   f"{name} ({value:#x}) does not fit 32 bits")
            gmem.write(at + off, np.frombuffer(int(value).to_bytes(width, "little"), np.uint8))

    def global_address(self, name: str, gmem: GlobalMemory) -> int:
        """Address of a ``.global`` / ``.const`` module variable in ``gmem`` (allocated and initialised on
        first use, like a loaded module's variables)."""
        v = self.info.variables.get(name)
        if v is None or v.space not in ("global", "const"):
            raise OperandError(f"no .global/.const variable {name!r} in this module; variables: "
                               f"{', '.join(n for n, x in self.info.variables.items() if x.space != 'shared')}")
        return self._variables(gmem)[name]

    # -- launch ------------------------------------------------------------------------------------
    def launch(self, kernel: str, grid=(1, 1, 1), block=(32, 1, 1), args=(), gmem: GlobalMemory | None = None,
               shared_bytes: int = 0, options: WarpOptions | None = None, trace=None, out=None,
               max_instructions: int = 20_000_000, engine: str = "auto", schedule=None, timeline: bool = False,
               cluster=None, workers: int = 1, progress=None, executor=None,
               regs_per_thread: int | None = None, sanitize=None, profile: bool = False,
               debug=None, keep_ctas: bool | None = None, keep: str | None = None) -> LaunchResult:
        """Run ``kernel`` on a grid of CTAs. ``args`` follow the kernel's ``.param`` list (addresses and
        integers as Python ints, floats as Python/numpy floats, byte arrays for aggregate parameters).
        ``trace``: a writable stream that receives one line per executed instruction, or a
        ``machine.tracing.Trace`` (JSON lines; filters by CTA, warp, lane, PTX lines, opcode).
        ``engine``: ``"fast"`` (common instructions in jitted loops, the rest through the reference
        executors), ``"reference"`` (every instruction through the readable executors) or ``"auto"`` (the
        default: ``"fast"`` once its loops are compiled; until a background process has compiled them the
        CTAs run on the reference executors, see ``machine.fastcore.warmup``); all give the same bits. A trace, or ``WarpOptions(uninitialized="error")``, runs the reference.
        ``schedule``: None (round-robin: each warp runs until it waits) or ``("random", seed)`` (warps in a
        seeded random order, preempted after random instruction counts, copies completing at random points).
        ``timeline``: record every instruction, mbarrier event and bulk copy for ``result.timeline()``.
        ``cluster``: cluster dimensions (x, y, z), as CUTLASS passes them to ``cudaLaunchKernelEx`` at run time;
        a kernel whose PTX says ``.reqnctapercluster`` gets those without it. The CTAs of a cluster run together
        (``machine.cluster``); clusters run one after the other.
        A seeded schedule or a timeline runs the reference engine (they act between any two instructions).
        ``workers``: processes that run the grid's CTAs (``machine.grid`` says how the results stay those of
        the serial run, and which kernels run serially anyway). ``progress``: a progress bar on stderr
        (default: for grids of 64 CTAs or more when stderr is a terminal). ``executor``: a
        ``concurrent.futures.Executor`` (a process pool, or a cluster's: Dask's ``Client.get_executor()``,
        Ray's ``RayExecutor``) that runs the chunks of CTAs instead of forked workers; same results.
        ``regs_per_thread``: the kernel's registers per thread (``ptxas -v``), for the number of CTAs an H100
        holds at once (``occupancy``; default: the PTX's ``.maxnreg``, else 32). CTAs that wait on memory other
        CTAs write stay resident together up to that number (``machine.residency``).
        ``sanitize``: ``"memcheck"``, ``"racecheck"``, ``"synccheck"``, ``"initcheck"``, ``"asynccheck"``, a tuple
        of these or ``"all"`` (docs/sanitize.md): the launch runs serially, on the engine ``engine`` names (the
        fast engine's loops log what the sanitizer checks, ``machine.sanitize_fast``), and ``result.reports``
        lists what the tools found; an error that cannot continue carries them as ``e.reports``.
        ``profile``: count every instruction per PTX line and source line (``result.profile``, a
        ``machine.profile.Profile``; docs/profile.md). ``debug``: a ``machine.debugger.Debugger``'s hook
        (``Debugger.launch`` passes it; docs/debug.md). Both run the CTAs one after the other on the reference
        executors.
        ``keep``: which CTAs' final state (warps: registers, shared memory, bank records) ``result.ctas`` keeps:
        ``"all"``, ``"last"`` (the grid's last CTA) or ``"none"``; the default keeps all of a grid of at most
        ``KEEP_ALL_MAX`` CTAs and the last one of a larger grid (with a note in ``result.notes``). What the
        launch does to global memory and printf is the same whatever it keeps. ``keep_ctas=True/False`` is the
        older spelling of ``keep="all"/"none"``."""
        if sanitize is None and trace is None and schedule is None and cluster is None and executor is None and \
                debug is None and keep_ctas is None and profile is False and timeline is False and progress is None \
                and (options is None or (type(options) is WarpOptions and options.uninitialized == "zero")) and \
                type(workers) is int and workers == 1 and type(max_instructions) is int and \
                0 <= max_instructions < 1 << 62 and (type(engine) is str and engine in ("fast", "auto")) and \
                (gmem is None or type(gmem) is GlobalMemory) and (type(args) is list or type(args) is tuple) and \
                (keep is None or (type(keep) is str and keep in _KEEPS)) and self._san is None and \
                (out is None or callable(getattr(out, "write", None))):
            # the common launch: its shape's plan, made once (``_LaunchPlan``), does the rest
            key = _shape_key(kernel, grid, block, shared_bytes, regs_per_thread, None)
            plan = self._plans.get(key, False) if key is not None else None
            if plan is False:
                plan = self._plan(key, kernel, grid, block, shared_bytes, regs_per_thread)
            if plan is not None and plan.ready() and _warmup.ready(False):
                try:
                    return self._launch_planned(plan, args, gmem, out, options, max_instructions,
                                                "auto" if keep is None else keep)
                except EmulatorError as e:
                    raise with_source(self.text, e) from None
        try:
            return self._launch(kernel, grid, block, args, gmem, shared_bytes, options, trace, out, max_instructions,
                                engine, schedule, timeline, cluster, workers, progress, executor, regs_per_thread,
                                sanitize, profile, debug, keep_ctas, keep)
        except EmulatorError as e:
            raise with_source(self.text, e) from None

    def _launch(self, kernel, grid, block, args, gmem, shared_bytes, options, trace, out, max_instructions, engine,
                schedule, timeline, cluster, workers, progress, executor, regs_per_thread, sanitize, profile, debug,
                keep_ctas, keep):
        """``launch``'s general path: every argument checked, every kind of launch."""
        keep = _keep(keep, keep_ctas)
        if sanitize is None:
            tools = None
        else:
            from .sanitize import tools_of
            tools = tools_of(sanitize)
        if tools is not None:
            return self._launch_sanitized(tools, kernel, grid, block, args, gmem, shared_bytes, options, trace, out,
                                          max_instructions, schedule, timeline, cluster, keep, engine)
        if gmem is not None and getattr(gmem, "_uninit", None) and self._san is None:
            gmem._uninit.clear()          # an unwatched launch may write anything: nothing stays uninitialised
        if profile is not False:
            if not isinstance(profile, (bool, np.bool_)):
                raise OperandError(f"launch: profile must be True or False, not {profile!r}")
            profile = bool(profile)
        instrumented = profile or debug is not None
        if schedule is not None:
            schedule = _schedule(schedule)
        _check_streams_and_options(options, trace, out, gmem, timeline, progress, args)
        if type(max_instructions) is not int:
            max_instructions = _int_arg(max_instructions, "max_instructions")
        if not 0 <= max_instructions < 1 << 62:
            raise OperandError(f"launch: max_instructions must be 0..2^62-1, not {max_instructions}")
        if not isinstance(engine, str) or engine not in ENGINES:
            raise OperandError(f"launch: engine must be one of {', '.join(map(repr, ENGINES))}, not {engine!r}")
        # what depends only on the kernel and the launch shape, checked once and kept per module (``_launch_shape``)
        key = _shape_key(kernel, grid, block, shared_bytes, regs_per_thread, cluster)
        shapes = self._shapes
        shape = shapes.get(key) if key is not None else None
        if shape is None:
            shape = self._launch_shape(kernel, grid, block, shared_bytes, regs_per_thread, cluster)
            if key is not None:
                if len(shapes) > 256:
                    shapes.clear()
                shapes[key] = shape
        prog, entry, grid, block, nthreads, nwarps, cdims, explicit, shared_bytes, smem_size, occ = shape
        gmem = gmem if gmem is not None else GlobalMemory()
        param_init = _param_bytes(entry, prog, args)
        var_addrs = self._variables(gmem)
        local_bases = _depots(gmem, prog, nwarps)
        san = self._san
        if prog.layout.local:
            for a in local_bases.tolist():
                getattr(gmem, "_uninit", {}).pop(int(a), None)   # .local depots: private, not watched
                if san is not None:
                    san.untracked.add(int(a))
        result = LaunchResult(entry.name, grid, block)
        out = out if out is not None else sys.stdout
        budget = [max_instructions, max_instructions]
        fast = None
        pending = False          # "auto" while the fast engine's loops compile in the background
        if trace is not None:
            from .tracing import Trace
            if not isinstance(trace, Trace):
                trace = Trace(trace)
        prof = None
        if profile:
            from .profile import Profile
            prof = result.profile = Profile(prog, self.text)
        if engine in ("fast", "auto") and trace is None and (options is None or options.uninitialized == "zero") \
                and schedule is None and not timeline and not instrumented:
            if engine == "fast" or _warmup.ready():
                if engine == "fast":    # the loop this kernel runs on: the CTA loop (the warp loop inside it)
                    _warmup.wait("cta" if _lazy("engine").translation(prog).cta_ok else "warp")   # or the warp loop
                fast = self._fast_launch(prog, gmem, wait=engine == "fast")
                engine = "fast"
            else:
                pending = True
        return self._run_launch(kernel, args, shared_bytes, prog, entry, grid, block, nwarps, cdims, explicit,
                                smem_size, occ, gmem, param_init, var_addrs, local_bases, options, trace, out, result,
                                budget, fast, pending, schedule, timeline, max_instructions, prof, debug, keep, workers,
                                executor, progress, instrumented, engine, san)

    def _run_launch(self, kernel, args, shared_bytes, prog, entry, grid, block, nwarps, cdims, explicit, smem_size,
                    occ, gmem, param_init, var_addrs, local_bases, options, trace, out, result, budget, fast, pending,
                    schedule, timeline, max_instructions, prof, debug, keep, workers, executor, progress, instrumented,
                    engine, san, plan=None):
        """The launch's CTAs, once its arguments are checked and its memory, parameters and result are made (``launch``;
        ``_launch_planned`` for a repeated launch shape, ``plan`` its ``_LaunchPlan``: its CTAs made from the plan's
        fields)."""
        gridmod = _lazy("grid")
        ctaids = _ctaids(grid)
        keep = _auto_keep(keep, len(ctaids), result)
        if type(workers) is not int:
            workers = _int_arg(workers, "workers")
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise OperandError(f"launch: executor must be a concurrent.futures.Executor (an object with submit()), "
                               f"not {executor!r}")
        if workers < 1:
            raise OperandError(f"launch: workers must be >= 1, not {workers}")
        if progress is None:
            progress = len(ctaids) >= 64
        if cdims != (1, 1, 1) or explicit:
            res = self._launch_clusters(prog, entry, grid, block, cdims, explicit, smem_size, gmem, param_init,
                                        var_addrs, local_bases, options, trace, out, result, budget, fast,
                                        schedule, timeline, max_instructions, prof, debug, keep)
            _release(fast)          # (its loop arrays and TMA staging area go to the next launch, as below)
            return res
        if executor is not None and len(ctaids) > 1 and trace is None and schedule is None and not timeline and \
                not instrumented and \
                gridmod.serial_only(prog) is None:
            spec = gridmod.LaunchSpec(self.text, self.arch, kernel, grid, block, list(args), int(shared_bytes), options,
                                      int(max_instructions), engine, local_bases, var_addrs,
                                      load_ptx if self._validate else _load_unvalidated, keep)
            if gridmod.run_executor(executor, spec, ctaids, gmem, max(workers, 2), result, out, int(max_instructions),
                                    progress):
                _release(fast)
                return result
        elif workers > 1 and len(ctaids) > 1 and trace is None and schedule is None and not timeline and \
                not instrumented and \
                gridmod.serial_only(prog) is None:
            last = ctaids[-1]

            def run_ctas(chunk, out_):
                part = LaunchResult(entry.name, grid, block)
                b = [max_instructions, max_instructions]
                for cid in chunk:
                    cta = CTA(self, prog, cid, grid, block, smem_size, gmem, param_init, var_addrs, local_bases,
                              options, trace, out_, part, b, fast, schedule, timeline)
                    warps = cta.run()
                    if keep == "all" or (keep == "last" and cid == last):
                        part.ctas.append((cid, warps))
                return {"ctas": part.ctas, "stdout": part.stdout, "instructions": int(max_instructions) - b[0],
                        "notes": part.notes}
            regs = None if fast is None or keep != "all" else (-(-int(np.prod(block)) // LANES),
                                                                max(fast.tr.arena_bytes, 8))
            if gridmod.run_parallel(run_ctas, ctaids, gmem, workers, result, out, int(max_instructions), progress,
                                    regs):
                _release(fast)
                return result
        bar = gridmod._Progress(len(ctaids)) if progress else None
        depots = [local_bases]          # .local depots free for the next CTA (one set per resident CTA)
        done = {}

        def make(cid):
            nonlocal fast, pending
            if pending and _warmup.ready():
                fast, pending = self._fast_launch(prog, gmem), False
            if depots:
                bases = depots.pop()
            else:                       # another CTA is resident: its threads get their own .local depots
                bases = _depots(gmem, prog, nwarps)
                if fast is not None and prog.layout.local:
                    fast.gtab = _lazy("engine").global_table(gmem)
            cta = CTA.planned(plan.cta_fields, cid, out, result, budget, (gmem, options, param_init, bases, None,
                                                                         var_addrs, None, fast), fast) \
                if plan is not None and fast is not None else None
            if cta is None:
                cta = CTA(self, prog, cid, grid, block, smem_size, gmem, param_init, var_addrs,
                          bases, options, trace, out, result, budget, fast, schedule, timeline,
                          profile=prof, debug=debug)
            cta._depot = bases
            cta.quiet = True                    # (run_grid runs under np.errstate below)
            if cta.fast_cta is not None and not (keep == "all" or (keep == "last" and tuple(cid) == last)):
                cta.fast_cta.unkept = True      # nothing reads its warps' bank records after the run
            if san is not None:
                san.attach(cta)
            return cta

        def finish(cta):
            if san is not None:
                san.detach(cta)
            depots.append(cta._depot)
            if keep == "all" or (keep == "last" and tuple(cta.ctaid) == last):
                done[tuple(cta.ctaid)] = cta
            elif fast is not None and san is None:
                fast.recycle(cta)           # its arrays go to the next CTA
            if bar:
                bar.update(1)

        last = ctaids[-1]
        # CTAs in the jitted grid loop (fastcore/gridloop.py) while they need no Python: all of them, or all but the
        # last with keep="last" (that one is kept, and made as before)
        loop_end = len(ctaids) - 1 if keep == "last" else len(ctaids)
        # (a planned launch makes a CTA for less than the grid loop's own start costs: two CTAs run without it)
        loop_ok = [fast is not None and san is None and schedule is None and not timeline and prof is None and
                   debug is None and trace is None and loop_end > (2 if plan is not None else 1)]

        def remake(cid, fc, bases):
            """The CTA object of a kept CTA the grid loop ran, on its arrays ``fc`` (made when the result is read)."""
            fast.resume(fc)
            # (no reference to the result, which holds this function: no cycle keeps a dropped result alive)
            cta = CTA(self, prog, cid, grid, block, smem_size, gmem, param_init, var_addrs, bases, options, trace,
                      out, None, budget, fast, schedule, timeline)
            if cta.fast_cta is not fc:
                raise AssertionError("a kept CTA of the grid loop was not made on its arrays")
            cta.result = None
            return cta

        def batch(i):
            if not loop_ok[0] or i >= loop_end - 1 or pending or not depots:
                return 0, None
            gridloop = _lazy("gridloop")
            cta = make(ctaids[i])
            if not gridloop.eligible(fast, cta):
                loop_ok[0] = False
                return 0, cta
            ran, kept = gridloop.run(fast, cta, ctaids, i, loop_end, budget,
                                     functools.partial(remake, bases=cta._depot) if keep == "all" else None)
            for k in kept:
                done[tuple(k.ctaid)] = k
            if bar:
                bar.update(ran)
            if i + ran == loop_end:             # every CTA ran to its end: the arrays go to the next CTA
                finish_quiet(cta)
                return ran, None
            if ran == 0:                        # the first CTA needs Python: it goes on in this CTA object
                return 0, cta
            fc = cta.fast_cta                   # a later CTA: a CTA object made on the arrays the loop left
            cta.fast_cta = cta._fast_arrays = None
            depots.append(cta._depot)
            fast.resume(fc)
            nxt_cta = make(ctaids[i + ran])
            if nxt_cta.fast_cta is not fc:
                raise AssertionError("the grid loop's CTA was not resumed on its arrays")
            nxt_cta.smem_inflight = cta.smem_inflight   # (the cp.async marks the loop made on the first CTA's)
            return ran, nxt_cta

        def finish_quiet(cta):
            depots.append(cta._depot)
            fast.recycle(cta)

        rng = None if schedule is None else np.random.default_rng([int(schedule[1]), 1 << 21])
        try:
            with np.errstate(all="ignore"):     # IEEE exceptions are results here, not warnings (CTA.run)
                run_grid(ctaids, make, finish, occ, rng, batch if loop_ok[0] else None)
        finally:
            if bar:
                bar.close()
        for cid in (ctaids if keep == "all" else [last] if keep == "last" else ()):
            cta = done[cid]
            result.keep_cta(cid, cta)           # (its warps and async unit are made when the result is read)
            cta.result = None                   # (printf's lines are in; no cycle keeps the CTA alive: CTA.__del__)
        result.instructions = int(max_instructions) - budget[0]
        _release(fast)
        return result

    def _plan(self, key, kernel, grid, block, shared_bytes, regs_per_thread):
        """The launch plan of a launch shape (``_LaunchPlan``; kept per module under the shape's key), or None when
        the shape needs the general path (clusters); an ``OperandError`` names a wrong argument."""
        shapes = self._shapes
        shape = shapes.get(key)
        if shape is None:
            shape = self._launch_shape(kernel, grid, block, shared_bytes, regs_per_thread, None)
            if len(shapes) > 256:
                shapes.clear()
            shapes[key] = shape
        plans = self._plans
        if len(plans) > 256:
            plans.clear()
        plan = plans[key] = _LaunchPlan(self, shape) if shape[6] == (1, 1, 1) and not shape[7] else None
        return plan

    def _launch_planned(self, plan, args, gmem, out, options, max_instructions, keep):
        """``launch`` on the fast engine of a shape whose plan is ready (``_LaunchPlan``) with none of the arguments
        that need the general path: what depends only on the shape comes from the plan; the arguments, the memory,
        the parameters and the result are this launch's. A grid of one CTA runs here; a larger one goes on as
        ``launch`` does (``_run_launch``)."""
        prog, entry = plan.prog, plan.entry
        if gmem is None:
            gmem = GlobalMemory()
        elif gmem._uninit:
            gmem._uninit.clear()            # an unwatched launch may write anything: nothing stays uninitialised
        param_init = _param_bytes(entry, prog, args)
        var_addrs = self._variables(gmem)
        if prog.layout.local:
            local_bases = _depots(gmem, prog, plan.nwarps)
            for a in local_bases.tolist():
                gmem._uninit.pop(a, None)
        else:
            local_bases = plan.no_local
        result = LaunchResult.made(entry.name, plan.grid, plan.block)
        if out is None:
            out = sys.stdout
        budget = [max_instructions, max_instructions]
        fast = plan.fast_launch(gmem)
        ctaids = plan.ctaids
        keep = _auto_keep(keep, plan.nctas, result)
        if plan.nctas > 1:
            return self._run_launch(plan.kernel, args, plan.shared_bytes, prog, entry, plan.grid, plan.block,
                                    plan.nwarps, (1, 1, 1), False, plan.smem_size, plan.occ, gmem, param_init,
                                    var_addrs, local_bases, options, None, out, result, budget, fast, False, None,
                                    False, max_instructions, None, None, keep, 1, None, None, False, "fast", None, plan)
        cid = ctaids[0]
        make = (gmem, options, param_init, local_bases, None, var_addrs, None, fast)
        cta = CTA.planned(plan.cta_fields, cid, out, result, budget, make, fast)
        if cta is None:                     # (no CTA-loop arrays: as ``launch`` makes it)
            cta = CTA(self, prog, cid, plan.grid, plan.block, plan.smem_size, gmem, param_init, var_addrs,
                      local_bases, options, None, out, result, budget, fast)
        cta._depot = local_bases
        cta.quiet = True
        if keep == "none" and cta.fast_cta is not None:
            cta.fast_cta.unkept = True      # nothing reads its warps' bank records after the run
        fc = cta.fast_cta
        # the CTA loop's first run (no Python runs an executor there: no np.errstate needed yet)
        handoff = fc.run_alone(cta) if fc is not None else False
        if handoff is not None or cta.__dict__.get("_au") is not None or getattr(cta, "wgmma", None) is not None:
            with np.errstate(all="ignore"):     # IEEE exceptions are results here, not warnings (CTA.run)
                if handoff is plan.go_on:
                    handoff = fc.run(cta)
                # (as CTA.run(park=True) goes on from the CTA loop's run; a lone CTA that spins on memory nobody
                # else writes: run_grid's report)
                if cta._run(True, handoff) is None:
                    cta._deadlock()
        if keep == "none":
            fast.recycle(cta)               # its arrays go to the next CTA
        else:
            result.keep_cta(cid, cta)       # (its warps and async unit are made when the result is read)
            cta.result = None
        result.instructions = max_instructions - budget[0]
        fast.release()
        return result

    def _launch_shape(self, kernel, grid, block, shared_bytes, regs_per_thread, cluster):
        """The launch's checked shape: (program, entry, grid, block, threads, warps, cluster dims, explicit cluster,
        dynamic shared bytes, shared bytes per CTA, ``Occupancy``); an ``OperandError`` names a wrong argument."""
        grid, block = _dim3(grid, "grid"), _dim3(block, "block")
        nthreads = block[0] * block[1] * block[2]
        if not 1 <= nthreads <= 1024:
            raise OperandError(f"launch: a CTA has 1..1024 threads, not {nthreads}")
        if any(g < 1 for g in grid):
            raise OperandError(f"launch: grid dimensions must be >= 1, got {grid}")
        prog = self.program(kernel)
        entry = prog.entry
        cdims, explicit = _cluster_dims(entry, cluster, grid)
        shared_bytes = _int_arg(shared_bytes, "shared_bytes")
        if not 0 <= shared_bytes <= MAX_SHARED_BYTES:
            raise OperandError(f"launch: shared_bytes must be 0..{MAX_SHARED_BYTES} (the H100's shared memory per "
                               f"CTA), not {shared_bytes}")
        smem_size = prog.shared_static + (-(-shared_bytes // 16) * 16)
        if smem_size > MAX_SHARED_BYTES:
            raise OperandError(f"launch: {prog.shared_static} bytes of static .shared plus {shared_bytes} dynamic "
                               f"bytes exceed the {MAX_SHARED_BYTES} bytes of shared memory a CTA may have")
        nwarps = -(-nthreads // LANES)
        if regs_per_thread is not None:
            regs_per_thread = _int_arg(regs_per_thread, "regs_per_thread")
        occ = occupancy(nthreads, smem_size, regs_per_thread, _maxnreg(entry))
        return prog, entry, grid, block, nthreads, nwarps, cdims, explicit, shared_bytes, smem_size, occ

    def occupancy(self, kernel: str, block=(32, 1, 1), shared_bytes: int = 0, regs_per_thread: int | None = None):
        """How many CTAs of ``kernel`` an H100 holds at once for this block and dynamic shared memory
        (``machine.residency.Occupancy``: per SM, resident on 132 SMs, and each limit)."""
        from .residency import occupancy
        prog = self.program(kernel)
        block = _dim3(block, "block")
        smem = prog.shared_static + (-(-_int_arg(shared_bytes, "shared_bytes") // 16) * 16)
        return occupancy(block[0] * block[1] * block[2], smem, regs_per_thread, _maxnreg(prog.entry))


    def _fast_launch(self, prog, gmem, wait=False):
        """The fast engine's launch state; a sanitised launch's hands the sanitizer what it must see
        (machine.sanitize_fast). ``wait`` (engine="fast"): the instruction families the kernel uses are compiled
        or loaded now, else those another process is compiling run on the reference executors meanwhile."""
        if self._san is not None:
            from .sanitize_fast import SanFastLaunch
            fl = SanFastLaunch(prog, gmem, self._san)
            if "memplan" not in fl.tr.apart:
                fl.tr.apart.append("memplan")   # a sanitised launch's loads and stores all take memplan.plan_c
            fl.tr.bind_families(wait)
            return fl
        return _lazy("engine").FastLaunch(prog, gmem, wait)

    def _launch_sanitized(self, tools, kernel, grid, block, args, gmem, shared_bytes, options, trace, out,
                          max_instructions, schedule, timeline, cluster, keep="all", engine="auto"):
        """A launch watched by the sanitizer (machine.sanitize), CTA after CTA: on the fast engine (its loop
        logs every access for the sanitizer, machine.sanitize_fast) or the reference executors."""
        from .sanitize import Sanitizer
        gmem = gmem if gmem is not None else GlobalMemory()
        before = {a for a, _ in gmem.allocations()}
        san = self._san = Sanitizer(tools, self, gmem, _dim3(grid, "grid"))
        san.before = before
        try:
            result = self.launch(kernel, grid, block, args, gmem, shared_bytes, options, trace, out,
                                 max_instructions, engine, schedule, timeline, cluster, 1, False, None,
                                 keep=keep)
        except EmulatorError as e:
            raise san.fatal(e, getattr(san, "failed_in", None)) from None
        finally:
            self._san = None
        result.reports = san.reports
        result.sanitizer = san
        for r in san.reports:
            if r.kind == "divergent-order":
                result.note(f"line {r.second.line}: {' '.join(r.second.text.split())}: lanes of one warp that took "
                            f"different paths race on {r.space} {r.address:#x} with line {r.first.line}; the result "
                            f"depends on the order in which the lane groups run, which ptxas decides, and the "
                            f"emulator's order may not be the GPU's")
        return result

    def _launch_clusters(self, prog, entry, grid, block, cdims, explicit, smem_size, gmem, param_init, var_addrs,
                         local_bases, options, trace, out, result, budget, fast, schedule, timeline, max_instructions,
                         prof=None, debug=None, keep="all"):
        """Cluster after cluster (cluster id x fastest); the CTAs of a cluster run together."""
        from .cluster import Cluster
        ncl = tuple(g // c for g, c in zip(grid, cdims))
        for cz in range(ncl[2]):
            for cy in range(ncl[1]):
                for cx in range(ncl[0]):
                    cl = Cluster((cx, cy, cz), cdims, explicit)
                    cl.loop = self._san is None     # its CTAs in the CTA loop (when the engine allows it)
                    for z in range(cdims[2]):
                        for y in range(cdims[1]):
                            for x in range(cdims[0]):
                                cid = (cx * cdims[0] + x, cy * cdims[1] + y, cz * cdims[2] + z)
                                cta = CTA(self, prog, cid, grid, block, smem_size, gmem, param_init, var_addrs,
                                          local_bases, options, trace, out, result, budget, fast, schedule, timeline,
                                          cluster=cl, rank=len(cl.ctas), profile=prof, debug=debug)
                                if self._san is not None:
                                    self._san.attach(cta)
                                cl.ctas.append(cta)
                    rng = None
                    if schedule is not None:
                        rng = np.random.default_rng([int(schedule[1]), 1 << 20, cx, cy, cz])
                    all_warps = cl.run(rng) if cl.size > 1 else [cl.ctas[0].run()]
                    if self._san is not None:
                        for cta in cl.ctas:
                            self._san.detach(cta)
                    for cta, warps in zip(cl.ctas, all_warps):
                        if keep == "none" or (keep == "last" and tuple(cta.ctaid) != tuple(grid[k] - 1
                                                                                             for k in range(3))):
                            continue
                        result.async_units.append(cta.async_unit)
                        result.ctas.append((cta.ctaid, warps))
        result.instructions = int(max_instructions) - budget[0]
        return result

    def _run_chunk(self, spec, gmem, chunk, out):
        """The CTAs ``chunk`` of the launch ``spec`` (machine.grid.LaunchSpec), on this process: what a cluster
        worker runs. Local depots and module variables keep the addresses the launching process gave them."""
        self._globals[gmem] = dict(spec.var_addrs)
        prog = self.program(spec.kernel)
        param_init = np.zeros(max(prog.layout.param, 1), np.uint8)
        _fill_params(prog.entry, prog.kernel_params, list(spec.args), param_init)
        smem_size = prog.shared_static + (-(-int(spec.shared_bytes) // 16) * 16)
        result = LaunchResult(prog.entry.name, spec.grid, spec.block)
        budget = [int(spec.max_instructions)]
        fast = None
        if spec.engine in ("fast", "auto") and (spec.options is None or spec.options.uninitialized == "zero"):
            from .fastcore import FastLaunch
            fast = FastLaunch(prog, gmem, True)     # (as before the families: a worker compiles what it lacks)
        for cid in chunk:
            cta = CTA(self, prog, cid, spec.grid, spec.block, smem_size, gmem, param_init, spec.var_addrs,
                      spec.local_bases, spec.options, None, out, result, budget, fast, None, False)
            warps = cta.run()
            if spec.keep == "all" or (spec.keep == "last" and tuple(cid) == tuple(g - 1 for g in spec.grid)):
                result.ctas.append((cid, warps))
        return {"ctas": result.ctas, "stdout": result.stdout, "instructions": int(spec.max_instructions) - budget[0],
                "notes": result.notes}



def _release(fast):
    """A launch on the fast engine ended: its loop arrays go to the next launch (``FastLaunch.release``)."""
    if fast is not None:
        fast.release()


def _maxnreg(entry):
    v = entry.perf.get(".maxnreg")
    if isinstance(v, (list, tuple)):
        v = v[0] if v else None
    return None if v is None else int(v)


def _cluster_dims(entry, cluster, grid):
    """The launch's cluster dimensions and whether the kernel runs on explicit clusters (%is_explicit_cluster):
    the ``cluster`` argument, or the PTX's ``.reqnctapercluster``; they must agree and divide the grid."""
    req = entry.perf.get(".reqnctapercluster")
    if req is not None:
        req = tuple(req) + (1,) * (3 - len(req))
    dims = _dim3(cluster, "cluster") if cluster is not None else req
    if req is not None and dims != req:
        raise OperandError(f"launch {entry.name}: cluster dimensions {dims} differ from the kernel's "
                           f".reqnctapercluster {req}")
    explicit = dims is not None or ".explicitcluster" in entry.perf
    dims = dims or (1, 1, 1)
    if any(c < 1 for c in dims):
        raise OperandError(f"launch: cluster dimensions must be >= 1, got {dims}")
    n = dims[0] * dims[1] * dims[2]
    if n > 16:
        raise OperandError(f"launch: a cluster of {n} CTAs; the H100 runs at most 16 (8 portably)")
    most = entry.perf.get(".maxclusterrank")
    if most and n > most[0]:
        raise OperandError(f"launch {entry.name}: a cluster of {n} CTAs exceeds the kernel's .maxclusterrank "
                           f"{most[0]}")
    if any(g % c for g, c in zip(grid, dims)):
        raise OperandError(f"launch: the grid {grid} is not a whole number of clusters {dims}")
    return dims, explicit


def _plain_name(mangled: str) -> str:
    """``_Z14ptx_mma_sharedP6__halfS0_S0_iii`` -> ``ptx_mma_shared`` (plain Itanium function names)."""
    if not mangled.startswith("_Z"):
        return mangled
    s = mangled[2:]
    if s.startswith("N"):
        return mangled
    k = 0
    while k < len(s) and s[k].isdigit():
        k += 1
    if k == 0:
        return mangled
    n = int(s[:k])
    return s[k:k + n]


def _schedule(s):
    if s is None or (isinstance(s, str) and s == "round_robin"):
        return None
    if isinstance(s, (tuple, list)) and len(s) == 2 and isinstance(s[0], str) and s[0] == "random" and \
            isinstance(s[1], (int, np.integer)) and not isinstance(s[1], bool) and 0 <= s[1] < 1 << 64:
        return ("random", int(s[1]))
    raise OperandError(f"launch: schedule must be None, 'round_robin' or ('random', seed), not {s!r}")


def _check_streams_and_options(options, trace, out, gmem, timeline, progress, args):
    """The launch's object arguments, checked before anything runs (a wrong type names the argument)."""
    if options is None and trace is None and out is None and progress is None and timeline is False and \
            (gmem is None or type(gmem) is GlobalMemory) and (type(args) is list or type(args) is tuple):
        return                  # (the common launch: nothing to check)
    if options is not None and not isinstance(options, WarpOptions):
        raise OperandError(f"launch: options must be a WarpOptions, not {type(options).__name__}")
    for name, stream in (("trace", trace), ("out", out)):
        if stream is not None and not callable(getattr(stream, "write", None)):
            raise OperandError(f"launch: {name} must be a writable text stream (an object with .write), "
                               f"not {type(stream).__name__}")
    if gmem is not None and not isinstance(gmem, GlobalMemory):
        raise OperandError(f"launch: gmem must be a GlobalMemory, not {type(gmem).__name__}")
    if not isinstance(timeline, (bool, np.bool_)):
        raise OperandError(f"launch: timeline must be True or False, not {type(timeline).__name__}")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise OperandError(f"launch: progress must be None, True or False, not {type(progress).__name__}")
    if not isinstance(args, (list, tuple)):
        raise OperandError(f"launch: args must be a list or tuple of the kernel's arguments, not "
                           f"{type(args).__name__}")


KEEP_ALL_MAX = 4096      # the default keep: every CTA of a grid up to this size, else the last one


def _auto_keep(keep, nctas, result):
    """``keep`` with "auto" resolved for a grid of ``nctas`` CTAs (a note in ``result`` when it keeps the last only)."""
    if keep == "auto":
        keep = "all" if nctas <= KEEP_ALL_MAX else "last"
        if keep == "last":
            result.note(f"launch: the grid has {nctas} CTAs (more than {KEEP_ALL_MAX}): result.ctas "
                        f"keeps the last CTA only (keep='all' keeps every CTA)")
    return keep


def _ctaids(grid):
    """The ``CtaIds`` of a checked grid, kept in ``_CTAIDS`` (computed when asked: memory does not grow with the
    grid)."""
    ctaids = _CTAIDS.get(grid)
    if ctaids is None:
        if len(_CTAIDS) > 64:
            _CTAIDS.clear()
        ctaids = _CTAIDS[grid] = _lazy("grid").CtaIds(grid)
    return ctaids


def _depots(gmem, prog, nwarps):
    """The ``.local`` depot addresses of a CTA's threads: one allocation per thread (separated by unmapped gaps, so
    that a generic access that runs off a thread's depot is reported instead of landing in its neighbour's), or
    zeros for a kernel without ``.local``."""
    if not prog.layout.local:
        return np.zeros(nwarps * LANES, np.uint64)
    return np.array([gmem.alloc(prog.layout.local) for _ in range(nwarps * LANES)], np.uint64)
_KEEPS = ("all", "last", "none", "auto")


class _LaunchPlan:
    """What a launch of one kernel in one launch shape (grid, block, shared bytes, registers per thread; no clusters)
    needs that depends on nothing else, checked and made once and kept per module (``Module._plans``): the checked
    shape, the CTA ids, the fields every CTA of the shape starts with (``CTA.planned``), the fast engine's launch
    fields (``FastLaunch.planned``). A launch repeated in this shape (``Module._launch_planned``) makes only what
    depends on its arguments, memory and options. The plan is used once the kernel's translation runs in the CTA
    loop with its instruction families bound (``ready``: the first launch, on the general path, binds them)."""

    def __init__(self, module, shape):
        prog, entry, grid, block, nthreads, nwarps, _, _, shared_bytes, smem_size, occ = shape
        self.prog, self.entry, self.grid, self.block, self.nwarps = prog, entry, grid, block, nwarps
        self.kernel, self.shared_bytes, self.smem_size, self.occ = entry.name, shared_bytes, smem_size, occ
        self.ctaids = ctaids = _ctaids(grid)
        self.nctas = len(ctaids)
        self.no_local = np.zeros(nwarps * LANES, np.uint64)     # (a kernel without .local: nothing writes them)
        self.no_local.flags.writeable = False
        self.cta_fields = CTA.plan_fields(module, prog, grid, block, smem_size)
        self.tr = None

    def ready(self):
        """Whether the kernel's translation is bound and runs in the CTA loop (after the first launch)."""
        tr = self.tr
        if tr is None:
            tr = getattr(self.prog, "_fast", None)
            if tr is None:
                return False
            d = tr.__dict__
            if not (d.get("_families_bound") and d.get("_cta_loop_ok")):
                return False
            self.tr = tr
            engine = _lazy("engine")
            self.fast_launch = functools.partial(engine.FastLaunch.planned, tr)
            self.go_on = engine.GO_ON

        return True


def _keep(keep, keep_ctas):
    """``launch``'s ``keep``, with ``keep_ctas`` (the older spelling) folded in: "all", "last", "none" or "auto"."""
    if keep_ctas is not None:
        if not isinstance(keep_ctas, (bool, np.bool_)):
            raise OperandError(f"launch: keep_ctas must be True or False, not {keep_ctas!r}")
        old = "all" if keep_ctas else "none"
        if keep is not None and keep != old:
            raise OperandError(f"launch: keep={keep!r} and keep_ctas={bool(keep_ctas)} disagree; pass keep only")
        return old
    if keep is None:
        return "auto"
    if not isinstance(keep, str) or keep not in ("all", "last", "none", "auto"):
        raise OperandError(f"launch: keep must be 'all', 'last' or 'none', not {keep!r}")
    return keep


def _plain(v):
    """``v`` as a key when it is an int or a tuple/list of ints (exactly: no bool, no numpy scalar), else None."""
    t = type(v)
    if t is int:
        return v
    if t is tuple or t is list:
        for x in v:
            if type(x) is not int:
                return None
        return v if t is tuple else tuple(v)
    return None


def _shape_key(kernel, grid, block, shared_bytes, regs_per_thread, cluster):
    """The key of a launch's shape in ``Module._shapes``, or None when an argument is not plain (checked each time)."""
    g, b = _plain(grid), _plain(block)
    if type(kernel) is not str or g is None or b is None or type(shared_bytes) is not int or \
            not (regs_per_thread is None or type(regs_per_thread) is int):
        return None
    c = None
    if cluster is not None:
        c = _plain(cluster)
        if c is None:
            return None
    # (the occupancy kept with the shape depends on the number of SMs the machine emulates)
    return kernel, type(grid) is int, g, type(block) is int, b, shared_bytes, regs_per_thread, cluster is None, c, \
        _residency.SMS


def _int_arg(v, what):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise OperandError(f"launch: {what} must be an integer, not {v!r}")
    return int(v)


def _dim3(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if not isinstance(v, (tuple, list)) or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool)
                                                   for x in v):
        raise OperandError(f"launch: {what} must be an int or a tuple of 1 to 3 ints, not {v!r}")
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3:
        raise OperandError(f"launch: {what} must have 1 to 3 dimensions")
    if any(x < 1 or x >= 1 << 31 for x in v):
        raise OperandError(f"launch: {what} dimensions must be 1..2^31-1, got {v}")
    return v + (1,) * (3 - len(v))


_PARAM_PLANS: dict = {}


def _param_plan(params, size):
    """(struct format, [(lowest, past the highest, mask)]) that packs ``params`` (the kernel's) when every one is a
    scalar integer (an address, a count), else None; made once per parameter list."""
    got = _PARAM_PLANS.get(id(params))
    if got is not None and got[0] is params:
        return got[1]
    plan = None
    if all(p.count == 1 and TYPES[p.ptype][1] != "f" for p, _ in params):
        fmt, at, checks = "<", 0, []
        for p, off in params:
            w = TYPES[p.ptype][0] // 8
            if off < at or w not in (1, 2, 4, 8):
                break
            fmt += "x" * (off - at) + {1: "B", 2: "H", 4: "I", 8: "Q"}[w]
            at = off + w
            checks.append((-(1 << (8 * w - 1)), 1 << (8 * w), (1 << (8 * w)) - 1))
        else:
            if at <= size:
                plan = (fmt + "x" * (size - at), checks)
    if len(_PARAM_PLANS) > 256:
        _PARAM_PLANS.clear()
    _PARAM_PLANS[id(params)] = (params, plan)
    return plan


_PARAM_BYTES: dict = {}


def _param_bytes(entry, prog, args):
    """The kernel's parameter bytes for ``args`` (a read-only array); kept for arguments that are all plain ints
    (addresses, counts: a launch repeated with the same arguments packs nothing)."""
    params = prog.kernel_params
    key = None
    if len(args) == len(params):
        for a in args:
            if type(a) is not int:
                break
        else:
            key = (id(params), *args)
            got = _PARAM_BYTES.get(key)
            if got is not None and got[0] is params:
                return got[1]
    buf = np.zeros(max(prog.layout.param, 1), np.uint8)
    _fill_params(entry, params, list(args), buf)
    if key is not None:
        buf.flags.writeable = False         # (shared by the launches with these arguments: only read)
        if len(_PARAM_BYTES) > 256:
            _PARAM_BYTES.clear()
        _PARAM_BYTES[key] = (params, buf)
    return buf


def _fill_params(entry, params, args, buf):
    plan = _param_plan(params, buf.size)
    if plan is not None and len(args) == len(params):      # every parameter an integer: one struct.pack_into
        vals = []
        for (lo, hi, mask), a in zip(plan[1], args):
            if type(a) is not int or not lo <= a < hi:
                break                       # (the general path below takes it, or names what is wrong)
            vals.append(a & mask)
        else:
            struct.pack_into(plan[0], buf, 0, *vals)
            return
    if len(args) != len(params):
        names = ", ".join(f"{p.name} (.{p.ptype}{f'[{p.count}]' if p.count > 1 else ''})" for p, _ in params)
        raise OperandError(f"launch {entry.name}: expected {len(params)} argument(s) ({names}), got {len(args)}")
    out = bytearray(buf.size)              # (the bytes between parameters stay zero)
    for (p, off), a in zip(params, args):
        kind = TYPES[p.ptype][1]
        w = TYPES[p.ptype][0] // 8
        if type(a) is int and p.count == 1 and kind != "f":        # the common case: an address or an integer
            if not -(1 << (8 * w - 1)) <= a < (1 << (8 * w)):
                raise OperandError(f"launch {entry.name}: {a} does not fit parameter {p.name} (.{p.ptype})")
            out[off:off + w] = (a & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
            continue
        if isinstance(a, np.ndarray) and a.dtype.hasobject:
            raise OperandError(f"launch {entry.name}: parameter {p.name}: an object array has no bytes to pass")
        if not isinstance(a, (bytes, bytearray, np.ndarray, int, float, np.integer, np.floating)):
            raise OperandError(f"launch {entry.name}: parameter {p.name} (.{p.ptype}) takes "
                               f"{'bytes or an array' if p.count > 1 else 'a number, bytes or an array'}, "
                               f"not {type(a).__name__} {a!r:.40}")
        if p.count > 1 and not isinstance(a, (bytes, bytearray, np.ndarray)):
            raise OperandError(f"launch {entry.name}: parameter {p.name} is an array of {p.size} bytes; pass bytes "
                               f"or a numpy array, not {type(a).__name__}")
        if p.count > 1 or isinstance(a, (bytes, bytearray, np.ndarray)):
            raw = np.frombuffer(bytes(a), np.uint8) if isinstance(a, (bytes, bytearray)) else \
                np.ascontiguousarray(a).view(np.uint8).reshape(-1)
            if raw.size != p.size:
                raise OperandError(f"launch {entry.name}: parameter {p.name} takes {p.size} bytes, got {raw.size}")
        elif kind == "f":
            raw = np.array([float(a)], {2: np.float16, 4: np.float32, 8: np.float64}[w]).view(np.uint8)
        else:
            if isinstance(a, (float, np.floating)) and not np.isfinite(a):
                raise OperandError(f"launch {entry.name}: parameter {p.name} is .{p.ptype}, got the float {a}")
            if isinstance(a, (float, np.floating)) and not float(a).is_integer():
                raise OperandError(f"launch {entry.name}: parameter {p.name} is .{p.ptype}, got the float {a}")
            iv = int(a)
            lo = -(1 << (8 * w - 1))
            if not lo <= iv < (1 << (8 * w)):
                raise OperandError(f"launch {entry.name}: {iv} does not fit parameter {p.name} (.{p.ptype})")
            raw = np.frombuffer((iv & ((1 << (8 * w)) - 1)).to_bytes(w, "little"), np.uint8)
        out[off:off + raw.size] = raw.tobytes()
    buf[:] = np.frombuffer(out, np.uint8)
