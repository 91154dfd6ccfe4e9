"""Ask Triton itself for the linear layouts of many Gluon layouts x shapes, and write them as a fixture.

    python tools/gluon/triton_layouts.py [OUT]      # default tests/data/gluon/triton_layouts.json.gz

Needs Triton 3.9 (``pip install triton`` in its own environment); no GPU. The tests
(tests/test_gluon_triton.py) compare ``emulator.gluon`` against the file without Triton.

Each layout is written in the spelling ``emulator.gluon.parse_layout`` reads, which is also valid Gluon (the
constructors carry Gluon's names and arguments). Triton answers through ``GluonOpBuilder.to_linear_layout``,
the binding behind ``gl.to_linear_layout``; for tensor memory also ``tensor_memory_descriptor_type
.get_reg_layout`` (the register layout of a ``tcgen05.ld.32x32b`` load). Some parameter sets make Triton abort
the process (an LLVM fatal error): each case runs in a worker process, and a case that kills it is recorded
as an error, which the emulator must refuse too.
"""
import gzip
import itertools
import json
import os
import random
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "gluon", "triton_layouts.json.gz")


# ---- the cases --------------------------------------------------------------------------------------

def _shape2(rng, lo=0, hi=8, max_log=14):
    while True:
        a, b = rng.randint(lo, hi), rng.randint(lo, hi)
        if a + b <= max_log:
            return [1 << a, 1 << b]


