"""atom, red, red.async and st.async: every form ptxas accepts for sm_90a (``isa.atomics``), bit for bit as the
H100 performs them (tools/hwcapture/atomics/, tests/test_atomics_diff.py).

The updates of one instruction apply in ascending lane order (across a CTA, in the order the scheduler runs
the warps); lanes on different addresses are independent, so they are applied together. The arithmetic is
``numerics.atomics``; which rule a float update follows depends on where the H100 performs it: ``unit`` (the
atomic unit of global memory), ``loop`` (a compare-and-swap loop: this CTA's shared memory) or ``remote``
(another CTA's shared memory).

red.async and st.async update (another CTA's) shared memory and signal ``complete_tx`` of their size on the
mbarrier of that CTA; here they complete at once.
"""
from __future__ import annotations

import numpy as np

from isa import atomics as ISA
from ..errors import MemoryAccessError, OperandError, UnsupportedError, fail
from ..frontend.ptx import Mem, Vec
from ..memory import check_alignment, check_bounds
from ..numerics import atomics as A
from .cluster import cluster_groups, generic_window
from .common import address, dst, split_mods, src, width
from .memops import check_inflight
from .registry import EXECUTORS, executor

# what the executors refuse, and why (docs/supported.md lists these)
REFUSED = (
    "every spelling ptxas rejects for sm_90a (`.sc`, `.weak`, `.mmio`, `.volatile` on atom/red, `.acquire` on "
    "red, half-precision adds without `.noftz`, scalar min/max of halves, `add.s64`, cas/exch on typed "
    "operands, red.cas/red.exch, vector forms on shared state spaces, the cache hint on shared memory): the "
    "error lists the forms that exist",
    "vector atom/red (`.v2`/`.v4`/`.v8`) on a generic address in shared memory: the H100 leaves the memory "
    "as it was and returns junk (measured); the vector forms work on global memory only",
    "red.async / st.async in a kernel launched without clusters: the H100 stops such a kernel with an "
    "illegal-instruction fault (measured: st.async with and without a state space, red.async)",
)

_SEMS = {"relaxed", "acquire", "release", "acq_rel"}
_REFUSED_SEMS = {"sc", "weak", "mmio", "volatile"}
_TYPES = {"b16", "b32", "b64", "b128", "u32", "s32", "u64", "s64", "f16", "bf16", "f16x2", "bf16x2", "f32", "f64"}
_OPS = {"add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec"}
_FLOAT_ELEM = {"f16": "f16", "bf16": "bf16", "f16x2": "f16", "bf16x2": "bf16", "f32": "f32", "f64": "f64"}
UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def _classify(instr, extra=()):
    """{group: qualifier} of an atom/red spelling, or UnsupportedError naming the qualifier."""
    groups = {"space": set(ISA.SPACES), "op": _OPS, "type": _TYPES, "sem": _SEMS | _REFUSED_SEMS,
              "scope": set(ISA.SCOPES), "noftz": {"noftz"}, "hint": {"L2::cache_hint"}, "vec": {"v2", "v4", "v8"}}
    for g in extra:
        groups[g[0]] = g[1]
    return split_mods(
        instr, groups,
        conflict=lambda g, first, second: f"{instr.opcode}: two {g} qualifiers (.{first} and .{second})",
        unknown=lambda m: (f"{instr.opcode}: unknown qualifier .{m} for {instr.base}; the forms: "
                           f"{instr.base}{{.sem}}{{.scope}}{{.space}}.op{{.noftz}}{{.L2::cache_hint}}{{.vec}}"
                           f".type ({ISA.supported_forms()})"))


