"""PTX ``.target`` names: which GPUs a module may be written for.

The target only decides which instructions are legal for a module; it does not choose the machine being
emulated (that is ``arch``, the H100 ``sm_90`` unless the caller names another).
``TARGETS`` maps each ``.target`` name to its compute capability (major*10 + minor); the ``a`` (arch-specific)
and ``f`` (family) suffixes allow extra instructions on that capability.
"""

TARGETS = {f"sm_{n}": n for n in (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110,
                                   120, 121)}
TARGETS.update({f"sm_{n}a": n for n in (90, 100, 101, 103, 110, 120, 121)})
TARGETS.update({f"sm_{n}f": n for n in (100, 101, 103, 110, 120, 121)})
# platform options that may follow the target name (".target sm_90a, debug")
OPTIONS = ("debug", "map_f64_to_f32", "texmode_unified", "texmode_independent")

DEFAULT_ARCH = "sm_90"      # the machine emulated when the caller names none: the H100


def parse_target(text: str):
    """``"sm_90a, debug"`` -> ("sm_90a", 90, ("debug",)); raises ValueError naming an unknown part."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    names = [p for p in parts if p not in OPTIONS]
    if len(names) != 1 or names[0] not in TARGETS:
        bad = [p for p in names if p not in TARGETS] or names
        raise ValueError(f".target {', '.join(bad) or '(none)'} is not a known target; known: "
                         f"{', '.join(TARGETS)}")
    return names[0], TARGETS[names[0]], tuple(p for p in parts if p in OPTIONS)
