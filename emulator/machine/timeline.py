"""A CTA's timeline: warps' instructions, mbarrier phases and bulk copies along one step axis (the CTA's
issue count: one step per warp instruction), as text or SVG. Built from the async unit of a launch with
``timeline=True``; ``result.timeline()`` returns it and ``python -m emulator run ... --timeline F.svg``
draws it.

In the picture, each warp is a row: grey ticks are instructions, red spans are the times the warp is
parked on an mbarrier wait, green ticks are arrives and orange ticks bulk copies it issued. Each mbarrier is
a row of its phases (dark: even phase, light: odd; the number is the phase that starts there), with dots
where bytes were announced (expect_tx) or landed (complete_tx). Each bulk copy is a bar from issue to
completion, in the row of the barrier it completes on when there is one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
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
    parked: list = field(default_factory=list)     # (warp, from step, to step, why)

    @classmethod
    def from_unit(cls, unit, ctaid):
        if not unit.record:
            raise EmulatorError("timeline: launch with timeline=True to record one")
        instrs = [e[1:] for e in unit.events if e[0] == "instr"]
        bars = {}
        for b in unit.mbarriers.retired + list(unit.mbarriers.live.values()):
            bars.setdefault(b.addr, []).extend(b.history)
        copies = [(c.kind, c.warp, c.lane, c.issued, c.done, c.info, c.text) for c in unit.finished + unit.pending]
        parked, open_ = [], {}
        for e in unit.events:
            if e[0] == "stall":
                open_.setdefault(e[2], (e[1], e[3]))
            elif e[0] == "wake" and e[2] in open_:
                s, why = open_.pop(e[2])
                parked.append((e[2], s, e[1], why))
        for w, (s, why) in open_.items():
            parked.append((w, s, unit.mbarriers.step, why))
        return cls(tuple(ctaid), instrs, bars, copies, unit.mbarriers.step, parked)

    def warps(self):
        return sorted({i[1] for i in self.instrs})

    def phases(self, addr):
        """[(phase, first step, last step)] of one mbarrier."""
        out, start, ph = [], None, 0
        for step, e, p, _, _ in self.barriers[addr]:
            if e == "init":
                start, ph = step, 0
            elif e in ("phase", "inval") and start is not None:
                out.append((ph, start, step))
                start, ph = (step, p) if e == "phase" else (None, p)
        if start is not None:
            out.append((ph, start, self.steps))
        return out

    def text(self):
        """One line per mbarrier event, parked span and copy, in step order."""
        ev = []
        for addr, hist in self.barriers.items():
            for step, e, ph, pend, tx in hist:
                ev.append((step, f"mbarrier {addr:#x}: {e:<16} phase {ph} pending {pend} tx {tx}"))
        for w, a, b, why in self.parked:
            ev.append((a, f"warp {w} parks: {why}"))
            ev.append((b, f"warp {w} wakes"))
        for kind, w, lane, a, b, info, _ in self.copies:
            ev.append((a, f"warp {w} lane {lane} issues a bulk {kind} {info}"))
            ev.append((b, f"bulk {kind} done {info}"))
        return "\n".join(f"{s:>6} {t}" for s, t in sorted(ev, key=lambda x: x[0]))

    def svg(self, width=1400, title=None, labels=None, warp_names=None):
        """The picture. ``labels``: {mbarrier address: name} (unnamed barriers show their address);
        ``warp_names``: {warp: name}."""
        labels = labels or {}
        warp_names = warp_names or {}
        warps = self.warps()
        bars = sorted(self.barriers)
        lane_h, top, left = 24, 44, 170
        height = top + (len(warps) + len(bars)) * lane_h + 60
        n = max(self.steps, 1)

        def x(s):
            return left + (width - left - 20) * s / n
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'font-family="monospace" font-size="11">', f'<rect width="{width}" height="{height}" fill="white"/>',
               f'<text x="10" y="18" font-size="14">{escape(title or f"CTA {self.ctaid}: timeline")}</text>',
               '<text x="10" y="34" fill="#555">step = one warp instruction issued by the CTA; '
               'red = parked on an mbarrier wait; green = arrive; orange = bulk copy</text>']
        y = top
        for w in warps:
            out.append(f'<text x="10" y="{y + 16}">{escape(warp_names.get(w, f"warp {w}"))}</text>')
            for wp, a, b, why in self.parked:
                if wp == w:
                    out.append(f'<rect x="{x(a):.1f}" y="{y + 3}" width="{max(x(b) - x(a), 1):.1f}" height="{lane_h - 6}" '
                               f'fill="#e15759" fill-opacity="0.35"><title>{escape(why)}</title></rect>')
            run = None                       # consecutive plain instructions drawn as one span
            for step, ww, pc, text, lanes in self.instrs + [(n + 2, w, -1, "", 0)]:
                if ww != w:
                    continue
                col = "#59a14f" if ".arrive" in text and "mbarrier" in text else (
                    "#f28e2b" if "cp.async.bulk" in text else "#999999")
                if col == "#999999" and pc >= 0:
                    if run is not None and step == run[1] + 1:
                        run[1] = step
                        continue
                if run is not None:
                    out.append(f'<rect x="{x(run[0] - 1):.1f}" y="{y + 8}" width="{max(x(run[1]) - x(run[0] - 1), 0.8):.1f}" '
                               f'height="{lane_h - 16}" fill="#999999"><title>steps {run[0]}..{run[1]}</title></rect>')
                    run = None
                if pc < 0:
                    break
                if col == "#999999":
                    run = [step, step]
                    continue
                out.append(f'<rect x="{x(step - 1):.1f}" y="{y + 3}" width="{max(x(step) - x(step - 1), 1.2):.1f}" '
                           f'height="{lane_h - 6}" fill="{col}"><title>{escape(f"step {step}, pc {pc}, {lanes} lanes: {text}")}'
                           f'</title></rect>')
            y += lane_h
        rows = {}
        for k, a in enumerate(bars):
            rows[a] = y
            name = labels.get(a, f"mbar {a:#x}")
            out.append(f'<text x="10" y="{y + 16}">{escape(name)}</text>')
            col = _COLORS[k % len(_COLORS)]
            for ph, a0, a1 in self.phases(a):
                out.append(f'<rect x="{x(a0):.1f}" y="{y + 3}" width="{max(x(a1) - x(a0), 1):.1f}" '
                           f'height="{lane_h - 6}" fill="{col}" fill-opacity="{0.85 if ph % 2 == 0 else 0.3}" '
                           f'stroke="white"><title>{escape(f"{name}: phase {ph} (parity {ph % 2}), steps {a0}..{a1}")}'
                           f'</title></rect>')
                out.append(f'<text x="{x(a0) + 3:.1f}" y="{y + 16}" font-size="10" fill="black">{ph}</text>')
            for step, e, ph, pend, tx in self.barriers[a]:
                if e.startswith(("expect_tx", "complete_tx", "arrive")):
                    c = "black" if e.startswith("expect") else ("white" if e.startswith("complete") else "#2d6a2d")
                    out.append(f'<circle cx="{x(step):.1f}" cy="{y + lane_h - 5}" r="2.2" fill="{c}" stroke="#333" '
                               f'stroke-width="0.4"><title>{escape(f"step {step}: {e}; then pending {pend}, tx {tx}")}'
                               f'</title></circle>')
            y += lane_h
        y0 = y
        for kind, w, lane, a, b, info, text in self.copies:
            b = b if b >= 0 else n
            yy = rows.get(info.get("mbar"), y0) if isinstance(info, dict) else y0
            out.append(f'<line x1="{x(a):.1f}" y1="{yy + 4}" x2="{x(b):.1f}" y2="{yy + 4}" stroke="#f28e2b" '
                       f'stroke-width="3"><title>{escape(f"bulk {kind} by warp {w}: issued at step {a}, done at {b}; {info}")}'
                       f'</title></line>')
        out.append(f'<text x="{left}" y="{y0 + 30}" fill="#555">0</text>'
                   f'<text x="{width - 60}" y="{y0 + 30}" fill="#555">{n} steps</text>')
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self):
        return self.svg()

    def save(self, path, **kw):
        data = self.svg(**kw)
        if str(path).endswith(".html"):
            data = f"<!doctype html><html><body>{data}<pre>{escape(self.text())}</pre></body></html>"
        with open(path, "w") as f:
            f.write(data)
