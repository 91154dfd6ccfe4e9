"""Input generators and the one rule every input is held to: the emulator either works or raises an
``EmulatorError`` (the command line: prints ``error: ...`` and exits 1, or argparse's usage error, exit 2).
Any other exception is a crash.

Kinds of input (each ``gen_<kind>(rng)`` returns a callable that exercises one input, and a short text that
reproduces it):

* ``ptx``: compiler output (the committed corpus of Triton, nvcc and CuTe PTX, tests/data/kernels/*.ptx,
  the demo) with one to four mutations: a token dropped, duplicated, swapped or replaced by a nearby one
  of the same kind (another register width, type, state space, opcode, a huge or odd number), random
  bytes spliced in, the text cut short. Loaded, every kernel compiled, and launched briefly.
* ``warp``: ``Warp.run`` programs of one to four real instructions (taken from the same PTX) with their
  operands replaced by random registers of every width, immediates of every form, addresses; after
  random ``.reg`` declarations and random register contents.
* ``api``: the public functions with arguments of the wrong kind, count, shape or dtype: ``Warp.write`` /
  ``read``, ``Warp(...)``, ``launch`` (args, grid, block, shared_bytes, schedule, ...), ``mma`` / ``gemm``,
  ``check_layout``, and the command line (arguments, missing, empty and garbage files).

* ``types`` and ``grammar``: ``typegen.py`` (every public callable with arguments of other kinds, odd numpy
  arrays; PTX written from a grammar: deep scopes, printf formats, duplicates, immediates).

``tools/fuzz/run.py`` runs them for a long time in several processes; ``tests/test_fuzz_robust.py``
runs a fixed sample.
"""
from __future__ import annotations

import glob
import io
import os
import re
import sys
import tempfile
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in (ROOT, os.path.join(ROOT, "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from emulator import EmulatorError, GlobalMemory, Warp, WarpOptions, load_ptx  # noqa: E402

KINDS = ("ptx", "warp", "api", "types", "grammar")
TOKEN = re.compile(r"%[A-Za-z_][A-Za-z0-9_.]*|[A-Za-z_$][A-Za-z0-9_.$]*|0[xX][0-9A-Fa-f]+|0[fFdD][0-9A-Fa-f]+|"
                   r"\d+|\s+|.", re.S)

# -- seeds -------------------------------------------------------------------------------------------------
_SEEDS = None


def seeds():
    """(module texts, instruction lines) of the seed PTX, loaded once."""
    global _SEEDS
    if _SEEDS is None:
        texts = []
        try:
            import corpus_lib
            texts += sorted({c["ptx"] for c in corpus_lib.load_all().values() if "ptx" in c})
        except Exception:                                # noqa: BLE001 (the corpus needs ml_dtypes only)
            pass
        for p in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "kernels", "*.ptx"))) + \
                [os.path.join(ROOT, "emulator", "demo", "mma_demo.ptx")]:
            with open(p) as f:
                texts.append(f.read())
        lines = set()
        for t in texts:
            for ln in t.splitlines():
                s = ln.strip()
                if s.endswith(";") and not s.startswith((".", "//", "{", "}", "$", "ret", "bra", "call",
                                                          "@%p")) and "bra" not in s:
                    lines.add(s)
        _SEEDS = (texts, sorted(lines))
    return _SEEDS


def pick(rng, seq):
    """One item of a sequence (``rng.choice`` would turn the sequence into an array first)."""
    return seq[int(rng.integers(len(seq)))]


# -- mutations ---------------------------------------------------------------------------------------------
REG_FORMS = ["%r{}", "%rd{}", "%rs{}", "%f{}", "%fd{}", "%h{}", "%p{}", "%hh{}", "%x{}", "%q{}"]
TYPES = ["u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b8", "b16", "b32", "b64", "b128", "f16",
         "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2", "pred", "e4m3x2", "u16x2", "v2",
         "v4", "v8"]
