"""The kernel interpreter on small hand-written PTX: divergence and reconvergence, barriers, calls, memory
spaces, printf, and a clear EmulatorError for every kind of broken program."""
import io

import numpy as np
import pytest

from emulator import (AlignmentError, EmulatorError, GlobalMemory, MemoryAccessError, OperandError,
                      PTXSyntaxError, UnsupportedError, WarpSyncError, load_ptx)

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
REGS = ".reg .pred %p<8>;\n.reg .b32 %r<64>;\n.reg .b64 %rd<32>;\n.reg .f32 %f<8>;\n.reg .f64 %fd<4>;\n"


def kernel(body, extra="", params=".param .u64 out", name="k"):
    return f"{HEAD}{extra}\n.visible .entry {name}({params})\n{{\n{REGS}{body}\n}}\n"


# Per-thread address of out[tid] (4-byte elements) in %rd2, %r1 = tid.x.
PROLOGUE = """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd2, %rd1, %rd3;
"""


def run(text, nthreads=32, words_per_thread=1, grid=1, **kw):
    g = GlobalMemory()
    n = nthreads * grid * words_per_thread
    out = g.upload(np.zeros(n, np.uint32))
    res = load_ptx(text).launch("k", grid=(grid, 1, 1), block=(nthreads, 1, 1), args=[out], gmem=g, **kw)
    return g.download(out, 4 * n).view(np.uint32), res


# ------------------------------------------------------------------------------------------------
# Divergence, reconvergence, loops

def test_divergent_branches_run_with_masks_and_reconverge():
    body = PROLOGUE + """
    setp.lt.u32 %p1, %r1, 10;
    @%p1 bra A;
    activemask.b32 %r2;
    bra.uni J;
A:
    activemask.b32 %r2;
J:
    activemask.b32 %r3;
    shl.b32 %r3, %r3, 0;
    setp.eq.u32 %p2, %r3, -1;
    selp.u32 %r4, 1, 0, %p2;
    shl.b32 %r4, %r4, 31;
    xor.b32 %r2, %r2, %r4;
    st.global.u32 [%rd2], %r2;
    """
    out, _ = run(kernel(body))
    lanes = np.arange(32)
    want = np.where(lanes < 10, 0x3FF, 0xFFFFFFFF ^ 0x3FF) ^ 0x80000000
    assert out.tolist() == want.astype(np.uint32).tolist()


def test_loop_with_per_lane_trip_counts_reconverges():
    body = PROLOGUE + """
    mov.u32 %r2, 0;
    mov.u32 %r5, 0;
L:
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra E;
    activemask.b32 %r6;
    popc.b32 %r6, %r6;
    add.u32 %r5, %r5, %r6;
    add.u32 %r2, %r2, 1;
    bra L;
E:
    activemask.b32 %r3;
    mad.lo.u32 %r4, %r5, 1000, %r2;
    st.global.u32 [%rd2], %r4;
    """
    out, _ = run(kernel(body))
    # lane t iterates t times; in iteration i the lanes t > i are active: 31 - i of them
    want = [sum(31 - i for i in range(t)) * 1000 + t for t in range(32)]
    assert out.tolist() == want


def test_barrier_exchanges_shared_memory_between_warps():
    extra = ""
    body = """
    .shared .align 4 .b8 buf[512];
    """ + PROLOGUE + """
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    mul.lo.u32 %r5, %r1, 3;
    st.shared.u32 [%r4], %r5;
    bar.sync 0;
    add.u32 %r6, %r1, 32;
    rem.u32 %r6, %r6, 128;
    shl.b32 %r6, %r6, 2;
    add.u32 %r6, %r2, %r6;
    ld.shared.u32 %r7, [%r6];
    st.global.u32 [%rd2], %r7;
    """
    out, res = run(kernel(body, extra), nthreads=128)
    assert out.tolist() == [((t + 32) % 128) * 3 for t in range(128)]
    assert len(res.ctas[0][1]) == 4