def cases():
    rng = random.Random(14)
    out = []
    spts = [[1, 1], [1, 2], [1, 4], [2, 1], [2, 2], [4, 1], [1, 8], [4, 4], [8, 1]]
    tpws = [[1, 32], [2, 16], [4, 8], [8, 4], [16, 2], [32, 1]]
    wpcs = [[1, 1], [2, 1], [1, 2], [4, 1], [2, 2], [1, 4], [8, 1], [2, 4], [4, 2]]
    blocked = []
    for _ in range(300):
        o = rng.choice([[1, 0], [0, 1]])
        blocked.append(f"BlockedLayout({rng.choice(spts)}, {rng.choice(tpws)}, {rng.choice(wpcs)}, {o})")
    blocked.insert(0, "BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])")
    for b in blocked:
        out.append((b, _shape2(rng)))
    for s in ([64, 64], [16, 16], [128, 32], [1, 1], [4, 256]):
        out.append(("BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])", s))
    # rank 1 and 3
    for _ in range(20):
        out.append((f"BlockedLayout([{rng.choice([1, 2, 4, 8])}], [32], [{rng.choice([1, 2, 4, 8])}], [0])",
                    [1 << rng.randint(0, 11)]))
    for _ in range(20):
        perm = rng.choice(list(itertools.permutations(range(3))))
        spt = [rng.choice([1, 2]) for _ in range(3)]
        tpw = rng.choice([[1, 4, 8], [2, 2, 8], [4, 8, 1], [1, 1, 32], [2, 16, 1]])
        wpc = rng.choice([[1, 1, 4], [2, 2, 1], [1, 4, 1], [1, 1, 1]])
        out.append((f"BlockedLayout({spt}, {tpw}, {wpc}, {list(perm)})",
                     [1 << rng.randint(0, 5) for _ in range(3)]))
    # mma v2 / v3 accumulators and their dot operands
    v2w = [[1, 1], [2, 1], [1, 2], [2, 2], [4, 1], [1, 4], [4, 2], [2, 4], [8, 1]]
    for _ in range(60):
        w = rng.choice(v2w)
        out.append((f"NVMMADistributedLayout(version=[2, 0], warps_per_cta={w}, instr_shape=[16, 8])",
                    _shape2(rng, 2, 8)))
    v3w = [[4, 1], [8, 1], [4, 2], [16, 1], [4, 4]]
    for _ in range(60):
        w, n = rng.choice(v3w), rng.choice([8, 16, 32, 64, 128, 256])
        k = rng.choice([8, 16, 32])
        out.append((f"NVMMADistributedLayout(version=[3, 0], warps_per_cta={w}, instr_shape=[16, {n}, {k}])",
                    _shape2(rng, 3, 9)))
    for _ in range(120):
        w = rng.choice(v2w)
        p = f"NVMMADistributedLayout(version=[2, 0], warps_per_cta={w}, instr_shape=[16, 8])"
        out.append((f"DotOperandLayout({rng.choice([0, 1])}, {p}, {rng.choice([1, 2, 4, 8])})",
                    _shape2(rng, 2, 8)))
    for _ in range(40):
        w, n = rng.choice(v3w), rng.choice([16, 64, 128, 256])
        p = f"NVMMADistributedLayout(version=[3, 0], warps_per_cta={w}, instr_shape=[16, {n}, 16])"
        out.append((f"DotOperandLayout(0, {p}, {rng.choice([1, 2, 4])})", _shape2(rng, 3, 8)))
    out.append(("DotOperandLayout(1, NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], "
                "instr_shape=[16, 64, 16]), 2)", [64, 64]))               # Triton refuses: B of wgmma
    # slices
    for _ in range(60):
        parent = rng.choice(blocked[:60] + [
            "NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8])",
            "NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16])",
            "NVMMADistributedLayout(version=[3, 0], warps_per_cta=[8, 1], instr_shape=[16, 128, 16])"])
        out.append((f"SliceLayout({rng.choice([0, 1])}, {parent})", [1 << rng.randint(0, 9)]))
    # explicit linear
    out.append(("DistributedLinearLayout([[0, 1], [8, 0]], [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], "
                "[[16, 0], [0, 8]], [], [32, 16])", [32, 16]))
    out.append(("DistributedLinearLayout([[1, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]], [[0, 0]], [], "
                "[2, 32])", [2, 32]))
    # shared
    for _ in range(160):
        sw, bits, tr = rng.choice([0, 32, 64, 128]), rng.choice([8, 16, 32]), rng.choice([False, True])
        out.append((f"NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2, "
                    f"transposed={tr})", _shape2(rng, 2, 8)))
    for _ in range(80):                        # shapes at least one swizzle tile large
        sw, bits, tr = rng.choice([32, 64, 128]), rng.choice([8, 16, 32, 64]), rng.choice([False, True])
        contig = (8 * sw // bits) << rng.randint(0, 2)
        other = 8 << rng.randint(0, 3)
        out.append((f"NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2, "
                    f"transposed={tr})", [contig, other] if tr else [other, contig]))
    # Triton's default swizzle choice (NVMMASharedLayout.get_default_for), the seed's get_nvmma_layout rule
    for _ in range(80):
        dt, tr = rng.choice(["float8e4nv", "float16", "bfloat16", "float32"]), rng.choice([False, True])
        out.append((f"nvmma_default:{dt}:{tr}", _shape2(rng, 0, 8)))
    for _ in range(100):
        v, pp, mp = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4]), rng.choice([1, 2, 4, 8])
        out.append((f"SwizzledSharedLayout({v}, {pp}, {mp}, {rng.choice([[1, 0], [0, 1]])})", _shape2(rng, 0, 7)))
    # several CTAs (cga_layout): the block bases
    cgas = [[[1, 0]], [[0, 1]], [[0, 1], [1, 0]], [[1, 0], [0, 1]], [[0, 1], [0, 0]], [[1, 0], [2, 0]], [[0, 0]]]
    for _ in range(30):
        c = rng.choice(cgas)
        b = blocked[rng.randrange(len(blocked))][:-1] + f", cga_layout={c})"
        out.append((b, _shape2(rng, 1, 8)))
    for _ in range(12):
        c = rng.choice(cgas)
        p = f"BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout={c})"
        out.append((f"SliceLayout({rng.choice([0, 1])}, {p})", [1 << rng.randint(0, 8)]))
    for _ in range(24):
        c, w = rng.choice(cgas), rng.choice(v2w)
        p = f"NVMMADistributedLayout(version=[2, 0], warps_per_cta={w}, instr_shape=[16, 8], cga_layout={c})"
        out.append((p if rng.random() < 0.4 else f"DotOperandLayout({rng.choice([0, 1])}, {p}, 2)",
                    _shape2(rng, 3, 8)))
    for _ in range(12):
        c, w = rng.choice(cgas), rng.choice(v3w)
        out.append((f"NVMMADistributedLayout(version=[3, 0], warps_per_cta={w}, instr_shape=[16, 64, 16], "
                    f"cga_layout={c})", _shape2(rng, 5, 8)))
    for _ in range(24):
        c, sw, bits = rng.choice(cgas), rng.choice([0, 32, 64, 128]), rng.choice([8, 16, 32])
        out.append((f"NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2, "
                    f"transposed={rng.choice([False, True])}, cga_layout={c})", _shape2(rng, 4, 8)))
    for _ in range(12):
        c = rng.choice(cgas)
        out.append((f"SwizzledSharedLayout({rng.choice([1, 4, 8])}, {rng.choice([1, 2])}, {rng.choice([1, 4, 8])}, "
                    f"{rng.choice([[1, 0], [0, 1]])}, cga_layout={c})", _shape2(rng, 2, 7)))
    # tensor memory
    for _ in range(60):
        m, n, cs = rng.choice([64, 128]), rng.choice([16, 32, 64, 128, 256]), rng.choice([1, 2, 4])
        s = [m << rng.randint(0, 1), n << rng.randint(0, 1)]
        out.append((f"TensorMemoryLayout(({m}, {n}), col_stride={cs})", s))
    # tcgen05.ld 32x32b register layouts (Triton's own helper), for the seed's get_tmem_32x32b_reg_layout
    for m in (64, 128):
        for n in (32, 64, 128, 256):
            for shape in ([m, n], [2 * m, n], [m, 2 * n], [256, n]):
                for nw in (4, 8):
                    out.append((f"tmem_reg:TensorMemoryLayout(({m}, {n}), col_stride=1):{nw}", shape))
    seen, uniq = set(), []
    for lay, s in out:
        key = (lay, tuple(s))
        if key not in seen:
            seen.add(key)
            uniq.append((lay, s))
    return uniq