SPACES = ["global", "shared", "local", "const", "param", "generic", "shared::cta", "shared::cluster", "tex"]
NUMBERS = ["0", "1", "-1", "31", "32", "33", "63", "64", "65", "127", "128", "255", "256", "4096", "65535",
           "65536", "2147483647", "2147483648", "4294967295", "4294967296", "9223372036854775807",
           "18446744073709551615", "18446744073709551616", "99999999999999999999999", "0x7FFFFFFF",
           "0xFFFFFFFF", "0xFFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFF", "0f7F800000", "0f7FC00000", "0fFF800000",
           "0f00000001", "0d7FF0000000000000", "0d7FF8000000000000", "0dFFF0000000000000", "1.5", "-0.0",
           "1e300", "-1e-300", "0e0", "1e39", "0x8000000000000000", "-2147483648", "-9223372036854775808",
           "00", "0b101", "1u", "1U", "0.5f"]
MODS = ["rn", "rz", "rm", "rp", "rni", "rzi", "ftz", "sat", "approx", "full", "lo", "hi", "wide", "cc", "sync",
        "aligned", "relaxed", "acquire", "release", "volatile", "weak", "cta", "gpu", "sys", "ca", "cg", "cs",
        "lu", "cv", "nc", "L1::no_allocate", "L2::64B", "x1", "x2", "x4", "trans", "m8n8", "m16n8k16", "row",
        "col", "and", "or", "xor", "popc", "add", "min", "max", "inc", "dec", "cas", "exch", "up", "down",
        "bfly", "idx", "all", "any", "uni", "ballot", "eq", "ne", "lt", "le", "gt", "ge", "lo", "hi", "ls",
        "hs", "num", "nan", "equ", "clamp", "wrap", "shiftamt", "NaN", "xorsign", "abs", "relu", "satfinite",
        "mbarrier", "complete_tx::bytes", "expect_tx", "noinc", "shared::cta", "b32", "u32", "s32"]
OPCODES = ["add", "sub", "mul", "mad", "fma", "div", "rem", "abs", "neg", "min", "max", "shl", "shr", "and", "or",
           "xor", "not", "cnot", "popc", "clz", "brev", "bfe", "bfi", "prmt", "lop3", "shf", "setp", "selp", "set",
           "slct", "cvt", "cvta", "mov", "ld", "st", "ldu", "atom", "red", "shfl", "vote", "match", "redux",
           "activemask", "bar", "barrier", "membar", "fence", "nanosleep", "ldmatrix", "stmatrix", "cp",
           "mma", "wgmma", "mbarrier", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "testp",
           "copysign", "dp4a", "dp2a", "sad", "mul24", "mad24", "bfind", "fns", "elect", "griddepcontrol",
           "prefetch", "isspacep", "getctarank", "applypriority", "discard", "tensormap", "multimem", "wmma",
           "movmatrix", "stackrestore", "alloca", "trap", "brkpt", "pmevent", "exit", "ret", "bra", "call"]


def _token_kind(tok):
    if tok.startswith("%"):
        return "reg"
    if re.fullmatch(r"\d+|0[xX][0-9A-Fa-f]+|0[fFdD][0-9A-Fa-f]+", tok):
        return "num"
    if "." in tok and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:]*", tok):
        return "opc"
    return "other"


def _nearby(rng, tok):
    """A token of the same kind as ``tok``: the mutations ptxas would reject and a user might write."""
    kind = _token_kind(tok)
    if kind == "reg":
        return pick(rng, REG_FORMS).format(int(pick(rng, [0, 1, 2, 7, 99, 100000])))
    if kind == "num":
        return str(pick(rng, NUMBERS))
    if kind == "opc":
        parts = tok.split(".")
        r = rng.random()
        if r < 0.3 and len(parts) > 1:                      # another type
            i = int(rng.integers(1, len(parts)))
            parts[i] = str(pick(rng, TYPES))
        elif r < 0.5 and len(parts) > 1:                    # another state space or modifier
            i = int(rng.integers(1, len(parts)))
            parts[i] = str(pick(rng, SPACES + MODS))
        elif r < 0.65 and len(parts) > 1:                   # a modifier dropped
            del parts[int(rng.integers(1, len(parts)))]
        elif r < 0.8:                                       # a modifier added
            parts.insert(int(rng.integers(1, len(parts) + 1)), str(pick(rng, MODS + TYPES)))
        else:                                               # another opcode
            parts[0] = str(pick(rng, OPCODES))
        return ".".join(parts)
    return tok


