"""The fast engine: a kernel translated once into a compact numeric form (``table``, ``translate``) and run
by one jitted loop (``loop``), with the instructions it does not translate handed back to the reference
executors of ``emulator.ops`` (``engine``). Both engines give the same bits; the tests compare them."""
from .engine import FastLaunch, translation

__all__ = ["FastLaunch", "translation"]
