"""A faithful subset of the CuTe layout algebra.

A *layout* is a pair of congruent hierarchical integer tuples, ``shape:stride``; it maps a coordinate
(an integer, or a hierarchical tuple matching the shape) to an integer index: the inner product of the
natural coordinate with the stride. Integers index the domain in column-major (leftmost fastest) order,
exactly as CuTe does. Names follow CuTe one for one (``crd2idx``, ``idx2crd``, ``coalesce``,
``composition``, ``complement``, ``logical_divide``, ``zipped_divide``, ``logical_product``,
``local_tile``, ``Swizzle<B,M,S>``) so that CuTe code reads the same here.

    >>> L = Layout.parse("((_16,_8),_8):((_64,_1),_8)")
    >>> L(((3, 1), 2))
    209
    >>> idx2crd(209, (8, 128))
    (1, 26)
    >>> str(composition(Layout((4, 8), (8, 1)), Layout(8, 2)))
    '(2,4):(16,1)'
"""
import math
import re

import numpy as np

from ..errors import EmulatorError, as_index

__all__ = ["Layout", "Swizzle", "ComposedLayout", "LayoutError", "make_layout", "crd2idx", "idx2crd",
           "size", "cosize", "rank", "depth", "shape", "stride", "flatten", "product", "prefix_product",
           "coalesce", "composition", "complement", "right_inverse", "left_inverse", "logical_divide",
           "zipped_divide", "tiled_divide", "logical_product", "zipped_product", "tiled_product", "slice_", "blocked_product", "raked_product",
           "local_tile", "slice_and_offset", "parse"]


class LayoutError(EmulatorError):
    """A layout operation whose arguments break CuTe's rules (incongruent coordinates, indivisible shapes)."""


def _err(rule):
    raise LayoutError(f"cute: {rule}")


# ---- integer tuples -------------------------------------------------------------------------------

def is_tuple(x):
    return isinstance(x, tuple)


def flatten(t):
    """All leaves of a hierarchical tuple, left to right (an int stays an int)."""
    if not is_tuple(t):
        return t
    out = []
    for e in t:
        f = flatten(e)
        out.extend(f if is_tuple(f) else (f,))
    return tuple(out)


def product(t):
    """Product of all leaves (CuTe ``product``; the size of a shape)."""
    return math.prod(flatten(t)) if is_tuple(t) else t


def prefix_product(t, init=1):
    """Exclusive prefix product, keeping the hierarchy: the compact column-major strides of shape ``t``."""
    if is_tuple(t):
        out = []
        for e in t:
            out.append(prefix_product(e, init))
            init *= product(e)
        return tuple(out)
    return init


def _congruent(a, b):
    if is_tuple(a) and is_tuple(b):
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return not is_tuple(a) and not is_tuple(b)


def _ceil_div(a, b):
    return -(-a // b)


def _shape_div(a, b):
    """CuTe ``shape_div``: a / b when b divides a, else 1 when a divides b (signs aside)."""
    if a % b == 0:
        return a // b
    if b % a == 0:
        return 1
    _err(f"shape_div({a}, {b}): neither divides the other")


# ---- coordinates ---------------------------------------------------------------------------------

def crd2idx(crd, shape, stride=None):
    """Index of coordinate ``crd`` (int or hierarchical tuple) under ``shape:stride`` (compact
    column-major strides when ``stride`` is omitted)."""
    _check_args("crd2idx", crd, shape, stride)
    return _crd2idx(crd, shape, stride)


def _crd2idx(crd, shape, stride=None):
    if stride is None:
        stride = prefix_product(shape)
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            _err(f"coordinate {_fmt(crd)} does not match shape {_fmt(shape)}")
        return sum(_crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride))
    if crd is None:
        _err("an unsliced coordinate (None) cannot be evaluated; use slice_and_offset")
    if is_tuple(shape):  # an integer split column-major over the modes; the last mode takes the rest
        idx = 0
        for s, d in zip(shape[:-1], stride[:-1]):
            n = product(s)
            idx += _crd2idx(crd % n, s, d)
            crd //= n
        return idx + _crd2idx(crd, shape[-1], stride[-1])
    _ints("crd2idx", crd, shape, stride)
    return int(crd) * int(stride)


