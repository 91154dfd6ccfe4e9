"""Gluon (Triton's low-level dialect) layouts without Triton: who owns which element, Triton's linear
layouts, shared-memory swizzles and their bank conflicts, and the layout helpers of Gluon's examples.

    from emulator.gluon import BlockedLayout
    L = BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    L.to_linear([64, 64])     # {"register": [[0, 1], [0, 2], [0, 32], [16, 0], [32, 0]], "lane": ..., ...}
    L.owner([64, 64]).thread  # thread id (32 * warp + lane) holding each element

See docs/gluon.md. Checked against Triton 3.9's own linear layouts and against an H100 (mma v2/v3, blocked,
sliced and dot-operand layouts); Blackwell's tensor-memory layouts are modelled, not measured.
"""
from .layouts import (BlockedLayout, DistributedLayout, DistributedLinearLayout, DotOperandLayout,  # noqa: F401
                      NVMMADistributedLayout, NVMMASharedLayout, Owners, SharedLayout, SliceLayout,
                      SwizzledSharedLayout, parse_layout)
from .linear import GluonLayoutError  # noqa: F401
from .tmem import TensorMemoryLayout  # noqa: F401
from . import show as _show  # noqa: F401,E402 (layouts render as pictures in Jupyter)
