"""The atom / red / red.async / st.async forms ptxas 13 accepts for sm_90a (tools/hwcapture/atomics/atomic_forms.py
asks it about every combination of the qualifiers PTX names; this table is its answer, written compactly).

A form is ``atom{.sem}{.scope}{.space}.op{.noftz}{.L2::cache_hint}{.vec}.type`` (``red`` likewise, without
a destination):

* ``SCALAR``: (op, .noftz) -> types that take every state space (generic, .global, .shared, .shared::cta,
  .shared::cluster);
* ``VECTOR``: (op, .noftz, vector) -> types that take only generic and .global addresses;
* ``.L2::cache_hint`` (a 64-bit policy operand last): generic and .global only, every operation but cas;
* semantics and scope combine freely: atom ``SEMS["atom"]`` x ``SCOPES``, red ``SEMS["red"]`` x ``SCOPES``;
  ``.sc``, ``.weak``, ``.mmio``, ``.volatile`` are refused;
* ``red`` has every operation but cas and exch.
"""

SCALAR = {
    ("add", False): ("u32", "s32", "u64", "f32", "f64"),
    ("add", True): ("f16", "bf16", "f16x2", "bf16x2"),
    ("min", False): ("u32", "s32", "u64", "s64"),
    ("max", False): ("u32", "s32", "u64", "s64"),
    ("and", False): ("b32", "b64"),
    ("or", False): ("b32", "b64"),
    ("xor", False): ("b32", "b64"),
    ("inc", False): ("u32",),
    ("dec", False): ("u32",),
    ("exch", False): ("b32", "b64", "b128"),
    ("cas", False): ("b16", "b32", "b64", "b128"),
}
VECTOR = {
    ("add", False, "v2"): ("f32",), ("add", False, "v4"): ("f32",),
    **{(op, True, v): ("f16", "bf16", "f16x2", "bf16x2") for op in ("add", "min", "max") for v in ("v2", "v4")},
    **{(op, True, "v8"): ("f16", "bf16") for op in ("add", "min", "max")},
}
SEMS = {"atom": ("relaxed", "acquire", "release", "acq_rel"), "red": ("relaxed", "release")}
SCOPES = ("cta", "cluster", "gpu", "sys")
SPACES = ("global", "shared", "shared::cta", "shared::cluster")
RED_OPS = ("add", "min", "max", "and", "or", "xor", "inc", "dec")

# red.async.relaxed.cluster{.shared::cluster}.mbarrier::complete_tx::bytes.op.type [a], b, [mbar]
RED_ASYNC = {"add": ("u32", "s32", "u64", "s64"), "min": ("u32", "s32"), "max": ("u32", "s32"),
             "and": ("b32",), "or": ("b32",), "xor": ("b32",), "inc": ("u32",), "dec": ("u32",)}
# st.async{.weak}{.cluster}{.space}{.mbarrier::complete_tx::bytes}{.vec}.type [a], b, [mbar]:
# (sem, scope, space, completion mechanism named) that ptxas accepts
ST_ASYNC_TYPES = {"": ("b32", "b64", "u32", "s32", "u64", "s64", "f32", "f64"),
                  "v2": ("b32", "b64", "u32", "s32", "u64", "s64", "f32", "f64"),
                  "v4": ("b32", "u32", "s32", "f32")}
ST_ASYNC_QUALS = {(sem, "", sp, True) for sem in ("", "weak") for sp in ("", "shared::cluster", "shared::cta")} | \
    {(sem, "", "shared::cta", False) for sem in ("", "weak")} | \
    {("", "cluster", sp, True) for sp in ("", "shared::cluster")}


def core_spaces(op, noftz, vec, ptype):
    """The state spaces (None: generic) in which ``op{.noftz}{.vec}.ptype`` exists, or () if it does not."""
    if vec:
        return (None, "global") if ptype in VECTOR.get((op, noftz, vec), ()) else ()
    return (None,) + SPACES if ptype in SCALAR.get((op, noftz), ()) else ()


def supported_forms(op=None):
    """Readable lines listing the accepted operation/type combinations (for error messages)."""
    out = []
    for (o, nf), ts in SCALAR.items():
        if op in (None, o):
            out.append(f".{o}{'.noftz' if nf else ''}.{{{','.join(ts)}}}")
    for (o, nf, v), ts in VECTOR.items():
        if op in (None, o):
            out.append(f".{o}{'.noftz' if nf else ''}.{v}.{{{','.join(ts)}}} (global)")
    return "; ".join(out)
