"""Sub-commands ``run`` (a kernel from a .ptx file) and ``demo`` (the tensor-core demo kernels).

    python -m emulator run kernel.ptx --kernel NAME --grid 1 --block 32 --arg a.npy --arg zeros:f32:128 --arg 16
    python -m emulator demo
"""
from __future__ import annotations

import os
import sys

import numpy as np

from ..errors import EmulatorError, OperandError

DEMO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "demo")
_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8,
           "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32, "i64": np.int64,
           "u64": np.uint64}

# D of both demo kernels on an H100 (tests/data/kernels/h100_kernels.npz), f16 little-endian bytes in hex
H100_D = bytes.fromhex(
    "f03b043c103c1d3c293c353c413c4e3c0e412241354148415b416f418241954110442044314441445144614471448244"
    "9a45b045c745de45f4450b4622463946234740475d477b479847b547d247f047564868487a488c489e48b048c148d448"
    "1b49304945495a496f4984499a49af49df49f849104a294a414a594a724a8b4aa44ac04adb4af74a134b2e4b4a4b664b"
    "684b874ba64bc64be54b024c114c214c174c284c394c4a4c5b4c6c4c7d4c8f4c794c8c4c9e4cb14cc44cd74ce94cfc4c"
    "db4cf04c044d194d2d4d414d564d6a4d3e4d544d6a4d804d964dac4dc24dd84da04db74dcf4de74dff4d164e2e4e464e"
    "024e1b4e354e4e4e674e814e9a4eb34e"
)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "run", help="run a kernel of a .ptx module (nvcc -ptx output) on the emulator",
        description="Run one kernel of a PTX module. Each --arg fills the next .param of the kernel: an integer "
                    "or float literal; a .npy file (uploaded to global memory, its address is passed); or "
                    "zeros:DTYPE:N (N zeroed elements of f16/f32/f64/i8/u8/i16/u16/i32/u32/i64/u64). With --out "
                    "DIR every array argument is saved after the run as DIR/<name>.npy.")
    p.add_argument("ptx", help="the .ptx file")
    p.add_argument("--kernel", required=True, help="entry name, mangled or plain (ptx_mma_shared)")
    p.add_argument("--grid", default="1", help="X[,Y[,Z]] CTAs (default 1)")
    p.add_argument("--block", default="32", help="X[,Y[,Z]] threads per CTA (default 32)")
    p.add_argument("--arg", action="append", default=[], metavar="VALUE", help="kernel argument (repeat, in order)")
    p.add_argument("--cluster", default=None, help="X[,Y[,Z]] CTAs per cluster (default: the kernel's "
                                                    ".reqnctapercluster, or none)")
    p.add_argument("--max-instructions", type=int, default=20_000_000, metavar="N",
                   help="stop with an error after N warp instructions (default 20000000)")
    p.add_argument("--shared", type=int, default=0, metavar="BYTES", help="dynamic shared memory per CTA")
    p.add_argument("--out", metavar="DIR", help="write every array argument back as DIR/<name>.npy")
    p.add_argument("--trace", action="store_true", help="print each executed instruction, its lanes and the "
                                                       "registers it wrote")
    p.add_argument("--trace-format", choices=("text", "jsonl"), default="text",
                   help="the trace's form: text lines (default) or JSON lines (one object per instruction)")
    p.add_argument("--trace-file", metavar="FILE", help="write the trace to FILE instead of stdout (implies --trace)")
    p.add_argument("--trace-cta", metavar="X[,Y[,Z]]", help="trace only this CTA")
    p.add_argument("--trace-warp", metavar="W[,W...]", help="trace only these warps")
    p.add_argument("--trace-lane", metavar="L[,L...]", help="trace only these lanes (their values alone)")
    p.add_argument("--trace-lines", metavar="FIRST-LAST", help="trace only PTX lines FIRST..LAST")
    p.add_argument("--trace-opcode", metavar="OP[,OP...]", help="trace only these opcodes (prefixes: mma, ld.shared)")
    p.add_argument("--bank-report", action="store_true", help="print the shared-memory wavefronts and bank "
                                                             "conflicts of every shared-memory instruction, per warp")
    p.add_argument("--profile", nargs="?", const="-", default=None, metavar="FILE",
                   help="count every instruction per source line (.loc) and PTX line: warp-instructions, active lanes, "
                        "shared wavefronts and bank conflicts, global sectors, tensor-core MACs; print the table "
                        "(costliest first), or write it to FILE (.html: the source view)")
    p.add_argument("--profile-by", choices=("source", "ptx"), default="source",
                   help="the text table's rows: source lines (default; PTX lines when the PTX has no .loc) or PTX lines")
    p.add_argument("--arch", default=None, help="the machine emulated: sm_80, sm_86, sm_90 (default: sm_90, the H100, whatever "
                                              "the module's .target)")
    p.add_argument("--timeline", metavar="FILE", help="draw CTA 0's timeline (warps' instructions, mbarrier phases, "
                                                     "bulk copies) to FILE.svg or FILE.html")
    p.add_argument("--schedule", metavar="SEED", type=int, default=None,
                   help="interleave warps in a seeded random order (shakes out races); default: round-robin")
    p.add_argument("--cp-async", choices=("deferred", "eager"), default="deferred",
                   help="when cp.async copies land in shared memory (default: at the wait that retires them)")
    p.add_argument("--sanitize", metavar="TOOLS", default=None,
                   help="watch the launch with the sanitizer: all, or a comma list of memcheck, racecheck, synccheck, "
                        "initcheck, asynccheck (docs/sanitize.md); prints the reports and a summary per tool")
    p.set_defaults(func=_cmd_run)

    d = subparsers.add_parser(
        "demo", help="run the m16n8k16 tensor-core demo kernels and compare D with numpy",
        description="Runs ptx_mma_shared (cp.async + ldmatrix + mma.sync) and ptx_mma_global (fragments loaded "
                    "with the PTX layout formulas) from the nvcc PTX in emulator/demo/, with A (16x16) and B "
                    "(16x8) of f16 filled with i * 0.01, and prints D next to numpy's A @ B.")
    d.add_argument("--arch", default="sm_90")
    d.set_defaults(func=_cmd_demo)
    return p


