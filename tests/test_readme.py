"""The README's Python examples run as written (those that need no Triton), one after the other in one
namespace, from the repository root, as a reader pasting them into one session would."""
import contextlib
import io
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "triton" not in b]


def test_readme_has_python_examples():
    assert len(_blocks()) >= 4


def test_readme_python_examples_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    ns = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i, block in enumerate(_blocks()):
            try:
                exec(compile(block, f"README.md python block {i + 1}", "exec"), ns)
            except Exception as e:                  # noqa: BLE001 (name the block that failed)
                pytest.fail(f"README python block {i + 1} fails: {type(e).__name__}: {e}\n{block}")
    assert ns["r"].ok
    assert "LaunchResult(kernel=" in out.getvalue()
    d = ns["g"].download(ns["c_addr"], 256)
    assert d.any()
