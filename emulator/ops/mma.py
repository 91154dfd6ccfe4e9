"""mma.sync: look-up of a variant, register-level execution, and the executor.

``get_mma(opcode, arch)`` returns an :class:`MmaOp` whose ``execute(a, b, c)`` maps raw register bits
(``(n_a, 32)`` etc., uint32 or uint64) to D's raw register bits with one jitted call.  The arithmetic is
``emulator.numerics`` (reference and jitted paths, tested equal); the variants and fragment layouts are
the data of ``isa.mma``.
"""
from __future__ import annotations

import numpy as np

from isa.fragments import reg_dtype
from isa.mma import ARCHS, ELEM, VARIANTS
from .registry import executor
from .common import require_full_warp, vec_regs
from ..errors import OperandError, UnsupportedError, did_you_mean, expect_str, fail
from ..numerics import fast, gemm_fast, tile_numpy
from ..numerics.jitcache import compiling as _compiling
from ..numerics.params import ARCH_ALIASES, FORMATS, tc_params

# Architectures each arithmetic family has a model for (beyond ptxas accepting the spelling).
MODEL_ARCHS = {"tc": ("sm_80", "sm_86", "sm_90"), "int": ("sm_80", "sm_86", "sm_90"),
               "f64": ("sm_80", "sm_86", "sm_90"), "fp8": ("sm_90",),
               # ptxas 13.0 emits the same CUDA-core sequence for sm_80/sm_86 (tests/data/mma/sass_sm8*.json)
               "m8n8k4_f16": ("sm_80", "sm_86", "sm_90"), "b1": ("sm_80", "sm_86", "sm_90")}

_LAYOUTS = ("row", "col")
WIDE_BATCH = 32         # tensor-core batches at least this large run vectorised across instructions
PARALLEL_BATCH = 4096   # ... and at least this large, spread over the cores
_TYPES = set(ELEM)


def canonical_spelling(opcode: str) -> str:
    """Canonical dotted spelling of an mma opcode whose modifiers may come in any order ptxas accepts
    (the two layouts keep their order: A's then B's; so do the four types: D, A, B, C)."""
    parts = opcode.strip().split(".")
    if not parts or parts[0] != "mma":
        fail(UnsupportedError, opcode, "not an mma instruction")
    shape, layouts, types, flags, other, bop = None, [], [], set(), [], ""
    for p in parts[1:]:
        if p in ("xor", "and") and not bop:
            bop = p
        elif p in ("sync", "aligned", "satfinite", "popc"):
            if p in flags:
                fail(UnsupportedError, opcode, f"modifier .{p} given twice")
            flags.add(p)
        elif p in _LAYOUTS:
            layouts.append(p)
        elif p in _TYPES:
            types.append(p)
        elif p.startswith("m") and "n" in p and "k" in p and shape is None:
            shape = p
        else:
            other.append(p)
    if other or shape is None or len(layouts) != 2 or len(types) != 4 or not {"sync", "aligned"} <= flags:
        return None
    if bool(bop) != ("popc" in flags):
        return None
    sat = ".satfinite" if "satfinite" in flags else ""
    tail = f".{bop}.popc" if bop else ""
    return f"mma.sync.aligned.{shape}.{layouts[0]}.{layouts[1]}{sat}.{'.'.join(types)}{tail}"


def supported_spellings(arch: str | None = None):
    return [s for s, v in VARIANTS.items() if arch is None or _arch_key(arch) in _model_archs(v)]


def _arch_key(arch):
    return ARCH_ALIASES.get(arch, arch)


def _model_archs(v):
    return tuple(a for a in v.archs if a in MODEL_ARCHS[v.family])


def _flat_map(v, op):
    f = v.fragment(op)
    cols = v.tile_shape(op)[1]
    return np.ascontiguousarray((f[..., 0] * cols + f[..., 1]).reshape(-1), dtype=np.int64)


