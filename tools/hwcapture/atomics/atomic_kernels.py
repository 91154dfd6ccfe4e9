"""The GPU kernels of the atomics capture and the operands they read (no GPU needed here).

A *case* is a form (``atomic_forms.Form``), a target (``global`` or ``shared``: where the address points; a
generic address is tried on both) and a mode:

* ``ind``: N threads (blocks of 128), thread g owns the 16-byte cell g: one lane per address;
* ``con``: one block of 128 threads (four warps), thread t works on cell ``t % 4``: 32 lanes of four warps
  on each address;
* ``remote``: as ``ind``, in clusters of two CTAs (``.reqnctapercluster``), each thread working on its cell
  in the *other* CTA's shared memory (``mapa``); red.async/st.async signal the other CTA's mbarrier.

Every kernel takes ``(out, b, c)``: ``out`` holds N 16-byte slots for the destination registers followed by
N 16-byte memory cells, which the host fills with the initial memory before the launch. A shared-memory
target copies its cells into shared memory, runs the instruction, and copies them back. ``b``/``c`` are
N 16-byte slots of operand values (the elements of a vector one after another). ``red.async``/``st.async``
run on clusters in every mode (one CTA, two in ``remote``; launched without clusters, the H100 faults on
them), signal a
per-thread mbarrier in the CTA's shared memory and wait on it (at most ``WAIT_LIMIT`` polls;
the destination slot then holds 1 if the phase never completed, else 0).

The same text runs in the emulator (tests/atomics_replay.py), through ``load_ptx`` and ``launch``.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from atomic_forms import Form, PREFIX

N = 2048
BLOCK = 128
CON_CELLS = 4
WAIT_LIMIT = 20000        # polls of the mbarrier before red.async/st.async count as never completing
CON_LANES = slice(1024 + 512, 1024 + 512 + BLOCK)   # the operands of con mode: random values of nearby size
CON_INIT = 1024 + 512                                # the four cells start as the memory operands of these lanes

KIND = {"f16": "f16", "bf16": "bf16", "f16x2": "f16x2", "bf16x2": "bf16x2", "f32": "f32", "f64": "f64",
        "b16": "i16", "u16": "i16", "s16": "i16", "b32": "i32", "u32": "i32", "s32": "i32",
        "b64": "i64", "u64": "i64", "s64": "i64", "b128": "i64", "b8": "i16", "u8": "i16", "s8": "i16"}


def scalar_inputs():
    """The scalar capture's edge-heavy inputs (tools/hwcapture/scalar/inputs.py): {kind: uint64 (4, N)}."""
    p = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scalar", "inputs.py")
    spec = importlib.util.spec_from_file_location("scalar_capture_inputs", p)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.make_inputs()


def signature(form):
    """Forms of one signature read the same operands."""
    return f"{form.type}_v{form.nvec}_{'cas' if form.op == 'cas' else 'x'}"


