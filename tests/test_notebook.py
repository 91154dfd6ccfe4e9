"""docs/examples/*.ipynb run: every code cell in order, in one namespace, as a kernel would (no Jupyter
needed); the value of a cell's last expression must render (_repr_html_ / _repr_svg_) when it has a form."""
import ast
import glob
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "docs", "examples", "*.ipynb")))


def test_there_is_a_notebook():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path, monkeypatch, capsys):
    monkeypatch.chdir(os.path.dirname(path))
    nb = json.load(open(path))
    ns = {"__name__": "__notebook__"}
    shown = 0
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        src = "".join(cell["source"])
        tree = ast.parse(src)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, f"{os.path.basename(path)} cell {i + 1}", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), f"{os.path.basename(path)} cell {i + 1}", "eval"), ns)
            for form in ("_repr_html_", "_repr_svg_"):
                if hasattr(value, form):
                    out = getattr(value, form)()
                    assert out and out.lstrip().startswith("<"), (i, form)
                    shown += 1
                    break
    assert shown >= 4
