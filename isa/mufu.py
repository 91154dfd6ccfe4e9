"""The approximate-math instructions that run on the multi-function unit (MUFU), by PTX spelling.

Each spelling maps to the compute capability it needs (PTX ISA, "Floating-Point Instructions" and "Half
Precision Floating-Point Instructions"). The arithmetic is in ``emulator/numerics/mufu.py``.
"""

MUFU_SPELLINGS = {
    **{f"{op}.approx{ftz}.f32": 50 for op in ("ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos")
       for ftz in ("", ".ftz")},
    "tanh.approx.f32": 75,
    "div.approx.f32": 50, "div.approx.ftz.f32": 50, "div.full.f32": 50, "div.full.ftz.f32": 50,
    "rcp.approx.ftz.f64": 50, "rsqrt.approx.f64": 50, "rsqrt.approx.ftz.f64": 50,
    "ex2.approx.f16": 75, "ex2.approx.f16x2": 75, "ex2.approx.ftz.bf16": 90, "ex2.approx.ftz.bf16x2": 90,
    "tanh.approx.f16": 75, "tanh.approx.f16x2": 75, "tanh.approx.bf16": 90, "tanh.approx.bf16x2": 90,
}

# register width of the destination and each source, in bits
def operand_bits(spelling: str) -> int:
    t = spelling.rsplit(".", 1)[1]
    return {"f32": 32, "f64": 64, "f16": 16, "bf16": 16, "f16x2": 32, "bf16x2": 32}[t]


def canonical(base: str, mods) -> str:
    """The spelling in PTX's order (base, .approx/.full, .ftz, type), whatever order the qualifiers came in."""
    order = {"approx": 0, "full": 0, "ftz": 1}
    head = sorted((m for m in mods if m in order), key=order.get)
    rest = [m for m in mods if m not in order]
    return ".".join([base, *head, *rest])
