"""Condense compute-sanitizer's logs (gpu_run.py) into the verdicts the tests read (planted_verdicts.json):

    python tools/hwcapture/sanitize/verdicts.py LOGDIR tests/data/sanitize/planted_verdicts.json

Per kernel and tool: the distinct report headings (addresses and numbers replaced by N), with counts."""
import collections
import json
import os
import re
import sys

# compute-sanitizer's heading -> the emulator's kind
KINDS = [
    (r"Potential RAW hazard", "RAW"), (r"Potential WAR hazard", "WAR"), (r"Potential WAW hazard", "WAW"),
    (r"Invalid __(global|shared)__ (read|write|atomic).*misaligned", "misaligned"),
    (r"Invalid __(global|shared)__", "out-of-bounds"),
    (r"Uninitialized __global__ memory read", "uninitialized-read"),
    (r"Divergent thread\(s\) in warp", "divergent-barrier"),
    (r"Invalid arguments", "membermask"),
    (r"Missing wait", "mbarrier-overarrival"),
]


def parse(path):
    heads = collections.defaultdict(collections.Counter)
    cur = None
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"@@BEGIN \d+ (\w+)", line)
        if m:
            cur = m.group(1)
            continue
        if not line.startswith("========= ") or line.startswith("=========  ") or cur is None:
            continue
        h = line[10:].strip()
        if not h or h.startswith(("COMPUTE", "ERROR SUMMARY", "Program hit", "Saved", "Target application",
                                  "RACECHECK SUMMARY", "and ")) or "Race reported" in h:
            continue          # racecheck's analysis lines summarise the hazard lines above them
        # memcheck: the next lines say why ("Address ... is misaligned", "is out of bounds")
        if h.startswith("Invalid __"):
            nxt = " ".join(lines[i + 1:i + 4])
            if "misaligned" in nxt:
                h += " (misaligned)"
        h = re.sub(r"0x[0-9a-f]+", "X", h)
        h = re.sub(r"\d+", "N", h)
        heads[cur][h] += 1
    return heads


def kind_of(heading):
    for pat, kind in KINDS:
        if re.search(pat, heading):
            return kind
    raise ValueError(f"no kind for {heading!r}")


def main():
    logdir, dest = sys.argv[1:3]
    out = {}
    for tool in ("memcheck", "racecheck", "synccheck", "initcheck"):
        for kernel, c in parse(os.path.join(logdir, f"{tool}.log")).items():
            rec = out.setdefault(kernel, {})
            rec[tool] = [{"heading": h, "count": n, "kind": kind_of(h),
                          "severity": "warning" if h.startswith("Warning") else "error"} for h, n in sorted(c.items())]
    json.dump({"gpu": "NVIDIA H100 80GB HBM3", "compute_sanitizer": "2025.3.1.0", "reports": out}, open(dest, "w"),
              indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