def test_grid_runs_cta_after_cta_with_ctaid():
    body = PROLOGUE + """
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    mov.u32 %r5, %nctaid.x;
    mad.lo.u32 %r6, %r2, 100, %r5;
    st.global.u32 [%rd4], %r6;
    """
    out, res = run(kernel(body), nthreads=32, grid=3)
    assert out.tolist() == [c * 100 + 3 for c in range(3) for _ in range(32)]
    assert [c for c, _ in res.ctas] == [(0, 0, 0), (1, 0, 0), (2, 0, 0)]


def test_partial_last_warp_and_clock_are_deterministic():
    body = PROLOGUE + """
    mov.u32 %r2, %clock;
    mov.u32 %r3, %laneid;
    mov.u32 %r4, %warpid;
    mad.lo.u32 %r5, %r4, 1000, %r3;
    shl.b32 %r2, %r2, 16;
    add.u32 %r5, %r5, %r2;
    st.global.u32 [%rd2], %r5;
    """
    a, _ = run(kernel(body), nthreads=40)
    b, _ = run(kernel(body), nthreads=40)
    assert a.tolist() == b.tolist()
    assert (a & 0xFFFF).tolist() == [(t // 32) * 1000 + t % 32 for t in range(40)]
    assert len(set((a >> 16).tolist())) == 1 and a[0] >> 16 > 0


# ------------------------------------------------------------------------------------------------
# Memory spaces

def test_local_memory_is_private_per_thread_and_generic_addresses_work():
    body = """
    .local .align 8 .b8 __local_depot0[16];
    .reg .b64 %SP;
    .reg .b64 %SPL;
    mov.u64 %SPL, __local_depot0;
    cvta.local.u64 %SP, %SPL;
    """ + PROLOGUE + """
    mul.lo.u32 %r2, %r1, 7;
    st.local.u32 [%SPL+4], %r2;
    bar.sync 0;
    ld.u32 %r3, [%SP+4];
    st.global.u32 [%rd2], %r3;
    """
    out, _ = run(kernel(body), nthreads=64)
    assert out.tolist() == [7 * t for t in range(64)]


def test_const_and_global_variables_with_initialisers():
    extra = (".const .align 4 .b8 tab[8] = {1, 0, 0, 0, 2, 1, 0, 0};\n"
             ".global .align 4 .u32 gv = 5;\n")
    body = PROLOGUE + """
    and.b32 %r2, %r1, 1;
    shl.b32 %r2, %r2, 2;
    cvt.u64.u32 %rd5, %r2;
    mov.u64 %rd6, tab;
    add.s64 %rd6, %rd6, %rd5;
    ld.const.u32 %r3, [%rd6];
    ld.global.u32 %r4, [gv];
    add.u32 %r3, %r3, %r4;
    st.global.u32 [%rd2], %r3;
    """
    out, _ = run(kernel(body, extra))
    assert out.tolist() == [(1 if t % 2 == 0 else 258) + 5 for t in range(32)]


def test_dynamic_shared_memory_follows_static_variables():
    extra = ".extern .shared .align 16 .b8 dyn[];\n"
    body = """
    .shared .align 4 .b8 stat[20];
    """ + PROLOGUE + """
    mov.u32 %r2, dyn;
    shl.b32 %r3, %r1, 2;
    add.u32 %r3, %r2, %r3;
    st.shared.u32 [%r3], %r1;
    ld.shared.u32 %r4, [%r3];
    mov.u32 %r5, %dynamic_smem_size;
    mad.lo.u32 %r4, %r2, 65536, %r4;
    st.global.u32 [%rd2], %r4;
    """
    out, _ = run(kernel(body, extra), shared_bytes=128)
    assert out.tolist() == [32 * 65536 + t for t in range(32)]       # dyn starts at 32 (20 rounded to 16)
    with pytest.raises(MemoryAccessError, match=r"lane 16: shared address 0x60 \(\+4 bytes\) is outside"):
        run(kernel(body, extra), shared_bytes=64)


def test_call_of_a_func_with_parameters_and_return_value():
    extra = """
.func (.param .b32 ret) twice_plus(.param .b32 a, .param .b32 b)
{
    .reg .b32 %r<4>;
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    mad.lo.u32 %r3, %r1, 2, %r2;
    st.param.b32 [ret], %r3;
    ret;
}
"""
    body = PROLOGUE + """
    mov.u32 %r9, 77;
    setp.lt.u32 %p1, %r1, 5;
    @!%p1 bra S;
    {
    .param .b32 p0;
    st.param.b32 [p0], %r1;
    .param .b32 p1;
    st.param.b32 [p1], 1000;
    .param .b32 r0;
    call.uni (r0), twice_plus, (p0, p1);
    ld.param.b32 %r9, [r0];
    }
S:
    st.global.u32 [%rd2], %r9;
    """
    out, _ = run(kernel(body, extra))
    assert out.tolist() == [2 * t + 1000 if t < 5 else 77 for t in range(32)]


def test_printf_formats_like_cuda():
    fmt = b"t=%d v=%5.2f h=%x s=%s c=%c %%\n\0"
    word = b"ok\0"
    enc = lambda b: ", ".join(str(x) for x in b)  # noqa: E731
    extra = (".extern .func (.param .b32 func_retval0) vprintf (.param .b64 vprintf_param_0, "
             ".param .b64 vprintf_param_1);\n"
             f".global .align 1 .b8 $str[{len(fmt)}] = {{{enc(fmt)}}};\n"
             f".global .align 1 .b8 $str$1[{len(word)}] = {{{enc(word)}}};\n")
    body = """
    .local .align 8 .b8 __local_depot0[32];
    .reg .b64 %SP;
    .reg .b64 %SPL;
    mov.u64 %SPL, __local_depot0;
    cvta.local.u64 %SP, %SPL;
    """ + PROLOGUE + """
    st.local.u32 [%SPL], %r1;
    cvt.rn.f64.u32 %fd1, %r1;
    mul.rn.f64 %fd1, %fd1, 0d3FF4000000000000;
    st.local.f64 [%SPL+8], %fd1;
    mul.lo.u32 %r2, %r1, 255;
    st.local.u32 [%SPL+16], %r2;
    mov.u64 %rd7, $str$1;
    cvta.global.u64 %rd7, %rd7;
    st.local.u64 [%SPL+24], %rd7;
    add.u32 %r3, %r1, 65;
    st.local.u32 [%SPL+32], %r3;
    setp.ge.u32 %p1, %r1, 3;
    @%p1 bra D;
    mov.u64 %rd8, $str;
    cvta.global.u64 %rd9, %rd8;
    {
    .param .b64 param0;
    st.param.b64 [param0], %rd9;
    .param .b64 param1;
    st.param.b64 [param1], %SP;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    }
D:
    ret;
    """
    body = body.replace("__local_depot0[32]", "__local_depot0[40]")
    buf = io.StringIO()
    _, res = run(kernel(body, extra), out=buf)
    want = [f"t={t} v={t * 1.25:5.2f} h={t * 255:x} s=ok c={chr(65 + t)} %\n" for t in range(3)]
    assert buf.getvalue() == "".join(want)
    assert res.stdout == want


# ------------------------------------------------------------------------------------------------
# Errors

def test_unknown_instruction_names_line_and_column():
    text = kernel(PROLOGUE + "    frobnicate.b32 %r2, %r1;\n")
    line = text.splitlines().index("    frobnicate.b32 %r2, %r1;") + 1
    with pytest.raises(UnsupportedError, match=rf"line {line}, column 5: frobnicate.b32: unknown or unsupported"):
        load_ptx(text).program("k")


def test_bad_operands_are_reported():
    with pytest.raises(OperandError, match=r"line \d+, column 5: add.s32: takes 3 operands"):
        load_ptx(kernel(PROLOGUE + "    add.s32 %r2, %r1;\n")).program("k")
    with pytest.raises(PTXSyntaxError, match="unknown label NOWHERE"):
        load_ptx(kernel(PROLOGUE + "    bra NOWHERE;\n")).program("k")
    with pytest.raises(OperandError, match="expected a register"):
        load_ptx(kernel(PROLOGUE + "    add.s32 5, %r1, %r1;\n")).program("k")


def test_misaligned_global_access_names_the_lane():
    body = PROLOGUE + "    ld.global.u32 %r2, [%rd2+2];\n"
    with pytest.raises(AlignmentError, match=r"line \d+, column 5: ld.global.u32 %r2, \[%rd2\+2\]: lane 0: "
                                             r"address 0x[0-9a-f]+ is not 4-byte aligned"):
        run(kernel(body))


def test_out_of_range_accesses_name_the_lane():
    with pytest.raises(MemoryAccessError, match=r"lane 31: global address .* is outside every global allocation"):
        run(kernel(PROLOGUE + "    st.global.u32 [%rd2+4], %r1;\n"))
    body = ".shared .align 4 .b8 s[64];\n" + PROLOGUE + \
        "    mov.u32 %r2, s;\n    shl.b32 %r3, %r1, 2;\n    add.u32 %r3, %r2, %r3;\n    st.shared.u32 [%r3], %r1;\n"
    with pytest.raises(MemoryAccessError, match=r"lane 16: shared address 0x40 \(\+4 bytes\) is outside shared"):
        run(kernel(body))
    body = ".local .align 4 .b8 __local_depot0[8];\n" + PROLOGUE + "    st.local.u32 [__local_depot0+8], %r1;\n"
    with pytest.raises(MemoryAccessError, match=r"lane 0: local address 0x8 \(\+4 bytes\) is outside the thread's"):
        run(kernel(body))


def test_partial_warp_aligned_instructions_name_the_missing_lanes():
    body = ".shared .align 16 .b8 s[512];\n" + PROLOGUE + """
    setp.lt.u32 %p1, %r1, 16;
    @!%p1 bra S;
    mov.u32 %r2, s;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r3, %r4, %r5, %r6}, [%r2];
S:
    ret;
    """
    with pytest.raises(WarpSyncError, match=r"lanes 16-31 are not executing it"):
        run(kernel(body))
    body = PROLOGUE + """
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bar.sync 0;
    """
    with pytest.raises(WarpSyncError, match=r"lanes 8-31 are not executing it"):
        run(kernel(body))
    body = PROLOGUE + """
    setp.lt.u32 %p1, %r1, 8;
    @!%p1 bra S;
    shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
S:
    ret;
    """
    with pytest.raises(WarpSyncError, match=r"membermask names lanes 8-31"):
        run(kernel(body))


def test_barrier_deadlock_is_reported():
    body = PROLOGUE + """
    mov.u32 %r2, %warpid;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra S;
    bar.sync 1, 64;
S:
    ret;
    """
    with pytest.raises(WarpSyncError, match="deadlock: barrier 1: 32 thread"):
        run(kernel(body), nthreads=64)


def test_endless_loop_hits_the_instruction_limit():
    # a loop that changes a register each time round: only the budget stops it, at a named line
    with pytest.raises(EmulatorError, match=r"line 1[78], column \d+: (add|bra).*the instruction limit \(1000 warp"):
        run(kernel(PROLOGUE + "L:\n    add.u32 %r9, %r9, 1;\n    bra L;\n"), max_instructions=1000)


def test_loop_that_changes_nothing_is_a_deadlock():
    # 'L: bra L' can never end: reported as a spin that waits for nobody, long before the budget
    with pytest.raises(WarpSyncError, match=r"deadlock: .*warp 0 lanes 0-31 spin: the loop from line \d+"):
        run(kernel(PROLOGUE + "L:\n    bra L;\n"), max_instructions=100000)


def test_recursion_is_refused():
    extra = """
.func f()
{
    call.uni f, ();
    ret;
}
"""
    with pytest.raises(UnsupportedError, match="recursive call of f"):
        run(kernel(PROLOGUE + "    call.uni f, ();\n", extra))


def test_launch_argument_and_name_errors():
    m = load_ptx(kernel(PROLOGUE, name="_Z3fooPj"))
    g = GlobalMemory()
    with pytest.raises(OperandError, match=r"expected 1 argument\(s\) \(out \(.u64\)\), got 2"):
        m.launch("foo", args=[1, 2], gmem=g)
    with pytest.raises(OperandError, match="no kernel named 'bar'; kernels: _Z3fooPj"):
        m.launch("bar", args=[1], gmem=g)
    with pytest.raises(OperandError, match="does not fit parameter"):
        m.launch("foo", args=[-1 << 70], gmem=g)
    with pytest.raises(OperandError, match="a CTA has 1..1024 threads"):
        m.launch("foo", block=(2048, 1, 1), args=[0], gmem=g)


def test_module_syntax_errors_have_positions():
    with pytest.raises(PTXSyntaxError, match=r"line 7, column 5: ';' inside brackets"):
        load_ptx(HEAD + ".visible .entry k(\n.param .u64 out\n{\n ret;\n}\n")
    with pytest.raises(EmulatorError):
        load_ptx(HEAD + ".global .u32 x = {foo};\n")


def test_aggregate_and_float_parameters():
    params = ".param .u64 out, .param .align 4 .b8 pair[8], .param .f32 scale"
    body = PROLOGUE + """
    ld.param.u32 %r2, [pair+4];
    ld.param.f32 %f1, [scale];
    cvt.rn.f32.u32 %f2, %r1;
    mul.rn.f32 %f2, %f2, %f1;
    cvt.rzi.u32.f32 %r3, %f2;
    add.u32 %r3, %r3, %r2;
    st.global.u32 [%rd2], %r3;
    """
    g = GlobalMemory()
    out = g.upload(np.zeros(32, np.uint32))
    pair = np.array([7, 1000], np.uint32).view(np.uint8)
    load_ptx(kernel(body, params=params)).launch("k", args=[out, pair, 2.5], gmem=g)
    assert g.download(out, 128).view(np.uint32).tolist() == [int(t * 2.5) + 1000 for t in range(32)]
    with pytest.raises(OperandError, match="parameter pair takes 8 bytes, got 4"):
        load_ptx(kernel(body, params=params)).launch("k", args=[out, pair[:4], 2.5], gmem=g)


def test_debug_information_is_skipped_and_trace_lists_lanes_and_registers():
    body = PROLOGUE.replace("    mov.u32 %r1, %tid.x;", "\t.loc\t1 5 3\n    mov.u32 %r1, %tid.x;") + """
    setp.lt.u32 %p1, %r1, 4;
    @%p1 add.u32 %r2, %r1, 100;
    st.global.u32 [%rd2], %r2;
    """
    text = kernel(body) + '\t.file\t1 "k.cu"\n\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 107,0\n\t}\n'
    trace = io.StringIO()
    out, _ = run(text, trace=trace)
    assert out.tolist() == [100 + t if t < 4 else 0 for t in range(32)]
    lines = trace.getvalue().splitlines()
    assert any(l.startswith("cta(0,0,0) w0 pc") and "lanes 0-3: @%p1 add.u32 %r2, %r1, 100  -> %r2=[0x64, 0x65, "
               "0x66, 0x67]" in l for l in lines), lines


def test_generic_access_past_a_threads_local_depot_is_reported():
    body = """
    .local .align 8 .b8 __local_depot0[16];
    .reg .b64 %SP;
    .reg .b64 %SPL;
    mov.u64 %SPL, __local_depot0;
    cvta.local.u64 %SP, %SPL;
    """ + PROLOGUE + "    st.u32 [%SP+16], %r1;\n"
    with pytest.raises(MemoryAccessError, match=r"lane 0: global address .* is outside every global allocation"):
        run(kernel(body))


def test_lanes_reconverge_after_a_divergent_call():
    extra = """
.func (.param .b32 ret) spin(.param .b32 n)
{
    .reg .b32 %r<4>;
    .reg .pred %p<2>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
L:
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra E;
    add.u32 %r2, %r2, 1;
    bra L;
E:
    activemask.b32 %r3;
    st.param.b32 [ret], %r3;
    ret;
}
"""
    body = PROLOGUE + """
    mov.u32 %r9, 0;
    and.b32 %r8, %r1, 1;
    setp.eq.u32 %p1, %r8, 0;
    @!%p1 bra S;
    {
    .param .b32 p0;
    st.param.b32 [p0], %r1;
    .param .b32 r0;
    call.uni (r0), spin, (p0);
    ld.param.b32 %r9, [r0];
    }
S:
    activemask.b32 %r10;
    xor.b32 %r9, %r9, %r10;
    st.global.u32 [%rd2], %r9;
    """
    out, _ = run(kernel(body, extra))
    even = sum(1 << t for t in range(0, 32, 2))
    # inside the callee the even lanes run together; after the call all 32 lanes are together again
    assert out.tolist() == [even ^ 0xFFFFFFFF if t % 2 == 0 else 0xFFFFFFFF for t in range(32)]


NESTED_SCOPES = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 out)
{
	.reg .b64 %rd<3>;
	.reg .b32 %r<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, 0x12345678;
	{
	.reg .b32 a0;
	mov.b32 a0, %r1;
	add.u32 %r2, a0, 1;
	}
	{
	.reg .b16 a0;
	mov.b16 a0, 0x7;
	cvt.u32.u16 %r3, a0;
	}
	st.global.u32 [%rd1], %r2;
	st.global.u32 [%rd1+4], %r3;
	ret;
}
"""


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_nested_blocks_have_their_own_registers(engine):
    # Triton's inline asm declares `a0` as .b32 in one { } block and as .f16 in another: each block's a0 is
    # its own register with its own width (ptxas accepts this text)
    g = GlobalMemory()
    out = g.alloc(8)
    load_ptx(NESTED_SCOPES).launch("k", grid=1, block=32, args=[out], gmem=g, engine=engine)
    assert g.download(out, 8).view(np.uint32).tolist() == [0x12345679, 7]


KEEP_CTAS = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 out)
{
	.reg .b64 %rd<4>;
	.reg .b32 %r<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mad.lo.u32 %r3, %r1, 32, %r2;
	mul.wide.u32 %rd2, %r3, 4;
	add.u64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	ret;
}
"""


@pytest.mark.parametrize("cluster", [None, (2, 1, 1)])
@pytest.mark.parametrize("sanitize", [None, "memcheck"])
def test_keep_ctas_false_keeps_no_warps(cluster, sanitize):
    # keep_ctas=False (Triton's launches): the same memory, no CTA's warps in the result, through the
    # residency scheduler, clusters and the sanitizer alike
    for keep in (True, False):
        g = GlobalMemory()
        out = g.alloc(4 * 128)
        res = load_ptx(KEEP_CTAS).launch("k", grid=4, block=32, args=[out], gmem=g, cluster=cluster,
                                         sanitize=sanitize, keep_ctas=keep)
        assert g.download(out, 4 * 128).view(np.uint32).tolist() == list(range(128))
        assert len(res.ctas) == (4 if keep else 0)
        assert res.instructions > 0