def _check_form(instr, q):
    base = instr.base
    if "op" not in q or "type" not in q:
        raise OperandError(f"{instr.opcode}: needs an operation ({', '.join(sorted(_OPS))}) and a type")
    op, ptype, vec, noftz = q["op"], q["type"], q.get("vec", ""), "noftz" in q
    sem = q.get("sem")
    if sem in _REFUSED_SEMS:
        raise UnsupportedError(f"{instr.opcode}: .{sem} does not exist for {base} on sm_90a; semantics: "
                               f"{', '.join('.' + s for s in ISA.SEMS[base])}")
    if sem is not None and sem not in ISA.SEMS[base]:
        raise UnsupportedError(f"{instr.opcode}: {base} takes {', '.join('.' + s for s in ISA.SEMS[base])}, "
                               f"not .{sem}")
    if base == "red" and op in ("exch", "cas"):
        raise UnsupportedError(f"{instr.opcode}: red has no .{op}; use atom")
    spaces = ISA.core_spaces(op, noftz, vec, ptype)
    if not spaces:
        hint = ""
        if ptype in ("f16", "bf16", "f16x2", "bf16x2") and not noftz:
            hint = " (the half-precision forms are spelled .noftz)"
        raise UnsupportedError(f"{instr.opcode}: {base}.{op}{'.noftz' if noftz else ''}{'.' + vec if vec else ''}"
                               f".{ptype} is not an sm_90a form{hint}; the .{op} forms: {ISA.supported_forms(op)}")
    space = q.get("space")
    if space not in spaces:
        raise UnsupportedError(f"{instr.opcode}: the vector forms take .global or generic addresses, not .{space}")
    if "hint" in q and (space not in (None, "global") or op == "cas"):
        raise UnsupportedError(f"{instr.opcode}: .L2::cache_hint is for .global or generic addresses and every "
                               f"operation but cas")
    return op, ptype, vec, noftz, space


def _reg_items(op, n, instr, what):
    if n == 1:
        if isinstance(op, Vec):
            if len(op.items) != 1:
                raise OperandError(f"{instr.opcode}: {what} is one register, found {op}")
            return [op.items[0]]
        return [op]
    if not isinstance(op, Vec) or len(op.items) != n:
        raise OperandError(f"{instr.opcode}: .v{n} needs {what} as a vector of {n} registers, found {op}")
    return list(op.items)


def _where(kind, shared, remote):
    return np.where(remote, "remote", np.where(shared, "loop", "unit"))


def update(op, ptype, old, b, c, where):
    """New element values for ``old`` (uint array of the element width, (n, 2) uint64 for .b128) updated
    with ``b`` (and ``c`` for cas) by lanes performing it ``where`` (array of "unit"/"loop"/"remote")."""
    if ptype == "b128":
        if op == "exch":
            return b.copy()
        eq = (old == b).all(axis=1)
        return np.where(eq[:, None], c, old)
    fmt = _FLOAT_ELEM.get(ptype)
    if fmt is None:
        return A.int_update(op, ptype, old, b, c)
    out = np.empty_like(old)
    for w in np.unique(where):
        sel = where == w
        if ptype in ("f16x2", "bf16x2") and op == "add" and w == "remote":
            # the atomic unit of another CTA's shared memory adds packed halves as one 32-bit integer (H100)
            with np.errstate(over="ignore"):
                out[sel] = old[sel] + b[sel]
            continue
        if ptype in ("f16x2", "bf16x2"):
            o, bb = old[sel], b[sel]
            lo = A.float_update(op, fmt, (o & 0xFFFF).astype(np.uint16), (bb & 0xFFFF).astype(np.uint16), w)
            hi = A.float_update(op, fmt, (o >> 16).astype(np.uint16), (bb >> 16).astype(np.uint16), w)
            out[sel] = lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
        else:
            out[sel] = A.float_update(op, fmt, old[sel], b[sel], "unit" if w == "unit" else "loop")
    return out


