"""The instruction families of the fast engine, each compiled apart from the loops and only when a kernel needs
it.

The loops (``loop.run``, ``loop.run_cta``) keep the scheduling, the branches, barriers and exits, the loads and
stores; every other translated row belongs to a family (``FAMILIES``), one C-callable function with the
signature of ``ccall.SIG`` that the loop calls through its address: slot ``SLOT[name]`` of the translation's
pointer array (``Translation.mufu_ptr``). The translation fills the slots of the families its rows use
(``Translation.bind_families``); a slot left 0 makes the loop hand that row back to the reference executors,
which define the result anyway.

A family is compiled (or loaded from numba's cache) the first time a kernel needs it, under the compile lock,
as numba compiles each function once per machine (``warmup.family``: with ``engine="auto"`` it never compiles
while another process, the background compile, holds the lock). The other functions compiled apart from the loops
(``APART``: xcall.py's two, hopcall.py's, wgcall.py's, bulkcall.py's, ctaloop.py's) go the same way.
"""
from __future__ import annotations

import importlib

from . import table as T

# the integer rows most kernels have ("alu") and the others ("alu_x", compiled only for kernels with them)
_ALU = (T.MOV, T.ADD, T.SUB, T.MUL_LO, T.MUL_WIDE, T.MAD_LO, T.MAD_WIDE, T.SHL, T.SHR, T.AND, T.OR, T.XOR, T.SETP,
        T.SELP, T.CVT_II, T.BFE)
_ALU_X = (T.MUL_HI, T.MAD_HI, T.NOT, T.MIN, T.MAX, T.NEG, T.ABS, T.PRMT, T.MOV_UNPACK)