def mutate_tokens(rng, toks, nmut):
    toks = list(toks)
    for _ in range(nmut):
        if not toks:
            break
        r = rng.random()
        i = int(rng.integers(len(toks)))
        if r < 0.35:
            toks[i] = _nearby(rng, toks[i])
        elif r < 0.5:
            del toks[i]
        elif r < 0.6:
            toks.insert(i, toks[i])
        elif r < 0.68:
            j = int(rng.integers(len(toks)))
            toks[i], toks[j] = toks[j], toks[i]
        elif r < 0.76:
            toks.insert(i, bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8)).decode("latin-1"))
        elif r < 0.82:
            toks = toks[:i]
        elif r < 0.9:                                       # an operand duplicated: ', x' after x
            toks.insert(i + 1, ", " + toks[i])
        else:
            toks.insert(i, str(pick(rng, ["{", "}", "[", "]", "(", ")", ";", ",", "+", "-", "<", ">", "|",
                                           "@", "!", "\n", "//", "/*", "*/", "\"", "\0", "\u00e9"])))
    return "".join(toks)


# -- kind: ptx ---------------------------------------------------------------------------------------------
_TOKCACHE = {}


def gen_ptx(rng):
    texts, _ = seeds()
    k = int(rng.integers(len(texts)))
    toks = _TOKCACHE.get(k)
    if toks is None:
        toks = _TOKCACHE[k] = TOKEN.findall(texts[k])
    # mutate inside the body (most tokens), sometimes in the header
    text = mutate_tokens(rng, toks, int(rng.integers(1, 5)))
    launch = rng.random() < 0.5

    def run():
        module = load_ptx(text)
        for name in module.kernels[:3]:
            prog = module.program(name)
            if not launch:
                continue
            g = GlobalMemory()
            buf = g.alloc(1 << 16)
            args = [buf if p.ptype in ("u64", "b64", "s64") and p.count == 1 else
                    (bytes(p.size) if p.count > 1 else 16) for p, _ in prog.kernel_params]
            module.launch(name, grid=(1, 1, 1), block=(32, 1, 1), args=args, gmem=g, out=io.StringIO(),
                          max_instructions=300, shared_bytes=256)
    return run, f"ptx: seed text {k} mutated"


# -- kind: warp --------------------------------------------------------------------------------------------
def _random_operand(rng):
    r = rng.random()
    if r < 0.45:
        return pick(rng, REG_FORMS).format(int(rng.integers(0, 8)))
    if r < 0.7:
        return str(pick(rng, NUMBERS))
    if r < 0.85:
        base = pick(rng, REG_FORMS).format(int(rng.integers(0, 8)))
        off = pick(rng, ["", "+4", "+16", "-4", "+99999999999999999999999", "+0x7FFFFFFF", "+1"])
        return f"[{base}{off}]"
    if r < 0.95:
        return "{" + ", ".join(pick(rng, REG_FORMS).format(int(rng.integers(0, 8)))
                               for _ in range(int(pick(rng, [1, 2, 3, 4, 8])))) + "}"
    return str(pick(rng, ["%laneid", "%tid.x", "%clock64", "%warpid", "_", "%lanemask_lt", "sym", "[sym]"]))


def gen_warp_text(rng):
    _, lines = seeds()
    out = []
    for _ in range(int(rng.integers(0, 3)) if rng.random() < 0.3 else 0):
        out.append(f".reg .{pick(rng, TYPES)} {pick(rng, REG_FORMS).format(int(rng.integers(0, 8)))}"
                   + (f"<{int(pick(rng, [1, 4, 70000, 100000000]))}>" if rng.random() < 0.2 else "") + ";")
    for _ in range(int(rng.integers(1, 5))):
        if rng.random() < 0.2:                             # a made-up instruction: any opcode, any qualifiers
            opc = ".".join([str(pick(rng, OPCODES))] + [str(pick(rng, MODS + TYPES + SPACES))
                                                        for _ in range(int(rng.integers(0, 5)))])
            out.append(f"{opc} " + ", ".join(_random_operand(rng) for _ in range(int(rng.integers(0, 6)))) + ";")
            continue
        line = str(pick(rng, lines))
        m = re.match(r"(@!?%\w+\s+)?(\S+)\s*(.*?);?$", line)
        guard, opc, rest = m.group(1) or "", m.group(2), m.group(3)
        ops = [o.strip() for o in re.split(r",(?![^{]*})", rest)] if rest else []
        # variables of the seed module do not exist here: their addresses become registers
        ops = [re.sub(r"\[[A-Za-z_$][\w$.]*(\+\d+)?\]", lambda mm: "[%rd0" + (mm.group(1) or "") + "]", o)
               for o in ops]
        r = rng.random()
        if r < 0.6:                                        # a valid instruction: registers renumbered only
            ops = [re.sub(r"(%[a-z]+)\d+", lambda mm: mm.group(1) + str(int(rng.integers(0, 8))), o) for o in ops]
        elif r < 0.7 and ops:                              # operands replaced
            for _ in range(int(rng.integers(1, len(ops) + 1))):
                ops[int(rng.integers(len(ops)))] = _random_operand(rng)
        elif r < 0.8:                                      # an operand dropped or added
            if ops and rng.random() < 0.5:
                del ops[int(rng.integers(len(ops)))]
            else:
                ops.insert(int(rng.integers(len(ops) + 1)), _random_operand(rng))
        else:
            opc = _nearby(rng, opc if "." in opc else opc + ".b32")
        out.append(f"{guard}{opc} {', '.join(ops)};")
    return "\n".join(out)


