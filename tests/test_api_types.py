"""Arguments of the wrong kind or size are refused at the API boundary with an EmulatorError that names
the argument, before anything large is allocated (each case here once escaped as another exception)."""
import io

import numpy as np
import pytest

from emulator import EmulatorError, GlobalMemory, Warp, check_layout, gemm, load_ptx, mma, wgmma
from emulator import gluon as G
from emulator.cute import Layout, Swizzle
from emulator.frontend.ptx import MAX_SCOPE_DEPTH

MMA = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
    ret;
}
"""
F16 = np.zeros((16, 16), np.float16)


def _blocked():
    return G.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])


CASES = {
    "nanosleep on an address": (lambda: Warp().run("nanosleep [0];"), "memory address"),
    "launch trace not a stream": (lambda: load_ptx(KERNEL).launch("k", args=[0], trace="x"), "trace must be"),
    "launch options not WarpOptions": (lambda: load_ptx(KERNEL).launch("k", args=[0], options=5), "options must"),
    "launch args not a list": (lambda: load_ptx(KERNEL).launch("k", args=1.5), "args must be a list"),
    "launch timeline an array": (lambda: load_ptx(KERNEL).launch("k", args=[0], timeline=np.ones(2)),
                                 "timeline must"),
    "Warp arch an array": (lambda: Warp(arch=np.zeros(3)), "architecture"),
    "declare with an unhashable type": (lambda: Warp().declare([], ["%x"]), "unknown type"),
    "declare names not strings": (lambda: Warp().declare("f32", print), "names is a list"),
    "map an object array": (lambda: GlobalMemory().map(np.empty(4, object)), "no device bytes"),
    "upload 4 TiB": (lambda: GlobalMemory().upload(np.broadcast_to(np.float32(0), (1 << 40,))),
                     "more than one allocation"),
    "mma instr None": (lambda: mma(None, F16, F16[:, :8], np.zeros((16, 8), np.float32)), "instr must be a string"),
    "mma arch an array": (lambda: mma(MMA, F16, F16[:, :8], np.zeros((16, 8), np.float32), arch=np.zeros(2)),
                          "arch must be a string"),
    "gemm instr 5": (lambda: gemm(F16, F16[:, :8], np.zeros((16, 8), np.float32), instr=5), "instr must be"),
    "gemm ragged C": (lambda: gemm(F16, F16[:, :8], [[1, 2], [3]], instr=MMA), "not an array of numbers"),
    "wgmma A of 2^40 elements": (lambda: wgmma("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16",
                                               np.broadcast_to(np.float16(0), (1 << 20, 1 << 20)), F16,
                                               np.zeros((64, 16), np.float32)), "elements"),
    "check_layout instr None": (lambda: check_layout(None, "A", "(_4,_8):(_1,_4)"), "instr must be a string"),
    "check_layout operand an array": (lambda: check_layout(MMA, np.zeros(4), "(_4,_8):(_1,_4)"), "operand"),
    "Layout.parse of a set": (lambda: Layout.parse(set()), "text of a layout"),
    "Layout of bytes": (lambda: Layout(b"\xff", 3), "integer"),
    "Swizzle of strings": (lambda: Swizzle("3", "x", 3), "integer"),
    "SliceLayout(None, p)": (lambda: G.SliceLayout(None, _blocked()), "dim must be an integer"),
    "TensorMemoryLayout('ab', 2)": (lambda: G.TensorMemoryLayout("ab", 2), "block must be a list"),
    "owner of 2^40 elements": (lambda: G.DistributedLinearLayout(
        reg_bases=[[0, 1]], lane_bases=[[0, 2], [0, 4], [0, 8], [1, 0], [2, 0]], warp_bases=[[4, 0]],
        block_bases=[], shape=[8, 16]).owner([2 ** 20, 2 ** 20]), "at most"),
    "to_linear of a float": (lambda: _blocked().to_linear(np.float64(1.0)), "shape must be a list"),
    "SwizzledSharedLayout per_phase inf": (lambda: G.SwizzledSharedLayout(8, float("inf"), 8, [1, 0]),
                                           "per_phase must be an integer"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_with_an_emulator_error(name):
    call, words = CASES[name]
    with np.errstate(all="ignore"), pytest.raises(EmulatorError, match=words):
        call()


def _printf_kernel(fmt):
    data = fmt.encode() + b"\0"
    return (".version 8.0\n.target sm_90\n.address_size 64\n"
            f".global .align 1 .b8 fmt[{len(data)}] = {{{', '.join(map(str, data))}}};\n"
            ".extern .func (.param .b32 r) vprintf (.param .b64 f, .param .b64 a);\n"
            ".visible .entry k()\n{\n .reg .b64 %rd<4>; .reg .b32 %r<3>;\n .local .align 8 .b8 buf[16];\n"
            " mov.u64 %rd1, fmt; cvta.global.u64 %rd1, %rd1;\n mov.u64 %rd2, buf; cvta.local.u64 %rd2, %rd2;\n"
            " mov.u32 %r1, 255; st.local.u32 [buf], %r1; st.local.u32 [buf+4], %r1;\n"
            " { .param .b64 p0; st.param.b64 [p0], %rd1; .param .b64 p1; st.param.b64 [p1], %rd2;\n"
            "   .param .b32 r; call.uni (r), vprintf, (p0, p1); }\n ret;\n}\n")


@pytest.mark.parametrize("fmt", ["%.99999999999f", "%99999999999d", "%400000000d"])
def test_printf_fields_are_bounded(fmt):
    m = load_ptx(_printf_kernel(fmt))
    with pytest.raises(EmulatorError, match="field (width|prec)"):
        m.launch("k", block=(1, 1, 1), gmem=GlobalMemory(), out=io.StringIO())


def test_printf_short_lengths_sign_extend():
    out = io.StringIO()
    load_ptx(_printf_kernel("%hhd %hhu")).launch("k", block=(1, 1, 1), gmem=GlobalMemory(), out=out)
    assert out.getvalue() == "-1 255"


def _nested(depth):
    return (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n .reg .b32 %r<3>;\n" +
            "{ " * depth + "add.s32 %r1, %r1, 1; " + "} " * depth + "\n ret;\n}\n")


def test_scopes_nest_as_deep_as_ptxas_parses():
    # ptxas 13 parses 1,663 scopes inside a function body and fails ("memory exhausted") at 1,664
    load_ptx(_nested(MAX_SCOPE_DEPTH - 1)).launch("k", block=(1, 1, 1), gmem=GlobalMemory())
    with pytest.raises(EmulatorError, match="nested"):
        load_ptx(_nested(MAX_SCOPE_DEPTH))