# name: (module of fastcore holding ``entry``, or "module:function", the opcodes of its rows)
FAMILIES = {
    "alu": ("alu", _ALU),
    "alu_x": ("alu:entry_x", _ALU_X),
    "alu_f32": ("alu:entry_f32", (T.FADD32, T.FSUB32, T.FMUL32, T.FFMA32, T.TF32_RNA)),
    "float": ("fcall", (T.FMINMAX, T.FNEGABS)),
    "mufu": ("fcall:entry_mufu", T.MUFU_ROWS),          # ex2, rcp, the divisions (contracted with an add: farith)
    "mufu_x": ("fcall:entry_mufu_x", (T.MUFU_X,)),      # sin, cos, tanh (their tables and reductions)
    "fcvt": ("fcall:entry_cvt", (T.FCVT,)),
    "shfl": ("shfl", (T.SHFL,)),
    "mma": ("mmax", (T.MMA,)),
    "mma_ext": ("mmaext", (T.MMA_X,)),
    "ldmatrix": ("ldm", (T.LDMATRIX,)),
    "cpasync": ("cpasync", (T.CPASYNC, T.CP_COMMIT, T.CP_WAIT)),
    "stmatrix": ("ldm:entry_st", (T.STMATRIX,)),
    "mufu_r": ("fcall:entry_mufu_r", (T.MUFU_R,)),      # lg2, rsqrt, sqrt
    "farith": ("fcall:entry_farith", (T.FARITH, T.MUFU_DIVFMA)),    # the .ftz and contracted f32 arithmetic
}
NAMES = tuple(FAMILIES)
# the families compiled with the loops' pipeline (``jitcache.lean``: no SSA; tests/test_lean_pipeline.py checks that
# it types no variable of theirs as none of its assignments is typed with SSA); "wgmma" is wgcall.wg_c (APART)
LEAN = ("alu", "ldmatrix", "wgmma", "alu_f32", "shfl", "cpasync", "pick")
# the other functions compiled apart from the loops, with signatures of their own, in fixed slots of the pointer
# array (loop.XSLOT, ASLOT, WSLOT, HSLOT): name: (module of fastcore, function, the module's signature attribute).
# They are compiled, loaded and waited for exactly as the families are (``address``, ``warmup.family``).
APART = {
    "xrow": ("xcall", "x_c", "X_SIG"),          # XROW: integer, bit, half, f64, conversion, collective rows
    "atom": ("xcall", "atom_c", "ATOM_SIG"),    # ATOM: atom/red
    "hopper": ("hopcall", "hop_c", "SIG"),      # HOPX: mbarriers, elect.sync, mapa, tensormap.replace, fences
    "wgmma": ("wgcall", "wg_c", "SIG"),         # WGMMA in the CTA loop
    "bulk": ("bulkcall", "bulk_c", "SIG"),      # BULKX: TMA box loads, stores and reductions
    "ctawait": ("ctaloop", "cta_c", "SIG"),     # the CTA loop's mbarrier stalls, wakes and yields
    "ctabar": ("ctaloop", "bar_c", "BAR_SIG"),  # a counted or register-numbered barrier's operands (CTA loop)
    "rare": ("rarecall", "rare_c", "SIG"),      # the warp loop's glue for ATOM, WGMMA, STMATRIX, HOPX, BULKX rows
    "memplan": ("memplan", "plan_c", "SIG"),    # the loads and stores ldst.plan leaves (.local, cp.async in flight)
    "cluster": ("clusterx", "cl_c", "SIG"),     # barrier.cluster, getctarank (HOPX rows of a cluster's CTAs)
    "bulk_mc": ("bulkcall", "mc_c", "SIG"),     # a lane's multicast TMA load (bulk_c calls it: bulkx.MCSLOT)
    # distributed shared memory (dsmemx.py): memplan.plan_c and xcall.atom_c with the cluster's shared windows,
    # bound in their slots instead of them for the kernels whose loads, stores or atomics may reach another CTA
    "dsmem": ("dsmemx", "plan_c", "SIG"),
    "dsmem_atom": ("dsmemx", "atom_c", "ATOM_SIG"),
    "bulk_s2s": ("bulkcall", "sc_c", "SIG"),    # cp.async.bulk.shared::cluster.shared::cta (bulk_c calls it)
    "pick": ("pickcall", "pick_c", "SIG"),      # the lane group to run next once a warp's lanes diverge (loop.run)
    "brx": ("loop", "brx_c", "SIG"),            # brx.idx (BRX rows)
    "memx": ("memx", "memx_c", "SIG"),          # shared stores beside the async proxy (kernels it reads)
}
# wgmma's tile arithmetic, one function per form (wgmmax.tile_of), which wgcall.wg_c calls through its address
WG_TILES = ("wg_f32_16", "wg_f32_32", "wg_f32_8", "wg_f32_4", "wg_dec", "wg_int")
APART.update({name: ("wgcall", name, "TILE_SIG") for name in WG_TILES})
# the float tiles' inf/NaN fix-ups, which the tile functions call through its address: bound only once a tile of
# the process needs them (wgmmax.WgTable.bind_fix; until then such a tile goes back to the reference)
APART["wg_fix"] = ("wgcall", "wg_fix", "FIX_SIG")
# the order the background compile and ``emulator.warmup()`` compile them in: the most used and cheapest first
# (CPU seconds of compile, each alone, on a 2-core machine: alu 2.6 (alu_x 1.9, last: few kernels need it),
# alu_f32 1.5, ldmatrix 0.7, shfl 1.7,
# cp.async 2.3, the float rows 5.2 (then one family, now fcvt, float and mufu), mma 3.5, mma_ext 9.8; then APART:
# xrow 17.5, atom 3.4, hopper 9.5, wgmma and its tiles)
ORDER = ("alu", "alu_f32", "ldmatrix", "shfl", "cpasync", "fcvt", "float", "mufu", "mma", "mma_ext", "stmatrix",
         "alu_x", "mufu_x", "mufu_r", "farith")


def _base():
    from .fmath import TABLES
    return len(TABLES) + 2


