"""The floor plan stays true: no import circle, and no module imports from a layer above its own.

Every import counts, also the ones inside functions: a lazy import that points upwards is still an upward
arrow. The layers, bottom to top, are listed in LAYERS (docs/architecture.md draws them).
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Bottom to top. A module belongs to the first entry that is its name or a package prefix of it.
LAYERS = [
    ("isa", 0),                    # what exists: tables only
    ("emulator.errors", 1),
    ("emulator.numerics", 2),      # bit-exact arithmetic
    ("emulator.frontend", 3),      # PTX text -> parsed statements/modules
    ("emulator.memory", 4),        # memory spaces, access rules, bank model
    ("emulator.ops", 5),           # executors per instruction family
    ("emulator.machine", 6),       # warps, CTAs, scheduler, programs, launches
    ("emulator.layouts", 7),       # layouts, fragments, swizzles, pictures
    ("emulator.gluon", 7),
    ("emulator.tiles", 8),         # the public API modules
    ("emulator.tile_bits", 8),
    ("emulator.wgmma_tiles", 8),
    ("emulator.cute", 8),
    ("emulator.triton", 8),
    ("emulator.cli", 9),           # the command line
    ("emulator", 10),              # the package itself and __main__
]


def layer(mod):
    best = None
    for name, lv in LAYERS:
        if mod == name or mod.startswith(name + "."):
            if best is None or len(name) > len(best[0]):
                best = (name, lv)
    return best[1] if best else None


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules():
    out = {}
    for top in ("emulator", "isa"):
        for p in sorted((ROOT / top).rglob("*.py")):
            out[module_name(p)] = p
    return out


def imports_of(mod, path, known):
    """(imported module, line) for every import in the file, resolved against the known modules."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.append((a.name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.append((sub if sub in known else target, node.lineno))
    res = []
    for target, line in found:
        while target and target not in known:      # 'emulator.ops.mma.get_mma' -> 'emulator.ops.mma'
            target = target.rpartition(".")[0]
        if target and target != mod:
            res.append((target, line))
    return res


def graph():
    known = modules()
    return known, {m: imports_of(m, p, known) for m, p in known.items()}


def test_every_module_has_a_layer():
    known, _ = graph()
    missing = [m for m in known if layer(m) is None]
    assert not missing, f"modules outside every layer (add them to LAYERS and docs/architecture.md): {missing}"


def upward(known_init, g):
    """Every import of a module from a higher layer, as text (``known_init``: modules that are packages)."""
    bad = []
    for m, deps in g.items():
        for d, line in deps:
            # a package's __init__ may import its own submodules (it gathers them)
            if m in known_init and d.startswith(m + "."):
                continue
            if layer(d) > layer(m):
                bad.append(f"{m}:{line} (layer {layer(m)}) imports {d} (layer {layer(d)})")
    return bad


def cycles(g):
    """Every import circle found by a depth-first walk, as module lists."""
    edges = {m: sorted({d for d, _ in deps}) for m, deps in g.items()}
    state, stack, found = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in edges.get(m, ()):
            if state.get(d) == 1:
                found.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    return found


def test_no_upward_import():
    known, g = graph()
    inits = {m for m, p in known.items() if p.name == "__init__.py"}
    bad = upward(inits, g)
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_import_circle():
    _, g = graph()
    found = cycles(g)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_checks_can_fail():
    """Both checks find what they look for in planted graphs."""
    assert upward(set(), {"emulator.ops.x": [("emulator.machine.warp", 1)]})
    assert not upward(set(), {"emulator.machine.warp": [("emulator.ops.x", 1)]})
    assert cycles({"emulator.a": [("emulator.b", 1)], "emulator.b": [("emulator.c", 1)],
                   "emulator.c": [("emulator.a", 1)]}) == [["emulator.a", "emulator.b", "emulator.c", "emulator.a"]]
    assert not cycles({"emulator.a": [("emulator.b", 1)], "emulator.b": []})