def _read_text(path):
    """The text of a PTX file, or an OperandError that names the file and what is wrong with it."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise OperandError(f"{path}: cannot read the file ({e.strerror or e})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise OperandError(f"{path}: not a PTX text file (byte {e.start} is not UTF-8)") from None


def _dims(text, what):
    try:
        v = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise OperandError(f"--{what}: expected X[,Y[,Z]] integers, got {text!r}") from None
    if not 1 <= len(v) <= 3:
        raise OperandError(f"--{what}: expected 1 to 3 dimensions, got {text!r}")
    return v


def _parse_args(module, entry, values, gmem):
    """Turn --arg strings into launch arguments, following the kernel's .param types."""
    from isa.types import TYPES
    params = module.info.functions[entry].params
    if len(values) != len(params):
        names = ", ".join(f"{p.name} (.{p.ptype})" for p in params)
        raise OperandError(f"run {entry}: the kernel takes {len(params)} argument(s) ({names}); {len(values)} given")
    args, arrays = [], []
    for k, (text, p) in enumerate(zip(values, params)):
        kind = TYPES[p.ptype][1]
        if text.endswith(".npy"):
            try:
                arr = np.load(text, allow_pickle=False)
            except (OSError, ValueError, EOFError) as e:
                raise OperandError(f"--arg {text!r}: cannot load the array ({e})") from None
            if not isinstance(arr, np.ndarray) or arr.dtype.hasobject:
                raise OperandError(f"--arg {text!r}: not a single numeric array")
            addr = gmem.upload(arr)
            arrays.append((os.path.splitext(os.path.basename(text))[0], addr, arr))
            args.append(addr)
        elif text.startswith("empty:"):         # allocated, never written: uninitialised for the sanitizer
            try:
                _, dt, n = text.split(":")
                arr = np.zeros(int(n), _DTYPES[dt])
            except (ValueError, KeyError):
                raise OperandError(f"--arg {text!r}: expected empty:DTYPE:N with DTYPE one of "
                                   f"{', '.join(_DTYPES)}") from None
            addr = gmem.alloc(arr.nbytes)
            arrays.append((f"arg{k}", addr, arr))
            args.append(addr)
        elif text.startswith("zeros:"):
            try:
                _, dt, n = text.split(":")
                arr = np.zeros(int(n), _DTYPES[dt])
            except (ValueError, KeyError):
                raise OperandError(f"--arg {text!r}: expected zeros:DTYPE:N with DTYPE one of "
                                   f"{', '.join(_DTYPES)}") from None
            addr = gmem.upload(arr)
            arrays.append((f"arg{k}", addr, arr))
            args.append(addr)
        elif kind == "f":
            try:
                args.append(float(text))
            except ValueError:
                raise OperandError(f"--arg {text!r}: parameter {p.name} is .{p.ptype}; expected a number") from None
        else:
            try:
                args.append(int(text, 0))
            except ValueError:
                raise OperandError(f"--arg {text!r}: parameter {p.name} is .{p.ptype}; expected an integer, a .npy "
                                   f"file or zeros:DTYPE:N") from None
    return args, arrays


