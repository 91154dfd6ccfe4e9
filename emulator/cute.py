"""``emulator.cute``: CuTe layouts (the public name; the code lives in ``emulator.layouts.cute``)."""
from .layouts.cute import *  # noqa: F401,F403
from .layouts.cute import __all__  # noqa: F401
