"""The fast engine: a kernel translated once into a compact numeric form (``table``, ``translate``) and run
by one jitted loop (``loop``), with the instructions it does not translate handed back to the reference
executors of ``emulator.ops`` (``engine``). Both engines give the same bits; the tests compare them.
``warmup`` compiles the jitted code in a background process on a fresh install; the engine itself loads on
first use, so that importing ``warmup`` stays light."""

__all__ = ["FastLaunch", "translation"]


def __getattr__(name):
    if name in __all__:
        from . import engine
        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