def _random_bits(rng, width):
    if width == 1:
        return rng.integers(0, 2, 32).astype(bool)
    return rng.integers(0, 1 << 63, 32, dtype=np.uint64).astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


def gen_warp(rng):
    text = gen_warp_text(rng)
    regs = []
    for _ in range(int(rng.integers(0, 6))):
        regs.append((pick(rng, ["%r{}", "%rd{}", "%rs{}", "%f{}", "%fd{}", "%h{}", "%p{}"]).format(
            int(rng.integers(0, 8))), int(rng.integers(0, 1 << 31))))
    opts = WarpOptions(cp_async=str(pick(rng, ["deferred", "eager"])),
                       uninitialized=str(pick(rng, ["zero", "zero", "error"])))
    smem = int(pick(rng, [0, 64, 1024, 48 * 1024]))

    def run():
        g = GlobalMemory()
        w = Warp(smem_bytes=smem, gmem=g, options=opts)
        buf = g.alloc(4096)
        r = np.random.default_rng(len(text))
        for name, seed in regs:
            width = w.reg_width(name)
            if width in (1, 16, 32, 64):
                w.regs[name] = _random_bits(np.random.default_rng(seed), width)
        w.regs["%rd0"] = np.full(32, buf, np.uint64) + (np.arange(32, dtype=np.uint64) * np.uint64(4))
        w.regs["%r0"] = (np.arange(32, dtype=np.uint32) * 4) if r.random() < 0.5 else np.zeros(32, np.uint32)
        w.run(text)
        w.bank_report()
    return run, text


# -- kind: api ---------------------------------------------------------------------------------------------
ODD_VALUES = [None, "x", b"\x00", 1.5, -1, 0, 2 ** 40, 2 ** 64, -(2 ** 63) - 1, float("nan"), float("inf"), True,
              [1, 2], [1.5] * 32, list(range(32)), [2 ** 70] * 32, np.float32(1.5), np.float16(2), np.int8(-3),
              np.uint64(2 ** 63), np.zeros(31), np.zeros((32, 2)), np.zeros(32, np.complex64), np.zeros(32, object),
              np.array(["a"] * 32), np.arange(32, dtype=np.float64), np.full(32, -1, np.int64), {}, (), [[1]],
              np.zeros(0), complex(1, 2), [None] * 32, [1] * 31 + [1.5], [True] * 32, np.bool_(True)]
