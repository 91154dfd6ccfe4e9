"""Generators of the second generation, written apart from ``fuzzlib``'s mutators and seeds:

* ``types``: every public callable (a catalogue of their valid calls, below) called with one or two of its
  arguments replaced by a value of another kind: ``None``, strings, bytes, huge and negative integers, NaN,
  containers, objects, and odd numpy arrays (object dtype, 0-d, empty, non-contiguous, read-only,
  byte-swapped, broadcast views claiming terabytes). A call either works or raises an ``EmulatorError``.
* ``grammar``: PTX written from a small grammar rather than mutated from compiler output: nested ``{ }``
  scopes (thousands deep), ``printf`` format strings with huge widths and precisions, duplicate
  declarations, immediates at and past every width, odd directives; loaded and launched briefly.

``fuzzlib.check`` holds them to the same rule as the other kinds.
"""
from __future__ import annotations

import io

import numpy as np

# -- values of the wrong kind ------------------------------------------------------------------------------


def odd_arrays():
    """numpy arrays every array-taking function must either take or refuse cleanly."""
    base = np.arange(64, dtype=np.float32)
    ro = np.arange(32, dtype=np.uint32)
    ro.flags.writeable = False
    return [
        np.empty(4, object), np.array([None, 1, "x"], object), np.zeros(()), np.float16(1.0) * np.ones(()),
        np.zeros(0, np.float16), np.zeros((0, 8), np.float32), base[::3], base.reshape(8, 8).T,
        base.reshape(8, 8)[:, ::2], ro, np.arange(16, dtype=">f4"), np.zeros(16, np.complex64),
        np.zeros(8, "U3"), np.zeros(4, [("a", "i4"), ("b", "f4")]), np.broadcast_to(np.float32(0), (1 << 40,)),
        np.broadcast_to(np.float16(0), (1 << 20, 1 << 20)), np.zeros((16, 16), np.float64),
        np.zeros((16, 16, 2), np.float16), np.array([np.nan, np.inf], np.float32), np.zeros(32, bool),
        np.zeros(32, np.int64), np.zeros(3, np.uint8), np.zeros((2, 2), np.float16), np.datetime64("2020", "D"),
    ]


class _Weird:
    def __index__(self):
        raise ValueError("no index")

    def __len__(self):
        return -1

    def __iter__(self):
        raise TypeError("no iteration")


def odd_values():
    return [None, True, False, 0, -1, 1, 3, 2 ** 31, 2 ** 63, 2 ** 64, -(2 ** 70), 10 ** 30, 1.5, -0.0,
            float("nan"), float("inf"), 1j, "", "x", "%r1", "sm_90", "\0", "é" * 3, b"", b"\xff" * 9,
            bytearray(2), [], [None], [1, [2, 3]], [[1, 2], [3]], (), (1, "a"), ((),), {}, {"a": 1}, set(),
            object(), _Weird(), type, print, np.int64(-5), np.uint64(2 ** 64 - 1), np.float32(np.nan),
            np.bool_(True), slice(1, 2), range(3), Ellipsis] + odd_arrays()


