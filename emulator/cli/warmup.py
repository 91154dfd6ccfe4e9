"""``python -m emulator warmup``: compile the fast engine's jitted code into numba's cache now (once per machine:
another process already compiling is waited for), e.g. after installing, or in a container image's build."""


def add_parser(subparsers):
    p = subparsers.add_parser(
        "warmup", help="compile the fast engine into numba's cache now (once per machine)",
        description="Compile the fast engine's jitted loops, its float rows and the executors' tensor-core and "
                    "integer tiles into numba's cache (NUMBA_CACHE_DIR chooses where), so that no later launch "
                    "compiles. A process of the machine that is compiling already is waited for.")
    p.add_argument("--background", action="store_true",
                   help="start a detached process that compiles, and return at once")
    p.set_defaults(func=_cmd_warmup)
    return p


def _cmd_warmup(args):
    from ..machine import module  # noqa: F401 (the warm-up launches)
    from ..machine.fastcore.warmup import warmup
    cpu = warmup(background=args.background)
    if args.background:
        print("compiling in a detached process")
    else:
        print(f"the fast engine is compiled and cached ({cpu:.1f} s of CPU in this process)")
    return 0