KERNEL = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n, .param .f32 x, .param .align 4 .b8 s[8])
{
    .reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .f32 %f<2>; .reg .pred %p<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    ld.param.f32 %f1, [x];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd2, %rd2, %rd3;
    st.global.f32 [%rd2], %f1;
DONE:
    ret;
}
"""
_MODULE = None
MMA_INSTRS = ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
              "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16", "mma.sync.aligned.m16n8k16", "mma", "",
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.extra", "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"]
DTYPES = [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_, np.complex64, object]


def _rand_array(rng):
    shape = tuple(int(x) for x in rng.choice([0, 1, 4, 8, 16, 32, 17, 64], int(rng.integers(0, 4))))
    dt = DTYPES[int(rng.integers(len(DTYPES)))]
    if dt is object:
        return np.empty(shape, object)
    return (rng.standard_normal(shape) * 4).astype(dt)


def _api_write(rng):
    name = str(pick(rng, ["%r1", "%rd1", "%rs1", "%f1", "%fd1", "%h1", "%p1", "%hh1", "%x", "x", "%laneid",
                           "%tid.x", 5, None, "%q<3>"]))
    decl = pick(rng, [None, "b128", "f32", "f16", "bf16", "u8", "s64", "pred", "f16x2", "e4m3"])
    v = ODD_VALUES[int(rng.integers(len(ODD_VALUES)))] if rng.random() < 0.6 else _rand_array(rng)

    def run():
        w = Warp()
        if decl is not None and isinstance(name, str):
            w.declare(str(decl), [name])
        w.write(name, v)
        w.read(name)
    return run, f"write({name!r}, {v!r:.80}) decl={decl}"


def _api_launch(rng):
    global _MODULE
    if _MODULE is None:
        _MODULE = load_ptx(KERNEL)
    pool = [0, 1, 2 ** 64, -1, 1.5, float("nan"), "x", None, b"\0" * 8, b"\0" * 3, np.zeros(2, np.float32),
            np.zeros(3, np.uint8), [1, 2], True, np.float32(2), np.int64(-5), 2 ** 32, -(2 ** 31), object()]
    nargs = int(pick(rng, [0, 3, 4, 4, 4, 5]))
    args = [pool[int(rng.integers(len(pool)))] for _ in range(nargs)]
    kw = {}
    for key, choices in (("grid", [1, (1, 1, 1), (0,), (2, 2), "x", None, (1, 1, 1, 1), -1, 2 ** 40, 1.5]),
                         ("block", [32, (32,), 0, 1025, (33, 1, 1), "a", (2 ** 31,), None, 64]),
                         ("shared_bytes", [0, -1, 2 ** 40, "x", 1.5, None, 100000, 1 << 20]),
                         ("schedule", [None, "round_robin", ("random", 1), ("random", "x"), "fifo", ("random",), 5]),
                         ("engine", ["fast", "reference", "turbo", None]),
                         ("max_instructions", [10, 0, -1, "x", None, 1.5, 2 ** 70]),
                         ("workers", [1, 0, -2, "x"]),
                         ("kernel", ["k", "nope", None, 5, ""])):
        if rng.random() < 0.35:
            kw[key] = choices[int(rng.integers(len(choices)))]

    def run():
        g = GlobalMemory()
        a = list(args)
        if a and rng.random() < 0.7:
            a[0] = g.alloc(4096)
        kernel = kw.pop("kernel", "k")
        _MODULE.launch(kernel, args=a, gmem=g, out=io.StringIO(), **kw)
    return run, f"launch args={args!r:.120} kw={kw!r:.120}"


def _api_mma(rng):
    from emulator import gemm, mma
    instr = str(pick(rng, MMA_INSTRS))
    A, B, C = _rand_array(rng), _rand_array(rng), _rand_array(rng)
    if rng.random() < 0.5:                                 # plausible shapes, odd dtypes
        A = (rng.standard_normal((16, 16)) * 2).astype(DTYPES[int(rng.integers(4))])
        B = (rng.standard_normal((16, 8)) * 2).astype(DTYPES[int(rng.integers(4))])
        C = np.zeros((16, 8), DTYPES[int(rng.integers(5))])
    which = rng.random()
    arch = str(pick(rng, ["sm_90", "sm_80", "sm_70", "x"])) if rng.random() < 0.2 else "sm_90"

    def run():
        if which < 0.5:
            mma(instr, A, B, C, arch=arch)
        else:
            gemm(A, B, C, instr=instr, arch=arch)
    return run, f"mma/gemm {instr} A{A.shape}{A.dtype} B{B.shape}{B.dtype} C{C.shape}{C.dtype} {arch}"


def _api_misc(rng):
    from emulator import check_layout
    r = rng.random()
    if r < 0.35:
        kw = {k: v for k, v in (("smem_bytes", pick(rng, [0, -1, 10 ** 12, 1.5, "x", 1024])),
                               ("arch", pick(rng, ["sm_90", "sm_70", None, 5])),
                               ("options", pick(rng, [None, "x", 5]))) if rng.random() < 0.5}

        def run():
            Warp(**kw)
        return run, f"Warp(**{kw})"
    if r < 0.55:
        kw = {k: v for k, v in (("cp_async", pick(rng, ["deferred", "x", None, 1])),
                               ("uninitialized", pick(rng, ["zero", "error", "nan", None]))) if rng.random() < 0.7}

        def run():
            WarpOptions(**kw)
        return run, f"WarpOptions(**{kw})"
    if r < 0.75:
        instr = str(pick(rng, MMA_INSTRS + ["ldmatrix.sync.aligned.m8n8.x4.shared.b16"]))
        op = str(pick(rng, ["A", "B", "C", "D", "E", 0]))
        lay = str(pick(rng, ["((_4,_8),(_2,_2)):((_32,_1),(_16,_8))", "(_4,_8):(_1,_4)", "", "(((", "_1:_0",
                              "(_2,_2):(_0,_0)", "((_4,_8),(_2,_2)):((_32,_1),(_16,_8)):x"]))

        def run():
            check_layout(instr, op, lay)
        return run, f"check_layout({instr!r}, {op!r}, {lay!r})"
    w = Warp()
    name = pick(rng, ["%r1", "%nope", 5, None, "%laneid", "", "%p"])

    def run():
        w.read(name)
    return run, f"read({name!r})"


def _api_cli(rng):
    from emulator.cli import main
    tmp = tempfile.mkdtemp(prefix="warpemu-fuzz-")
    files = {"good": os.path.join(tmp, "k.ptx"), "garbage": os.path.join(tmp, "g.ptx"),
             "empty": os.path.join(tmp, "e.ptx"), "missing": os.path.join(tmp, "missing.ptx"),
             "dir": tmp, "npy": os.path.join(tmp, "a.npy"), "badnpy": os.path.join(tmp, "b.npy")}
    data = bytes(rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8))
    which = str(pick(rng, ["good", "garbage", "empty", "missing", "dir"]))
    argsets = [["--grid", "1"], ["--grid", "x"], ["--block", "2000"], ["--block", "0,1"], ["--shared", "-5"],
               ["--arg", "0"], ["--arg", "zeros:f32:32"], ["--arg", "zeros:q:1"], ["--arg", "zeros:f32:-1"],
               ["--arg", files["npy"]], ["--arg", files["badnpy"]], ["--arg", "1.5"], ["--arg", "x"],
               ["--max-instructions", "5"], ["--max-instructions", "-1"], ["--arch", "sm_70"], ["--arch", "sm_80"],
               ["--schedule", "3"], ["--timeline", os.path.join(tmp, "t.txt")], ["--bank-report"],
               ["--out", os.path.join(files["missing"], "x")], ["--cp-async", "eager"], ["--trace"]]
    argv = ["run", files[which], "--kernel", str(pick(rng, ["k", "nope"]))]
    for _ in range(int(rng.integers(0, 6))):
        argv += argsets[int(rng.integers(len(argsets)))]
    if rng.random() < 0.15:
        argv = [str(pick(rng, ["show", "run", "demo", "nope", "--help"]))] + \
            [str(pick(rng, ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "x", "--operand", "E", "--svg",
                             os.path.join(files["missing"], "a.svg"), "--row-stride", "-3", "--rows", "0",
                             "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "--swizzle", "9,9,9", "--tiles", "0,0"]))
             for _ in range(int(rng.integers(0, 5)))]

    def run():
        import contextlib
        try:
            with open(files["good"], "w") as f:
                f.write(KERNEL)
            with open(files["garbage"], "wb") as f:
                f.write(data)
            open(files["empty"], "w").close()
            np.save(files["npy"], np.zeros(32, np.float32))
            with open(files["badnpy"], "wb") as f:
                f.write(b"\x93NUMPY" + data)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                try:
                    rc = main(argv)
                except SystemExit as e:                    # argparse: usage errors exit 2, --help exits 0
                    if e.code not in (0, 2):
                        raise
                    rc = e.code
            if rc not in (0, 1, 2):
                raise AssertionError(f"exit status {rc}")
        finally:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    return run, f"cli {argv}"


LAYOUT_TOKENS = list("()_,:0123456789 -x[]") + ["_16", "_8", "(_4,_8)", ":", "((", "))", "_0", "-1"]
LAYOUT_ARGS = [0, 1, 5, -1, 10 ** 30, "x", None, (), (0,), (8,), (8, 4), ((4, 8), 2), (1, "a"), 1.5, True, ((),)]


def _api_layout(rng):
    from emulator.cute import Layout, crd2idx, idx2crd
    text = "".join(pick(rng, LAYOUT_TOKENS) for _ in range(int(rng.integers(0, 20))))
    args = [pick(rng, LAYOUT_ARGS) for _ in range(3)]
    which = rng.random()

    def run():
        if which < 0.5:
            lay = Layout.parse(text)
            str(lay)
            lay(args[0])
        elif which < 0.75:
            idx2crd(*args[:2 + int(rng.integers(0, 2))])
        else:
            crd2idx(*args[:2 + int(rng.integers(0, 2))])
    return run, f"layout {text!r} {args!r}"


def _api_memory(rng):
    vals = ODD_VALUES + [np.arange(8, dtype=np.float32), b"abcd", bytearray(3), np.zeros((2, 3), np.int16)]
    a, b = pick(rng, vals), pick(rng, vals)
    which = int(rng.integers(7))
    text = str(pick(rng, ["", ".version 8.0", None, b".version", KERNEL, KERNEL[:200]]))
    arch = pick(rng, [None, "sm_90", "sm_70", 5, "", "sm_90a"])

    def run():
        g = GlobalMemory()
        base = g.alloc(64)
        if which == 0:
            g.upload(a)
        elif which == 1:
            g.download(base if rng.random() < 0.5 else a, b)
        elif which == 2:
            g.write(base if rng.random() < 0.5 else a, b)
        elif which == 3:
            g.alloc(a, fill=b if isinstance(b, int) else 0)
        elif which == 4:
            g.view(base, a)
        elif which == 5:
            load_ptx(text, arch=arch)
        else:
            Warp(gmem=pick(rng, [g, "x", None, 5])).declare(pick(rng, ["f32", "f99", 5]), pick(rng, [["%x"], "%x", [5]]))
    return run, f"memory op {which} {a!r:.60} {b!r:.60}"


API_GENERATORS = [(_api_write, 0.30), (_api_launch, 0.22), (_api_mma, 0.10), (_api_misc, 0.16), (_api_cli, 0.08),
                  (_api_layout, 0.06), (_api_memory, 0.08)]


def gen_api(rng):
    r = rng.random()
    acc = 0.0
    for g, p in API_GENERATORS:
        acc += p
        if r < acc:
            return g(rng)
    return API_GENERATORS[0][0](rng)


import typegen  # noqa: E402  (beside this file: the type- and grammar-driven generators)

GENERATORS = {"ptx": gen_ptx, "warp": gen_warp, "api": gen_api, "types": typegen.gen_types,
              "grammar": typegen.gen_grammar}


def warm_up():
    """Compile the jitted paths (mma, the fast engine) once, so that no input pays for the compilation."""
    from emulator import gemm, mma
    a = np.ones((16, 16), np.float16)
    b = np.ones((16, 8), np.float16)
    mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", a, b, np.zeros((16, 8), np.float32))
    gemm(a, b, np.zeros((16, 8), np.float32), instr="mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
    m = load_ptx(KERNEL)
    g = GlobalMemory()
    m.launch("k", args=[g.alloc(256), 8, 1.0, bytes(8)], gmem=g, out=io.StringIO())


def where(exc):
    """The innermost frame of the project in a traceback: file:line function."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if "/emulator/" in f.filename or "/isa/" in f.filename] or frames
    f = mine[-1]
    return f"{os.path.relpath(f.filename, ROOT)}:{f.lineno} {f.name}"


def check(kind, seed):
    """Generate and run input number ``seed`` of ``kind``. Returns None, or (exception type, where, repro)."""
    rng = np.random.default_rng([KINDS.index(kind), seed])
    run, repro = GENERATORS[kind](rng)
    try:
        with np.errstate(all="ignore"):
            run()
    except EmulatorError:
        return None
    except RecursionError as e:
        return ("RecursionError", where(e), repro)
    except SystemExit as e:                                # a library call that would end the caller's process
        return (f"SystemExit: {str(e.code)[:200]}", where(e), repro)
    except Exception as e:                                 # noqa: BLE001 (that is what we look for)
        return (f"{type(e).__name__}: {str(e)[:200]}", where(e), repro)
    return None