BASE = _base()          # the first family slot of the pointer array (after the MUFU tables and xcall's two)
SLOT = {name: BASE + i for i, name in enumerate(NAMES)}
NSLOTS = BASE + len(NAMES)              # the pointer array's length (then wgcall's, hopcall's and bulkcall's slots)
APART_SLOT = {"xrow": BASE - 2, "atom": BASE - 1, "wgmma": NSLOTS, "hopper": NSLOTS + 1, "bulk": NSLOTS + 2}
APART_SLOT.update({name: NSLOTS + 3 + i for i, name in enumerate(WG_TILES)})
APART_SLOT["ctawait"] = NSLOTS + 3 + len(WG_TILES)
APART_SLOT["ctabar"] = NSLOTS + 4 + len(WG_TILES)
APART_SLOT["rare"] = NSLOTS + 5 + len(WG_TILES)
APART_SLOT["memplan"] = NSLOTS + 6 + len(WG_TILES)
APART_SLOT["cluster"] = NSLOTS + 7 + len(WG_TILES)
APART_SLOT["bulk_mc"] = NSLOTS + 8 + len(WG_TILES)
APART_SLOT["dsmem"] = APART_SLOT["memplan"]          # (in place of memplan.plan_c, xcall.atom_c: dsmemx.py)
APART_SLOT["dsmem_atom"] = APART_SLOT["atom"]
APART_SLOT["bulk_s2s"] = NSLOTS + 9 + len(WG_TILES)
APART_SLOT["pick"] = NSLOTS + 10 + len(WG_TILES)
APART_SLOT["brx"] = NSLOTS + 11 + len(WG_TILES)
APART_SLOT["memx"] = NSLOTS + 12 + len(WG_TILES)
APART_SLOT["wg_fix"] = NSLOTS + 13 + len(WG_TILES)
NPTRS = NSLOTS + 14 + len(WG_TILES)     # the pointer array's whole length
# what the CTA loop cannot run without (a kernel's CTAs go to the Python scheduler while one is missing)
CTA_NEEDS = ("wgmma", "hopper", "bulk", "ctawait", "rare") + WG_TILES
# the rows after which a CTA may wait in the CTA loop: a kernel with any of them binds "ctawait" too
# (``Translation.apart``)
WAITS_WITH = ("wgmma", "hopper", "bulk")
OF_OPCODE = {op: name for name, (_, ops) in FAMILIES.items() for op in ops}

_CFUNCS: dict = {}


def _entry(name):
    if name in APART:
        module, fn, _ = APART[name]
        return getattr(importlib.import_module(f"{__package__}.{module}"), fn)
    module, _, fn = FAMILIES[name][0].partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), fn or "entry")


def _sig(name):
    if name in APART:
        module, _, sig = APART[name]
        return getattr(importlib.import_module(f"{__package__}.{module}"), sig)
    from .ccall import SIG
    return SIG


def cached(name) -> bool:
    """Whether the family is compiled in this process or valid in numba's cache (nothing is compiled)."""
    if name in _CFUNCS:
        return True
    try:
        from numba.core.caching import FunctionCache
        from numba.core.registry import cpu_target
        cache = FunctionCache(_entry(name))
        index = cache._cache_file._load_index()
        return cache._index_key(_sig(name), cpu_target.target_context.codegen()) in index
    except Exception:                      # noqa: BLE001 (an unreadable or foreign cache: treat as absent)
        return False


def _compile(name):
    from numba import cfunc
    c = _CFUNCS.get(name)
    if c is None:
        # the families run without numba's reference-counting runtime, as the loops do; the others (which make
        # their arrays with numba.carray) with it
        opts = {} if name in APART else {"_nrt": False}
        if name in LEAN:
            from ...numerics.jitcache import lean
            opts["pipeline_class"] = lean()
        c = _CFUNCS[name] = cfunc(_sig(name), cache=True, nopython=True, **opts)(_entry(name))
    return c


def address(name, lock) -> int:
    """The family's function address: loaded from numba's cache, or compiled here under ``lock`` (the compile
    lock, ``warmup.lock()``: one process of the machine compiles it, the others load it)."""
    c = _CFUNCS.get(name)
    if c is not None:
        return c.address
    if cached(name):
        return _compile(name).address
    with lock:
        return _compile(name).address
