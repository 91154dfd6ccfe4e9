"""Lane-ownership views: every cell checked against the fragment tables and against execution."""
import itertools
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from emulator import EmulatorError, Warp
from emulator.cli import main
from emulator.layouts.show import (Figure, Grid, ldmatrix_view, matrix_cells, mma_cells, mma_figure, mma_view,
                           registers_matrix, registers_view)
from emulator.layouts.swizzle import (GemmIdentityThreadblockSwizzle, conflict_panel, conflict_figure, nvmma,
                              threadblock_view, tile_view)
from emulator.cute import Swizzle
from isa.mma import VARIANTS

F16_K8 = "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"
F16_K16 = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
CELL = re.compile(r"^T(\d+):([abcdr])(\d+)(?:\.(\d+))?$")
L = np.arange(32)


def _parse(label):
    m = CELL.match(label)
    assert m, label
    lane, _, reg, e = m.groups()
    return int(lane), int(reg), int(e or 0)


# ---- mma views against the fragment tables (every variant, every operand, every cell) ---------------

@pytest.mark.parametrize("spelling", list(VARIANTS))
def test_mma_view_matches_fragment_table(spelling):
    v = VARIANTS[spelling]
    for op in "ABCD":
        grid = mma_view(spelling, op)
        f = v.fragment(op)
        n_regs, _, epr, _ = f.shape
        rows, cols = v.tile_shape(op)
        assert grid.shape == (rows, cols)
        seen = set()
        for r, c in itertools.product(range(rows), range(cols)):
            lane, reg, e = _parse(grid.cell(r, c))
            assert tuple(f[reg, lane, e]) == (r, c), (op, r, c, grid.cell(r, c))
            assert grid.keys[r, c] == lane
            seen.add((reg, lane, e))
        assert len(seen) == n_regs * 32 * epr
        assert (".%d" % (epr - 1) in grid.text()) == (epr > 1)


# ---- mma views against execution ------------------------------------------------------------------

def _regs_from_view(grid, values, nregs, width):
    """Pack a tile into per-lane registers following the view's labels."""
    regs = np.zeros((nregs, 32), np.uint64)
    bits = values.view({16: np.uint16, 32: np.uint32}[width]).astype(np.uint64)
    for r, c in itertools.product(*map(range, grid.shape)):
        lane, reg, e = _parse(grid.cell(r, c))
        regs[reg, lane] |= bits[r, c] << np.uint64(width * e)
    return regs.astype(np.uint32)


def _tile_from_view(grid, regs, width, dtype):
    out = np.zeros(grid.shape, {16: np.uint16, 32: np.uint32}[width])
    for r, c in itertools.product(*map(range, grid.shape)):
        lane, reg, e = _parse(grid.cell(r, c))
        out[r, c] = (int(regs[reg][lane]) >> (width * e)) & ((1 << width) - 1)
    return out.view(dtype)


@pytest.mark.parametrize("spelling", [F16_K8, F16_K16])
def test_mma_views_by_execution(spelling):
    """Place A, B and C on a warp by the views, run the instruction, read D by the view: D == A @ B + C
    exactly (small integers), so every cell of the A, B, C and D views names the right lane/register."""
    v = VARIANTS[spelling]
    M, N, K = v.shape
    rng = np.random.default_rng(5)
    A = rng.integers(-8, 8, (M, K)).astype(np.float16)
    B = rng.integers(-8, 8, (K, N)).astype(np.float16)
    C = rng.integers(-64, 64, (M, N)).astype(np.float32)
    views = {op: mma_view(spelling, op) for op in "ABCD"}
    w = Warp()
    names = {"A": [f"%r{i}" for i in range(v.n_a)], "B": [f"%r{10 + i}" for i in range(v.n_b)],
             "C": [f"%f{10 + i}" for i in range(4)], "D": [f"%f{i}" for i in range(4)]}
    for op, X, width in (("A", A, 16), ("B", B, 16), ("C", C, 32)):
        for name, reg in zip(names[op], _regs_from_view(views[op], X, len(names[op]), width)):
            w.write(name, reg)
    w.run(f"{spelling} {{{', '.join(names['D'])}}}, {{{', '.join(names['A'])}}}, {{{', '.join(names['B'])}}}, "
          f"{{{', '.join(names['C'])}}};")
    D = _tile_from_view(views["D"], [w.read(n) for n in names["D"]], 32, np.float32)
    expect = A.astype(np.float64) @ B.astype(np.float64) + C
    assert np.array_equal(D, expect.astype(np.float32))
    # the live-register views read the same matrices back
    assert np.array_equal(registers_matrix(w, spelling, "A", names["A"]), A)
    assert np.array_equal(registers_matrix(w, spelling, "D", names["D"]), D)
    g = registers_view(w, spelling, "B", names["B"])
    assert g.shape == (K, N) and g.cell(0, 0) == f"{float(B[0, 0]):g}"


