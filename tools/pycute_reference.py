"""Compute reference results with pycute (the Python CuTe shipped in the ``nvidia-cutlass`` wheel) for
a few hundred deterministic layouts, and write them to ``tests/data/pycute/reference.json``.

pycute is only needed here, never at run time or in CI: ``tests/test_cute.py`` replays the JSON against
``emulator.cute``. To regenerate:

    pip download nvidia-cutlass --no-deps -d /tmp/w && unzip -q /tmp/w/*.whl 'pycute/*' -d /tmp/w
    PYTHONPATH=/tmp/w python tools/pycute_reference.py
"""
import json
import os
import random

import pycute as cute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "pycute", "reference.json")


def _fmt(t):
    return "(" + ",".join(_fmt(e) for e in t) + ")" if isinstance(t, tuple) else str(t)


def text(L):
    """CuTe's ``shape:stride`` as C++ CuTe prints it (no spaces; a 1-tuple is ``(8)``)."""
    return f"{_fmt(L.shape)}:{_fmt(L.stride)}"


def rand_shape(rng, depth=2, maxmodes=3):
    n = rng.randint(1, maxmodes)
    modes = []
    for _ in range(n):
        if depth > 1 and rng.random() < 0.3:
            modes.append(rand_shape(rng, depth - 1, 2))
        else:
            modes.append(rng.choice([1, 2, 2, 3, 4, 4, 6, 8]))
    return modes[0] if n == 1 and not isinstance(modes[0], tuple) and rng.random() < 0.3 else tuple(modes)


def rand_layout(rng, compact_bias=0.5):
    sh = rand_shape(rng)
    flat = cute.flatten(sh) if isinstance(sh, tuple) else (sh,)
    if rng.random() < compact_bias:  # a permuted compact layout: injective, complementable
        order = list(range(len(flat)))
        rng.shuffle(order)
        strides, cur = [0] * len(flat), 1
        for i in order:
            strides[i] = cur
            cur *= flat[i]
            if rng.random() < 0.2:
                cur *= 2  # leave a gap
    else:
        strides = [rng.choice([0, 1, 2, 3, 4, 8, 16]) for _ in flat]
    it = iter(strides)

    def rebuild(s):
        return tuple(rebuild(e) for e in s) if isinstance(s, tuple) else next(it)
    return cute.Layout(sh, rebuild(sh))


def _leaves(t):
    return cute.flatten(t) if isinstance(t, tuple) else (t,)


def _injective(L):
    v = [L(i) for i in range(cute.size(L))]
    return len(set(v)) == len(v)


def _crd_json(c):
    return [_crd_json(e) for e in c] if isinstance(c, tuple) else c


def values(L):
    return [L(i) for i in range(cute.size(L))]


