"""The Triton driver that launches kernels on the emulator.

``kernel[grid](...)`` reaches :class:`Launcher` with the arguments as bound by Triton: torch CPU tensors and
numpy arrays (mapped in place, ``emulator.triton.hostmem``), scalars packed to the kernel's parameter types,
tuples flattened, host ``TensorDescriptor`` s encoded into the 128 bytes of a tensor map as the CUDA driver
does (``emulator.memory.tensormap``), and the two scratch buffers (global and profile) Triton's kernels
take last. Each launch runs on a fresh :class:`~emulator.GlobalMemory` holding those buffers.

The benchmarker (``@triton.autotune``'s timing function) is deterministic: it runs the call once and
returns the emulator's count of warp instructions issued, converted to milliseconds at one instruction per
cycle per scheduler of an H100 (132 SMs x 4 schedulers x 1.755 GHz): a cost model, not a time.
"""
from __future__ import annotations

import hashlib
import re
import time

import numpy as np

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from . import active, capability, claim_cuda
from ...errors import OperandError, UnsupportedError
from ...machine.module import load_ptx
from ...memory import MAX_SHARED_BYTES, GlobalMemory
from ...memory.tensormap import TensorMap
from ..hostmem import HostMapping

SM_COUNT = 132
INSTRUCTIONS_PER_MS = SM_COUNT * 4 * 1.755e6          # warp instructions an H100 could issue in 1 ms

_stats = {"instructions": 0, "launches": 0}


def cost_counter():
    """Warp instructions issued by every emulated launch of this process so far (the autotuner's cost)."""
    return _stats["instructions"]


def benchmarker(kernel_call, quantiles=None, return_mode="mean", **_ignored):
    """Triton's ``do_bench`` contract with a deterministic cost: ``kernel_call`` runs once; the result is its
    warp instructions in H100 milliseconds (module docstring)."""
    before = _stats["instructions"]
    kernel_call()
    ms = (_stats["instructions"] - before) / INSTRUCTIONS_PER_MS
    if quantiles is not None:
        return [ms for _ in quantiles]
    return ms


# -- the PTX module of a kernel: parsed once -----------------------------------------------------------
_modules: dict = {}


class Function:
    """What ``load_binary`` hands Triton as the kernel's function: the parsed module and the entry name."""

    def __init__(self, module, name):
        self.module, self.name = module, name
        self.prog = module.program(name)
        self.nparams = len(self.prog.kernel_params)

    def __int__(self):                     # Triton's launch hooks may print it as a handle
        return id(self)


