"""The bank-conflict counts of ``banks.counts`` in numba (about 10x faster than ``banks.analyze``; the tests
prove the two equal). Apart from ``banks`` so that ``import emulator`` does not load numba."""
import numba
import numpy as np

from ..numerics import jitcache

jitcache.prepare()          # before any cached function of the package loads


@numba.njit(cache=True)
def counts_kernel(addrs, mask, width, op, nmat):
    """(wavefronts, conflicts) by the same rules as :func:`analyze` (op: index into OPS)."""
    if op == 5:                                   # cp.async.cg: bypass
        return 0, 0
    merge = not (op == 4 or op == 6)              # cp.async.ca, atom: no merging
    if op == 2 or op == 3:                        # ldmatrix/stmatrix: one phase per matrix
        n, width, nlanes = 8, 16, 8 * nmat
    else:
        n = 32 if width <= 4 else (16 if width == 8 else 8)
        nlanes = 32
        if op == 0 and width >= 8:                # paired loads
            for m in (1, 2):
                ok = True
                for l in range(32):
                    if mask[l] and mask[l ^ m] and addrs[l] != addrs[l ^ m]:
                        ok = False
                        break
                if ok:
                    n *= 2
                    break
    words = np.empty(32 * 4, np.int64)
    total, phases = 0, 0
    for s in range(0, nlanes, n):
        cnt = 0
        for l in range(s, s + n):
            if mask[l]:
                for w in range(addrs[l] // 4, (addrs[l] + width - 1) // 4 + 1):
                    words[cnt] = w
                    cnt += 1
        if cnt == 0:
            continue
        phases += 1
        best = 0
        for b in range(32):
            k = 0
            for i in range(cnt):
                if words[i] % 32 == b:
                    if merge:
                        dup = False
                        for j in range(i):
                            if words[j] == words[i]:
                                dup = True
                                break
                        if dup:
                            continue
                    k += 1
            if k > best:
                best = k
        total += best
    if op == 4 and phases == 0:                   # an empty cp.async still costs one, conflict-free
        return 1, 0
    return total, total - phases
