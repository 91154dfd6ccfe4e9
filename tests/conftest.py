import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# the fast engine's loops compile in the test process at first use (no background compile process left behind)
os.environ.setdefault("WARPEMU_BACKGROUND_COMPILE", "0")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_modules_when_patched(request):
    """A test that patches the emulator (``monkeypatch``) loads its modules afresh: the module cache
    (emulator/machine/modcache.py) would hand it programs and translations built before the patch."""
    if "monkeypatch" in request.fixturenames:
        request.getfixturevalue("monkeypatch").setenv("WARPEMU_MODULE_CACHE", "0")
    yield
