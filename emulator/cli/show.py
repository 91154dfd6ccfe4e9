"""``python -m emulator show``: lane-ownership, ldmatrix, swizzle and layout pictures."""
import numpy as np

from ..layouts import swizzle
from ..layouts.show import _MATRIX, ldmatrix_view, metadata_view, mma_figure, mma_view


def _render(obj, args):
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(obj.svg())
        print(f"wrote {args.svg}")
    else:
        print(obj.text())
    return 0


def _gluon(args):
    from ..gluon import parse_layout
    from ..gluon.show import figure
    layout = parse_layout(args.gluon)
    try:
        shape = [int(x) for x in args.shape.lower().replace(",", "x").split("x")]
    except ValueError:
        raise SystemExit(f"--shape {args.shape!r}: expected sizes like 64x64")
    if args.convert:
        from ..gluon.convert import explain_convert
        rep = explain_convert(layout, parse_layout(args.convert), shape, elem_bits=8 * args.elem_bytes)
        print(rep)
        if args.svg:
            with open(args.svg, "w") as f:
                f.write(rep.view().svg())
            print(f"wrote {args.svg}")
        return 0
    return _render(figure(layout, shape), args)


def default_row_addresses(instr, row_stride):
    """Row addresses of an ldmatrix/stmatrix whose matrices never overlap: side by side (matrix j at byte 16j
    of each row) when a row holds them all (``row_stride >= 16 * matrices``), else one below the other
    (matrix j at 8 * row_stride * j)."""
    from ..layouts.show import parse_matrix_instr
    from ..errors import OperandError
    _, nmat, _ = parse_matrix_instr(instr)
    if row_stride < 16:
        raise OperandError(f"--row-stride {row_stride}: the rows of a matrix are 16 bytes; a smaller stride "
                           f"overlaps them")
    l = np.arange(32)
    step = 16 if row_stride >= 16 * nmat else 8 * row_stride
    return (l % 8) * row_stride + (l // 8) % nmat * step


def _cmd(args):
    if args.gluon:
        return _gluon(args)
    if not args.what:
        from ..errors import OperandError
        raise OperandError("show: give WHAT (an instruction, gmma:..., a layout), or --gluon LAYOUT --shape MxN")
    what = args.what.strip()
    if what.startswith("gmma:"):                     # gmma:K:128 / gmma:MN:64 / gmma:0x<descriptor>
        from ..layouts.show import descriptor_view
        parts = what.split(":")
        if parts[1].startswith("0x"):
            obj = descriptor_view(int(parts[1], 16), args.rows, len(parts) > 2 and parts[2] == "MN",
                                  args.elem_bytes)
        else:
            obj = descriptor_view((int(parts[2]) if len(parts) > 2 else 128, parts[1].upper() == "MN"), args.rows,
                                  elem_bytes=args.elem_bytes)
        return _render(obj, args)
    if what.startswith(("mma", "wgmma", "wmma.mma")):
        if args.operand == "E":
            obj = metadata_view(what, args.selector)
        else:
            obj = mma_view(what, args.operand) if args.operand else mma_figure(what)
    elif _MATRIX.match(what):
        addrs = None
        if args.row_stride is not None:
            addrs = default_row_addresses(what, args.row_stride)
        obj = ldmatrix_view(what, addrs)
    else:
        obj = swizzle.view_from_text(what, args)
    return _render(obj, args)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "show", help="draw who owns what: mma fragments, ldmatrix/stmatrix, swizzles",
        description="Lane-ownership pictures. WHAT is an mma.sync spelling (with --operand A/B/C/D, or all), an "
                    "mma.sp spelling (also --operand E: the metadata, with --selector), "
                    "a wgmma.mma_async spelling (--operand A/D), 'gmma:K:128' or 'gmma:MN:64' (a canonical descriptor's byte map, "
                    "with --rows/--elem-bytes) or 'gmma:0x<descriptor>[:MN]', an ldmatrix/stmatrix spelling, 'Swizzle<B,M,S>', 'nvmma:32|64|128' (with --rows/--cols/"
                    "--elem-bytes), 'threadblock:N' (with --tiles M,N), 'conflicts', or a rank-2 CuTe layout "
                    "'shape:stride' (with --swizzle B,M,S and --elem-bytes); or --gluon LAYOUT --shape MxN.")
    p.add_argument("what", nargs="?")
    p.add_argument("--gluon", metavar="LAYOUT", help="a Gluon layout, e.g. 'BlockedLayout([1,4],[4,8],[4,1],[1,0])' "
                   "or 'NVMMASharedLayout(128, 16)': draw who owns each element (or, shared, where each chunk "
                   "lives and its banks); with --shape")
    p.add_argument("--shape", default="64x64", help="--gluon: tensor shape, e.g. 64x64 or 128")
    p.add_argument("--convert", metavar="LAYOUT", help="--gluon: explain convert_layout to this layout "
                   "(what moves across lanes/warps, bank conflicts of the shared-memory round trip; --elem-bytes)")
    p.add_argument("--operand", choices=list("ABCDE"), help="E: the metadata of an mma.sp form (with --selector)")
    p.add_argument("--selector", type=int, default=0, help="mma.sp: the sparsity selector of --operand E")
    p.add_argument("--svg", metavar="FILE", help="write an SVG picture instead of printing text")
    p.add_argument("--row-stride", type=int, help="ldmatrix/stmatrix: bytes between the rows of each matrix "
                                                  "(shows addresses and banks); the matrices sit side by side "
                                                  "when a row holds them all, else one below the other, so "
                                                  "they never overlap")
    p.add_argument("--rows", type=int, default=8)
    p.add_argument("--cols", type=int, default=64)
    p.add_argument("--elem-bytes", type=int, default=2)
    p.add_argument("--tiles", default="8,8", help="threadblock swizzle: output tiles M,N")
    p.add_argument("--swizzle", metavar="B,M,S", help="layout: compose Swizzle<B,M,S> on element offsets")
    p.set_defaults(func=_cmd)
    return p
