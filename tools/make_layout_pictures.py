"""Regenerate the pictures of docs/layouts.md (run from the repository root):

    python tools/make_layout_pictures.py

tests/test_show.py checks that the committed files equal what this writes.
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from emulator.layouts import show, swizzle  # noqa: E402
from emulator import gluon  # noqa: E402
from emulator.gluon import show as gshow  # noqa: E402
from emulator.gluon.convert import explain_convert  # noqa: E402
from emulator.gluon.utils import get_mma_reg_layout  # noqa: E402

LANE = np.arange(32)
# ldmatrix.x4 loading the A fragment of m16n8k16 from a row-major 16x16 f16 tile (32-byte rows):
# lane l points at row l % 16, columns 8 * (l // 16) .. +7.
A_ROWS = (LANE % 16) * 32 + (LANE // 16) * 16


def pictures():
    """File name -> (SVG text, plain text) for every picture in docs/."""
    figs = {
        "m16n8k16_ownership": show.mma_figure("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
        "ldmatrix_x4": show.ldmatrix_view("ldmatrix.sync.aligned.m8n8.x4.shared.b16", A_ROWS),
        "swizzle_conflicts": swizzle.conflict_figure(),
        "nvmma_128B": swizzle.tile_view(swizzle.nvmma(128)),
        "threadblock_swizzle": swizzle.threadblock_view(4, (8, 8)),
        "wgmma_m64n16_D": show.mma_view("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "D"),
        "wgmma_desc_K_SW128": show.descriptor_view((128, False), rows=16),
        "wgmma_desc_MN_SW64": show.descriptor_view((64, True), rows=64),
        # docs/gluon.md
        "gluon_blocked": gshow.owner_view(gluon.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0]), [16, 32]),
        "gluon_mma_v2": gshow.owner_view(gluon.NVMMADistributedLayout([2, 0], [2, 2], [16, 8]), [32, 16]),
        "gluon_mma_v3": gshow.owner_view(gluon.NVMMADistributedLayout([3, 0], [4, 1], [16, 8, 16]), [64, 8]),
        "gluon_tmem_reg": gshow.owner_view(get_mma_reg_layout([128, 4], 4), [128, 4]),
        "gluon_nvmma_shared": show.Figure([gshow.shared_view(gluon.NVMMASharedLayout(w, 16), [8, 64])
                                           for w in (0, 32, 64, 128)], across=2),
        "gluon_convert": explain_convert(gluon.NVMMADistributedLayout([2, 0], [2, 2], [16, 8]),
                                         gluon.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]), [16, 32]).view(),
    }
    return {name: (f.svg(), f.text()) for name, f in figs.items()}


def main():
    out = os.path.join(ROOT, "docs")
    os.makedirs(out, exist_ok=True)
    for name, (svg, _) in pictures().items():
        with open(os.path.join(out, name + ".svg"), "w") as f:
            f.write(svg)
        print("wrote", os.path.join("docs", name + ".svg"))


if __name__ == "__main__":
    main()
