"""``emulator.cute``: CuTe layouts (the public name; the code lives in ``emulator.layouts.cute``)."""
from .layouts.cute import *  # noqa: F401,F403
from .layouts.cute import __all__  # noqa: F401
from .layouts import swizzle as _swizzle  # noqa: F401,E402 (rank-2 layouts render as pictures in Jupyter)