class _Cells:
    """Where each active lane's bytes live: (buffer, offset) and how the H100 reaches them."""

    def __init__(self, warp, text, a, mask, space, nbytes, vector):
        if space is None:
            shared, remote = generic_window(warp, a, mask)
        elif space == "shared::cluster":
            shared, remote = np.zeros(32, np.bool_), mask.copy()
        elif space.startswith("shared"):
            shared, remote = mask.copy(), np.zeros(32, np.bool_)
        else:
            shared, remote = np.zeros(32, np.bool_), np.zeros(32, np.bool_)
        glob = mask & ~shared & ~remote
        if vector and (shared | remote).any():
            lane = int(np.flatnonzero(shared | remote)[0])
            fail(MemoryAccessError, text, f"address {int(a[lane]):#x} is in shared memory; the vector forms of "
                 f"atom/red work on global memory only", lane)
        self.loc = {}
        self.shared = shared.copy()
        self.remote = np.zeros(32, np.bool_)
        if shared.any():
            if space is not None:
                check_bounds(text, a, shared, nbytes, warp.smem.size)
            check_inflight(warp, text, a, shared, nbytes, True)
            warp.log_smem(text, "atom", a, nbytes, shared)
            for lane in np.flatnonzero(shared):
                self.loc[lane] = (warp.smem, int(a[lane]), warp)
        if remote.any():              # shared memory of a CTA of the cluster (this one too, through its rank)
            for tw, off, lanes in cluster_groups(warp, text, a, remote):
                check_bounds(text, off, lanes, nbytes, tw.smem.size)
                check_inflight(tw, text, off, lanes, nbytes, True)
                if tw is warp:
                    warp.log_smem(text, "atom", off, nbytes, lanes)
                    self.shared |= lanes
                else:
                    self.remote |= lanes
                for lane in np.flatnonzero(lanes):
                    self.loc[lane] = (tw.smem, int(off[lane]), tw)
        for lane in np.flatnonzero(glob):
            self.loc[lane] = (*warp.gmem._locate(int(a[lane]), nbytes, text, int(lane)), None)
        if warp.profile is not None and glob.any():          # machine.profile: global sectors of this line
            warp.profile.gmem(warp.cur_pc, a, glob, nbytes)
        san = warp.san                                        # machine.sanitize: an atomic read-modify-write
        if san is not None:
            if shared.any():
                san.shared(warp, text, a, shared, nbytes, True)
            if glob.any():
                san.global_access(warp, text, a, glob, nbytes, True)

    def rounds(self, mask):
        """Lists of lanes, each list with distinct cells, in the order the updates apply (ascending lanes)."""
        seen, out = {}, []
        for lane in np.flatnonzero(mask):
            buf, off, _ = self.loc[lane]
            k = (id(buf), off)
            r = seen.get(k, 0)
            seen[k] = r + 1
            if r == len(out):
                out.append([])
            out[r].append(int(lane))
        return out


def _elements(raw, ptype, nvec):
    """bytes (n, nbytes) -> element values (n, nvec) (.b128: (n, 2) uint64)."""
    if ptype == "b128":
        return raw.view(np.uint64).reshape(-1, 2)
    return raw.view(UINT[width(ptype)]).reshape(-1, nvec)


