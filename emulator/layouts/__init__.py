"""Layouts and pictures: CuTe layouts (``cute``), fragment ownership and ``check_layout`` (``fragments``),
swizzles and threadblock rasterisation (``swizzle``), lane-ownership pictures (``show``) and the drawing
primitives they share (``draw``). Bank conflicts are counted by ``emulator.memory.banks``."""
