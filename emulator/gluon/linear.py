"""Linear layouts over GF(2), the way Triton writes them (arXiv:2505.23819, Triton's ``LinearLayout``).

A linear layout maps the bits of some *input dimensions* (``register``, ``lane``, ``warp``, ``block`` for a
distributed tensor; ``offset`` for a shared one) to a coordinate of the tensor. Each input bit owns one
*basis vector* (a coordinate); the coordinate of an input is the XOR of the basis vectors of its set bits:

    coordinate(register=r, lane=l, warp=w) = XOR_i r_i * reg_bases[i]  XOR  XOR_j l_j * lane_bases[j] ...

``LinearLayout`` below keeps the bases per input dimension, each basis a tuple indexed by the *logical*
tensor dimension (dim0, dim1, ...), as Triton's Python objects print them, and ``out_order``: the order in
which the output dimensions were introduced. That order matters to the two shape-fitting steps Triton applies
to every layout (``fit_to_shape``): a layout smaller than the tensor is repeated over registers, its most
minor dimension first; a layout larger than the tensor drops its largest basis vectors first (they become zero,
so the same element is held more than once: *replication*).
"""
from dataclasses import dataclass, field

from ..errors import EmulatorError, as_index

IN_DIMS = ("register", "lane", "warp", "block")


class GluonLayoutError(EmulatorError):
    """A Gluon layout whose parameters Triton refuses, or a shape it cannot cover."""


def fail(layout, rule):
    raise GluonLayoutError(f"{layout}: {rule}")


MAX_NUMEL = 1 << 20        # Triton's TRITON_MAX_TENSOR_NUMEL: no tensor (and so no layout's shape) is larger


def as_int(x, what, layout):
    """An integer argument (Python or numpy integer); anything else names the argument."""
    v = as_index(x)
    if v is None:
        fail(layout, f"{what} must be an integer, got {_short(x)}")
    return v


def as_list(x, what, layout, of="integers"):
    """The items of a list argument (any iterable but a string or mapping), at most 64 of them."""
    if isinstance(x, (str, bytes, bytearray, dict, set)) or not hasattr(x, "__iter__") or \
            getattr(x, "ndim", 1) == 0:
        fail(layout, f"{what} must be a list of {of}, got {_short(x)}")
    try:
        items = list(x)
    except Exception:                                  # noqa: BLE001 (a user object whose iteration fails)
        fail(layout, f"{what} must be a list of {of}, got {_short(x)}")
    if len(items) > 64:
        fail(layout, f"{what} has {len(items)} entries; a layout has at most 64")
    return items


def as_ints(x, what, layout):
    """A list of integers (any iterable of Python or numpy integers, not a string)."""
    return [as_int(v, f"{what}[{i}]", layout) for i, v in enumerate(as_list(x, what, layout))]


def _short(x):
    text = repr(x) if not hasattr(x, "shape") else f"{type(x).__name__} of shape {getattr(x, 'shape', '?')}"
    return text if len(text) <= 60 else text[:57] + "..."


def log2(n, what="size"):
    n = int(n)
    if n < 1 or n & (n - 1):
        raise GluonLayoutError(f"{what} {n} is not a power of two")
    return n.bit_length() - 1


class ByRepr:
    """Layouts are equal when they print the same (their repr lists every constructor argument), and hash so."""

    def __eq__(self, o):
        return isinstance(o, type(self)) and repr(self) == repr(o)

    def __hash__(self):
        return hash(repr(self))


@dataclass
class LinearLayout:
    """``bases[in_dim]``: list of basis vectors (tuples of length ``rank``); ``out_order``: output dimensions
    in the order the layout introduced them (minor first)."""
    rank: int
    bases: dict = field(default_factory=dict)
    out_order: list = field(default_factory=list)

    def copy(self):
        return LinearLayout(self.rank, {k: [tuple(b) for b in v] for k, v in self.bases.items()},
                            list(self.out_order))

    def out_size(self, d):
        """Size of output dimension ``d``: the next power of two above every basis component."""
        m = 0
        for v in self.bases.values():
            for b in v:
                m |= int(b[d])
        return 1 << m.bit_length() if m else 1

    def shape(self):
        return [self.out_size(d) for d in range(self.rank)]

    def in_size(self, in_dim):
        return 1 << len(self.bases.get(in_dim, []))

    def as_dict(self, in_dims=IN_DIMS):
        """Triton's bases: ``{in_dim: [[c0, c1, ...], ...]}`` for the given input dimensions."""
        return {k: [list(map(int, b)) for b in self.bases.get(k, [])] for k in in_dims}


def identity1d(rank, size, in_dim, out_dim):
    b = []
    for i in range(log2(size)):
        v = [0] * rank
        v[out_dim] = 1 << i
        b.append(tuple(v))
    return LinearLayout(rank, {in_dim: b}, [out_dim])


