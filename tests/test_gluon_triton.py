"""emulator.gluon against Triton 3.9's own linear layouts (tests/data/gluon/triton_layouts.json.gz, written by
tools/gluon/triton_layouts.py; Triton is not needed here)."""
import gzip
import json
import pathlib

import pytest

from emulator.gluon import GluonLayoutError, parse_layout
from emulator.gluon.utils import get_nvmma_layout, tmem_32x32b_reg_layout

DATA = pathlib.Path(__file__).parent / "data" / "gluon" / "triton_layouts.json.gz"


def load():
    with gzip.open(DATA, "rt") as f:
        return json.load(f)


def ours(layout, shape):
    if layout.startswith("nvmma_default:"):          # the seed's get_nvmma_layout against Triton's default
        _, dt, tr = layout.split(":")
        n = get_nvmma_layout(shape, dt, order=[0, 1] if tr == "True" else [1, 0])
        return {"swizzle_byte_width": n.swizzle_byte_width, "element_bitwidth": n.element_bitwidth,
                "transposed": n.transposed}
    if layout.startswith("tmem_reg:"):
        _, text, nw = layout.split(":")
        return tmem_32x32b_reg_layout(parse_layout(text), shape, int(nw)).to_linear(shape)
    return parse_layout(layout).to_linear(shape)


def compare(doc):
    good, bad = [], []
    for c in doc["cases"]:
        try:
            got = ours(c["layout"], c["shape"])
        except GluonLayoutError as e:
            got = {"error": str(e)}
        if "error" in c:
            (good if "error" in got else bad).append((c, got))
        elif "error" not in got and got == c["linear"]:
            good.append((c, got))
        else:
            bad.append((c, got))
    return good, bad


def test_every_triton_case_matches():
    doc = load()
    assert doc["triton_version"].startswith("3.")
    good, bad = compare(doc)
    assert len(doc["cases"]) > 1100
    msg = "\n".join(f"{c['layout']} {c['shape']}:\n  triton {c.get('linear', c.get('error'))}\n  ours   {g}"
                    for c, g in bad[:5])
    assert not bad, f"{len(bad)} of {len(doc['cases'])} differ:\n{msg}"


def test_the_comparison_can_fail():
    doc = load()
    c = next(c for c in doc["cases"] if c["layout"].startswith("BlockedLayout") and "linear" in c
             and len(c["linear"]["lane"]) == 5 and c["linear"]["lane"][0] != c["linear"]["lane"][1])
    wrong = dict(c, linear=dict(c["linear"], lane=c["linear"]["lane"][::-1]))
    good, bad = compare({"cases": [wrong]})
    assert len(bad) == 1


def test_kinds_covered():
    kinds = {c["layout"].split("(")[0].split(":")[0] for c in load()["cases"]}
    assert {"BlockedLayout", "SliceLayout", "DotOperandLayout", "NVMMADistributedLayout", "NVMMASharedLayout",
            "SwizzledSharedLayout", "DistributedLinearLayout", "TensorMemoryLayout", "tmem_reg",
            "nvmma_default"} <= kinds
