"""``python -m emulator``: the command line.

Each sub-command lives in its own module, which defines ``add_parser(subparsers)``; the parser it adds
sets ``func`` (called with the parsed arguments, returning an exit code).
"""
import argparse
import importlib
import sys

from ..errors import EmulatorError

# Modules that contribute sub-commands, in the order ``--help`` lists them.
COMMAND_MODULES = [
    "emulator.cli.show",
    "emulator.cli.run",
    "emulator.cli.debug",
    "emulator.cli.warmup",
]


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m emulator",
                                     description="Bit-exact emulator of a GPU warp running tensor-core PTX.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except EmulatorError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:                # a file the command writes (--out, --svg, --timeline)
        print(f"error: {e}", file=sys.stderr)
        return 1