def product(a, b):
    """Triton's ``a * b``: b's bases are shifted past a's extent in each output dimension they share;
    input dimensions present in both are concatenated (a's bits first)."""
    sizes = a.shape()
    out = a.copy()
    for in_dim, vs in b.bases.items():
        shifted = [tuple(int(v[d]) * sizes[d] for d in range(a.rank)) for v in vs]
        out.bases.setdefault(in_dim, [])
        out.bases[in_dim] = out.bases[in_dim] + shifted
    for d in b.out_order:
        if d not in out.out_order:
            out.out_order.append(d)
    return out


def identity_nd(rank, in_dim, sizes, order):
    """Triton's ``identityStandardND``: the input bits walk the dimensions in ``order`` (minor first)."""
    ll = LinearLayout(rank, {in_dim: []}, [])
    for d in order:
        ll = product(ll, identity1d(rank, sizes[d], in_dim, d))
    return ll


def ensure_not_smaller(ll, shape):
    """Repeat the layout over registers until it covers ``shape``, output dimensions in ``out_order``."""
    for d in ll.out_order:
        have = ll.out_size(d)
        if have < shape[d]:
            ll = product(ll, identity1d(ll.rank, shape[d] // have, "register", d))
    return ll


def ensure_not_larger(ll, shape, drop_registers=False):
    """Zero the largest basis components of every output dimension that exceeds ``shape`` (replication).
    With ``drop_registers`` a register basis that would be zeroed is dropped instead, so that a thread keeps
    no two registers holding the same element (what Triton does for blocked layouts; its mma layouts keep
    the zero register basis)."""
    ll = ll.copy()
    dropped = set()
    for d in ll.out_order:
        have, want = ll.out_size(d), shape[d]
        if have <= want:
            continue
        items = [(int(v[d]), k, i) for k in ll.bases for i, v in enumerate(ll.bases[k]) if v[d]]
        items.sort(key=lambda t: -t[0])            # largest first; components of one dimension are distinct
        for val, k, i in items:
            if have <= want:
                break
            if k == "register" and drop_registers:
                dropped.add(i)
            else:
                v = list(ll.bases[k][i])
                v[d] = 0
                ll.bases[k][i] = tuple(v)
            have >>= 1
    if dropped:
        ll.bases["register"] = [v for i, v in enumerate(ll.bases["register"]) if i not in dropped]
    return ll


def cga_split(rank, cga, shape):
    """The CTA-tiling part of Triton's ``combineCtaCgaWithShape``: the ``cga_layout`` bases (in units of one
    CTA's share: ``[1, 0]`` = the second half along dim 0) clipped to ``shape``, and the shape each CTA
    holds: ``(cga LinearLayout over "block", per-CTA shape)``."""
    cga_ll = LinearLayout(rank, {"block": [tuple(int(x) for x in b) for b in cga]}, list(range(rank)))
    cga_ll = ensure_not_larger(cga_ll, shape)
    return cga_ll, [max(1, shape[d] // cga_ll.out_size(d)) for d in range(rank)]


def fit_to_shape(ll, shape, drop_registers=False, cga=()):
    """Triton's ``combineCtaCgaWithShape``: split the shape between the CTAs of ``cga``, repeat the CTA layout
    up to its share, clip it, then append the ``block`` bases (shifted past one CTA's share)."""
    cga_ll, cta_shape = cga_split(ll.rank, cga, shape)
    ll = ensure_not_smaller(ll, cta_shape)
    ll = ensure_not_larger(ll, cta_shape, drop_registers)
    ll.bases.setdefault("block", [])
    return product(ll, cga_ll)


def check_shape(layout, shape, rank):
    shape = as_ints(shape, "shape", layout)
    if len(shape) != rank:
        fail(layout, f"shape {shape} has rank {len(shape)}, the layout has rank {rank}")
    for s in shape:
        if s < 1 or s & (s - 1):
            fail(layout, f"shape {shape}: every dimension must be a power of two (Triton's rule for tensors)")
    numel = 1
    for s in shape:
        numel *= s
    if numel > MAX_NUMEL:
        fail(layout, f"shape {shape} has {numel} elements; Triton's tensors have at most {MAX_NUMEL}")
    return shape


def apply(bases, rank, in_dims, index_bits):
    """Coordinates of many inputs at once: ``index_bits[in_dim]`` an int array of input values."""
    import numpy as np
    n = None
    for k in in_dims:
        if k in index_bits:
            n = np.asarray(index_bits[k]).shape
            break
    out = [np.zeros(n, np.int64) for _ in range(rank)]
    for k in in_dims:
        vals = np.asarray(index_bits.get(k, 0), np.int64)
        for i, b in enumerate(bases.get(k, [])):
            bit = (vals >> i) & 1
            for d in range(rank):
                if b[d]:
                    out[d] ^= bit * int(b[d])
    return out
