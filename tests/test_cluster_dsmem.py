"""Distributed shared memory in the fast engine's loops (``fastcore/dsmemx.py``, ``bulkx._scopy``): loads, stores
and atomics of every width, vector and type the rows take, through ``.shared::cluster`` addresses (``mapa``) and
generic ones (a generic ``mapa``: another CTA's window, this CTA's window, and global memory in the same
instruction), run in the CTA loop with nothing handed back, bit for bit as the reference engine runs them
(registers, every CTA's shared memory, outputs); every broken rule goes back to the executor, which raises the same
error on both engines (the instruction and the lane named); kernels without such rows bind nothing more; the same
kernel on the H100 (tests/data/cluster_dsmem_hw.npz) equals both engines."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import corpus_lib
from emulator import GlobalMemory, load_ptx
from emulator.errors import MemoryAccessError
from test_cluster_loop import HEAD, Watch

# (spelling after ld/st/atom/red and the space, the operands after the address: "v" a value register, "d" a
#  destination; the element width in bytes that aligns the lane's offset)
_OPS = [
    ("st", ".u8", ["%rs1"], 1), ("st", ".u16", ["%rs2"], 2), ("st", ".u32", ["%r40"], 4), ("st", ".u64", ["%rd40"], 8),
    ("st", ".v2.u32", ["{%r41, %r42}"], 8), ("st", ".v4.u32", ["{%r40, %r41, %r42, %r43}"], 16),
    ("st", ".v2.u64", ["{%rd40, %rd41}"], 16), ("st", ".f32", ["%f40"], 4),
    ("ld", ".u8", ["%r{d}"], 1), ("ld", ".s16", ["%r{d}"], 2), ("ld", ".u32", ["%r{d}"], 4),
    ("ld", ".u64", ["%rd{d}"], 8), ("ld", ".v2.u32", ["{%r{d}, %r{e}}"], 8),
    ("ld", ".v4.u32", ["{%r{d}, %r{e}, %r{f}, %r{g}}"], 16), ("ld", ".v2.u64", ["{%rd{d}, %rd{e}}"], 16),
    ("ld", ".s8", ["%rs{d}"], 1), ("ld", ".f64", ["%fd{d}"], 8),
    ("atom", ".add.u32", ["%r{d}", "%r40"], 4), ("atom", ".add.u64", ["%rd{d}", "%rd40"], 8),
    ("atom", ".min.s32", ["%r{d}", "%r41"], 4), ("atom", ".max.u64", ["%rd{d}", "%rd41"], 8),
    ("atom", ".max.s64", ["%rd{d}", "%rd41"], 8), ("atom", ".or.b32", ["%r{d}", "%r42"], 4),
    ("atom", ".and.b64", ["%rd{d}", "%rd41"], 8), ("atom", ".xor.b32", ["%r{d}", "%r43"], 4),
    ("atom", ".exch.b32", ["%r{d}", "%r41"], 4), ("atom", ".exch.b64", ["%rd{d}", "%rd40"], 8),
    ("atom", ".cas.b32", ["%r{d}", "%r42", "%r43"], 4), ("atom", ".cas.b64", ["%rd{d}", "%rd40", "%rd41"], 8),
    ("atom", ".inc.u32", ["%r{d}", "%r43"], 4), ("atom", ".dec.u32", ["%r{d}", "%r42"], 4),
    ("atom", ".add.f32", ["%f{d}", "%f40"], 4), ("atom", ".add.f64", ["%fd{d}", "%fd40"], 8),
    ("red", ".add.u32", ["%r40"], 4), ("red", ".xor.b64", ["%rd41"], 8), ("red", ".add.f32", ["%f41"], 4),
    ("red", ".min.s64", ["%rd40"], 8), ("red", ".add.f64", ["%fd41"], 8), ("red", ".inc.u32", ["%r42"], 4),
]
NOPS = len(_OPS)
NT = 64             # threads a CTA (two warps, each on its own half of a CTA's buffer)
NREG = 0            # destinations of the kernel's loads and atomics (set by _kernel)


def _kernel():
    body = []
    dest = 100
    dests = []                              # (register, class) of every destination: zeroed first, dumped last
    for k, (base, spelling, opnds, ew) in enumerate(_OPS):
        names = {}
        for key in "defg":
            names[key] = dest
            dest += 1
        ops = []
        for o in opnds:
            for key, v in names.items():
                o = o.replace("{" + key + "}", str(v))
            ops.append(o)
        if base in ("ld", "atom"):
            for r in ops[0].strip("{}").split(", "):
                dests.append((r, r.rstrip("0123456789")))
        body.append(f"""
    // op {k}: {base}{spelling}
    shr.u32 %r20, %r10, {k % 32};
    and.b32 %r20, %r20, 1;
    setp.ne.u32 %p1, %r20, 0;                    // this lane does op {k} (sel bit)
    shr.u32 %r21, %r11, {k % 32};
    and.b32 %r21, %r21, 1;
    setp.ne.u32 %p2, %r21, 0;                    // generic (form bit), else shared::cluster
    and.b32 %r22, %r12, {16 - ew};               // the lane's byte inside its 16 bytes, aligned
    add.u32 %r23, %r9, %r22;                     // shared::cluster address
    cvt.u64.u32 %rd23, %r22;
    add.u64 %rd24, %rd9, %rd23;                  // generic address (another CTA, this CTA or global memory)
    and.pred %p3, %p1, %p2;
    not.pred %p4, %p2;
    and.pred %p4, %p4, %p1;""")
        lead = [] if base in ("st", "red") else [ops[0]]
        rest = ops if base in ("st", "red") else ops[1:]
        if base == "st":
            body.append(f"    @%p3 st{spelling} [%rd24], {', '.join(rest)};")
            body.append(f"    @%p4 st.shared::cluster{spelling} [%r23], {', '.join(rest)};")
        elif base == "red":
            body.append(f"    @%p3 red{spelling} [%rd24], {', '.join(rest)};")
            body.append(f"    @%p4 red.shared::cluster{spelling} [%r23], {', '.join(rest)};")
        else:
            tail = (", " + ", ".join(rest)) if rest else ""
            body.append(f"    @%p3 {base}{spelling} {lead[0]}, [%rd24]{tail};")
            body.append(f"    @%p4 {base}.shared::cluster{spelling} {lead[0]}, [%r23]{tail};")
    zero = {"%r": "mov.u32 {} , 0;", "%rd": "mov.u64 {}, 0;", "%f": "mov.f32 {}, 0f00000000;",
            "%fd": "mov.f64 {}, 0d0000000000000000;", "%rs": "mov.u16 {}, 0;"}
    init = "\n".join("    " + zero[c].format(r) for r, c in dests)
    dump = []
    for i, (r, c) in enumerate(dests):
        if c == "%rd":
            dump.append(f"    st.global.u64 [%rd21+{8 * i}], {r};")
        elif c == "%fd":
            dump.append(f"    st.global.f64 [%rd21+{8 * i}], {r};")
        elif c == "%f":
            dump.append(f"    st.global.f32 [%rd21+{8 * i}], {r};")
        elif c == "%rs":
            dump.append(f"    st.global.u16 [%rd21+{8 * i}], {r};")
        else:
            dump.append(f"    st.global.u32 [%rd21+{8 * i}], {r};")
    global NREG
    NREG = len(dests)
    dump = "\n".join(dump)
    return HEAD + f"""