def test_registers_matrix_checks_register_count():
    with pytest.raises(EmulatorError, match="4 registers"):
        registers_matrix(Warp(), F16_K16, "A", ["%r0"])


# ---- ldmatrix / stmatrix against execution ---------------------------------------------------------

ROWS = (L % 8) * 272 + (L // 8) * 16 + 64  # rows of every matrix scattered, 16-byte aligned


@pytest.mark.parametrize("nmat,trans", list(itertools.product((1, 2, 4), (False, True))))
def test_ldmatrix_view_by_execution(nmat, trans):
    instr = f"ldmatrix.sync.aligned.m8n8.x{nmat}{'.trans' if trans else ''}.shared.b16"
    fig = ldmatrix_view(instr, ROWS)
    w = Warp()
    w.smem[:] = 0
    w.smem.view(np.uint16)[:] = np.arange(w.smem.size // 2, dtype=np.uint16)  # iota: each element names itself
    w.write("%r8", ROWS)
    regs = [f"%r{i}" for i in range(nmat)]
    w.run(f"{instr} {{{', '.join(regs)}}}, [%r8];")
    got = [w.read(r) for r in regs]
    src = fig.panels[0]
    for j in range(nmat):
        grid = fig.panels[1 + j]
        for r, c in itertools.product(range(8), range(8)):
            lane, reg, e = _parse(grid.cell(r, c))
            assert reg == j
            # the view says lane `lane` holds element (r, c) of matrix j in half e of d_j
            src_lane = int(src.cell(8 * j + r, 0)[1:])
            assert src_lane == 8 * j + r
            expect = (int(ROWS[src_lane]) + 2 * c) // 2
            assert (int(got[j][lane]) >> (16 * e)) & 0xFFFF == expect, (j, r, c)
        assert src.cell(8 * j, 1) == f"0x{int(ROWS[8 * j]):x}"


@pytest.mark.parametrize("nmat,trans", list(itertools.product((1, 2, 4), (False, True))))
def test_stmatrix_view_by_execution(nmat, trans):
    instr = f"stmatrix.sync.aligned.m8n8.x{nmat}{'.trans' if trans else ''}.shared.b16"
    fig = ldmatrix_view(instr)
    w = Warp()
    w.smem[:] = 0
    regs = [f"%r{i}" for i in range(nmat)]
    for j, name in enumerate(regs):  # lane l, register j: halves hold 1000*j + 2l + e + 1 (never zero)
        w.write(name, ((1000 * j + 2 * L + 1) | ((1000 * j + 2 * L + 2) << 16)).astype(np.uint32))
    w.write("%r8", ROWS)
    w.run(f"{instr} [%r8], {{{', '.join(regs)}}};")
    mem = w.smem.view(np.uint16)
    for j in range(nmat):
        grid = fig.panels[1 + j]
        for r, c in itertools.product(range(8), range(8)):
            lane, reg, e = _parse(grid.cell(r, c))
            assert reg == j and grid.cell(r, c).split(":")[1].startswith("r")
            assert mem[(int(ROWS[8 * j + r]) + 2 * c) // 2] == 1000 * j + 2 * lane + e + 1


def test_matrix_cells_formula():
    lane, elem = matrix_cells(1, False)
    assert lane[0, 0, 0] == 0 and lane[0, 7, 7] == 31 and elem[0, 7, 7] == 1
    lt, et = matrix_cells(1, True)
    assert (lt[0] == lane[0].T).all() and (et[0] == elem[0].T).all()


# ---- rendering ------------------------------------------------------------------------------------

def test_svg_is_well_formed_and_coloured_by_lane():
    g = mma_view(F16_K16, "A")
    svg = g._repr_svg_()
    root = ET.fromstring(svg)
    rects = [e for e in root.iter() if e.tag.endswith("rect")]
    fills = {r.get("fill") for r in rects[1:]}
    assert len(rects) == 1 + 16 * 16 and len(fills) == 32  # one colour per lane
    texts = [e.text for e in root.iter() if e.tag.endswith("text")]
    assert "T31:a3.1" in texts and "T0:a0.0" in texts
    fig = mma_figure(F16_K16)
    assert isinstance(fig, Figure) and ET.fromstring(fig.svg()) is not None
    assert "operand B (16 x 8 f16" in fig.text()


def test_text_grid_like_the_manual():
    lines = mma_view(F16_K8, "C").text().splitlines()
    assert lines[0].startswith(F16_K8)
    assert lines[2].split() == ["m0", "T0:c0", "T0:c1", "T1:c0", "T1:c1", "T2:c0", "T2:c1", "T3:c0", "T3:c1"]
    assert lines[10].split()[:3] == ["m8", "T0:c2", "T0:c3"]


def test_cli_show(tmp_path, capsys):
    assert main(["show", F16_K16, "--operand", "A"]) == 0
    out = capsys.readouterr().out
    assert "T0:a0.0" in out and "k15" in out
    f = tmp_path / "a.svg"
    assert main(["show", F16_K16, "--operand", "B", "--svg", str(f)]) == 0
    ET.parse(f)
    assert main(["show", "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "--row-stride", "128"]) == 0
    assert "0x380" in capsys.readouterr().out
    assert main(["show", "nvmma:128"]) == 0 and main(["show", "threadblock:4", "--tiles", "4,8"]) == 0
    assert main(["show", "Swizzle<2,4,3>", "--cols", "32"]) == 0
    assert main(["show", "conflicts"]) == 0
    capsys.readouterr()
    assert main(["show", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16", "--operand", "A"]) == 1
    assert "supported" in capsys.readouterr().err
    assert main(["show", "ldmatrix.sync.aligned.m16n16.x1.shared.b8"]) == 1


# ---- swizzles -------------------------------------------------------------------------------------

@pytest.mark.parametrize("nbytes", [32, 64, 128])
def test_nvmma_matches_the_triton_formula(nbytes):
    """Triton's NVMMA shared layout: rows of `nbytes`, vector (16 B) index XOR (row // per_phase) % max_phase,
    per_phase = 128 // nbytes, max_phase = nbytes // 16; over 64 rows."""
    sw = nvmma(nbytes)
    per_phase, max_phase = 128 // nbytes, nbytes // 16
    for r, c, b in itertools.product(range(64), range(nbytes // 16), range(16)):
        expect = r * nbytes + 16 * (c ^ ((r // per_phase) % max_phase)) + b
        assert sw(r * nbytes + 16 * c + b) == expect
    g = tile_view(sw, 8, nbytes)
    assert all(sorted(row) == sorted(f"c{c}" for c in range(nbytes // 16)) for row in g.labels)


def test_conflict_counts_of_the_picture():
    _, plain = conflict_panel(Swizzle(0, 4, 3), "")
    _, swz = conflict_panel(nvmma(128), "")
    assert (plain.wavefronts, plain.conflicts) == (32, 28) and (swz.wavefronts, swz.conflicts) == (4, 0)
    assert "4 wavefronts, 0 bank conflicts" in conflict_figure().text()


@pytest.mark.parametrize("N,tm,tn", list(itertools.product((1, 2, 4, 8), (1, 3, 8), (1, 2, 5, 6, 16))))
def test_threadblock_swizzle_covers_every_tile_once(N, tm, tn):
    sw = GemmIdentityThreadblockSwizzle(N)
    shape = (tm, tn, 1)
    order = sw.tile_map(shape)
    assert (order >= 0).all() and len(set(order.ravel().tolist())) == tm * tn
    gx, gy, _ = sw.get_grid_shape(shape)
    lt = sw.get_log_tile(shape)
    assert gx == tm << lt and gy == -(-tn // (1 << lt))


def test_threadblock_swizzle_formulas():
    sw = GemmIdentityThreadblockSwizzle(8)
    assert sw.get_tiled_shape((1000, 1000, 64), (128, 128)) == (8, 8, 1)
    assert [sw.get_log_tile((8, n, 1)) for n in (1, 2, 3, 5, 6)] == [0, 1, 2, 2, 3]
    assert GemmIdentityThreadblockSwizzle(4).get_log_tile((8, 3, 1)) == 2
    assert sw.get_tile_offset(2, (5, 1, 0)) == (1, 5, 0)  # m = x >> 2, n = (y << 2) + (x & 3)
    assert threadblock_view(4, (8, 8)).cell(0, 4) == "#32"
    with pytest.raises(EmulatorError):
        GemmIdentityThreadblockSwizzle(3)


def test_docs_pictures_are_current():
    """docs/*.svg are what tools/make_layout_pictures.py draws today."""
    import importlib.util
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("pics", os.path.join(root, "tools", "make_layout_pictures.py"))
    pics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pics)
    for name, (svg, text) in pics.pictures().items():
        with open(os.path.join(root, "docs", name + ".svg")) as f:
            assert f.read() == svg, f"docs/{name}.svg is stale: run python tools/make_layout_pictures.py"
    assert "8 wavefronts, 4 bank conflicts" in pics.pictures()["ldmatrix_x4"][1]


@pytest.mark.parametrize("nbytes,elem", list(itertools.product((32, 64, 128), (1, 2, 4, 8))))
def test_nvmma_element_swizzle_agrees_with_bytes(nbytes, elem):
    from emulator.layouts.swizzle import nvmma_elements
    sb, se = nvmma(nbytes), nvmma_elements(nbytes, elem)
    for e in range(4096 // elem):
        assert se(e) * elem == sb(e * elem)
    assert str(nvmma_elements(128, 2)) == "Sw<3,3,3>"


def test_bank_tile_view_spreads_columns():
    from emulator.layouts.swizzle import bank_tile_view, element_banks
    plain = element_banks(Swizzle(0, 4, 3), 8, 128, 4)
    swz = element_banks(nvmma(128), 8, 128, 4)
    assert all(len(set(plain[:, c])) == 1 for c in range(32))  # a column sits in one bank
    assert all(len(set(swz[:, c])) == 8 for c in range(32))    # swizzled: eight different banks
    assert bank_tile_view(nvmma(128)).cell(1, 0) == "4"


@pytest.mark.parametrize("trans", [False, True])
def test_matrices_from_registers_after_ldmatrix(trans):
    from emulator.layouts.show import matrices_from_registers
    w = Warp()
    w.smem.view(np.uint16)[:] = np.arange(w.smem.size // 2, dtype=np.uint16)
    w.write("%r8", ROWS)
    w.run(f"ldmatrix.sync.aligned.m8n8.x4{'.trans' if trans else ''}.shared.b16 {{%r0, %r1, %r2, %r3}}, [%r8];")
    M = matrices_from_registers(w, ["%r0", "%r1", "%r2", "%r3"], trans)
    for j, r in itertools.product(range(4), range(8)):
        assert list(M[j, r]) == [(int(ROWS[8 * j + r]) + 2 * c) // 2 for c in range(8)]


@pytest.mark.parametrize("spelling", ["mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32",
                                      "mma.sync.aligned.m16n8k64.row.col.s32.s4.u4.s32",
                                      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                                      "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e5m2.f16",
                                      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                                      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64"])
def test_registers_matrix_decodes_every_type(spelling):
    from isa.fragments import pack
    v = VARIANTS[spelling]
    rng = np.random.default_rng(3)
    w = Warp()
    for op in "ABCD":
        rows, cols = v.tile_shape(op)
        bits = rng.integers(0, 1 << min(v.elem_bits(op), 62), (rows, cols), dtype=np.int64).astype(np.uint64)
        regs = pack(v, op, bits)
        names = [f"%rd{10 * 'ABCD'.index(op) + i}" if v.reg_bits(op) == 64 else f"%r{10 * 'ABCD'.index(op) + i}"
                 for i in range(regs.shape[0])]
        for n, r in zip(names, regs):
            w.write(n, r)
        M = registers_matrix(w, spelling, op, names)
        assert M.shape == (rows, cols)
        wbits = v.elem_bits(op)
        got = M.view({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[M.dtype.itemsize * 8])
        assert np.array_equal(got.astype(np.uint64) & np.uint64((1 << wbits) - 1), bits & np.uint64((1 << wbits) - 1))
        if v.elem_bits(op) == 4 and {"A": v.atype, "B": v.btype}.get(op) == "s4":
            assert M.min() >= -8 and M.max() <= 7 and M.dtype == np.int8
        assert registers_view(w, spelling, op, names).shape == (rows, cols)


def test_layout_view_of_a_swizzled_layout(capsys):
    from emulator.cute import Layout, composition
    from emulator.layouts.swizzle import layout_view
    g = layout_view(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), elem_bytes=2)
    assert g.shape == (8, 32) and g.cell(1, 0) == "72" and g.keys[1, 0] == (72 * 2 // 4) % 32
    for c in range(0, 32, 8):  # each 8-element (16-byte) chunk column lands in 8 different bank groups
        assert len({int(g.keys[r, c]) for r in range(8)}) == 8
    assert main(["show", "(8,64):(64,1)", "--swizzle", "3,3,3"]) == 0
    assert "Sw<3,3,3>" in capsys.readouterr().out
    assert main(["show", "8:1"]) == 1
