"""What a launch leaves behind."""
from dataclasses import dataclass, field




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

    def warps(self):
        for ctaid, ws in self.ctas:
            for w in ws:
                yield ctaid, w