def trace_from_args(a, stream):
    """The ``Trace`` the --trace-* options ask for, writing to ``stream``."""
    from ..machine.tracing import Trace

    def ints(text, what):
        try:
            return [int(x) for x in text.split(",")]
        except ValueError:
            raise OperandError(f"--trace-{what}: expected integers separated by commas, got {text!r}") from None
    lines = None
    if a.trace_lines:
        try:
            lo, _, hi = a.trace_lines.partition("-")
            lines = (int(lo), int(hi or lo))
        except ValueError:
            raise OperandError(f"--trace-lines: expected FIRST-LAST, got {a.trace_lines!r}") from None
    return Trace(stream, a.trace_format, cta=tuple(ints(a.trace_cta, "cta")) if a.trace_cta else None,
                 warp=ints(a.trace_warp, "warp") if a.trace_warp else None,
                 lane=ints(a.trace_lane, "lane") if a.trace_lane else None, lines=lines,
                 opcode=a.trace_opcode.split(",") if a.trace_opcode else None)


def _cmd_run(a):
    from ..machine.module import load_ptx
    from ..machine.warp import WarpOptions
    from ..memory import GlobalMemory
    module = load_ptx(_read_text(a.ptx), arch=a.arch)
    entry = module.resolve(a.kernel)
    g = GlobalMemory()
    args, arrays = _parse_args(module, entry, a.arg, g)
    sanitize = None if a.sanitize is None else tuple(a.sanitize.split(",")) if a.sanitize != "all" else "all"
    if sanitize is not None:
        from ..machine.sanitize import tools_of, print_reports
        tools = tools_of(sanitize)
        try:
            res = module.launch(entry, grid=_dims(a.grid, "grid"), block=_dims(a.block, "block"), args=args, gmem=g,
                                shared_bytes=a.shared, options=WarpOptions(cp_async=a.cp_async),
                                cluster=None if a.cluster is None else _dims(a.cluster, "cluster"),
                                max_instructions=a.max_instructions, sanitize=sanitize)
        except EmulatorError as e:
            print_reports(getattr(e, "reports", []), tools, sys.stdout)
            raise
        print_reports(res.reports, tools, sys.stdout)
        print(f"{entry}: {len(res.ctas)} CTA(s), {res.instructions} warp instructions issued")
        return 1 if res.reports else 0
    trace_file = open(a.trace_file, "w") if a.trace_file else None
    trace = trace_from_args(a, trace_file or sys.stdout) if (a.trace or trace_file) else None
    try:
        res = _launch(module, entry, a, args, g, trace)
    finally:
        if trace_file:
            trace_file.close()
    _report(a, entry, res)
    for name, addr, arr in arrays:
        out = g.download(addr, arr.nbytes).view(arr.dtype).reshape(arr.shape)
        if a.out:
            os.makedirs(a.out, exist_ok=True)
            path = os.path.join(a.out, name + ".npy")
            np.save(path, out)
            print(f"wrote {path}")
    return 0


def _launch(module, entry, a, args, g, trace):
    from ..machine.warp import WarpOptions
    return module.launch(entry, grid=_dims(a.grid, "grid"), block=_dims(a.block, "block"), args=args, gmem=g,
                        shared_bytes=a.shared, options=WarpOptions(cp_async=a.cp_async),
                        trace=trace, timeline=bool(a.timeline),
                        schedule=None if a.schedule is None else ("random", a.schedule),
                        cluster=None if a.cluster is None else _dims(a.cluster, "cluster"),
                        max_instructions=a.max_instructions, profile=a.profile is not None)


