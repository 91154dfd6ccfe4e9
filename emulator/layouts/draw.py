"""Drawing primitives shared by every picture: colours for lanes and banks, :class:`Grid` (a titled table of
labelled cells, as text or SVG) and :class:`Figure` (several grids side by side)."""
import colorsys
import html

import numpy as np

# ---- colours ---------------------------------------------------------------------------------------

def lane_colour(lane):
    """A light fill for ``lane``: lanes of one quad (lane >> 2) get neighbouring hues, quads spread
    around the wheel, so the PTX 'groupID / threadID_in_group' structure shows."""
    if lane < 0:
        return "#ffffff"
    g, t = lane >> 2, lane & 3
    hue = ((g * 3) % 8) / 8 + t * 0.028
    light = 0.80 if t % 2 == 0 else 0.70
    r, gg, b = colorsys.hls_to_rgb(hue % 1.0, light, 0.65)
    return "#%02x%02x%02x" % (int(r * 255), int(gg * 255), int(b * 255))


# one hue per warp (warps 8 apart repeat it, darker), lanes shaded inside it: multi-warp pictures
WARP_HUES = (0.58, 0.08, 0.33, 0.0, 0.76, 0.14, 0.47, 0.88)


def warp_colour(thread):
    """A light fill for ``thread`` (32 * warp + lane) of a multi-warp picture: each warp its own hue (see
    :func:`warp_legend`), its lanes lighter or darker within it."""
    if thread < 0:
        return "#ffffff"
    w, l = divmod(int(thread), 32)
    hue = WARP_HUES[w % 8] + ((l >> 2) - 3.5) * 0.008
    light = 0.86 - 0.22 * ((l & 7) / 7) - 0.08 * ((w // 8) % 2)
    r, g, b = colorsys.hls_to_rgb(hue % 1.0, light, 0.62)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


def warp_legend(nwarps):
    """[(colour, "warp w")] for a picture's legend: each warp's middle shade."""
    return [(warp_colour(32 * w + 19), f"warp {w}") for w in range(nwarps)]


def bank_colour(bank):
    """A light fill for one of the 32 shared-memory banks."""
    if bank < 0:
        return "#ffffff"
    r, g, b = colorsys.hls_to_rgb((bank * 7 % 32) / 32, 0.78, 0.55)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


# ---- the picture objects -------------------------------------------------------------------------

class Grid:
    """A titled table of labelled cells; ``keys`` (an int per cell, -1 for none) pick the colours."""

    def __init__(self, title, labels, keys, row_names=None, col_names=None, colour=lane_colour, note="",
                 legend=None):
        self.title = title
        self.labels = [list(r) for r in labels]
        self.keys = np.asarray(keys)
        rows, cols = self.keys.shape
        self.row_names = list(row_names) if row_names is not None else [str(i) for i in range(rows)]
        self.col_names = list(col_names) if col_names is not None else [str(j) for j in range(cols)]
        self.colour = colour
        self.note = note
        self.legend = list(legend or [])        # [(fill colour, text)]: swatches under the grid

    @property
    def shape(self):
        return self.keys.shape

    def cell(self, r, c):
        return self.labels[r][c]

    def text(self):
        rows, cols = self.shape
        w = max([len(s) for row in self.labels for s in row] + [len(s) for s in self.col_names]) + 1
        rw = max(len(s) for s in self.row_names) + 1
        lines = [self.title]
        lines.append(" " * rw + " " + "".join(s.ljust(w) for s in self.col_names).rstrip())
        for r in range(rows):
            lines.append(self.row_names[r].rjust(rw) + " " + "".join(s.ljust(w) for s in self.labels[r]).rstrip())
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    __str__ = text

    def _svg_body(self, x0, y0):
        rows, cols = self.shape
        cw = max(46, 7 * max([len(s) for row in self.labels for s in row] + [1]) + 10,
                 6 * max(len(s) for s in self.col_names) + 8)
        ch, rh = 22, 6 * max(len(s) for s in self.row_names) + 10
        out = [f'<text x="{x0}" y="{y0 + 14}" font-size="13" font-weight="bold">{html.escape(self.title)}</text>']
        gy = y0 + 24
        for j in range(cols):
            out.append(f'<text x="{x0 + rh + j * cw + cw / 2}" y="{gy + 12}" font-size="10" text-anchor="middle" '
                       f'fill="#555">{html.escape(self.col_names[j])}</text>')
        gy += 16
        for r in range(rows):
            out.append(f'<text x="{x0 + rh - 4}" y="{gy + r * ch + 15}" font-size="10" text-anchor="end" '
                       f'fill="#555">{html.escape(self.row_names[r])}</text>')
            for j in range(cols):
                k = int(self.keys[r, j])
                x, y = x0 + rh + j * cw, gy + r * ch
                out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{self.colour(k)}" '
                           f'stroke="#888" stroke-width="0.5"><title>{html.escape(self.labels[r][j])}</title></rect>')
                out.append(f'<text x="{x + cw / 2}" y="{y + 15}" font-size="11" text-anchor="middle" '
                           f'font-family="monospace">{html.escape(self.labels[r][j])}</text>')
        height = gy - y0 + rows * ch + 8
        width = max(rh + cols * cw, int(7.6 * len(self.title)))
        if self.note:
            out.append(f'<text x="{x0}" y="{y0 + height + 8}" font-size="11" fill="#333">{html.escape(self.note)}</text>')
            height += 18
            width = max(width, int(6.2 * len(self.note)))
        if self.legend:
            lx = x0
            for fill, text in self.legend:
                out.append(f'<rect x="{lx}" y="{y0 + height + 2}" width="14" height="14" fill="{fill}" '
                           f'stroke="#888" stroke-width="0.5"/>')
                out.append(f'<text x="{lx + 18}" y="{y0 + height + 13}" font-size="11">{html.escape(text)}</text>')
                lx += 24 + 7 * len(text)
            height += 22
            width = max(width, lx - x0)
        return out, width, height

    def svg(self):
        return Figure([self]).svg()

    def _repr_svg_(self):
        return self.svg()


class Figure:
    """Several grids, side by side (``across`` per row of panels) in SVG, one after another in text."""

    def __init__(self, panels, title="", across=None, max_width=None):
        self.panels, self.title = list(panels), title
        self.across = across or len(self.panels)
        self.max_width = max_width       # wider pictures are scaled down to this many pixels (viewBox kept)

    def text(self):
        parts = ([self.title, ""] if self.title else []) + ["\n\n".join(p.text() for p in self.panels)]
        return "\n".join(parts)

    __str__ = text

    def svg(self):
        body, x, y, row_h, width = [], 10, 10, 0, 0
        if self.title:
            body.append(f'<text x="10" y="24" font-size="15" font-weight="bold">{html.escape(self.title)}</text>')
            y += 28
        for i, p in enumerate(self.panels):
            if i and i % self.across == 0:
                x, y, row_h = 10, y + row_h + 16, 0
            parts, w, h = p._svg_body(x, y)
            body += parts
            x += w + 24
            width, row_h = max(width, x), max(row_h, h)
        height = y + row_h + 10
        sw, sh = width, height
        if self.max_width and width > self.max_width:
            sw, sh = self.max_width, int(height * self.max_width / width)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{sw}" height="{sh}" '
                f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")

    def _repr_svg_(self):
        return self.svg()
