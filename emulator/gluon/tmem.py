"""Blackwell tensor memory (TMEM) as Gluon lays tensors out in it. MODELLED, NOT MEASURED.

Nothing in this module was run on Blackwell silicon: there is none here (the measured machine is an H100,
which has no tensor memory). It follows the published semantics (PTX ISA, "Tensor Memory" and
"tcgen05.ld/st" data-path layouts) and Triton 3.9's ``TensorMemoryLayout`` linear layouts, which the tests
compare against Triton's own answers (``tests/data/gluon/triton_layouts.json``).

Tensor memory is 128 *lanes* (rows) x 512 *columns* of 32-bit cells per CTA. Warp ``w`` of a warpgroup can
only reach lanes ``32 * (w % 4)`` .. ``32 * (w % 4) + 31`` (its *sub-partition*). A ``tcgen05.mma`` with
M = 128 writes its accumulator row ``m`` to lane ``m``, column ``n`` to column ``n``; with M = 64 it uses
lanes 0-15 of each sub-partition (rows ``16 * s + i`` in lane ``32 * s + i``), and Gluon puts a second
64-row block (or, without one, the next N block) in lanes 16-31.
"""
from .linear import ByRepr, as_int, as_ints, check_shape, fail, log2


class TensorMemoryLayout(ByRepr):
    """``TensorMemoryLayout(block, col_stride)`` (``gluon.language.nvidia.blackwell``): a tensor in tensor
    memory, cut into ``block = (M, N)`` accumulator blocks (M = 64 or 128). ``col_stride``: 32-bit columns
    between neighbouring elements of a row (1: packed; ``32 // bits``: one element per 32-bit column).

    ``to_linear(shape)`` is Triton's ``{"row": [...], "col": [...]}``: bit i of the TMEM lane (``row``) or of
    the column slot (``col``) -> tensor coordinate. Modelled from published semantics, not measured."""

    def __init__(self, block, col_stride=1, cga_layout=(), two_ctas=False, fp4_padded=False, unpacked=None):
        self.block = as_ints(block, "block", "TensorMemoryLayout")
        if unpacked is not None:                     # older Triton spelling: unpacked=True means col_stride 32/bits
            fail(self, "unpacked= is the older spelling; pass col_stride (1 packed, 32 // bits unpacked)")
        self.col_stride = as_int(col_stride, "col_stride", "TensorMemoryLayout")
        if len(self.block) != 2 or self.block[0] not in (64, 128):
            fail(self, f"block must be (M, N) with M = 64 or 128 (tcgen05.mma's M per CTA), got {self.block}")
        log2(self.block[1], "block N")
        log2(self.col_stride, "col_stride")
        if cga_layout or two_ctas or fp4_padded:
            fail(self, "cga_layout, two_ctas and fp4_padded are not modelled")

    rank = 2

    def __repr__(self):
        return f"TensorMemoryLayout(block={tuple(self.block)}, col_stride={self.col_stride})"

    def to_linear(self, shape):
        shape = check_shape(self, shape, 2)
        M, N = self.block
        bm, bn = min(M, shape[0]), min(N, shape[1])
        m_blocks = [(bm << i, 0) for i in range(log2(shape[0] // bm))]
        n_blocks = [(0, bn << i) for i in range(log2(shape[1] // bn))]
        if M == 128:
            rows = [(1 << i, 0) for i in range(log2(bm))]
        else:
            if m_blocks:
                extra = m_blocks.pop(0)
            elif n_blocks:
                extra = n_blocks.pop(0)
            else:
                extra = (0, 0)
            rows = [(1 << i, 0) for i in range(min(4, log2(bm)))] + [extra] + \
                   [(1 << i, 0) for i in range(4, log2(bm))]
        cols = [(0, 0)] * log2(self.col_stride) + [(0, 1 << i) for i in range(log2(bn))] + m_blocks + n_blocks
        return {"row": [list(r) for r in rows], "col": [list(c) for c in cols]}

    def lanes(self, shape):
        """The TMEM lane (0..127) holding each element (the lowest, where lanes hold copies): an int array of
        ``shape``."""
        import numpy as np
        from .linear import apply
        b = self.to_linear(shape)
        nr, nc = len(b["row"]), len(b["col"])
        row, col = np.meshgrid(np.arange(1 << nr), np.arange(1 << nc), indexing="ij")
        c = apply(b, 2, ("row", "col"), {"row": row, "col": col})
        out = np.full(shape, 1 << 30, np.int64)
        np.minimum.at(out, (c[0].ravel(), c[1].ravel()), row.ravel())
        return out

    def upper_half_empty(self, shape):
        """M = 64 with a single block: TMEM lanes 16-31 of each sub-partition hold nothing of their own."""
        return not any(self.to_linear(shape)["row"][4])

    def columns(self, shape):
        """32-bit TMEM columns the tensor occupies."""
        return 1 << len(self.to_linear(shape)["col"])