.visible .entry dsm(.param .u64 p_in, .param .u64 p_vals, .param .u64 p_glob, .param .u64 p_out, .param .u64 p_regs)
{{
    .reg .pred %p<8>;
    .reg .b16 %rs<{dest + 1}>;
    .reg .b32 %r<{dest + 1}>;
    .reg .b64 %rd<{dest + 1}>;
    .reg .f32 %f<{dest + 1}>;
    .reg .f64 %fd<{dest + 1}>;
    .shared .align 16 .b8 buf[1024];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %cluster_nctarank;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %ctaid.x;
    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_vals];
    ld.param.u64 %rd3, [p_glob];
{init}
    // the lane's values: u32 x4, u64 x2, f32 x2, f64 x2, u16 x2 (64 bytes a thread)
    shl.b32 %r5, %r3, 6;
    cvt.u64.u32 %rd5, %r5;
    add.u64 %rd6, %rd2, %rd5;
    ld.global.v4.u32 {{%r40, %r41, %r42, %r43}}, [%rd6];
    ld.global.v2.u64 {{%rd40, %rd41}}, [%rd6+16];
    ld.global.v2.f32 {{%f40, %f41}}, [%rd6+32];
    ld.global.v2.f64 {{%fd40, %fd41}}, [%rd6+48];
    cvt.u16.u32 %rs1, %r40;
    cvt.u16.u32 %rs2, %r41;
    // this CTA's buffer: bytes from the lane's values (each thread 16 bytes)
    mov.u32 %r6, buf;
    shl.b32 %r7, %r3, 4;
    add.u32 %r8, %r6, %r7;
    xor.b32 %r44, %r40, %r1;
    st.shared.v4.u32 [%r8], {{%r44, %r41, %r42, %r43}};
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mov.u32 %r30, 0;                             // the round: CTA rank + round is the target
ROUND:
    // the lane's round inputs (u32: sel, form, byte, where): in + ((round * 64 + tid) * 16)
    mad.lo.u32 %r31, %r30, {NT}, %r3;
    mul.wide.u32 %rd7, %r31, 16;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.v4.u32 {{%r10, %r11, %r12, %r13}}, [%rd8];
    add.u32 %r32, %r1, %r30;
    rem.u32 %r33, %r32, %r2;                     // the target rank
    shr.u32 %r34, %r3, 5;
    and.b32 %r35, %r13, 31;                      // the lane's 16-byte slot in its warp's half
    mad.lo.u32 %r36, %r34, 32, %r35;
    shl.b32 %r36, %r36, 4;
    add.u32 %r37, %r6, %r36;
    mapa.shared::cluster.u32 %r9, %r37, %r33;
    cvt.u64.u32 %rd10, %r37;
    cvta.shared.u64 %rd11, %rd10;
    mapa.u64 %rd9, %rd11, %r33;
    // where bit 8: a generic lane on global memory (its own 16 bytes of p_glob)
    shr.u32 %r38, %r13, 8;
    and.b32 %r38, %r38, 1;
    setp.ne.u32 %p5, %r38, 0;
    mad.lo.u32 %r39, %r4, {NT}, %r3;
    mul.wide.u32 %rd12, %r39, 16;
    add.u64 %rd13, %rd3, %rd12;
    @%p5 mov.u64 %rd9, %rd13;
{''.join(chr(10) + b for b in body)}
    barrier.cluster.arrive;
    barrier.cluster.wait;
    add.u32 %r30, %r30, 1;
    setp.lt.u32 %p6, %r30, %r2;
    @%p6 bra ROUND;
    // out: this CTA's buffer
    ld.param.u64 %rd14, [p_out];
    shl.b32 %r45, %r4, 10;
    cvt.u64.u32 %rd15, %r45;
    add.u64 %rd16, %rd14, %rd15;
    cvt.u64.u32 %rd17, %r7;
    add.u64 %rd18, %rd16, %rd17;
    ld.shared.v4.u32 {{%r46, %r47, %r48, %r49}}, [%r8];
    st.global.v4.u32 [%rd18], {{%r46, %r47, %r48, %r49}};
    // regs: every destination, 8 bytes each, a thread after the other
    ld.param.u64 %rd19, [p_regs];
    mad.lo.u32 %r50, %r4, {NT}, %r3;
    mul.wide.u32 %rd20, %r50, {8 * len(dests)};
    add.u64 %rd21, %rd19, %rd20;
{dump}
    ret;
}}
"""


KERNEL = _kernel()


def _launch(engine, n, ins, vals, keep="all"):
    g = GlobalMemory()
    p_in = g.upload(ins)
    p_vals = g.upload(vals)
    p_glob = g.upload(np.zeros(16 * NT * n, np.uint8))
    p_out = g.upload(np.zeros(1024 * n, np.uint8))
    p_regs = g.upload(np.zeros(8 * NREG * NT * n, np.uint8))
    res = load_ptx(KERNEL).launch("dsm", grid=n, block=NT, args=[p_in, p_vals, p_glob, p_out, p_regs], gmem=g,
                                  cluster=(n, 1, 1), engine=engine, keep=keep)
    out = np.concatenate([g.download(p_out, 1024 * n), g.download(p_regs, 8 * NREG * NT * n)])
    return out, g.download(p_glob, 16 * NT * n), res


_REGS = None


def _state(res):
    """Every warp's registers, PCs and exits, and every CTA's shared memory."""
    global _REGS
    if _REGS is None:
        prog_regs = []
        for kind, n in (("%r", 150), ("%rd", 150), ("%f", 150), ("%fd", 150), ("%rs", 150)):
            prog_regs += [f"{kind}{i}" for i in range(n)]
        _REGS = prog_regs
    out = []
    for ctaid, warps in res.ctas:
        for w in warps:
            regs = {}
            for n in _REGS:
                try:
                    regs[n] = w.read(n).tobytes()
                except Exception:           # noqa: BLE001 (a register the kernel does not declare)
                    continue
            out.append((tuple(ctaid), w.warp_id, regs, w.pc.tolist(), w.exited.tolist()))
        out.append((tuple(ctaid), "smem", bytes(warps[0].smem)))
    return out


_SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFFC12345, 0x00000001, 0x807FFFFF,
                     0x3F800000, 0x7FF0000000000001, 0xFFF8000000000000, 0x7FF0000000000000, 0x8000000000000000,
                     0x3FF0000000000000, 0x0000000000000001, 0x7FFC000000000123], np.uint64)


def _inputs(n, seed, density, generic, where, slots):
    """A round's inputs a thread (sel: the ops it does; form: generic or shared::cluster per op; byte; where: its
    16-byte slot (``slots`` of them: lanes collide) and bit 8, a generic lane on global memory) and the lane's
    values (u32, u64, f32, f64; a third of the floats special: zeros, infinities, NaN payloads, subnormals)."""
    rng = np.random.default_rng(seed)
    ins = np.zeros((n * NT, 4), np.uint32)
    bits = rng.random((n * NT, 32))
    ins[:, 0] = ((bits < density).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1).astype(np.uint32)
    bits = rng.random((n * NT, 32))
    ins[:, 1] = ((bits < generic).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1).astype(np.uint32)
    ins[:, 2] = rng.integers(0, 16, n * NT)
    ins[:, 3] = rng.integers(0, slots, n * NT) | ((rng.random(n * NT) < where).astype(np.uint32) << 8)
    vals = rng.integers(0, 256, 64 * NT, dtype=np.uint64).astype(np.uint8)
    v = vals.view(np.uint32).reshape(NT, 16)
    f = rng.integers(0, 1 << 63, 4 * NT, dtype=np.uint64) << np.uint64(1) | rng.integers(0, 2, 4 * NT).astype(np.uint64)
    pick = rng.random(4 * NT) < 0.33
    f[pick] = _SPECIAL[rng.integers(0, _SPECIAL.size, int(pick.sum()))]
    v[:, 8] = (f[:NT] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    v[:, 9] = (f[NT:2 * NT] >> np.uint64(32)).astype(np.uint32)
    v.view(np.uint64)[:, 6] = f[2 * NT:3 * NT]
    v.view(np.uint64)[:, 7] = f[3 * NT:4 * NT]
    return ins.reshape(-1), vals


def _check(n, ins, vals, monkeypatch):
    rout, rglob, rres = _launch("reference", n, ins, vals)
    watch = Watch(monkeypatch)
    fout, fglob, fres = _launch("fast", n, ins, vals)
    assert watch.loops == 1 and watch.handed_over == 0, (watch.loops, watch.handed_over)
    bad = {k: v for k, v in watch.back.items() if k.split(".")[0] in ("ld", "st", "atom", "red", "mapa")}
    assert not bad, bad                     # nothing of the memory rows went back
    assert np.array_equal(fout, rout)
    assert np.array_equal(fglob, rglob)
    rs, fs = _state(rres), _state(fres)
    assert len(rs) == len(fs)
    for a, b in zip(rs, fs):
        assert a == b, (a[:2], b[:2])


@settings(max_examples=6, deadline=None, derandomize=True)
@given(n=st.sampled_from([2, 3, 4]), seed=st.integers(0, 2 ** 32 - 1), density=st.sampled_from([0.15, 0.5, 1.0]),
       generic=st.sampled_from([0.0, 0.5, 1.0]), where=st.sampled_from([0.0, 0.3]),
       slots=st.sampled_from([1, 4, 32]))
def test_dsmem_fuzz_fast_equals_reference(n, seed, density, generic, where, slots):
    """Random lanes, ops, address forms (shared::cluster, generic: another CTA, this CTA, global memory), byte
    offsets (lanes of a warp collide) and values (float specials, NaN payloads): both engines bit for bit."""
    ins, vals = _inputs(n, seed, density, generic, where, slots)
    with pytest.MonkeyPatch.context() as mp:
        _check(n, ins, vals, mp)


def test_dsmem_every_op_every_form(monkeypatch):
    """Every op on every lane, each form in turn (shared::cluster, generic remote/own, generic global), 4 CTAs."""
    rng = np.random.default_rng(7)
    n = 4
    for form, where in ((0, 0), (0xFFFFFFFF, 0), (0xFFFFFFFF, 0x100)):
        ins = rng.integers(0, 1 << 32, (n * NT, 4), dtype=np.uint64).astype(np.uint32)
        ins[:, 0] = 0xFFFFFFFF                              # every op (a lane's ops in program order)
        ins[:, 1] = form
        ins[:, 3] = (ins[:, 3] & 0xFF) | where
        vals = rng.integers(0, 256, 64 * NT, dtype=np.uint64).astype(np.uint8)
        with pytest.MonkeyPatch.context() as mp:
            _check(n, ins.reshape(-1), vals, mp)


# -- errors: the same on both engines -------------------------------------------------------------------------------

ERR = HEAD + """
.visible .entry err(.param .u32 rank, .param .u32 off, .param .u32 generic)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[256];
    ld.param.u32 %r1, [rank];
    ld.param.u32 %r2, [off];
    ld.param.u32 %r3, [generic];
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, buf;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    setp.eq.u32 %p1, %r4, 5;                     // lane 5 breaks the rule
    selp.u32 %r6, %r2, 0, %p1;
    add.u32 %r7, %r5, %r6;
    shl.b32 %r8, %r4, 2;
    and.b32 %r8, %r8, 63;
    add.u32 %r7, %r7, %r8;
    mapa.shared::cluster.u32 %r9, %r7, 1;
    selp.u32 %r10, %r1, 0, %p1;                  // lane 5: a rank field of its own
    shl.b32 %r10, %r10, 24;
    add.u32 %r9, %r9, %r10;
    setp.ne.u32 %p2, %r3, 0;
    cvt.u64.u32 %rd1, %r9;
    @%p2 bra GEN;
    st.shared::cluster.u32 [%r9], %r4;
    atom.shared::cluster.add.u32 %r11, [%r9], 1;
    bra.uni DONE;
