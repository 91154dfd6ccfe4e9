"""A CTA's timeline: warps' instructions, mbarrier phases and bulk copies along one step axis (the CTA's
issue count), as text or SVG. Built from the async unit of a launch with ``timeline=True``."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from ..errors import EmulatorError

_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"]


@dataclass
class Timeline:
    ctaid: tuple
    instrs: list          # (step, warp, pc, text, lanes)
    barriers: dict        # addr -> [(step, event, phase, pending, tx)]
    copies: list          # (kind, warp, lane, issued, done, info, text)
    steps: int

    @classmethod
    def from_unit(cls, unit, ctaid):
        if not unit.record:
            raise EmulatorError("timeline: launch with timeline=True to record one")
        instrs = [e[1:] for e in unit.events if e[0] == "instr"]
        bars = {}
        for b in list(unit.mbarriers.live.values()) + getattr(unit.mbarriers, "retired", []):
            bars[b.addr] = b.history
        for addr, hist in getattr(unit.mbarriers, "histories", {}).items():
            bars.setdefault(addr, hist)
        copies = [(c.kind, c.warp, c.lane, c.issued, c.done, c.info, c.text) for c in unit.finished + unit.pending]
        return cls(tuple(ctaid), instrs, bars, copies, unit.mbarriers.step)

    def warps(self):
        return sorted({i[1] for i in self.instrs})

    def text(self):
        """One line per mbarrier event and copy, in step order."""
        ev = []
        for addr, hist in self.barriers.items():
            for step, e, ph, pend, tx in hist:
                ev.append((step, f"mbarrier {addr:#x}: {e:<14} phase {ph} pending {pend} tx {tx}"))
        for kind, w, lane, a, b, info, _ in self.copies:
            ev.append((a, f"warp {w} issues {kind} {info}"))
            ev.append((b, f"         {kind} done {info}"))
        return "\n".join(f"{s:>6} {t}" for s, t in sorted(ev, key=lambda x: x[0]))

    def svg(self, width=1400, title=None):
        warps = self.warps()
        bars = sorted(self.barriers)
        lane_h, top, left = 22, 40, 150
        rows = len(warps) + len(bars) + 1
        height = top + rows * lane_h + 40
        n = max(self.steps, 1)
        x = lambda s: left + (width - left - 20) * s / n  # noqa: E731
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'font-family="monospace" font-size="11">', f'<rect width="{width}" height="{height}" fill="white"/>']
        out.append(f'<text x="10" y="20" font-size="14">{escape(title or f"CTA {self.ctaid} timeline (step = one warp instruction)")}</text>')
        y = top
        for i, w in enumerate(warps):
            out.append(f'<text x="10" y="{y + 15}">warp {w}</text>')
            for step, ww, pc, text, lanes in self.instrs:
                if ww == w:
                    col = "#e15759" if "mbarrier" in text and "wait" in text else (
                        "#59a14f" if "arrive" in text else ("#f28e2b" if "cp.async.bulk" in text else "#bbbbbb"))
                    out.append(f'<rect x="{x(step - 1):.1f}" y="{y + 3}" width="{max(x(step) - x(step - 1), 0.6):.1f}" '
                               f'height="{lane_h - 6}" fill="{col}"><title>{escape(f"step {step} pc {pc}: {text}")}'
                               f'</title></rect>')
            y += lane_h
        for k, a in enumerate(bars):
            hist = self.barriers[a]
            out.append(f'<text x="10" y="{y + 15}">mbar {a:#x}</text>')
            prev_s, prev_ph = 0, 0
            for step, e, ph, pend, tx in hist + [(n, "end", None, 0, 0)]:
                if e in ("phase", "end", "inval"):
                    col = _COLORS[k % len(_COLORS)]
                    op = 0.35 if prev_ph % 2 else 0.8
                    out.append(f'<rect x="{x(prev_s):.1f}" y="{y + 3}" width="{max(x(step) - x(prev_s), 0.6):.1f}" '
                               f'height="{lane_h - 6}" fill="{col}" fill-opacity="{op}"><title>phase {prev_ph}'
                               f'</title></rect>')
                    if e == "phase":
                        out.append(f'<text x="{x(step) + 2:.1f}" y="{y + 14}" font-size="9">{ph}</text>')
                    prev_s, prev_ph = step, ph if ph is not None else prev_ph
                if e.startswith("expect_tx") or e.startswith("complete_tx"):
                    out.append(f'<circle cx="{x(step):.1f}" cy="{y + lane_h / 2}" r="2" fill="black"><title>'
                               f'{escape(f"step {step}: {e}, tx {tx}")}</title></circle>')
            y += lane_h
        out.append(f'<text x="10" y="{y + 15}">copies</text>')
        for kind, w, lane, a, b, info, text in self.copies:
            b = b if b >= 0 else n
            out.append(f'<rect x="{x(a):.1f}" y="{y + 5}" width="{max(x(b) - x(a), 1):.1f}" height="{lane_h - 10}" '
                       f'fill="#f28e2b" fill-opacity="0.6" stroke="#333" stroke-width="0.3"><title>'
                       f'{escape(f"{kind} issued at step {a} by warp {w}, done at {b}: {info}")}</title></rect>')
        out.append("</svg>")
        return "\n".join(out)

    def save(self, path):
        data = self.svg()
        if str(path).endswith(".html"):
            data = f"<!doctype html><html><body>{data}<pre>{escape(self.text())}</pre></body></html>"
        with open(path, "w") as f:
            f.write(data)