# -- the catalogue of public calls -------------------------------------------------------------------------
KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
    .reg .b32 %r<4>; .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd1, %rd1, %rd2;
    st.global.u32 [%rd1], %r1;
    ret;
}
"""
_MODULE = None


def _module():
    global _MODULE
    if _MODULE is None:
        from emulator import load_ptx
        _MODULE = load_ptx(KERNEL)
    return _MODULE


MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
WGMMA = "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"


def _catalogue():
    """(name, function of keyword arguments, valid keyword arguments). Each function builds what it needs."""
    import emulator
    from emulator import GlobalMemory, Warp, WarpOptions, check_layout, load_ptx
    from emulator import gluon as G
    from emulator.cute import Layout, Swizzle, crd2idx, idx2crd

    def warp_call(method):
        def call(**kw):
            w = Warp()
            return getattr(w, method)(**kw)
        return call

    def gmem_call(method):
        def call(**kw):
            g = GlobalMemory()
            base = g.alloc(256)
            kw = {k: (base if isinstance(v, str) and v == "BASE" else v) for k, v in kw.items()}
            return getattr(g, method)(**kw)
        return call

    def launch(**kw):
        g = GlobalMemory()
        args = kw.pop("args", "DEFAULT")
        if isinstance(args, str) and args == "DEFAULT":
            args = [g.alloc(4096), 7]
        return _module().launch(kw.pop("kernel", "k"), args=args, gmem=kw.pop("gmem", g), **kw)

    def blocked(**kw):
        lay = G.BlockedLayout(**kw)
        lay.to_linear((16, 16))
        return lay

    def layout_owner(shape):
        return G.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]).owner(shape)

    def layout_to_linear(shape):
        return G.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]).to_linear(shape)

    def linear_owner(shape):
        lay = G.DistributedLinearLayout(reg_bases=[[0, 1]], lane_bases=[[0, 2], [0, 4], [0, 8], [1, 0], [2, 0]],
                                        warp_bases=[[4, 0]], block_bases=[], shape=[8, 16])
        return lay.owner(shape)

    f16 = np.zeros((16, 16), np.float16)
    return [
        ("Warp", lambda **kw: Warp(**kw), {"smem_bytes": 1024, "gmem": None, "arch": "sm_90", "options": None}),
        ("WarpOptions", lambda **kw: WarpOptions(**kw), {"cp_async": "deferred", "uninitialized": "zero"}),
        ("Warp.write", warp_call("write"), {"name": "%r1", "values": 3}),
        ("Warp.read", warp_call("read"), {"name": "%r1"}),
        ("Warp.run", warp_call("run"), {"text": "mov.u32 %r1, 5;"}),
        ("Warp.declare", warp_call("declare"), {"ptype": "f32", "names": ["%x"]}),
        ("GlobalMemory.upload", gmem_call("upload"), {"array": np.arange(8, dtype=np.float32)}),
        ("GlobalMemory.alloc", gmem_call("alloc"), {"nbytes": 64, "fill": 0}),
        ("GlobalMemory.download", gmem_call("download"), {"addr": "BASE", "nbytes": 16}),
        ("GlobalMemory.map", gmem_call("map"), {"array": np.zeros(16, np.float32)}),
        ("load_ptx", lambda **kw: load_ptx(**kw), {"text": KERNEL, "arch": None}),
        ("launch", launch, {"kernel": "k", "grid": (1, 1, 1), "block": (32, 1, 1), "args": "DEFAULT",
                            "shared_bytes": 0, "options": None, "trace": None, "out": io.StringIO(),
                            "max_instructions": 10_000, "engine": "auto", "schedule": None, "timeline": False,
                            "cluster": None, "workers": 1, "progress": None, "executor": None}),
        ("mma", lambda **kw: emulator.mma(**kw), {"instr": MMA, "A": f16, "B": f16[:, :8],
                                                   "C": np.zeros((16, 8), np.float32), "arch": "sm_90"}),
        ("gemm", lambda **kw: emulator.gemm(**kw), {"A": f16, "B": f16[:, :8], "C": np.zeros((16, 8), np.float32),
                                                     "instr": MMA, "arch": "sm_90"}),
        ("wgmma", lambda **kw: emulator.wgmma(**kw), {"instr": WGMMA, "A": np.zeros((64, 16), np.float16),
                                                       "B": f16, "C": np.zeros((64, 16), np.float32)}),
        ("check_layout", lambda **kw: check_layout(**kw), {"instr": MMA, "operand": "A",
                                                            "layout": "((_4,_8),(_2,_2)):((_32,_1),(_16,_8))"}),
        ("Layout.parse", lambda **kw: Layout.parse(**kw), {"text": "(_4,_8):(_1,_4)"}),
        ("Layout", lambda **kw: Layout(**kw), {"shape": (4, 8), "stride": (1, 4)}),
        ("Swizzle", lambda **kw: Swizzle(**kw), {"bits": 3, "base": 4, "shift": 3}),
        ("crd2idx", lambda **kw: crd2idx(**kw), {"crd": (1, 2), "shape": (4, 8)}),
        ("idx2crd", lambda **kw: idx2crd(**kw), {"idx": 5, "shape": (4, 8)}),
        ("BlockedLayout", blocked, {"size_per_thread": [1, 4], "threads_per_warp": [4, 8],
                                    "warps_per_cta": [4, 1], "order": [1, 0]}),
        ("SliceLayout", lambda **kw: G.SliceLayout(**kw).to_linear((16,)),
         {"dim": 0, "parent": G.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])}),
        ("DotOperandLayout", lambda **kw: G.DotOperandLayout(**kw).to_linear((16, 16)),
         {"operand_index": 0, "parent": G.NVMMADistributedLayout([2, 0], [4, 1], [16, 8]), "k_width": 2}),
        ("NVMMADistributedLayout", lambda **kw: G.NVMMADistributedLayout(**kw).to_linear((64, 64)),
         {"version": [2, 0], "warps_per_cta": [4, 1], "instr_shape": [16, 8]}),
        ("NVMMASharedLayout", lambda **kw: G.NVMMASharedLayout(**kw),
         {"swizzle_byte_width": 128, "element_bitwidth": 16, "rank": 2}),
        ("SwizzledSharedLayout", lambda **kw: G.SwizzledSharedLayout(**kw),
         {"vec": 8, "per_phase": 1, "max_phase": 8, "order": [1, 0]}),
        ("TensorMemoryLayout", lambda **kw: G.TensorMemoryLayout(**kw), {"block": (128, 64), "col_stride": 1}),
        ("layout.owner", layout_owner, {"shape": (64, 64)}),
        ("layout.to_linear", layout_to_linear, {"shape": (64, 64)}),
        ("linear.owner", linear_owner, {"shape": (8, 16)}),
    ]


_CAT = None


def gen_types(rng):
    global _CAT
    if _CAT is None:
        _CAT = _catalogue()
    name, fn, valid = _CAT[int(rng.integers(len(_CAT)))]
    kw = dict(valid)
    pool = odd_values()
    keys = list(kw)
    for _ in range(int(rng.integers(1, 3))):
        if keys and rng.random() < 0.9:
            kw[keys[int(rng.integers(len(keys)))]] = pool[int(rng.integers(len(pool)))]

    def run():
        fn(**kw)
    shown = {k: (f"{type(v).__name__}{getattr(v, 'shape', '')}" if isinstance(v, np.ndarray) else repr(v)[:40])
             for k, v in kw.items()}
    return run, f"{name}(**{shown})"


# -- PTX from a grammar ------------------------------------------------------------------------------------
_HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
_FORMATS = ["%d", "%5d", "%.3f", "%99999999999d", "%.99999999999f", "%400000000d", "%-*d", "%lld", "%x", "%s",
            "%%", "%c", "%e", "%g", "%p", "%08.3f", "%.0e", "%+d", "%", "%q", "%l", "%hhd", "%.2147483648f",
            "%2147483647x"]
_IMMS = ["0", "-1", "4294967295", "4294967296", "18446744073709551615", "18446744073709551616",
         "0x8000000000000000", "0f7FC00001", "0d7FF0000000000001", "-9223372036854775809", "1e40", "0b1"]


def _printf_module(rng):
    fmt = "".join(str(rng.choice(_FORMATS)) + " " for _ in range(int(rng.integers(1, 4))))
    data = fmt.encode() + b"\0"
    arr = ", ".join(str(b) for b in data)
    return (_HEAD + f".global .align 1 .b8 fmt[{len(data)}] = {{{arr}}};\n"
            ".extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);\n"
            ".visible .entry k()\n{\n .reg .b64 %rd<4>; .reg .b32 %r<3>;\n .local .align 8 .b8 buf[16];\n"
            " mov.u64 %rd1, fmt; cvta.global.u64 %rd1, %rd1;\n mov.u64 %rd2, buf; cvta.local.u64 %rd2, %rd2;\n"
            f" mov.u32 %r1, {rng.choice(['7', '-3', '2147483647'])}; st.local.u32 [buf], %r1;\n"
            " st.local.u32 [buf+4], %r1; st.local.u32 [buf+8], %r1;\n"
            " { .param .b64 p0; st.param.b64 [p0], %rd1; .param .b64 p1; st.param.b64 [p1], %rd2;\n"
            "   .param .b32 r; call.uni (r), vprintf, (p0, p1); }\n ret;\n}\n")


def _scopes_module(rng):
    depth = int(rng.choice([10, 200, 3000, 6000]))
    body = "{ " * depth + "add.s32 %r1, %r1, 1; " + "} " * (depth - int(rng.integers(0, 2)))
    return _HEAD + ".visible .entry k()\n{\n .reg .b32 %r<3>;\n" + body + "\n ret;\n}\n"


def _dup_module(rng):
    what = rng.choice([" .reg .b32 %r<3>;", " .shared .b32 s;", "L1:", " .local .b32 l;"])
    imm = rng.choice(_IMMS)
    return (_HEAD + ".visible .entry k(.param .u32 a, .param .u32 a2)\n{\n .reg .b32 %r<3>; .reg .b64 %rd<2>;\n"
            f"{what}\n{what}\n mov.b32 %r1, {imm};\n mov.b64 %rd1, {imm};\n ret;\n}}\n")


def gen_grammar(rng):
    from emulator import GlobalMemory, load_ptx
    text = [_printf_module, _scopes_module, _dup_module][int(rng.integers(3))](rng)

    def run():
        m = load_ptx(text)
        m.launch("k", gmem=GlobalMemory(), out=io.StringIO(), max_instructions=2000)
    return run, f"grammar {text[:160]!r}"