@executor("atom", "red")
def compile_atom(instr, env):
    if instr.base == "red" and instr.mods[:1] == ("async",):
        return _compile_async(instr, env)
    q = _classify(instr)
    op, ptype, vec, noftz, space = _check_form(instr, q)
    is_red = instr.base == "red"
    nvec = int(vec[1:]) if vec else 1
    ops = instr.operands
    hint = "hint" in q
    want = (0 if is_red else 1) + 2 + (op == "cas") + hint
    if len(ops) != want:
        raise OperandError(f"{instr.opcode}: takes {'' if is_red else 'd, '}[a], b{', c' if op == 'cas' else ''}"
                           f"{', cache-policy' if hint else ''}; found {len(ops)} operands")
    k = 0 if is_red else 1
    if not isinstance(ops[k], Mem):
        raise OperandError(f"{instr.opcode}: the address must be [..], found {ops[k]}")
    addr = address(env, ops[k], instr)
    raw = "b128" if ptype == "b128" else f"b{width(ptype)}"
    rb = [src(env, r, raw, instr) for r in _reg_items(ops[k + 1], nvec, instr, "b")]
    rc = [src(env, r, raw, instr) for r in _reg_items(ops[k + 2], nvec, instr, "c")] if op == "cas" else None
    if hint:
        src(env, ops[-1], "b64", instr)          # the cache policy: read, no effect on the result
    writes = None if is_red else [dst(env, r, raw, instr) for r in _reg_items(ops[0], nvec, instr, "d")]
    ew = 16 if ptype == "b128" else width(ptype) // 8
    nbytes = ew * nvec
    text = instr.text or instr.opcode

    def run(warp, mask):
        a = addr(warp)
        check_alignment(text, a, mask, nbytes)
        cells = _Cells(warp, text, a, mask, space, nbytes, bool(vec))
        bv = [np.asarray(r(warp)) for r in rb]
        cv = [np.asarray(r(warp)) for r in rc] if rc else bv
        if ptype != "b128":
            bv = [x.view(UINT[width(ptype)]) for x in bv]
            cv = [x.view(UINT[width(ptype)]) for x in cv]
        olds = np.zeros((32, nbytes), np.uint8)
        for lanes in cells.rounds(mask):
            idx = np.array(lanes)
            cur = np.stack([cells.loc[ln][0][cells.loc[ln][1]:cells.loc[ln][1] + nbytes] for ln in lanes])
            olds[idx] = cur
            el = _elements(cur, ptype, nvec)
            where = _where(None, cells.shared[idx], cells.remote[idx])
            if ptype == "b128":
                new = update(op, ptype, el, bv[0][idx], cv[0][idx], where)
            else:
                new = np.stack([update(op, ptype, el[:, j].copy(), bv[j][idx], cv[j][idx], where)
                                for j in range(nvec)], axis=1)
            nb = np.ascontiguousarray(new).view(np.uint8).reshape(len(lanes), nbytes)
            for i, ln in enumerate(lanes):
                buf, off, _ = cells.loc[ln]
                buf[off:off + nbytes] = nb[i]
        if writes:
            if ptype == "b128":
                writes[0](warp, olds.view(np.uint64).reshape(32, 2).copy(), mask)
            else:
                el = olds.view(UINT[width(ptype)]).reshape(32, nvec)
                for j, wr in enumerate(writes):
                    wr(warp, el[:, j].copy(), mask)
    return run


# ----------------------------------------------------------------------------------------------
# red.async / st.async

_COMPLETE = "mbarrier::complete_tx::bytes"