def idx2crd(idx, shape, stride=None):
    """The natural coordinate (congruent with ``shape``) of integer ``idx``, column-major like CuTe."""
    _check_args("idx2crd", idx, shape, stride)
    return _idx2crd(idx, shape, stride)


def _idx2crd(idx, shape, stride=None):
    if stride is None:
        stride = prefix_product(shape)
    if is_tuple(idx):
        if not is_tuple(shape) or len(idx) != len(shape):
            _err(f"coordinate {_fmt(idx)} does not match shape {_fmt(shape)}")
        return tuple(_idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride))
    if is_tuple(shape):
        return tuple(_idx2crd(idx, s, d) for s, d in zip(shape, stride))
    _ints("idx2crd", idx, shape, stride)
    idx, shape, stride = int(idx), int(shape), int(stride)      # numpy integers: Python's (no int64 overflow)
    if shape == 0 or stride == 0:
        _err(f"idx2crd: a mode of shape {shape} and stride {stride} has no coordinates")
    return (idx // stride) % shape


def _check_args(what, crd, shape, stride):
    """Integers or non-empty nested tuples of them; the stride (when given) congruent with the shape."""
    def tree(x, name, allow_none=False):
        if is_tuple(x):
            if not x:
                _err(f"{what}: {name} has an empty tuple")
            for e in x:
                tree(e, name, allow_none)
        elif not (allow_none and x is None):
            _ints(what, x)

    def congruent(a, b):
        if is_tuple(a) != is_tuple(b) or (is_tuple(a) and (len(a) != len(b) or
                                                           not all(congruent(x, y) for x, y in zip(a, b)))):
            return False
        return True
    tree(shape, "the shape")
    tree(crd, "the coordinate", allow_none=True)
    if stride is not None:
        tree(stride, "the stride")
        if not congruent(shape, stride):
            _err(f"{what}: stride {_fmt(stride)} is not congruent with shape {_fmt(shape)}")


def _ints(what, *xs):
    for x in xs:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or is_tuple(x):
            _err(f"{what}: expected integers or tuples of integers, got {x!r}")


# ---- text form -----------------------------------------------------------------------------------

def _fmt(t, static=False):
    if is_tuple(t):
        return "(" + ",".join(_fmt(e, static) for e in t) + ")"
    return f"_{t}" if static else str(t)


_TOKEN = re.compile(r"\s*(?:(\()|(\))|(,)|(_?-?\d+))")


def _parse_tuple(text, pos=0):
    """Parse one int or nested tuple of ints (each optionally written ``_N``) starting at ``pos``."""
    m = _TOKEN.match(text, pos)
    if not m:
        _err(f"cannot parse {text!r} at column {pos}")
    if m.group(1):
        items, pos = [], m.end()
        while True:
            item, pos = _parse_tuple(text, pos)
            items.append(item)
            m = _TOKEN.match(text, pos)
            if not m or not (m.group(2) or m.group(3)):
                _err(f"cannot parse {text!r} at column {pos}: expected ',' or ')'")
            pos = m.end()
            if m.group(2):
                return tuple(items), pos
    if m.group(4):
        return int(m.group(4).lstrip("_")), m.end()
    _err(f"cannot parse {text!r} at column {pos}")


# ---- Layout --------------------------------------------------------------------------------------

class Layout:
    """``shape:stride``; calling it maps a coordinate to an index (CuTe ``Layout::operator()``)."""

    def __init__(self, shape, stride=None, *, static=False):
        shape = _tupleize(shape)
        stride = prefix_product(shape) if stride is None else _tupleize(stride)
        if not _congruent(shape, stride):
            _err(f"shape {_fmt(shape)} and stride {_fmt(stride)} are not congruent")
        if any(s < 0 for s in (flatten(shape) if is_tuple(shape) else (shape,))):
            _err(f"shape {_fmt(shape)} has a negative extent")
        self.shape, self.stride, self.static = shape, stride, static

    @classmethod
    def parse(cls, text):
        """Read CuTe's printed form ``shape:stride`` (``_`` prefixes optional; ``shape`` alone means
        compact column-major)."""
        if not isinstance(text, str):
            _err(f"Layout.parse takes the text of a layout (shape:stride), not {type(text).__name__}")
        sh, pos = _parse_tuple(text, 0)
        rest = text[pos:].strip()
        st = None
        if rest:
            if not rest.startswith(":"):
                _err(f"cannot parse {text!r}: expected ':' after the shape")
            st, pos2 = _parse_tuple(rest, 1)
            if rest[pos2:].strip():
                _err(f"cannot parse {text!r}: trailing text {rest[pos2:].strip()!r}")
        return cls(sh, st, static="_" in text)

    # CuTe operator<<
    def __str__(self):
        return f"{_fmt(self.shape, self.static)}:{_fmt(self.stride, self.static)}"

    def __repr__(self):
        return f"Layout.parse({str(self)!r})"

    # CuTe operator== (same shape and stride)
    def __eq__(self, other):
        return isinstance(other, Layout) and self.shape == other.shape and self.stride == other.stride

    def __hash__(self):
        return hash((self.shape, self.stride))

    # CuTe Layout::operator()(coord)
    def __call__(self, *crd):
        c = crd[0] if len(crd) == 1 else tuple(crd)
        if _has_none(c):  # CuTe's slicing with '_': the sub-layout and its offset
            return slice_and_offset(c, self)
        return crd2idx(c, self.shape, self.stride)

    # CuTe get<i>(layout) / layout[i]
    def __getitem__(self, i):
        if not is_tuple(self.shape):
            if i in (0, -1):
                return self
            _err(f"mode {i} of rank-1 layout {self}")
        return Layout(self.shape[i], self.stride[i], static=self.static)

    def __len__(self):
        return rank(self)

    def __iter__(self):
        return (self[i] for i in range(rank(self)))

    def size(self):
        return size(self)

    def cosize(self):
        return cosize(self)

    def indices(self):
        """``[self(i) for i in range(size(self))]``."""
        return [self(i) for i in range(size(self))]


def _tupleize(x, depth=0):
    if depth > 32:
        _err("shapes and strides nest at most 32 deep")
    if isinstance(x, (list, tuple)):
        return tuple(_tupleize(e, depth + 1) for e in x)
    return _index(x)


def _index(x):
    """An integer mode (Python or numpy integer, not bool); anything else is a LayoutError."""
    if isinstance(x, (bool, np.bool_)):
        _err(f"a mode must be an integer, not {x!r}")
    v = as_index(x)
    if v is None:
        _err(f"a mode must be an integer or a tuple of them, not {type(x).__name__} {repr(x)[:40]}")
    return v


def _has_none(c):
    return c is None or (is_tuple(c) and any(_has_none(e) for e in c))


def parse(text):
    return Layout.parse(text)


def make_layout(*layouts):
    """Concatenate layouts into one whose modes are the arguments (CuTe ``make_layout(L0, L1, ...)``;
    one argument gives a rank-1 tuple layout)."""
    return Layout(tuple(L.shape for L in layouts), tuple(L.stride for L in layouts),
                  static=all(L.static for L in layouts))


def size(x):
    return product(x.shape if isinstance(x, Layout) else x)


def cosize(L):
    """One past the largest index the layout produces (CuTe ``cosize``)."""
    if size(L) == 0:
        return 0
    sh, st = flatten(L.shape), flatten(L.stride)
    sh, st = (sh, st) if is_tuple(sh) else ((sh,), (st,))
    return sum((s - 1) * abs(d) for s, d in zip(sh, st)) + 1


def rank(x):
    s = x.shape if isinstance(x, Layout) else x
    return len(s) if is_tuple(s) else 1


def depth(x):
    s = x.shape if isinstance(x, Layout) else x
    return 1 + max((depth(e) for e in s), default=0) if is_tuple(s) else 0


def shape(L):
    return L.shape


def stride(L):
    return L.stride


def _flat_modes(L):
    sh, st = flatten(L.shape), flatten(L.stride)
    return list(zip(sh, st)) if is_tuple(sh) else [(sh, st)]


def _from_modes(modes):
    if not modes:
        return Layout(1, 0)
    if len(modes) == 1:
        return Layout(modes[0][0], modes[0][1])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


# ---- algebra -------------------------------------------------------------------------------------

def coalesce(L, profile=None):
    """The same function on the same domain, with the fewest modes (CuTe ``coalesce``); with a
    ``profile`` tuple, coalesce each top-level mode on its own."""
    if profile is not None and is_tuple(profile):
        return make_layout(*(coalesce(L[i], profile[i]) for i in range(len(profile))),
                           *(L[i] for i in range(len(profile), rank(L))))
    modes = []
    for s, d in _flat_modes(L):
        if s == 1:
            continue
        if modes and modes[-1][0] * modes[-1][1] == d:
            modes[-1] = (modes[-1][0] * s, modes[-1][1])
        else:
            modes.append((s, d))
    if not modes:
        return Layout(1, 0)
    return _from_modes(modes)


def composition(A, B):
    """``R = A o B`` with ``R(c) == A(B(c))`` for every coordinate c of B (CuTe ``composition``).
    ``B`` may be a Layout, an int (the layout ``B:1``) or a tuple of those (a tiler, mode by mode);
    ``A`` may be a Swizzle, giving a ComposedLayout."""
    if isinstance(A, Swizzle):
        return ComposedLayout(A, 0, B if isinstance(B, Layout) else Layout(B, 1))
    if isinstance(A, ComposedLayout):
        return ComposedLayout(A.outer, A.offset, composition(A.inner, B))
    if B is None:
        return A
    if is_tuple(B):
        if len(B) > rank(A):
            _err(f"tiler of rank {len(B)} is deeper than layout {A}")
        return make_layout(*(composition(A[i], B[i]) for i in range(len(B))),
                           *(A[i] for i in range(len(B), rank(A))))
    if not isinstance(B, Layout):
        B = Layout(B, 1)
    if is_tuple(B.shape):
        return make_layout(*(composition(A, B[i]) for i in range(rank(B))))
    # B is a single mode s:d; walk A's coalesced modes, taking every d-th index, s of them.
    if B.stride == 0:
        return Layout(B.shape, 0)
    modes = _flat_modes(coalesce(A))
    rest_shape, rest_stride = B.shape, B.stride
    out = []
    for s, d in modes[:-1]:
        if s % rest_stride and rest_stride % s:
            _err(f"composition {A} o {B}: stride {rest_stride} does not divide mode {s}:{d} (or vice versa)")
        new_shape = min(max(1, s // rest_stride), rest_shape)
        if new_shape != 1:
            out.append((new_shape, rest_stride * d))
        if rest_shape % new_shape:
            _err(f"composition {A} o {B}: shape {rest_shape} does not divide by {new_shape}")
        rest_shape //= new_shape
        rest_stride = _ceil_div(rest_stride, s)
    if rest_shape != 1 or not out:
        out.append((rest_shape, rest_stride * modes[-1][1]))
    return _from_modes(out)


def complement(L, cotarget=None):
    """The layout of the indices ``L`` does not reach, up to ``cotarget`` (CuTe ``complement``):
    ``make_layout(L, complement(L, M))`` covers [0, M) once when L is injective."""
    if cotarget is None:
        cotarget = cosize(L)
    modes = sorted(((s, d) for s, d in _flat_modes(L) if d != 0 and s != 1), key=lambda m: (m[1], m[0]))
    out, cur = [], 1
    for s, d in modes:
        if cur > s * d:
            _err(f"complement of {L}: modes overlap (the layout is not injective)")
        out.append((d // cur, cur))  # floor, as CuTe does: a stride that does not divide leaves holes
        cur = s * d
    out.append((_ceil_div(cotarget, cur), cur))
    return coalesce(_from_modes(out))


def right_inverse(L):
    """R with ``L(R(i)) == i`` for i in [0, size(R)) (CuTe ``right_inverse``)."""
    modes = sorted((d, s, p) for (s, d), p in zip(_flat_modes(L), _flat_prefix(L)) if s != 1)
    out, cur = [], 1
    for d, s, p in modes:
        if d != cur:
            break
        out.append((s, p))
        cur = s * d
    return coalesce(_from_modes(out)) if out else Layout(1, 0)


def left_inverse(L):
    """R with ``R(L(i)) == i`` for i in [0, size(L)), L injective (CuTe ``left_inverse``)."""
    return right_inverse(make_layout(L, complement(L)))


def _flat_prefix(L):
    sh = flatten(L.shape)
    sh = sh if is_tuple(sh) else (sh,)
    out, p = [], 1
    for s in sh:
        out.append(p)
        p *= s
    return out


def logical_divide(A, tiler):
    """Split ``A`` into (tile, rest): ``composition(A, make_layout(tiler, complement(tiler, size(A))))``;
    a tuple tiler divides mode by mode (CuTe ``logical_divide``)."""
    if is_tuple(tiler):
        if len(tiler) > rank(A):
            _err(f"tiler of rank {len(tiler)} is deeper than layout {A}")
        return make_layout(*(logical_divide(A[i], tiler[i]) for i in range(len(tiler))),
                           *(A[i] for i in range(len(tiler), rank(A))))
    if tiler is None:
        return A
    if not isinstance(tiler, Layout):
        tiler = Layout(tiler, 1)
    return composition(A, make_layout(tiler, complement(tiler, size(A))))


def _hier_unzip(split, A, tiler):
    """Apply ``split`` (a rank-2 result) mode by mode and gather: ((first parts...), (second parts..., rest))."""
    if not is_tuple(tiler):
        return split(A, tiler)
    if len(tiler) > rank(A):
        _err(f"tiler of rank {len(tiler)} is deeper than layout {A}")
    parts = [_hier_unzip(split, A[i], tiler[i]) for i in range(len(tiler))]
    return make_layout(make_layout(*(p[0] for p in parts)),
                       make_layout(*(p[1] for p in parts), *(A[i] for i in range(len(tiler), rank(A)))))


def zipped_product(A, tiler):
    """``logical_product`` mode by mode, gathered: ((A modes...), (product modes...))."""
    return _hier_unzip(logical_product, A, tiler)


def tiled_product(A, tiler):
    """``zipped_product`` with the second mode unpacked."""
    Z = zipped_product(A, tiler)
    return make_layout(Z[0], *Z[1])


def zipped_divide(A, tiler):
    """``logical_divide`` with the tile modes gathered first: ((tile...), (rest...))."""
    return _hier_unzip(logical_divide, A, tiler)


def tiled_divide(A, tiler):
    """``zipped_divide`` with the rest modes unpacked: ((tile...), rest0, rest1, ...)."""
    Z = zipped_divide(A, tiler)
    return make_layout(Z[0], *Z[1])


def logical_product(A, B):
    """``make_layout(A, composition(complement(A, size(A)*cosize(B)), B))`` (CuTe ``logical_product``)."""
    if is_tuple(B):
        return make_layout(*(logical_product(A[i], B[i]) for i in range(len(B))),
                           *(A[i] for i in range(len(B), rank(A))))
    if not isinstance(B, Layout):
        B = Layout(B, 1)
    return make_layout(A, composition(complement(A, size(A) * cosize(B)), B))


def blocked_product(A, B):
    """Mode-wise (A_i, B_i) pairs: B repeats A as blocks (CuTe ``blocked_product``, rank-matched)."""
    r = max(rank(A), rank(B))
    A, B = _append(A, r), _append(B, r)
    P = logical_product(A, B)
    return make_layout(*(make_layout(P[0][i], P[1][i]) for i in range(r)))


def raked_product(A, B):
    """Mode-wise (B_i, A_i) pairs: A's elements interleaved (raked) across B (CuTe ``raked_product``)."""
    r = max(rank(A), rank(B))
    A, B = _append(A, r), _append(B, r)
    P = logical_product(A, B)
    return make_layout(*(make_layout(P[1][i], P[0][i]) for i in range(r)))


def _append(L, r):
    if rank(L) >= r:
        return L
    modes = [L[i] for i in range(rank(L))] + [Layout(1, 0)] * (r - rank(L))
    return make_layout(*modes)


def _lift_slice(c, t):
    if is_tuple(c):
        return _filter_slice(c, t)
    return (t,) if c is None else ()


def _filter_slice(c, t):
    if not is_tuple(t) or len(c) != len(t):
        _err(f"coordinate {_fmt_crd(c)} does not match shape {_fmt(t)}")
    out = ()
    for ci, ti in zip(c, t):
        out += _lift_slice(ci, ti)
    return out


def _fmt_crd(c):
    if is_tuple(c):
        return "(" + ",".join(_fmt_crd(e) for e in c) + ")"
    return "_" if c is None else str(c)


def slice_(crd, t):
    """Keep the parts of ``t`` paired with ``None`` (CuTe's ``_``) in ``crd`` (CuTe ``slice``)."""
    if is_tuple(crd):
        return _filter_slice(crd, t)
    return t if crd is None else ()


def slice_and_offset(crd, L):
    """Fix the coordinates given in ``crd`` (``None`` keeps a mode, like CuTe's ``_``): the layout of
    the kept modes and the index offset contributed by the fixed ones (CuTe ``slice_and_offset``)."""
    def zero_none(c):
        return tuple(zero_none(e) for e in c) if is_tuple(c) else (0 if c is None else c)
    if is_tuple(crd) and (not is_tuple(L.shape) or len(crd) != len(L.shape)):
        _err(f"coordinate {_fmt_crd(crd)} does not match shape {_fmt(L.shape)}")
    off = crd2idx(zero_none(crd), L.shape, L.stride)
    return Layout(slice_(crd, L.shape), slice_(crd, L.stride), static=L.static), off


def local_tile(L, tiler, coord):
    """The tile number ``coord`` of ``L`` cut into tiles of ``tiler`` (a shape tuple or layouts), as CuTe's
    ``local_tile``: ``zipped_divide(L, tiler)((_,...,_), coord)``. Returns (tile layout, offset): element
    c of the tile is at ``offset + tile(c)``. ``L`` may be a Layout or a shape (compact column-major)."""
    if not isinstance(L, Layout):
        L = Layout(L)
    if not is_tuple(tiler):
        tiler = (tiler,)
    tl = tuple(t if isinstance(t, Layout) else Layout(t, 1) for t in tiler)
    Z = zipped_divide(L, tl)
    coord = coord if is_tuple(coord) else (coord,)
    rest = rank(Z[1])
    if len(coord) > rest:
        _err(f"tile coordinate {coord} has more modes than the {rest} tile-grid modes")
    return slice_and_offset(((None,) * len(tl), tuple(coord) + (None,) * (rest - len(coord))), Z)


# ---- swizzles ------------------------------------------------------------------------------------

class Swizzle:
    """CuTe ``Swizzle<B,M,S>``: XOR the B bits at [M+S, M+S+B) of an offset into the bits at [M, M+B)
    (for negative S, the bits at [M, M+B) into [M+S, M+S+B))."""

    def __init__(self, bits, base, shift):
        bits, base, shift = _index(bits), _index(base), _index(shift)
        if max(bits, base, abs(shift)) > 64:
            _err(f"Swizzle<{bits},{base},{shift}>: B, M and |S| are at most 64")
        if bits < 0 or base < 0 or abs(shift) < bits:
            _err(f"Swizzle<{bits},{base},{shift}>: needs B >= 0, M >= 0 and |S| >= B")
        self.bits, self.base, self.shift = bits, base, shift
        msk = (1 << bits) - 1
        self.yyy_mask = msk << (base + max(0, shift))
        self.zzz_mask = msk << (base - min(0, shift))

    def __call__(self, offset):
        if self.shift >= 0:
            return offset ^ ((offset & self.yyy_mask) >> self.shift)
        return offset ^ ((offset & self.yyy_mask) << -self.shift)

    def size(self):
        return 1 << (self.bits + self.base + abs(self.shift))

    def cosize(self):
        return self.size()

    def __eq__(self, other):
        return isinstance(other, Swizzle) and (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self):
        return hash(("Swizzle", self.bits, self.base, self.shift))

    def __str__(self):
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    __repr__ = __str__


class ComposedLayout:
    """``outer o (offset + inner)``: CuTe's ComposedLayout, as made by ``composition(Swizzle, Layout)``."""

    def __init__(self, outer, offset, inner):
        self.outer, self.offset, self.inner = outer, offset, inner
        self.shape = inner.shape

    def __call__(self, *crd):
        return self.outer(self.offset + self.inner(*crd))

    def __str__(self):
        return f"{self.outer} o {self.offset} o {self.inner}"

    __repr__ = __str__

    def size(self):
        return size(self.inner)
