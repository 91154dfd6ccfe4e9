"""Run ``@triton.jit`` kernels on the emulator, lane by lane (optional extra: ``pip install -e ".[triton]"``).

The Triton backend (``emulator.triton.backend``, registered as the ``triton.backends`` entry point ``warpemu``)
makes unchanged Triton programs run here: ``WARPEMU_TRITON=1`` in the environment, or :func:`activate`, and
``kernel[grid](...)`` with torch CPU tensors compiles with Triton's NVIDIA pipeline, stops at PTX and launches
the PTX on the emulator (README, "Triton without a GPU"). Below that, the numpy-level entry points:

    import emulator.triton
    out = emulator.triton.launch(add_kernel, (4,), x, y, z, n, BLOCK=256)   # numpy arrays in, results back
    out.result.ctas[0][1][0].read("%r1")                                   # any lane's registers afterwards

Triton compiles the kernel to PTX for a chosen target (no GPU is needed: ``target="sm_90a"`` or ``"sm_80"``),
specialising its arguments exactly as Triton's own launcher does (pointers and integers divisible by 16
get the divisibility hint, the integer 1 becomes a constant). The emulator loads that PTX text and runs it
on the chosen machine model (the H100, ``sm_90``, unless ``arch`` says otherwise); the numpy arrays are
mapped into :class:`~emulator.GlobalMemory` without copying, so the kernel writes into them.

:func:`run_ptx` launches PTX that Triton wrote earlier (the corpus replays use it); it needs no Triton.
"""
from __future__ import annotations

import numpy as np

from ..errors import OperandError, UnsupportedError
from ..machine.module import load_ptx
from ..memory import GlobalMemory

# numpy dtype -> the name Triton's specialiser gives the same torch dtype
_DTYPES = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
}
TARGETS = {"sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90": 90, "sm_90a": 90}


def _triton():
    try:
        import triton
        from triton.backends.compiler import BaseBackend, GPUTarget
        from triton.compiler import ASTSource
        from triton._C.libtriton import native_specialize_impl
    except ImportError as e:     # pragma: no cover - depends on the installation
        raise UnsupportedError("emulator.triton needs Triton (pip install -e \".[triton]\"); "
                               f"importing it failed: {e}") from None
    return triton, BaseBackend, GPUTarget, ASTSource, native_specialize_impl


class _Pointer:
    """What Triton's specialiser asks of a tensor argument: a device address and a dtype name."""

    def __init__(self, address, dtype):
        self._address = address
        self.dtype = dtype

    def data_ptr(self):
        return self._address


class Compiled:
    """One specialisation of a Triton kernel compiled to PTX."""

    def __init__(self, ptx, name, num_warps, shared, params, metadata):
        self.ptx = ptx                    # the PTX text exactly as Triton wrote it
        self.name = name                  # the .entry name
        self.num_warps = num_warps
        self.shared = shared              # dynamic shared memory bytes the launch needs
        self.params = params              # [(argument name, signature type)] of the .param list, in order
        self.metadata = metadata


def compile(kernel, *args, target="sm_90a", num_warps=4, num_stages=3, **constexprs) -> Compiled:
    """Compile ``kernel`` (a ``@triton.jit`` function) for ``args`` on ``target``; no GPU is needed.

    Arguments are given as they would be to ``kernel[grid](...)``: numpy arrays (or their device addresses as
    ``_Pointer``) for pointers, Python ints/floats/bools for scalars, constexprs by keyword."""
    triton, BaseBackend, GPUTarget, ASTSource, spec = _triton()
    if target not in TARGETS:
        raise UnsupportedError(f"emulator.triton: target {target!r} is not supported; supported: "
                               f"{', '.join(TARGETS)}")
    if not hasattr(kernel, "params") or not hasattr(kernel, "fn"):
        raise OperandError("emulator.triton: expected a @triton.jit function")
    bound = _bind(kernel, args, constexprs)
    signature, consts, attrs, params = {}, {}, {}, []
    for i, p in enumerate(kernel.params):
        v = bound[p.name]
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            consts[p.name] = v
            continue
        if isinstance(v, np.ndarray):
            dt = _DTYPES.get(v.dtype.name)
            if dt is None:
                raise UnsupportedError(f"emulator.triton: argument {p.name}: arrays of {v.dtype} are not "
                                       f"supported; supported: {', '.join(_DTYPES)}")
            v = _Pointer(256, dt)            # GlobalMemory hands out 256-byte aligned addresses
        ty, attr = spec(BaseBackend, v, False, not p.do_not_specialize, not p.do_not_specialize_on_alignment)
        signature[p.name] = ty
        if ty == "constexpr":
            consts[p.name] = attr
            continue
        if attr:
            attrs[(i,)] = BaseBackend.parse_attr(attr)
        params.append((p.name, ty))
    src = ASTSource(kernel, signature, consts, attrs)
    k = triton.compile(src, target=GPUTarget("cuda", TARGETS[target], 32),
                       options={"num_warps": num_warps, "num_stages": num_stages})
    md = k.metadata
    ptx = k.asm["ptx"]
    return Compiled(ptx, md.name, md.num_warps, md.shared, params, md)