def main():
    rng = random.Random(2024)
    cases = []

    def add(op, args, result, **extra):
        cases.append({"op": op, "args": args, "result": result, **extra})

    # Evaluation, coalesce, complement, inverses of single layouts.
    n_layouts = 0
    for _ in range(300):
        L = rand_layout(rng)
        n_layouts += 1
        add("eval", [text(L)], values(L))
        C = cute.coalesce(L)
        assert values(C) == values(L)
        add("coalesce", [text(L)], text(C))
        crds = [cute.idx2crd(i, L.shape) for i in range(cute.size(L))]
        add("idx2crd", [text(L)], [list(c) if isinstance(c, tuple) else c for c in crds])
        if 0 not in cute.flatten((L.stride,)) and len(set(values(L))) == cute.size(L):
            M = cute.cosize(L) * rng.choice([1, 2])
            try:
                K = cute.complement(L, M)
            except Exception:
                K = None
            # Keep only the answers that have complement's defining property (pycute does not check
            # CuTe's divisibility precondition and can return a zero extent otherwise).
            if K is not None and 0 not in _leaves(K.shape) and _injective(cute.make_layout(L, K)):
                add("complement", [text(L), M], text(K))
            R = cute.right_inverse(L)
            if all(L(R(i)) == i for i in range(cute.size(R))):
                add("right_inverse", [text(L)], text(R))
            try:
                Li = cute.left_inverse(L)
            except Exception:
                Li = None
            if Li is not None and all(Li(L(i)) == i for i in range(cute.size(L))):
                add("left_inverse", [text(L)], text(Li))

    # Composition: A o B, kept only where pycute's answer satisfies the defining property.
    n_comp = 0
    while n_comp < 300:
        A = rand_layout(rng, 0.7)
        B = rand_layout(rng, 0.7)
        if cute.cosize(B) > cute.size(A) or cute.size(B) == 0:
            continue
        try:
            R = cute.composition(A, B)
        except Exception:
            continue
        if cute.size(R) != cute.size(B) or any(R(i) != A(B(i)) for i in range(cute.size(B))):
            continue
        add("composition", [text(A), text(B)], text(R))
        n_comp += 1

    # Divides and products with layout tilers and tuple tilers.
    n_div = 0
    while n_div < 150:
        A = rand_layout(rng, 1.0)
        if isinstance(A.shape, tuple) and len(A.shape) >= 2 and rng.random() < 0.5:
            tiler = tuple(cute.Layout(rng.choice([d for d in (1, 2, 4) if cute.size(A[i]) % d == 0] or [1]), 1)
                          for i in range(2))
            targs = [text(t) for t in tiler]
            try:
                D = cute.logical_divide(A, tiler)
                Z = cute.zipped_divide(A, tiler)
            except Exception:
                continue
            add("logical_divide_tuple", [text(A), targs], text(D))
            add("zipped_divide_tuple", [text(A), targs], text(Z))
        else:
            n = cute.size(A)
            divs = [d for d in (1, 2, 3, 4, 8) if n % d == 0]
            T = cute.Layout(rng.choice(divs), rng.choice([1, 1, 2]) if n >= 2 else 1)
            try:
                D = cute.logical_divide(A, T)
            except Exception:
                continue
            add("logical_divide", [text(A), text(T)], text(D))
        n_div += 1
    n_prod = 0
    while n_prod < 100:
        A = rand_layout(rng, 1.0)
        B = rand_layout(rng, 1.0)
        if cute.size(A) * cute.cosize(B) > 4096:
            continue
        try:
            P = cute.logical_product(A, B)
        except Exception:
            continue
        if 0 in _leaves(P.shape) or cute.size(P) != cute.size(A) * cute.size(B):
            continue
        add("logical_product", [text(A), text(B)], text(P))
        n_prod += 1

    # Hierarchical divides and products (tiled_divide, zipped_product, tiled_product) with tuple tilers.
    n_tiled = 0
    while n_tiled < 60:
        A = rand_layout(rng, 1.0)
        if not (isinstance(A.shape, tuple) and len(A.shape) >= 2):
            continue
        tiler = tuple(cute.Layout(rng.choice([d for d in (1, 2, 4) if cute.size(A[i]) % d == 0] or [1]), 1)
                      for i in range(2))
        B = tuple(cute.Layout(rng.choice([1, 2, 3]), 1) for _ in range(2))
        try:
            T = cute.tiled_divide(A, tiler)
            ZP = cute.zipped_product(A, B)
            TP = cute.tiled_product(A, B)
        except Exception:
            continue
        want = cute.size(A) * cute.size(B[0]) * cute.size(B[1])
        if cute.size(ZP) != want or 0 in _leaves(ZP.shape):
            continue  # pycute does not check CuTe's divisibility rule and drops elements
        add("tiled_divide_tuple", [text(A), [text(t) for t in tiler]], text(T))
        add("zipped_product_tuple", [text(A), [text(b) for b in B]], text(ZP))
        add("tiled_product_tuple", [text(A), [text(b) for b in B]], text(TP))
        n_tiled += 1

    # Slicing with '_' (None): the kept sub-layout and the offset of the fixed coordinates.
    n_slice = 0
    while n_slice < 100:
        L = rand_layout(rng)
        if not isinstance(L.shape, tuple):
            continue

        def rand_crd(sh):
            if isinstance(sh, tuple):
                return tuple(rand_crd(e) for e in sh)
            return None if rng.random() < 0.5 else rng.randrange(sh)
        crd = rand_crd(L.shape)
        if not cute.has_none(crd):
            continue
        S, off = cute.slice_and_offset(crd, L)
        add("slice_and_offset", [text(L), _crd_json(crd)], [text(S), off])
        n_slice += 1

    # Swizzles over their whole domain.
    for b in range(0, 4):
        for m in range(0, 5):
            for s in range(max(b, 1), 5):
                sw = cute.Swizzle(b, m, s)
                add("swizzle", [b, m, s], [sw(i) for i in range(1 << (b + m + s))])

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"generator": "pycute from nvidia-cutlass " + getattr(cute, "__version__", "4.2.0.0"),
                   "layouts": n_layouts, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    counts = {}
    for c in cases:
        counts[c["op"]] = counts.get(c["op"], 0) + 1
    print(f"wrote {len(cases)} cases to {OUT}: {counts}")


if __name__ == "__main__":
    main()
