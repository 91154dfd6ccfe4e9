"""What a launch leaves behind."""
from dataclasses import dataclass, field

from ..memory.asyncunit import AsyncUnit




@dataclass
class LaunchResult:
    """What a launch leaves behind: every CTA's warps (registers, shared memory, bank records) and the
    printf output."""
    kernel: str
    grid: tuple
    block: tuple
    ctas: list = field(default_factory=list)        # [(ctaid, [KernelWarp, ...])]
    stdout: list = field(default_factory=list)       # printf output, in emission order
    instructions: int = 0
    async_units: list = field(default_factory=list)  # per CTA: mbarriers, copies, events (timeline)
    profile: object = None                           # machine.profile.Profile of a launch with profile=True
    # what the launch did differently from the letter of the PTX manual, as ptxas compiles the code (e.g. a
    # wait for in-flight wgmma that ptxas injects, its info message C7517): "line L: instruction: what"
    notes: list = field(default_factory=list)

    reports: list = field(default_factory=list)      # sanitizer reports (launch(..., sanitize=...))
    sanitizer: object = None                         # the launch's machine.sanitize.Sanitizer, when one watched

    @classmethod
    def made(cls, kernel, grid, block):
        """``LaunchResult(kernel, grid, block)`` without the dataclass's ``__init__`` (a launch of a planned shape
        makes one per launch: machine.module)."""
        self = cls.__new__(cls)
        self.__dict__ = {"kernel": kernel, "grid": grid, "block": block, "_ctas": [], "_lazy": False, "stdout": [],
                         "instructions": 0, "_units": [], "_units_lazy": False, "profile": None, "notes": [],
                         "reports": [], "sanitizer": None}
        return self

    def keep_cta(self, ctaid, cta):
        """Keep ``cta`` (a ``machine.cta.CTA`` that ran to its end) in ``ctas``; its warps are built when ``ctas`` is
        first read (the fast engine's CTA loop runs on arrays and makes no warp objects for CTAs nobody reads)."""
        self._ctas.append(_Kept(ctaid, cta))
        self._lazy = True
        self._units.append(cta)         # (its async unit, made when ``async_units`` is first read)
        self._units_lazy = True

    def __getstate__(self):
        self.ctas                       # (the warps of the kept CTAs, built: what a copy takes)
        self.async_units
        return self.__dict__

    def sanitizer_summary(self):
        """compute-sanitizer-like closing lines, one per tool that watched the launch."""
        from .sanitize import summary
        return summary(self.reports, None if self.sanitizer is None else
                       [t for t in ("memcheck", "racecheck", "synccheck", "initcheck", "asynccheck")
                        if t in self.sanitizer.tools])

    def note(self, message):
        """Record ``message`` once."""
        if message not in self.notes:
            self.notes.append(message)

    def __repr__(self):
        nwarps = sum(len(ws) for _, ws in self.ctas)
        return (f"LaunchResult(kernel={self.kernel!r}, grid={tuple(self.grid)}, block={tuple(self.block)}: "
                f"{len(self.ctas)} CTA(s), {nwarps} warp(s), {self.instructions} warp instructions, "
                f"{len(self.stdout)} printf line(s))")

    def _repr_html_(self):
        """A summary table (Jupyter), with the profile's costliest lines when the launch was profiled."""
        from html import escape
        nwarps = sum(len(ws) for _, ws in self.ctas)
        rows = [("kernel", self.kernel), ("grid", tuple(self.grid)), ("block", tuple(self.block)),
                ("CTAs run", len(self.ctas)), ("warps", nwarps), ("warp-instructions", self.instructions),
                ("printf lines", len(self.stdout))]
        if self.async_units and self.async_units[0].record:
            rows.append(("timeline", "recorded: result.timeline()"))
        out = ["<table class='warpemu-launch'>"] + [f"<tr><th style='text-align:left'>{escape(str(k))}</th>"
                                                    f"<td style='text-align:left'>{escape(str(v))}</td></tr>"
                                                    for k, v in rows] + ["</table>"]
        if self.profile is not None:
            out.append(f"<pre>{escape(self.profile.table(top=10))}</pre>")
        return "\n".join(out)

    def timeline(self, cta: int = 0):
        """The timeline of one CTA (launch with ``timeline=True``): each warp's instructions along the step
        axis, each mbarrier's phases and tx-count, each bulk copy from issue to completion."""
        from .timeline import Timeline
        from ..errors import OperandError
        if isinstance(cta, bool) or not isinstance(cta, int) or not 0 <= cta < len(self.async_units):
            raise OperandError(f"timeline: cta must be 0..{len(self.async_units) - 1}, not {cta!r}")
        return Timeline.from_unit(self.async_units[cta], self.ctas[cta][0])

    def warps(self):
        for ctaid, ws in self.ctas:
            for w in ws:
                yield ctaid, w


class _Kept:
    """A kept CTA whose warps ``LaunchResult.ctas`` builds when read."""
    __slots__ = ("ctaid", "cta")

    def __init__(self, ctaid, cta):
        self.ctaid, self.cta = ctaid, cta


def _get_ctas(self):
    if self._lazy:
        got = self._ctas
        for i, e in enumerate(got):
            if type(e) is _Kept:
                got[i] = (e.ctaid, e.cta.warps)
        self._lazy = False
    return self._ctas


def _set_ctas(self, value):
    self._ctas = value
    self._lazy = False


def _get_units(self):
    if self._units_lazy:
        got = self._units
        for i, e in enumerate(got):
            if not isinstance(e, AsyncUnit):
                got[i] = e.async_unit
        self._units_lazy = False
    return self._units


def _set_units(self, value):
    self._units = value
    self._units_lazy = False


# [(ctaid, [KernelWarp, ...])], each kept CTA's warps built the first time the list is read
LaunchResult.ctas = property(_get_ctas, _set_ctas, doc="[(ctaid, [KernelWarp, ...])] of the CTAs the launch kept")
# [AsyncUnit] of the kept CTAs, in the order of ``ctas``: a kept CTA's unit is made when the list is first read (a
# kernel the fast engine's CTA loop ran without mbarriers or copies never made one)
LaunchResult.async_units = property(_get_units, _set_units,
                                    doc="[AsyncUnit] of the CTAs the launch kept (mbarriers, copies, timeline events)")