GEN:
    st.u32 [%rd1], %r4;
    atom.add.u32 %r11, [%rd1], 1;
DONE:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def _err(engine, rank, off, generic):
    with pytest.raises(MemoryAccessError) as e:
        load_ptx(ERR).launch("err", grid=2, block=32, args=[np.uint32(rank), np.uint32(off), np.uint32(generic)],
                             gmem=GlobalMemory(), cluster=(2, 1, 1), engine=engine)
    return str(e.value)


@pytest.mark.parametrize("rank,off,generic,words", [
    (2, 0, 0, "CTA rank"),            # shared::cluster: a rank field naming a CTA outside the cluster (2 CTAs)
    (2, 0, 1, "CTA rank"),            # generic: the same, through the cluster's window
    (0, 1024, 0, "outside"),          # past the other CTA's shared memory (256 bytes)
    (0, 1024, 1, "outside"),
    (0, 2, 0, "align"),               # a misaligned remote store
    (0, 2, 1, "align"),
])
def test_dsmem_errors_the_same_on_both_engines(rank, off, generic, words):
    ref = _err("reference", rank, off, generic)
    fast = _err("fast", rank, off, generic)
    assert fast == ref
    assert "lane 5" in ref and ("st.shared::cluster.u32" in ref or "st.u32" in ref), ref