def operands(form, inputs):
    """(mem, b, c): uint8 arrays (N, nbytes) of the initial memory and the operand registers of every lane,
    built from the scalar capture's edge-heavy inputs (``scalar/inputs.make_inputs``): element j of a vector
    reads lane ``(lane + 97 j) mod N`` of the kind's slots, so the crossed edge pairs stay together. A cas
    compares equal on even lanes (b is the memory there)."""
    k = KIND[form.type]
    w = form.width
    src = inputs[k]
    n = src.shape[1]
    lanes = np.arange(n)

    def elems(slot):
        cols = []
        for j in range(form.nvec):
            idx = (lanes + 97 * j) % n
            if w == 128:
                lo = src[slot][idx]
                hi = src[(slot + 1) % src.shape[0]][(idx + 31) % n]
                cols += [lo, hi]
            else:
                cols.append(src[slot][idx])
        raw = np.stack(cols, axis=1)
        ew = 8 if w == 128 else max(1, w // 8)
        dt = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[ew]
        return np.ascontiguousarray(raw.astype(dt)).view(np.uint8).reshape(n, form.nbytes)

    mem, b, c = elems(0), elems(1), elems(2)
    if form.op == "cas":
        b = b.copy()
        b[0::2] = mem[0::2]
    return mem, b, c


def _ld(form, base, first, regs):
    w = form.width
    out = []
    for j, r in enumerate(form.regs(first)):
        out.append(f"  ld.global.b{w} {r}, [{base}+{j * w // 8}];")
    return out


def kernel(name, form, target, mode):
    w = form.width
    nb = form.nbytes
    shared = target == "shared"
    remote = mode == "remote"
    sync = ["  barrier.cluster.arrive.aligned;", "  barrier.cluster.wait.aligned;"] if remote else ["  bar.sync 0;"]
    is_async = form.base in ("red.async", "st.async")
    lines = [
        f".visible .entry {name}(.param .u64 po, .param .u64 pb, .param .u64 pc)",
        ".reqnctapercluster 2, 1, 1" if remote else ".reqnctapercluster 1, 1, 1" if is_async else "",
        "{",
        "  .reg .b16 %h<40>; .reg .b32 %r<40>; .reg .b64 %rd<40>; .reg .b128 %q<40>; .reg .pred %pp, %pq;",
        "  .reg .b64 %ad, %pol, %o, %b, %c, %x, %cell, %y0, %y1; .reg .b32 %as, %ms, %mb, %t, %g, %ci, %s, %rk; .reg .b64 %mbd;",
        "  .shared .align 16 .b8 sm[2048];",
        "  .shared .align 8 .b64 mbar[128];",
        "  mov.u32 %t, %tid.x;",
        "  mov.u32 %g, %ctaid.x;",
        "  mad.lo.u32 %g, %g, 128, %t;",
        "  ld.param.u64 %o, [po];",
        "  ld.param.u64 %b, [pb];",
        "  ld.param.u64 %c, [pc];",
        "  cvta.to.global.u64 %o, %o;",
        "  cvta.to.global.u64 %b, %b;",
        "  cvta.to.global.u64 %c, %c;",
        "  mul.wide.u32 %x, %g, 16;",
        "  add.u64 %b, %b, %x;",
        "  add.u64 %c, %c, %x;",
        "  createpolicy.fractional.L2::evict_last.b64 %pol, 1.0;",
    ]
    lines += ["  and.b32 %ci, %t, 3;" if mode == "con" else "  mov.u32 %ci, %g;"]
    lines += ["  mul.wide.u32 %x, %ci, 16;",
              f"  add.u64 %cell, %o, {N * 16};",
              "  add.u64 %cell, %cell, %x;"]
    lines += _ld(form, "%b", 1, None)
    if form.op == "cas":
        lines += _ld(form, "%c", 21, None)
    if shared:
        lines += ["  mov.u32 %s, %ci;" if mode == "con" else "  and.b32 %s, %ci, 127;",
                  "  mov.u32 %ms, sm;",
                  "  mad.lo.u32 %ms, %s, 16, %ms;",
                  "  setp.lt.u32 %pq, %t, 4;" if mode == "con" else "  setp.eq.u32 %pq, %t, %t;",
                  "  @%pq ld.global.v2.b64 {%y0, %y1}, [%cell];",
                  "  @%pq st.shared.v2.b64 [%ms], {%y0, %y1};"]
        if is_async:
            lines += ["  mov.u32 %mb, mbar;",
                      "  mad.lo.u32 %mb, %t, 8, %mb;",
                      "  mbarrier.init.shared::cta.b64 [%mb], 1;",
                      "  fence.mbarrier_init.release.cluster;",
                      f"  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%mb], {nb};"]
        lines += sync
        lines.append("  mov.u32 %as, %ms;")
        if remote:                     # the same cell of the other CTA of the cluster (rank ^ 1)
            lines += ["  mov.u32 %rk, %cluster_ctarank;", "  xor.b32 %rk, %rk, 1;",
                      "  mapa.shared::cluster.u32 %as, %ms, %rk;"]
            if is_async:
                lines.append("  mapa.shared::cluster.u32 %mb, %mb, %rk;")
        if form.space == "" and is_async:       # generic addresses of the cell and the mbarrier
            lines += ["  cvt.u64.u32 %x, %ms;", "  cvta.shared.u64 %ad, %x;",
                      "  mov.u32 %s, mbar;", "  mad.lo.u32 %s, %t, 8, %s;",
                      "  cvt.u64.u32 %x, %s;", "  cvta.shared.u64 %mbd, %x;"]
            if remote:
                lines += ["  mapa.u64 %ad, %ad, %rk;", "  mapa.u64 %mbd, %mbd, %rk;"]
        elif form.space == "":
            lines += ["  cvt.u64.u32 %x, %ms;", "  cvta.shared.u64 %ad, %x;"]
            if remote:
                lines.append("  mapa.u64 %ad, %ad, %rk;")
    else:
        lines += ["  cvta.global.u64 %ad, %cell;" if form.space == "" else "  mov.u64 %ad, %cell;"]
    lines.append("  " + form.text)
    if is_async:
        if remote:                     # the other CTA's thread t signals this thread's mbarrier
            lines += ["  mov.u32 %mb, mbar;", "  mad.lo.u32 %mb, %t, 8, %mb;"]
        lines += ["  mov.u32 %s, 0;",
                  "WAIT:",
                  "  mbarrier.try_wait.parity.shared::cta.b64 %pp, [%mb], 0;",
                  "  @%pp bra DONE;",
                  "  add.u32 %s, %s, 1;",
                  f"  setp.lt.u32 %pp, %s, {WAIT_LIMIT};",
                  "  @%pp bra WAIT;",
                  "DONE:",
                  f"  setp.ge.u32 %pp, %s, {WAIT_LIMIT};",
                  "  selp.u32 %s, 1, 0, %pp;",             # 1: the mbarrier phase never completed
                  "  mul.wide.u32 %x, %g, 16;", "  add.u64 %x, %o, %x;",
                  "  st.global.u32 [%x], %s;"]
    if form.base == "atom":
        lines += ["  mul.wide.u32 %x, %g, 16;", "  add.u64 %x, %o, %x;"]
        for j, r in enumerate(form.regs(11)):
            lines.append(f"  st.global.b{w} [%x+{j * w // 8}], {r};")
    if shared:
        lines += sync
        lines += ["  @%pq ld.shared.v2.b64 {%y0, %y1}, [%ms];",
                  "  @%pq st.global.v2.b64 [%cell], {%y0, %y1};"]
    lines += ["  ret;", "}"]
    return "\n".join(x for x in lines if x)


def module(cases, prefix="k"):
    """cases: [(form, target, mode)]."""
    head = ".version 8.8\n.target sm_90a\n.address_size 64\n"
    return head + "\n".join(kernel(f"{prefix}{i}", *c) for i, c in enumerate(cases)) + "\n"


def remote_ok(form):
    """Forms that can name another CTA's shared memory: .shared::cluster, generic, red.async/st.async."""
    return form.space in ("", "shared::cluster")


def targets(form):
    if form.base in ("red.async", "st.async"):
        return ("shared",)
    if form.space == "":
        return ("global", "shared")
    return ("shared",) if form.shared_address else ("global",)


def con_layout(form, mem, b, c):
    """The con-mode operands (128 lanes) and the initial memory of its four cells, from the ind-mode ones."""
    return mem[CON_INIT:CON_INIT + CON_CELLS], b[CON_LANES], c[CON_LANES]