class MmaOp:
    """One mma.sync variant bound to an architecture."""

    def __init__(self, variant, arch):
        v = self.variant = variant
        self.arch = arch
        self.spelling = v.spelling
        self.family = v.family
        self.n_a, self.n_b, self.n_c, self.n_d = v.n_a, v.n_b, v.n_c, v.n_d
        self.a_bits, self.b_bits, self.c_bits, self.d_bits = (v.reg_bits(op) for op in "ABCD")
        self._dt = {op: reg_dtype(v, op) for op in "ABCD"}
        self._shape_a, self._shape_b, self._shape_c = (v.n_a, 32), (v.n_b, 32), (v.n_c, 32)
        M, N = v.tile_shape("D")
        K = v.tile_shape("A")[1]
        epr = [v.reg_bits(op) // v.elem_bits(op) for op in "ABCD"]
        w = [v.elem_bits(op) for op in "ABCD"]
        fam = v.family
        maps = [_flat_map(v, op) for op in "ABCD"]
        if fam in ("tc", "fp8"):
            # the sm_90 fp8 sequence's two k groups (k%4 in {0,1}, then {2,3}) are made contiguous
            fb = v.fragment("B")
            kpos = np.arange(K)
            if fam == "fp8":
                order = [k for k in range(K) if k % 4 < 2] + [k for k in range(K) if k % 4 >= 2]
                kpos = np.argsort(order)
            fa = v.fragment("A")
            maps[0] = np.ascontiguousarray((fa[..., 0] * K + kpos[fa[..., 1]]).reshape(-1), np.int64)
            maps[1] = np.ascontiguousarray((kpos[fb[..., 0]] * N + fb[..., 1]).reshape(-1), np.int64)
        offs = np.cumsum([0] + [len(x) for x in maps[:3]]).tolist()
        self._maps = np.concatenate(maps)
        if fam in ("tc", "fp8"):
            p = tc_params(arch, v.atype, v.dtype)
            fa, fb, fc, fd = (FORMATS[t].code for t in (v.atype, v.btype, v.ctype, v.dtype))
            L = K // 2 if fam == "fp8" else min(p.L, K)
            self.params = p
            prm = [M, N, K, fa, fb, fc, fd, *epr, *w, L, p.F, p.e_zero, p.rounding, int(fam == "fp8")]
            assert N == 8, f"{v.spelling}: the tensor-core kernels assume N == 8"
            self._kern = gemm_fast.tc_batch
            self._kern_wide = gemm_fast.tc_batch_wide
            self._kern_par = gemm_fast.tc_batch_wide_par
            self._luts = (v.atype, v.btype)          # decode tables, built when the jitted kernel first runs
        elif fam == "int":
            prm = [M, N, K, epr[0], epr[1], w[0], w[1], int(v.atype[0] == "s"), int(v.btype[0] == "s"),
                   int(v.satfinite)]
            self._kern = _int_batch
        elif fam == "b1":
            # exact: AND is the product of bits; XOR as popc(a & ~b) + popc(~a & b), as the H100 runs it
            prm = [M, N, K, epr[0], epr[1], 1, 1, 0, 0, 0]
            if v.bop == "and":
                self._kern = _int_batch
            else:
                def _xor(a, b, c, d, maps, prm_):
                    t = np.empty_like(d)
                    _int_batch(a, ~b, c, t, maps, prm_)
                    _int_batch(~a, b, t, d, maps, prm_)
                self._kern = _xor
        elif fam == "f64":
            prm = [M, N, K]
            self._kern = fast.f64_batch
        else:
            prm = [FORMATS[v.ctype].code, FORMATS[v.dtype].code, epr[2], epr[3], w[2], w[3]]
            self._kern = fast.m8n8k4_batch
        self._prm = np.array(prm + offs, np.int64)
        if not hasattr(self, "_luts"):
            self._luts = ()
        if not hasattr(self, "_kern_wide"):
            self._kern_wide = self._kern_par = None
        # until numba has compiled the tile kernel, the common f32-accumulator forms run in numpy
        self._cold = fam == "tc" and tile_numpy.eligible(self._prm)

    @property
    def _extra(self):
        """The jitted kernel's extra arguments (the operand formats' decode tables)."""
        return tuple(gemm_fast.lut(t) for t in self._luts)

    def __repr__(self):
        return f"MmaOp({self.spelling!r}, arch={self.arch!r})"

    def execute(self, a, b, c):
        """Raw register bits (n_a, 32), (n_b, 32), (n_c, 32) -> D's raw bits (n_d, 32)."""
        dt = self._dt
        if (type(a) is np.ndarray and type(b) is np.ndarray and type(c) is np.ndarray
                and a.dtype == dt["A"] and b.dtype == dt["B"] and c.dtype == dt["C"]
                and a.shape == self._shape_a and b.shape == self._shape_b and c.shape == self._shape_c
                and a.flags.c_contiguous and b.flags.c_contiguous and c.flags.c_contiguous):
            if self._cold and _compiling():
                return self._run_cold(a[None], b[None], c[None])[0]
            d = np.empty((1, self.n_d, 32), dt["D"])                  # the common case, checked cheaply
            self._kern(a.reshape(1, self.n_a, 32), b.reshape(1, self.n_b, 32), c.reshape(1, self.n_c, 32), d,
                       self._maps, self._prm, *self._extra)
            return d[0]
        return self.execute_batch(np.asarray(a)[None], np.asarray(b)[None], np.asarray(c)[None])[0]

    def execute_one(self, a, b, c):
        """``execute`` of one instruction whose operands are an executor's own buffers: C-contiguous (1, n, 32) arrays
        of the operands' dtypes (not checked again). Returns D's raw bits (1, n_d, 32), a new array."""
        extra = self.__dict__.get("_extra_args")
        if extra is None:
            extra = self._extra_args = self._extra
        d = np.empty((1, self.n_d, 32), self._dt["D"])
        args = (a, b, c, d, self._maps, self._prm, *extra)
        if self._cold and not self.__dict__.get("_hot_one"):
            # the jitted tile once it holds code for exactly these argument types in this process (calling it then
            # compiles nothing); until then, while a compile runs elsewhere on the machine, the numpy tile
            sig = self.__dict__.get("_one_sig")
            if sig is None:
                from numba import typeof
                sig = self._one_sig = tuple(typeof(x) for x in args)
            if sig in self._kern.overloads:
                self._hot_one = True
            elif _compiling():
                return self._run_cold(a, b, c)
        self._kern(*args)
        return d

    def execute_batch(self, a, b, c):
        """Many independent instructions at once: (batch, n_a, 32) ... -> (batch, n_d, 32)."""
        a = self._regs(a, "A", self.n_a)
        b = self._regs(b, "B", self.n_b)
        c = self._regs(c, "C", self.n_c)
        if not (a.shape[0] == b.shape[0] == c.shape[0]):
            fail(OperandError, self.spelling, f"batch sizes differ: A {a.shape[0]}, B {b.shape[0]}, C {c.shape[0]}")
        if self._cold and _compiling():
            return self._run_cold(a, b, c)
        d = np.empty((a.shape[0], self.n_d, 32), self._dt["D"])
        kern = self._kern
        if self._kern_wide is not None and a.shape[0] >= WIDE_BATCH:
            kern = self._kern_par if a.shape[0] >= PARALLEL_BATCH else self._kern_wide
        kern(a, b, c, d, self._maps, self._prm, *self._extra)
        return d

    def _run_cold(self, a, b, c):
        """The numpy tile (numerics.tile_numpy); instructions it cannot finish go to the jitted kernel."""
        parts = [tile_numpy.tile_f32(a[i:i + COLD_CHUNK], b[i:i + COLD_CHUNK], c[i:i + COLD_CHUNK], self._maps,
                                     self._prm) for i in range(0, a.shape[0], COLD_CHUNK)]
        d = np.concatenate([p[0] for p in parts]).astype(self._dt["D"])
        bad = np.concatenate([p[1] for p in parts])
        if bad.any():
            idx = np.flatnonzero(bad)
            sub = np.empty((idx.size, self.n_d, 32), self._dt["D"])
            self._kern(np.ascontiguousarray(a[idx]), np.ascontiguousarray(b[idx]), np.ascontiguousarray(c[idx]),
                       sub, self._maps, self._prm, *self._extra)
            d[idx] = sub
        return d

    def _regs(self, x, op, n):
        x = np.asarray(x)
        dt = self._dt[op]
        if x.dtype != dt:
            if x.dtype.kind not in "ui" or x.dtype.itemsize > np.dtype(dt).itemsize:
                fail(OperandError, self.spelling,
                     f"operand {op} must hold raw register bits as {np.dtype(dt).name}, got {x.dtype}")
            x = x.astype(dt)
        if x.ndim != 3 or x.shape[1:] != (n, 32):
            fail(OperandError, self.spelling, f"operand {op} needs {n} registers x 32 lanes, got shape {x.shape[1:]}")
        return np.ascontiguousarray(x)


def _int_batch(a, b, c, d, maps, prm):
    """The integer tile: numpy while the background compile runs, then the jitted kernel."""
    (tile_numpy.int_batch if _compiling() else fast.int_batch)(a, b, c, d, maps, prm)


COLD_CHUNK = 2048       # instructions per numpy call on the cold path (bounds its temporaries)

_CACHE: dict = {}


def get_mma(opcode: str, arch: str = "sm_90") -> MmaOp:
    """The mma.sync variant spelled ``opcode`` (any modifier order ptxas accepts) on ``arch``."""
    expect_str(opcode, "mma: instr")
    expect_str(arch, "mma: arch")
    key = (opcode, arch)
    op = _CACHE.get(key)
    if op is not None:
        return op
    spelling = canonical_spelling(opcode)
    v = VARIANTS.get(spelling)
    if v is None:
        fail(UnsupportedError, opcode, "unsupported mma variant; " +
             did_you_mean(spelling or opcode, VARIANTS, "docs/supported.md"))
    ak = _arch_key(arch)
    if ak not in ARCHS:
        fail(UnsupportedError, opcode, f"no mma.sync model for {arch}; modelled: {', '.join(ARCHS)} "
                                       f"({', '.join(f'{a} as {b}' for a, b in ARCH_ALIASES.items())})")
    if ak not in v.archs:
        fail(UnsupportedError, opcode, f"not available on {arch} (ptxas accepts it for {', '.join(v.archs)})")
    if ak not in MODEL_ARCHS[v.family]:
        fail(UnsupportedError, opcode, f"no numeric model for {arch} (modelled on {', '.join(_model_archs(v))})")
    op = _CACHE[key] = MmaOp(v, ak)
    return op


# ------------------------------------------------------------------------------------------------
# the executor: gathers the operand registers of all 32 lanes and runs the instruction
_UINT = {32: np.uint32, 64: np.uint64}


@executor("mma")
def compile_mma(instr, env):
    op = get_mma(instr.opcode, env.arch)
    if len(instr.operands) != 4:
        raise OperandError(f"{instr.opcode}: takes 4 operands (D, A, B, C), found {len(instr.operands)}")
    groups = []
    for opnd, n, bits, what in zip(instr.operands, (op.n_d, op.n_a, op.n_b, op.n_c),
                                   (op.d_bits, op.a_bits, op.b_bits, op.c_bits), "DABC"):
        names = vec_regs(env, opnd, instr, n, f"{what} operand")
        for name in names:
            if env.reg_width(name) != bits:
                raise OperandError(f"{instr.opcode}: {what} register {name} is {env.reg_width(name)}-bit; "
                                   f"this variant needs {bits}-bit registers")
        groups.append((names, _UINT[bits]))
    (d_names, _), (a_names, a_dt), (b_names, b_dt), (c_names, c_dt) = groups
    text = instr.text

    bufs = [np.empty((1, len(names), 32), dt) for names, dt in groups[1:]]     # (op.execute_one's operands)
    srcs = list(zip((a_names, b_names, c_names), (b[0] for b in bufs)))
    outs = [(i, n) for i, n in enumerate(d_names) if n != "_"]

    def run(warp, mask):
        require_full_warp(instr, mask)
        regs = warp.regs
        get = warp.get_reg
        for names, buf in srcs:                 # gather the operand registers (C is read before D is written)
            for i, n in enumerate(names):
                r = regs.get(n)                 # (a register never written: get_reg's rule)
                buf[i] = r if r is not None else get(n, text)
        d = op.execute_one(*bufs)[0]
        for i, n in outs:                       # a full warp: D registers are replaced whole
            regs[n] = d[i]
    return run