GONE = HEAD + """
.visible .entry gone(.param .u32 x)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .shared .align 16 .b8 buf[256];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r5, buf;
    setp.eq.u32 %p1, %r1, 1;
    @%p1 bra OUT;                                // CTA 1 exits at once
    barrier.cluster.arrive;                      // (its exited threads count as arrived)
    barrier.cluster.wait;
    mov.u32 %r2, 7;                              // CTA 0 then stores into CTA 1
    mapa.shared::cluster.u32 %r9, %r5, 1;
    st.shared::cluster.u32 [%r9], %r2;
OUT:
    ret;
}
"""


def test_dsmem_store_into_a_cta_that_exited():
    msgs = []
    for engine in ("reference", "fast"):
        with pytest.raises(MemoryAccessError) as e:
            load_ptx(GONE).launch("gone", grid=2, block=32, args=[np.uint32(0)], gmem=GlobalMemory(),
                                  cluster=(2, 1, 1), engine=engine)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "exited" in msgs[0], msgs


def test_only_kernels_that_reach_other_ctas_bind_dsmem():
    """The cluster's shared windows are bound (in memplan's and atom's slots) only for kernels with shared::cluster
    or (with a generic mapa) generic loads, stores and atomics; a plain kernel's atomics keep memplan and atom."""
    from emulator.machine.fastcore import families
    from emulator.machine.fastcore.engine import translation
    tr = translation(load_ptx(KERNEL).program("dsm"))
    assert "dsmem" in tr.apart and "dsmem_atom" in tr.apart and "memplan" not in tr.apart, tr.apart
    plain = load_ptx(HEAD + """
.visible .entry plain(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    atom.add.u32 %r2, [%rd1], %r1;
    ld.u32 %r3, [%rd1];
    st.u32 [%rd1+4], %r3;
    ret;
}
""")
    tr2 = translation(plain.program("plain"))
    assert "dsmem" not in tr2.apart and "dsmem_atom" not in tr2.apart and "memplan" in tr2.apart, tr2.apart
    assert families.APART_SLOT["dsmem"] == families.APART_SLOT["memplan"]


# -- the H100 (tools/hwcapture/corpus/dsmem_fuzz.py): this file's kernel, each lane of a warp on its own slot -------

HW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "cluster_dsmem_hw.npz")


def _hw_cases():
    return corpus_lib.load_npz(HW)


@pytest.mark.parametrize("name", sorted(_hw_cases()))
def test_dsmem_against_the_h100(name, monkeypatch):
    """Every CTA's buffer, the global slots and every load's and atomic's destination, bit for bit as the H100 left
    them (clusters of 2, 3 and 4; float specials and NaN payloads through remote f32/f64 atomics), on both engines;
    the fast engine hands nothing back."""
    case = _hw_cases()[name]
    assert case["ptx"] == KERNEL                    # (the capture is this file's kernel)
    got, _, _ = corpus_lib.replay(case, engine="reference")
    assert corpus_lib.mismatches(case, got) == []
    watch = Watch(monkeypatch)
    got, _, _ = corpus_lib.replay(case, engine="fast")
    assert corpus_lib.mismatches(case, got) == []
    assert not watch.back and watch.handed_over == 0, (watch.back, watch.handed_over)
