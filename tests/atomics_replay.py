"""Replay of the atomics differential capture (tests/data/atomics/atomics_sm90.npz, taken with
tools/hwcapture/atomics/ on an H100): every atom/red form ptxas accepts for sm_90a, run by the emulator over
the operands the H100 saw and compared with the H100's bits.

Two ways to run a case:

* ``warp_case``: the instruction text alone through ``Warp.run``, 32 lanes at a time, each lane on its own
  16-byte cell of global or shared memory (the ``ind`` cases);
* ``kernel_case``: the capture's whole kernel (``atomic_kernels.kernel``) through ``load_ptx`` and ``launch``,
  on either engine (every mode: ``ind``, ``con`` (128 threads on four cells), ``remote`` (the other CTA of a
  cluster of two)).
"""
from __future__ import annotations

import json
import os
import sys
from functools import lru_cache

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "hwcapture", "atomics"))
import atomic_forms as F  # noqa: E402
import atomic_kernels as K  # noqa: E402
import atomic_programs as P  # noqa: E402

from emulator import GlobalMemory, Warp, load_ptx  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "atomics", "atomics_sm90.npz")
UDT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@lru_cache(maxsize=None)
def capture(path=DATA):
    """(meta, cases, programs, arrays): the cases' result names resolve through ``arrays``.  ``path``: another
    capture of the same harness (the red.async/st.async runs, ``async_*_sm90.npz``); its cases remember it."""
    z = np.load(path, allow_pickle=False)
    arrays = {k: z[k] for k in z.files if k[0] in "ao" and k not in ("meta",)}
    cases = json.loads(str(z["cases"]))
    if path != DATA:
        for c in cases:
            c["data"] = path
    return json.loads(str(z["meta"])), cases, json.loads(str(z["programs"])), arrays


def form(case):
    return F.Form.from_json(case["form"])


def operands(case):
    return capture(case.get("data", DATA))[3]["op_" + case["sig"]]