# ---- the worker: one Triton per process, cases on stdin, answers on stdout ------------------------------

WORKER = r"""
import json, sys
from triton._C.libtriton import ir, gluon_ir
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, tensor_memory_descriptor_type
ctx = ir.context(); ir.load_dialects(ctx)
b = gluon_ir.GluonOpBuilder(ctx, "100")
ns = {k: getattr(gl, k) for k in ("BlockedLayout", "SliceLayout", "NVMMADistributedLayout", "DotOperandLayout",
      "DistributedLinearLayout", "NVMMASharedLayout", "SwizzledSharedLayout")}
ns["TensorMemoryLayout"] = TensorMemoryLayout
def bases(r):
    if hasattr(r, "reg_bases"):
        return {"register": r.reg_bases, "lane": r.lane_bases, "warp": r.warp_bases, "block": r.block_bases}
    if hasattr(r, "offset_bases"):
        return {"offset": r.offset_bases, "block": r.block_bases}
    return {"row": r.rows, "col": r.cols}
for line in sys.stdin:
    lay, shape = json.loads(line)
    try:
        if lay.startswith("nvmma_default:"):
            _, dt, tr = lay.split(":")
            d = gl.NVMMASharedLayout.get_default_for(shape, getattr(gl, dt), transposed=tr == "True")
            res = {"linear": {"swizzle_byte_width": d.swizzle_byte_width, "element_bitwidth": d.element_bitwidth,
                              "transposed": d.transposed}}
        elif lay.startswith("tmem_reg:"):
            _, text, nw = lay.split(":")
            t = tensor_memory_descriptor_type(gl.float32, shape, eval(text, ns), shape)
            res = {"linear": bases(t.get_reg_layout(int(nw)))}
        else:
            L = eval(lay, ns)
            res = {"linear": bases(b.to_linear_layout(L._to_ir(b), shape))}
    except Exception as e:
        res = {"error": (type(e).__name__ + ": " + str(e)).strip().splitlines()[0][:300]}
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
"""


class Worker:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)

    def ask(self, lay, shape):
        try:
            self.p.stdin.write(json.dumps([lay, shape]) + "\n")
            self.p.stdin.flush()
            line = self.p.stdout.readline()
        except BrokenPipeError:
            line = ""
        if line:
            return json.loads(line)
        err = [l for l in self.p.stderr.read().splitlines() if l.strip() and "leak" not in l and
               not l.startswith(" - ")]
        self.p.wait()
        return {"error": "Triton aborted: " + " | ".join(err[:2])[:300], "abort": True}

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main(argv):
    out_path = argv[1] if len(argv) > 1 else DEFAULT_OUT
    import triton
    todo = cases()
    w = Worker()
    records = []
    for lay, shape in todo:
        r = w.ask(lay, shape)
        if r.pop("abort", False):
            w = Worker()
        records.append(dict(layout=lay, shape=shape, **r))
    w.close()
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    doc = {"triton_version": triton.__version__,
           "how": "tools/gluon/triton_layouts.py: GluonOpBuilder.to_linear_layout (gl.to_linear_layout), "
                  "tensor_memory_descriptor_type.get_reg_layout for tmem_reg: cases, "
                  "NVMMASharedLayout.get_default_for for nvmma_default: cases",
           "cases": records}
    with gzip.open(out_path, "wt") as f:
        json.dump(doc, f, separators=(",", ":"))
    n_err = sum("error" in r for r in records)
    print(f"{len(records)} cases ({n_err} refused by Triton) -> {out_path}")


if __name__ == "__main__":
    main(sys.argv)