def _compile_async(instr, env):
    base = f"{instr.base}.async"
    mods = instr.mods[1:]
    extra = [("complete", {_COMPLETE})]
    if instr.base == "red":
        q = _classify(type("I", (), {"mods": mods, "opcode": instr.opcode, "base": base})(), extra)
        op, ptype = q.get("op"), q.get("type")
        if op not in ISA.RED_ASYNC or ptype not in ISA.RED_ASYNC[op]:
            raise UnsupportedError(f"{instr.opcode}: red.async.{op}.{ptype} is not an sm_90a form; supported: "
                                   + "; ".join(f".{o}.{{{','.join(t)}}}" for o, t in ISA.RED_ASYNC.items()))
        if (q.get("sem"), q.get("scope")) != ("relaxed", "cluster") or "complete" not in q or \
                q.get("space") not in (None, "shared::cluster") or set(q) - {"sem", "scope", "space", "complete",
                                                                           "op", "type"}:
            raise UnsupportedError(f"{instr.opcode}: the sm_90a form is red.async.relaxed.cluster{{.shared::cluster}}"
                                   f".mbarrier::complete_tx::bytes.op.type [a], b, [mbar]")
        vec = ""
    else:
        op = None
        q = _classify(type("I", (), {"mods": mods, "opcode": instr.opcode, "base": base})(),
                      extra + [("sem", {"weak"} | _SEMS | _REFUSED_SEMS - {"weak"}),
                               ("type", _TYPES)])
        ptype, vec = q.get("type"), q.get("vec", "")
        key = (q.get("sem", ""), q.get("scope", ""), q.get("space") or "", "complete" in q)
        if ptype not in ISA.ST_ASYNC_TYPES.get(vec, ()) or key not in ISA.ST_ASYNC_QUALS or \
                set(q) - {"sem", "scope", "space", "complete", "type", "vec"}:
            raise UnsupportedError(f"{instr.opcode}: not an sm_90a form; st.async{{.weak}}{{.shared::cluster}}"
                                   f".mbarrier::complete_tx::bytes{{.v2,.v4}}.{{b32,b64,u32,s32,u64,s64,f32,f64}} "
                                   f"[a], b, [mbar] (.v4: 32-bit types; .shared::cta: the completion mechanism may "
                                   f"be left out; .cluster: without .weak)")
    space = q.get("space")
    nvec = int(vec[1:]) if vec else 1
    ops = instr.operands
    if len(ops) != 3 or not isinstance(ops[0], Mem) or not isinstance(ops[2], Mem):
        raise OperandError(f"{instr.opcode}: takes [a], b, [mbar]; found {len(ops)} operands")
    addr = address(env, ops[0], instr)
    mbar = address(env, ops[2], instr)
    raw = f"b{width(ptype)}"
    rb = [src(env, r, raw, instr) for r in _reg_items(ops[1], nvec, instr, "b")]
    nbytes = width(ptype) // 8 * nvec
    text = instr.text or instr.opcode
    from .mbarrier import _target

    def run(warp, mask):
        if not warp.special("%is_explicit_cluster").any():
            fail(UnsupportedError, text, f"{base} needs a kernel launched on thread-block clusters (launch(..., "
                 f"cluster=...) or .reqnctapercluster): the H100 stops it with an illegal-instruction fault "
                 f"otherwise", int(np.flatnonzero(mask)[0]))
        a = addr(warp)
        check_alignment(text, a, mask, nbytes)
        if space == "shared::cta":
            cells = _Cells(warp, text, a, mask, "shared::cta", nbytes, False)
        else:
            if space is None:
                own, remote = generic_window(warp, a, mask)
                if (mask & ~own & ~remote).any():
                    lane = int(np.flatnonzero(mask & ~own & ~remote)[0])
                    fail(MemoryAccessError, text, f"address {int(a[lane]):#x} is not in the shared memory of a "
                         f"CTA of the cluster", lane)
            cells = _Cells(warp, text, a, mask, "shared::cluster" if space else None, nbytes, False)
        bv = [np.asarray(r(warp)).view(UINT[width(ptype)]) for r in rb]
        m = mbar(warp)
        for lanes in cells.rounds(mask):
            idx = np.array(lanes)
            if op is None:
                new = np.stack([x[idx] for x in bv], axis=1)
            else:
                cur = np.stack([cells.loc[ln][0][cells.loc[ln][1]:cells.loc[ln][1] + nbytes] for ln in lanes])
                el = _elements(cur, ptype, 1)
                new = update(op, ptype, el[:, 0].copy(), bv[0][idx], bv[0][idx],
                             np.full(len(lanes), "loop"))[:, None]
            nb = np.ascontiguousarray(new).view(np.uint8).reshape(len(lanes), nbytes)
            for i, ln in enumerate(lanes):
                buf, off, owner = cells.loc[ln]
                buf[off:off + nbytes] = nb[i]
                unit, moff = _target(warp, text, space, m[ln], ln)
                if unit is not owner.async_unit:
                    fail(MemoryAccessError, text, f"the mbarrier at {int(m[ln]):#x} is not in the CTA whose shared "
                         f"memory the {base} writes", ln)
                unit.mbarriers.complete_tx(text, moff, nbytes, ln)
    return run


_st_factory = EXECUTORS["st"]


@executor("st")
def compile_st(instr, env):
    """st.async here; every other st as ``memops`` defines it."""
    if instr.mods[:1] == ("async",):
        return _compile_async(instr, env)
    return _st_factory(instr, env)
