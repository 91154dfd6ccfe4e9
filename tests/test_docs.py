"""Every ```python block of docs/*.md runs as written (README.md's: tests/test_readme.py).

The blocks of one page run one after the other in one namespace, from the repository root, as a reader
pasting them into one session would. A block that continues an earlier one needs nothing more; a block that
needs set-up the page does not show is preceded by ``<!-- setup: CODE -->`` (run first, in the same
namespace). A block that imports an optional package (Triton, Dask, Ray) runs only where it is installed.
"""
import contextlib
import glob
import importlib.util
import io
import os
import re
import warnings

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# README.md's blocks run in tests/test_readme.py (one session, with its results checked)
PAGES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
_BLOCK = re.compile(r"(?:<!--\s*setup:\s*(.*?)-->\s*\n)?```python\n(.*?)```", re.S)
OPTIONAL = ("triton", "dask", "ray")      # optional packages: their blocks run where they are installed
_IMPORTS = re.compile(r"^\s*(?:import|from)\s+([\w., ]+)", re.M)


def _missing(code):
    """The optional packages a block imports that are not installed."""
    names = {n.strip().split(".")[0] for m in _IMPORTS.finditer(code) for n in m.group(1).split(",")}
    names |= set(re.findall(r"\bemulator\.(triton)\b", code))
    return [n for n in names if n in OPTIONAL and importlib.util.find_spec(n) is None]


def blocks(page):
    """[(setup code or '', code)] of a page's python blocks."""
    text = open(os.path.join(ROOT, page)).read()
    return [(m.group(1) or "", m.group(2)) for m in _BLOCK.finditer(text)]


def test_pages_have_blocks():
    assert sum(len(blocks(p)) for p in PAGES) >= 20


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)])
def test_page_blocks_run(page, monkeypatch, tmp_path):
    for name in os.listdir(ROOT):                # the repository's folders, seen from a scratch directory
        if not name.startswith("."):            # (files the blocks write land there)
            os.symlink(os.path.join(ROOT, name), tmp_path / name)
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)       # no numpy warning leaks out of the emulator
        for i, (setup, code) in enumerate(blocks(page)):
            if _missing(code):
                continue
            try:
                if setup:
                    exec(compile(setup, f"{page} setup of block {i + 1}", "exec"), ns)
                exec(compile(code, f"{page} python block {i + 1}", "exec"), ns)
            except Exception as e:                       # noqa: BLE001 (name the block that failed)
                pytest.fail(f"{page} python block {i + 1} fails: {type(e).__name__}: {e}\n{code}")
