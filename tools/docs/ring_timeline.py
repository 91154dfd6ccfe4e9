"""Draw docs/ring_timeline.svg: the warp-specialised ring (tests/data/tma/ws_ring.ptx, a Gluon-style
Channel with 3 buffers, 1 producer, 2 consumers) over 7 chunks, from the emulator's timeline.

    python tools/docs/ring_timeline.py
"""
import os
import sys

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)

from emulator import GlobalMemory, load_ptx  # noqa: E402


def main():
    g = GlobalMemory()
    m = load_ptx(open(os.path.join(ROOT, "tests", "data", "tma", "ws_ring.ptx")).read())
    n = 7
    x = g.upload(np.arange(256 * n, dtype=np.float32))
    o = g.upload(np.zeros(2 * n, np.float32))
    r = m.launch("ws_ring", grid=1, block=96, args=[x, o, n], gmem=g, timeline=True)
    t = r.timeline()
    addrs = sorted(t.barriers)
    labels = {a: (f"ready[{k}]" if k < 3 else f"empty[{k - 3}]") for k, a in enumerate(addrs)}  # init order
    svg = t.svg(width=1500, title="Channel ring, 3 slots, 1 producer, 2 consumers, 7 chunks (ws_ring.cu)",
                labels=labels, warp_names={0: "warp 0 producer", 1: "warp 1 consumer", 2: "warp 2 consumer"})
    with open(os.path.join(ROOT, "docs", "ring_timeline.svg"), "w") as f:
        f.write(svg)
    print(t.text())


if __name__ == "__main__":
    main()