def _bind(kernel, args, constexprs):
    names = [p.name for p in kernel.params]
    if len(args) > len(names):
        raise OperandError(f"emulator.triton: {kernel.__name__ if hasattr(kernel, '__name__') else kernel} takes "
                           f"{len(names)} arguments, got {len(args)}")
    bound = dict(zip(names, args))
    for k, v in constexprs.items():
        if k not in names:
            raise OperandError(f"emulator.triton: unknown argument {k!r}; arguments: {', '.join(names)}")
        if k in bound:
            raise OperandError(f"emulator.triton: argument {k!r} given twice")
        bound[k] = v
    for p in kernel.params:
        if p.name not in bound:
            if p.has_default:
                bound[p.name] = p.default
            else:
                raise OperandError(f"emulator.triton: missing argument {p.name!r}")
    return bound


class Launched(tuple):
    """The array arguments after the launch (the same numpy objects, written in place), in argument order;
    ``.result`` holds every CTA's warps (registers, shared memory), ``.compiled`` the PTX that ran."""

    def __new__(cls, arrays, result, compiled, module):
        self = super().__new__(cls, arrays)
        self.result, self.compiled, self.module = result, compiled, module
        return self


def launch(kernel, grid, *args, num_warps=4, num_stages=3, target="sm_90a", arch=None, gmem=None, sanitize=None,
           **constexprs):
    """Compile ``kernel`` with Triton, then run it on the emulator over ``grid`` (an int, a tuple, or a callable
    of the bound arguments as Triton accepts). Returns :class:`Launched`. ``sanitize``: as ``Module.launch``
    (docs/sanitize.md); the reports are ``launched.result.reports``."""
    compiled = compile(kernel, *args, target=target, num_warps=num_warps, num_stages=num_stages, **constexprs)
    bound = _bind(kernel, args, constexprs)
    if callable(grid):
        grid = grid(bound)
    values = [bound[name] for name, _ in compiled.params]
    arrays = [bound[p.name] for p in kernel.params if isinstance(bound[p.name], np.ndarray)]
    result, module = run_ptx(compiled.ptx, compiled.name, grid, values, num_warps=compiled.num_warps,
                             shared=compiled.shared, arch=arch, gmem=gmem,
                             scratch=getattr(compiled.metadata, "global_scratch_size", 0), sanitize=sanitize)
    return Launched(arrays, result, compiled, module)


def run_ptx(ptx, name, grid, args, num_warps=4, shared=0, arch=None, gmem=None, scratch=0, options=None,
            sanitize=None):
    """Launch a Triton-compiled kernel from its PTX text: ``args`` are the kernel's own arguments (numpy arrays
    are mapped into global memory and written in place; scalars as given); the two trailing scratch pointers
    Triton adds are supplied here. Returns (LaunchResult, Module)."""
    g = gmem if gmem is not None else GlobalMemory()
    module = load_ptx(ptx, arch=arch)
    grid = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    vals = []
    for a in args:
        if isinstance(a, np.ndarray):
            if a.flags.c_contiguous and a.flags.writeable:
                vals.append(g.map(a))
            else:
                raise OperandError("emulator.triton: array arguments must be C-contiguous and writeable "
                                   "(use np.ascontiguousarray)")
        elif isinstance(a, (bool, np.bool_)):
            vals.append(int(a))
        else:
            vals.append(a)
    nparams = len(module.program(name).kernel_params)
    extra = nparams - len(vals)
    if extra not in (0, 1, 2):
        raise OperandError(f"emulator.triton: {name} has {nparams} parameters, got {len(vals)} arguments")
    if extra:
        nprog = int(np.prod(grid))
        scratch_addr = g.alloc(int(scratch) * nprog) if scratch else 0
        vals += [scratch_addr, 0][:extra]
    result = module.launch(name, grid=grid, block=(32 * num_warps, 1, 1), args=vals, gmem=g,
                           shared_bytes=shared, options=options, sanitize=sanitize)
    return result, module


# -- the Triton backend ---------------------------------------------------------------------------------
def activate(target: str | None = None) -> None:
    """Make the emulator Triton's CUDA device in this process, as ``WARPEMU_TRITON=1`` does at start-up:
    ``kernel[grid](...)`` then compiles with Triton's NVIDIA pipeline for ``target`` (``"sm_90a"``, the
    default, or ``"sm_80"``), stops at PTX and runs the PTX here. Works also where the package is not
    installed (the ``triton.backends`` entry point is registered on the fly)."""
    triton = _triton()[0]
    from triton.backends import Backend, backends
    from triton.runtime import driver
    from .backend import TARGETS as _T, claim_cuda, set_state
    if target is not None and target not in _T:
        raise UnsupportedError(f"emulator.triton.activate: target {target!r} is not supported; supported: "
                               f"{', '.join(_T)}")
    from .backend.compiler import WarpemuBackend
    from .backend.driver import WarpemuDriver
    set_state(True, target)
    claim_cuda()
    if not any(b.compiler is WarpemuBackend for b in backends.values()):
        backends["warpemu"] = Backend(WarpemuBackend, WarpemuDriver)
    driver.set_active(WarpemuDriver())
    del triton


def deactivate() -> None:
    """Undo :func:`activate` (and ``WARPEMU_TRITON=1``): Triton's own drivers decide again."""
    from triton.runtime import driver
    from .backend import set_state
    set_state(False)
    driver._default = None
    driver._active = None


def is_active() -> bool:
    """Whether Triton launches on the emulator in this process."""
    from .backend import active
    return active()