def _regs(f, first, vals):
    """{register: raw values} of a vector operand, vals: uint8 (lanes, nbytes)."""
    ew = max(1, f.width // 8)
    out = {}
    for j, r in enumerate(f.regs(first)):
        chunk = np.ascontiguousarray(vals[:, j * ew:(j + 1) * ew])
        out[r] = chunk.view(np.uint64).reshape(-1, 2) if ew == 16 else chunk.view(UDT[ew])[:, 0]
    return out


def _raw(f, w, first):
    """A vector register operand's per-lane bytes, uint8 (32, nbytes)."""
    ew = max(1, f.width // 8)
    cols = []
    for r in f.regs(first):
        v = w.read(r)
        cols.append(np.ascontiguousarray(v.astype(np.uint64) if ew == 16 else v.astype(UDT[ew])).view(np.uint8)
                    .reshape(32, ew))
    return np.concatenate(cols, axis=1)


def warp_case(case, lanes):
    """The emulator's (dst bytes or None, memory bytes) for ``lanes`` (a multiple of 32) of an ind case."""
    f = form(case)
    target = case["target"]
    mem, b, c = operands(case)
    nb = f.nbytes
    dsts, mems = [], []
    for s in range(0, len(lanes), 32):
        sel = np.asarray(lanes[s:s + 32])
        g = GlobalMemory()
        w = Warp(gmem=g, smem_bytes=512)
        w.declare("b128", [f"%q{i}" for i in range(40)])
        w.declare("b16", [f"%h{i}" for i in range(40)])
        w.declare("b64", ["%ad", "%pol", "%x", "%mbd"])
        w.declare("b32", ["%as", "%mb"])
        cells = np.zeros((32, 16), np.uint8)
        cells[:, :nb] = mem[sel]
        off = np.arange(32, dtype=np.uint64) * np.uint64(16)
        if target == "global":
            base = g.upload(cells.reshape(-1))
            w.write("%ad", np.uint64(base) + off)
        else:
            w.smem[:512] = cells.reshape(-1)
            w.write("%as", off.astype(np.uint32))
            w.write("%x", off)
            w.run("cvta.shared.u64 %ad, %x;")
        w.run("createpolicy.fractional.L2::evict_last.b64 %pol, 1.0;")
        for r, v in {**_regs(f, 1, b[sel]), **(_regs(f, 21, c[sel]) if f.op == "cas" else {})}.items():
            w.write(r, v)
        w.run(f.text)
        after = g.download(base, 512).view(np.uint8) if target == "global" else w.smem[:512]
        mems.append(np.asarray(after).reshape(32, 16)[:, :nb].copy())
        if f.base == "atom":
            dsts.append(_raw(f, w, 11))
    return (np.concatenate(dsts) if dsts else None), np.concatenate(mems)


@lru_cache(maxsize=256)
def _module(text):
    return load_ptx(text)


def kernel_case(case, engine="reference"):
    """The emulator's run of the capture's kernel for ``case``: (dst bytes or None, memory bytes)."""
    f = form(case)
    target, mode = case["target"], case["mode"]
    mem, b, c = operands(case)
    nb = f.nbytes
    N = K.N
    m = _module(K.module([(f, target, mode)]))
    g = GlobalMemory()
    init = np.zeros((N, 16), np.uint8)
    if mode == "con":
        init[:K.CON_CELLS, :nb] = mem[K.CON_INIT:K.CON_INIT + K.CON_CELLS]
        bb, cc, grid, lanes, cells = b[K.CON_LANES], c[K.CON_LANES], 1, K.BLOCK, K.CON_CELLS
    else:
        init[:, :nb] = mem
        bb, cc, grid, lanes, cells = b, c, N // K.BLOCK, N, N
    pad = lambda x: np.pad(x, ((0, N - x.shape[0]), (0, 16 - x.shape[1])))  # noqa: E731
    out = g.upload(np.concatenate([np.zeros(N * 16, np.uint8), init.reshape(-1)]))
    pb, pc = g.upload(pad(bb).reshape(-1)), g.upload(pad(cc).reshape(-1))
    m.launch("k0", grid=(grid, 1, 1), block=(K.BLOCK, 1, 1), args=[out, pb, pc], gmem=g, engine=engine)
    h = g.download(out, 2 * N * 16).view(np.uint8).reshape(2, N, 16)
    d = None
    if f.base == "atom":
        d = h[0, :lanes, :nb].copy()
    elif f.base in ("red.async", "st.async"):
        d = h[0, :lanes, :4].copy()
    return d, h[1, :cells, :nb].copy()


def want(case, run=0):
    """The H100's (dst bytes or None, memory bytes) of one run."""
    arrays = capture(case.get("data", DATA))[3]
    r = case["runs"][run]
    return (arrays[r["dst"]] if "dst" in r else None), arrays[r["mem"]]


def describe_lane(case, lane, got_d, got_m):
    f = form(case)
    mem, b, c = operands(case)
    wd, wm = want(case)
    hx = lambda a: a[::-1].tobytes().hex()  # noqa: E731  (little-endian bytes as one hex number)
    parts = [f"{f.text} [{case['target']}, {case['mode']}] lane {lane}: memory 0x{hx(mem[lane])}, b 0x{hx(b[lane])}"]
    if f.op == "cas":
        parts.append(f"c 0x{hx(c[lane])}")
    parts.append(f"-> H100 memory 0x{hx(wm[lane])}" + (f" old 0x{hx(wd[lane])}" if wd is not None else ""))
    parts.append(f"emulator memory 0x{hx(got_m[lane])}" + (f" old 0x{hx(got_d[lane])}" if got_d is not None else ""))
    return ", ".join(parts)


# ---- contended cases: the outcomes the hardware allows ---------------------------------------------------

def _elems(f, raw):
    """Split per-lane bytes into element raw ints (for the serial model of ``serialize``)."""
    ew = max(1, f.width // 8)
    return [int.from_bytes(raw[j * ew:(j + 1) * ew].tobytes(), "little") for j in range(f.nvec)]


def serial_explains(case, run, apply):
    """Whether the H100's contended result of ``run`` (the values each lane's atom returned, the final cells)
    is what applying the lanes one after another in *some* order gives, each lane's update being
    ``apply(form, old, b, c) -> new`` (bytes; the emulator's rule). Every lane is an edge old -> apply(old) in
    a graph of values; an order exists iff those edges form one trail from the initial to the final value
    (an Eulerian trail). For red (nothing returned) the final value must be one that a few natural orders
    reach (order-independent updates reach one value whatever the order). Returns (True, "") or
    (False, reason)."""
    f = form(case)
    mem, b, c = operands(case)
    bb, cc = b[K.CON_LANES], c[K.CON_LANES]
    wd, wm = want(case, run)
    if f.base in ("red.async", "st.async"):
        wd = None                           # what they record is the mbarrier wait's result, not an old value
    for cell in range(K.CON_CELLS):
        lanes = list(range(cell, K.BLOCK, K.CON_CELLS))
        start, final = bytes(mem[K.CON_INIT + cell]), bytes(wm[cell])
        if wd is not None:
            edges = [(bytes(wd[i]), apply(f, bytes(wd[i]), bytes(bb[i]), bytes(cc[i]))) for i in lanes]
            if not _euler_trail(edges, start, final):
                return False, (f"cell {cell}: the values the 32 lanes returned do not chain from 0x{start[::-1].hex()} "
                               f"to the final 0x{final[::-1].hex()} under the emulator's update")
            continue
        orders = [lanes, lanes[::-1], sorted(lanes, key=lambda i: (i % 32, i // 32)),
                  sorted(lanes, key=lambda i: (-(i // 32), i % 32))] + twin_orders(case, cell, apply)
        finals = set()
        for order in orders:
            cur = start
            for i in order:
                cur = apply(f, cur, bytes(bb[i]), bytes(cc[i]))
            finals.add(cur)
        if final not in finals:
            return False, f"cell {cell}: 0x{final[::-1].hex()} is not reached by the orders tried"
    return True, ""


def twin_orders(case, cell, apply):
    """The orders in which the H100 applied the lanes of ``cell`` in the runs of the atom cases twin to a red
    case (same operation and operands, any state space, the same memory; the old values come back): read off
    the returned values."""
    f = case["form"]
    out = []
    for twin in _atom_con().get((case["target"], f["op"], f["type"], f["vec"], f["noftz"]), []):
        out += _orders_of(twin, cell, apply)
    return out


@lru_cache(maxsize=None)
def _atom_con():
    idx = {}
    for c in capture()[1]:
        f = c["form"]
        if c["mode"] == "con" and f["base"] == "atom":
            idx.setdefault((c["target"], f["op"], f["type"], f["vec"], f["noftz"]), []).append(c)
    return idx


def _orders_of(twin, cell, apply):
    tf = form(twin)
    mem, b, c = operands(twin)
    bb, cc = b[K.CON_LANES], c[K.CON_LANES]
    lanes = list(range(cell, K.BLOCK, K.CON_CELLS))
    out = []
    for run in range(len(twin["runs"])):
        wd = want(twin, run)[0]
        edges = {i: (bytes(wd[i]), apply(tf, bytes(wd[i]), bytes(bb[i]), bytes(cc[i]))) for i in lanes}
        order = _trail(edges, bytes(mem[K.CON_INIT + cell]))
        if order:
            out.append(order)
    return out


def _trail(edges, start):
    """An order of the edge keys forming one trail from ``start`` (Hierholzer), or None."""
    adj = {}
    for k, (a, b) in sorted(edges.items()):
        adj.setdefault(a, []).append((k, b))
    for v in adj:
        adj[v].reverse()
    stack, path = [(None, start)], []
    while stack:
        k, v = stack[-1]
        if adj.get(v):
            k2, w = adj[v].pop()
            stack.append((k2, w))
        else:
            stack.pop()
            if k is not None:
                path.append(k)
    path.reverse()
    return path if len(path) == len(edges) else None


def _euler_trail(edges, start, end):
    """Whether the directed edges (a, b) form one trail from ``start`` that uses each once and ends at ``end``."""
    out_d, in_d, adj = {}, {}, {}
    for a, b in edges:
        out_d[a] = out_d.get(a, 0) + 1
        in_d[b] = in_d.get(b, 0) + 1
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    nodes = set(out_d) | set(in_d)
    if start not in out_d:
        return False
    for v in nodes | {end}:
        d = out_d.get(v, 0) - in_d.get(v, 0)
        if d != (1 if v == start else 0) - (1 if v == end else 0):
            return False
    seen, stack = {start}, [start]
    while stack:
        for w in adj.get(stack.pop(), ()):
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return nodes <= seen


# ---- compiler-generated programs ---------------------------------------------------------------------------

def program_run(rec, engine="reference"):
    """Run one recorded program in the emulator: its buffers after the launch (uint8 arrays)."""
    arrays = capture()[3]
    m = _module(rec["ptx"])
    g = GlobalMemory()
    args, bufs = [], []
    for a in rec["args"]:
        if isinstance(a, int):
            args.append(a)
            continue
        role, dt, name = a
        data = arrays[name]
        addr = g.upload(np.ascontiguousarray(data).reshape(-1))
        bufs.append((addr, data.size))
        args.append(addr)
    m.launch(rec["kernel"], grid=(rec["grid"], 1, 1), block=(rec["block"], 1, 1), args=args, gmem=g, engine=engine)
    return [g.download(addr, n).view(np.uint8) for addr, n in bufs]


def apply_bytes(f, where):
    """The emulator's update of one cell, on bytes: apply(form, old, b, c) -> new (``serial_explains``)."""
    from emulator.ops.atomics import update
    ptype, nvec = f.type, f.nvec
    ew = 16 if ptype == "b128" else f.width // 8
    dt = np.uint64 if ptype == "b128" else UDT[ew]

    def apply(form, old, b, c):
        o = np.frombuffer(old, dt).reshape(1, -1)
        bb = np.frombuffer(b, dt).reshape(1, -1)
        cc = np.frombuffer(c, dt).reshape(1, -1)
        if ptype == "b128":
            new = update(f.op, ptype, o, bb, cc, np.array([where]))
        else:
            new = np.stack([update(f.op, ptype, o[:, j].copy(), bb[:, j], cc[:, j], np.array([where]))
                            for j in range(nvec)], axis=1)
        return np.ascontiguousarray(new).tobytes()
    return apply
