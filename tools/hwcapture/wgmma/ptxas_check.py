"""Check isa/wgmma.py against ptxas: every spelling in the table assembles for sm_90a, and its neighbours
that the table leaves out (other N, other type pairs, transposes where not allowed) do not.

    python tools/hwcapture/wgmma/ptxas_check.py        # needs ptxas (CUDA 12.4+)
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from isa.wgmma import VARIANTS, WgmmaVariant  # noqa: E402


def kernel(v, form="ss", trans=None):
    nd = v.n_d
    imms = ""
    if v.is_float:
        imms = ", 1, 1" + ((", 0" if form == "ss" else "") + ", 0" if (v.can_transpose if trans is None else trans)
                           else "")
    a = "%rd1" if form == "ss" else "{%a0, %a1, %a2, %a3}"
    return (".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %d<" + str(nd) +
            ">;\n.reg .b32 %a<4>;\n.reg .b64 %rd<3>;\n.reg .pred %p<2>;\nmov.b64 %rd1, 0;\nmov.b64 %rd2, 0;\n"
            "setp.eq.u32 %p1, 0, 0;\nwgmma.fence.sync.aligned;\n"
            f"{v.spelling} {{{', '.join(f'%d{i}' for i in range(nd))}}}, {a}, %rd2, %p1{imms};\n"
            "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\nret;\n}\n")


def accepts(text):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        with open(p, "w") as f:
            f.write(text)
        r = subprocess.run(["ptxas", "-arch=sm_90a", "-o", os.path.join(d, "k.cubin"), p], capture_output=True)
        return r.returncode == 0


def main():
    cases = [(s, kernel(v, f), True) for s, v in VARIANTS.items() for f in ("ss", "rs")]
    neighbours = [WgmmaVariant(40, "s32", "s8", "s8"), WgmmaVariant(264, "f32", "f16", "f16"),
                  WgmmaVariant(16, "f16", "bf16", "bf16"), WgmmaVariant(16, "f16", "tf32", "tf32"),
                  WgmmaVariant(40, "s32", "b1", "b1"), WgmmaVariant(16, "f32", "f16", "bf16")]
    cases += [(v.spelling, kernel(v), False) for v in neighbours]
    cases.append(("tf32 with imm-trans", kernel(VARIANTS["wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32"],
                                                trans=True), False))
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda c: accepts(c[1]), cases))
    wrong = [(s, want) for (s, _, want), g in zip(cases, got) if g != want]
    print(f"{len(cases)} cases, {len(wrong)} disagree with the table")
    for s, want in wrong:
        print("  ", s, "table says", "accepted" if want else "rejected")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
