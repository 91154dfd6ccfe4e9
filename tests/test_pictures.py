"""Pictures: large wgmma layouts split and scaled, a colour per warp with a legend, ldmatrix defaults that
never overlap, and the Jupyter renderings (_repr_svg_ / _repr_html_) of results, timelines, layouts and
profiles."""
import re

import numpy as np
import pytest

from emulator.cli.show import default_row_addresses
from emulator.layouts.draw import WARP_HUES, warp_colour, warp_legend
from emulator.layouts.show import mma_figure, mma_view


def _width(svg):
    return int(re.match(r'<svg[^>]* width="(\d+)"', svg).group(1))


def test_wgmma_m64n128_is_split_scaled_and_coloured_by_warp():
    fig = mma_figure("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16")
    svg = fig.svg()
    assert _width(svg) <= 1800                                   # it was 8510 px
    d = [p for p in fig.panels if p.title.startswith("operand D")]
    assert [p.shape for p in d] == [(64, 32)] * 4 and "columns 96..127 of 128" in d[-1].title
    fills = {}
    for p in d:
        for r in range(64):
            fills.setdefault(r // 16, set()).add(p.colour(int(p.keys[r, 0])))
    assert all(not (fills[a] & fills[b]) for a in range(4) for b in range(a + 1, 4))  # warp w owns rows 16w..
    assert "warp 3" in svg and svg.count("warp ") >= 4 * 5         # the legend under every panel
    assert mma_view("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", "D").legend == warp_legend(4)


def test_warp_colours_are_distinct():
    cols = {w: {warp_colour(32 * w + l) for l in range(32)} for w in range(8)}
    assert all(not (cols[a] & cols[b]) for a in range(8) for b in range(a + 1, 8))
    assert len(WARP_HUES) == 8 and warp_colour(-1) == "#ffffff"


@pytest.mark.parametrize("instr", ["ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
                                   "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                   "stmatrix.sync.aligned.m8n8.x4.shared.b16"])
@pytest.mark.parametrize("stride", [16, 32, 48, 64, 80, 128, 256])
def test_cli_ldmatrix_rows_never_overlap(instr, stride):
    nmat = int(instr.split(".x")[1][0])
    a = default_row_addresses(instr, stride)[:8 * nmat]
    bytes_ = np.concatenate([np.arange(x, x + 16) for x in a])
    assert np.unique(bytes_).size == bytes_.size


def test_cli_ldmatrix_rejects_a_stride_below_16():
    from emulator.errors import OperandError
    with pytest.raises(OperandError):
        default_row_addresses("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 8)


def test_jupyter_renderings():
    import io
    from emulator import GlobalMemory, load_ptx
    from emulator.cute import Layout
    from emulator.gluon import BlockedLayout, NVMMASharedLayout
    text = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
            " .reg .b64 %rd<2>; .reg .b32 %r<2>;\n ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n"
            " st.global.u32 [%rd1], %r1;\n ret;\n}\n")
    g = GlobalMemory()
    p = g.upload(np.zeros(4, np.uint32))
    res = load_ptx(text).launch("k", 1, 32, [p], gmem=g, profile=True, timeline=True)
    html = res._repr_html_()
    assert "<table" in html and "warp-instructions" in html and "profile of k" in html
    assert res.timeline()._repr_svg_().startswith("<svg")
    assert res.profile._repr_html_().startswith("<div")
    assert BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])._repr_svg_().startswith("<svg")
    assert "warp 3" in BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])._repr_svg_()
    assert NVMMASharedLayout(128, 16)._repr_svg_().startswith("<svg")
    assert Layout.parse("(8,8):(8,1)")._repr_svg_().startswith("<svg")
    assert Layout.parse("(2,2,2):(4,2,1)")._repr_svg_() is None         # rank 3: the text repr