def _report(a, entry, res):
    print(f"{entry}: {len(res.ctas)} CTA(s), {res.instructions} warp instructions issued")
    if a.profile == "-":
        print(res.profile.table(by=a.profile_by))
    elif a.profile:
        res.profile.save(a.profile, by=a.profile_by)
        print(f"wrote {a.profile}")
    if a.timeline:
        if not a.timeline.endswith((".svg", ".html")):
            raise OperandError(f"--timeline: {a.timeline!r} must end in .svg or .html")
        res.timeline().save(a.timeline)
        print(f"wrote {a.timeline}")
    if a.bank_report:
        for ctaid, w in res.warps():
            recs = w.bank_report()
            more = getattr(w, "smem_log_dropped", 0)
            print(f"cta {ctaid} warp {w.warp_id}: {len(recs)} shared-memory instruction(s)" +
                  (f" recorded, {more} more not recorded (the log keeps the first {len(recs)})" if more else ""))
            summary = {}                   # one line per instruction, however often it ran
            for r in recs:
                s = summary.setdefault(' '.join(str(r.instruction).split()), [0, 0, 0])
                s[0] += 1
                s[1] += r.wavefronts
                s[2] += r.conflicts
            for text, (n, wf, cf) in summary.items():
                print(f"  {text}: wavefronts {wf}, conflicts {cf}" + (f" (over {n} executions)" if n > 1 else ""))


def demo_inputs():
    a = (np.arange(256) * 0.01).astype(np.float16).reshape(16, 16)
    b = (np.arange(128) * 0.01).astype(np.float16).reshape(16, 8)
    return a, b


def run_demo(kernel, arch="sm_90"):
    """Run one demo kernel on the i * 0.01 inputs; returns (A, B, D) with D as float16 (16, 8)."""
    from ..machine.module import load_ptx
    from ..memory import GlobalMemory
    with open(os.path.join(DEMO_DIR, "mma_demo.ptx")) as f:
        module = load_ptx(f.read(), arch=arch)
    a, b = demo_inputs()
    g = GlobalMemory()
    pa, pb, pc = g.upload(a), g.upload(b), g.upload(np.zeros((16, 8), np.float16))
    module.launch(kernel, grid=(1, 1, 1), block=(32, 1, 1), args=[pa, pb, pc, 16, 8, 16], gmem=g)
    return a, b, g.download(pc, 256).view(np.float16).reshape(16, 8)


def _cmd_demo(a):
    ref = None
    results = {}
    for kernel in ("ptx_mma_shared", "ptx_mma_global"):
        A, B, D = run_demo(kernel, a.arch)
        results[kernel] = D
        ref = A.astype(np.float32) @ B.astype(np.float32)
    print("A = (i * 0.01) as f16, 16x16;  B = (i * 0.01) as f16, 16x8;  "
          "D = mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 (C = 0)")
    print(f"kernels from {os.path.join('emulator', 'demo', 'mma_demo.ptx')} (nvcc -ptx -arch=sm_90), arch {a.arch}\n")
    D = results["ptx_mma_shared"]
    print(f"{'row':>3} | {'D (emulated mma.sync, f16)':^63} | {'numpy A @ B (f32)':^71}")
    for r in range(16):
        left = " ".join(f"{float(x):7.3f}" for x in D[r])
        right = " ".join(f"{x:8.4f}" for x in ref[r])
        print(f"{r:>3} | {left} | {right}")
    same = np.array_equal(results["ptx_mma_shared"].view(np.uint16), results["ptx_mma_global"].view(np.uint16))
    hw = np.frombuffer(H100_D, np.uint16).reshape(16, 8)
    match_hw = np.array_equal(D.view(np.uint16), hw)
    err = np.abs(D.astype(np.float64) - ref)
    print(f"\nptx_mma_shared (cp.async.cg + ldmatrix) and ptx_mma_global (layout formulas) give "
          f"{'bit-identical' if same else 'DIFFERENT'} D")
    print(f"D {'equals' if match_hw else 'DIFFERS FROM'} the D an H100 computed from the same PTX, bit for bit")
    print(f"largest |D - A @ B| = {err.max():.4g} (f16 output: one f16 ulp at {ref.max():.1f} is "
          f"{float(np.spacing(np.float16(ref.max()))):.4g})")
    return 0 if same and match_hw else 1