def _estimate_regs(text, maxnreg):
    """A plausible register count (ptxas is not run): 32-bit registers live in the PTX's declarations,
    capped at 255 (or .maxnreg), at least 16."""
    n = 0
    for ty, count in re.findall(r"\.reg\s+\.(\w+)\s+%\w+<(\d+)>", text):
        if ty == "pred":
            continue
        n += int(count) * (2 if ty.endswith("64") else 1)
    cap = maxnreg or 255
    regs = max(16, min(cap, 8 + n // 4))
    regs = -(-regs // 8) * 8 if regs < cap else cap
    return min(regs, cap), 0


class Utils:
    """``driver.active.utils``: what Triton asks of the device below the launcher."""

    def load_binary(self, name, kernel, shared, device):
        text = kernel.decode() if isinstance(kernel, (bytes, bytearray)) else str(kernel)
        key = hashlib.sha1(text.encode()).hexdigest()
        mod = _modules.get(key)
        if mod is None:
            arch = "sm_90a" if capability() >= 90 else "sm_80"
            mod = load_ptx(text, arch=arch)
            if len(_modules) > 512:
                _modules.pop(next(iter(_modules)))
            _modules[key] = mod
        m = re.search(r"\.maxnreg\s+(\d+)", text)
        n_regs, n_spills = _estimate_regs(text, int(m.group(1)) if m else 0)
        return mod, Function(mod, name), n_regs, n_spills, 1024

    def get_device_properties(self, device):
        return {"max_shared_mem": MAX_SHARED_BYTES, "max_num_regs": 65536, "multiprocessor_count": SM_COUNT,
                "warpSize": 32, "sm_clock_rate": 1755000, "mem_clock_rate": 2619000, "mem_bus_width": 5120,
                "max_threads_per_block": 1024}

    def set_printf_fifo_size(self, size):
        if not isinstance(size, int) or size < 0:
            raise OperandError(f"set_printf_fifo_size: size must be a non-negative int, not {size!r}")

    def fill_tma_descriptor(self, global_address, swizzle, elem_size, elem_type, block_size, shape, strides,
                            padding):
        """The 128 bytes ``cuTensorMapEncodeTiled`` writes for Triton's arguments (host dtype enum)."""
        return bytes(_encode_tma(global_address, swizzle, elem_size, elem_type, block_size, shape, strides,
                                 padding))


def _encode_tma(addr, swizzle, elem_size, elem_type, block_size, shape, strides, padding):
    rank = len(block_size)
    return TensorMap.encode_tiled(
        elem_type, rank, addr, [int(x) for x in reversed(list(shape))],
        [int(elem_size) * int(strides[rank - 2 - i]) for i in range(rank - 1)],
        [int(x) for x in reversed(list(block_size))], swizzle=int(swizzle), l2_promotion=2,
        oob_fill=1 if padding else 0)


# the TMA data type enum as the device code names it -> the host enum cuTensorMapEncodeTiled takes
_TMA_DEVICE_TO_HOST = {i: i for i in range(16)}
_TMA_DEVICE_TO_HOST.update({8: 10, 9: 8, 10: 9})

_INT_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "u1": 8, "u8": 8, "u16": 16, "u32": 32,
             "u64": 64}


def _float_packer(ty):
    if ty == "bf16":
        import ml_dtypes
        dt = np.dtype(ml_dtypes.bfloat16)
    else:
        dt = {"fp16": np.float16, "fp32": np.float32, "f32": np.float32, "fp64": np.float64}[ty]
    return lambda v: np.array([v], dt)


def _int_packer(ty):
    bits = _INT_BITS[ty]
    mask = (1 << bits) - 1

    def pack(v):
        if isinstance(v, (float, np.floating)):
            raise OperandError(f"a {ty} parameter got the float {v}")
        return int(v) & mask
    return pack


class Launcher:
    """``driver.active.launcher_cls(src, metadata)``: launches one compiled kernel."""

    def __init__(self, src, metadata):
        sig = getattr(src, "signature", {})
        self.signature = list(sig.values())
        self.names = list(sig.keys())
        self.tensordesc_meta = list(getattr(metadata, "tensordesc_meta", None) or [])
        self.num_warps = metadata.num_warps
        self.num_ctas = getattr(metadata, "num_ctas", 1)
        self.shared = metadata.shared
        self.global_scratch = (getattr(metadata, "global_scratch_size", 0) or 0,
                               getattr(metadata, "global_scratch_align", 1) or 1)
        self.profile_scratch = (getattr(metadata, "profile_scratch_size", 0) or 0,
                                getattr(metadata, "profile_scratch_align", 1) or 1)
        self._packers = {}

    def _packer(self, ty):
        p = self._packers.get(ty)
        if p is None:
            if ty in _INT_BITS:
                p = _int_packer(ty)
            elif ty in ("fp16", "bf16", "fp32", "f32", "fp64"):
                p = _float_packer(ty)
            else:
                raise UnsupportedError(f"emulator.triton: parameter type {ty!r} is not supported")
            self._packers[ty] = p
        return p

    def _flatten(self, sigs, args, names, out):
        """(kind, type, value, name) per kernel parameter, in .param order."""
        for ty, a, name in zip(sigs, args, names):
            if isinstance(ty, tuple):
                if not isinstance(a, (tuple, list)) or len(a) != len(ty):
                    raise OperandError(f"argument {name}: expected a tuple of {len(ty)}, got {a!r:.60}")
                self._flatten(ty, a, [f"{name}[{i}]" for i in range(len(ty))], out)
            elif ty == "constexpr":
                continue
            elif ty.startswith("*"):
                out.append(("ptr", ty, a, name))
            elif ty.startswith("tensordesc"):
                meta = self.tensordesc_meta[self._td] if self.tensordesc_meta else None
                self._td += 1
                out.append(("desc", ty, (a, meta), name))
            else:
                out.append(("val", ty, a, name))

    def __call__(self, gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata,
                 launch_enter_hook, launch_exit_hook, *args):
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        self._td = 0
        flat = []
        self._flatten(self.signature, args, self.names, flat)
        hosts, slots = [], []
        for kind, ty, a, name in flat:
            if kind == "ptr":
                slots.append(len(hosts))
                hosts.append(a)
            elif kind == "desc":
                slots.append(len(hosts))
                hosts.append(a[0].base)
        nprog = gridX * gridY * gridZ
        if nprog > 0:
            mapping = HostMapping()
            addrs = mapping.place(hosts, f"{function.name}")
            vals = []
            k = 0
            for kind, ty, a, name in flat:
                if kind == "ptr":
                    vals.append(addrs[k])
                    k += 1
                elif kind == "desc":
                    vals.extend(self._descriptor(a[0], a[1], addrs[k]))
                    k += 1
                else:
                    vals.append(self._packer(ty)(a))
            g = mapping.gmem
            for size, align in (self.global_scratch, self.profile_scratch):
                if size:
                    vals.append(g.alloc(size * nprog * self.num_ctas + align))
                else:
                    vals.append(0)
            extra = function.nparams - len(vals)
            if extra < 0 and extra >= -2:
                vals = vals[:function.nparams]
            cluster = (self.num_ctas, 1, 1) if self.num_ctas > 1 else None
            res = function.module.launch(function.name, grid=(gridX * self.num_ctas, gridY, gridZ),
                                         block=(32 * self.num_warps, 1, 1), args=vals, gmem=g,
                                         shared_bytes=self.shared, cluster=cluster, progress=False,
                                         keep_ctas=False)
            _stats["instructions"] += res.instructions
            _stats["launches"] += 1
            self.last_result = res
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)

    def _descriptor(self, desc, meta, addr):
        shape, strides = list(desc.shape), list(desc.strides)
        if meta is None:      # lowered to pointer arithmetic: base, shape, strides, padding, shape, strides
            return [addr, *map(int, shape), *map(int, strides), int(desc.padding == "nan"),
                    *map(int, shape), *map(int, strides)]
        if int(strides[-1]) != 1:
            raise OperandError("TensorDescriptor: the last dimension must be contiguous (stride 1)")
        if meta["fp4_padded"]:
            shape = list(shape)
            shape[-1] *= 2
        raw = _encode_tma(addr, meta["swizzle"], meta["elem_size"], _TMA_DEVICE_TO_HOST[meta["elem_type"]],
                          meta["block_size"], shape, strides, desc.padding == "nan")
        return [np.frombuffer(bytes(raw), np.uint8).copy(), *map(int, shape), *map(int, strides)]


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class DeviceInterface:
    """The few ``torch.cuda`` calls Triton's helpers make of a device (``get_device_interface``)."""
    Event = _Event

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def set_device(device):
        pass

    @staticmethod
    def current_stream(device=None):
        return 0

    @staticmethod
    def get_device_capability(device=None):
        c = capability()
        return (c // 10, c % 10)

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1


class WarpemuDriver(DriverBase):
    """Triton's active driver while the emulator is active (``WARPEMU_TRITON=1`` or ``activate()``)."""

    def __init__(self):
        super().__init__()
        claim_cuda()
        self.utils = Utils()
        self.launcher_cls = Launcher

    @staticmethod
    def is_active():
        return active()

    def get_current_target(self):
        return GPUTarget("cuda", capability(), 32)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_device_interface(self):
        return DeviceInterface

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def map_python_to_cpp_type(self, ty: str) -> str:
        from triton.backends.nvidia.driver import ty_to_cpp
        return ty_to_cpp(ty)

    def get_benchmarker(self):
        return benchmarker

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(16, dtype=torch.int8)

    def clear_cache(self, cache):
        cache.zero_()
