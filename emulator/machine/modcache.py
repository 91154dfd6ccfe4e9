"""The module cache: what loading the same PTX text again can reuse, kept once per process.

A second ``load_ptx`` of a text already loaded (same text, same emulated architecture, same ``validate``, same
emulator) skips the parse and the validation, and its kernels reuse the :class:`~emulator.machine.program.Program`
(flat code, layouts, compiled executors) and the fast engine's translation (``fastcore.translate.Translation``,
with the loop arrays finished launches hand on) that the earlier module built. Only what a module never writes
is shared: a module keeps its own module variables (addresses and initial values per ``GlobalMemory``), its own
sanitizer and kernel-name table, and every launch its own global memory, ``.local`` depots, parameters,
printf buffer and CTA state.

The cache is bounded (least recently used out first, by number of texts and by their size in characters) and
thread-safe. It is on by default; ``load_ptx(text, cache=False)`` loads without it, the environment variable
``WARPEMU_MODULE_CACHE=0`` turns it off for the process, :func:`configure` sets its bounds (0 entries: off) and
:func:`clear` empties it.
"""
import os
import threading
from collections import OrderedDict

# a cached module cannot outlive the code that built it (the cache lives in memory only); the number changes when
# what a cache entry holds changes
SCHEMA = 1

MAX_ENTRIES = 32                 # PTX texts kept
MAX_CHARS = 8 * 1024 * 1024      # their size in all (a text kept with its programs, translations and the arrays its
                                 # launches hand on holds some 20 bytes a character: 8 M characters, about 160 MB)

_lock = threading.Lock()
_entries: "OrderedDict[tuple, Entry]" = OrderedDict()
_chars = [0]
_stats = {"hits": 0, "misses": 0, "evictions": 0}


class Entry:
    """One loaded text: its parsed module as validated (``info``, never written once cached: each module gets a
    copy of its variable table) and the programs built from it, per kernel, with the module variables each
    program's functions declare."""
    __slots__ = ("key", "info", "target", "programs", "lock")

    def __init__(self, key, info, target):
        self.key = key
        self.info = info
        self.target = target
        self.programs = {}           # entry name -> (Program, [Variable]: what the program added to .variables)
        self.lock = threading.Lock()

    def program(self, name):
        with self.lock:
            return self.programs.get(name)

    def keep_program(self, name, prog, added):
        """Keep ``prog`` unless another thread kept one first; returns the one kept."""
        with self.lock:
            return self.programs.setdefault(name, (prog, added))


def enabled() -> bool:
    return MAX_ENTRIES > 0 and os.environ.get("WARPEMU_MODULE_CACHE", "1").strip().lower() not in (
        "0", "off", "false", "no")


def key(text, arch, validate):
    return (SCHEMA, arch, bool(validate), text)


def lookup(k):
    """The entry of key ``k`` (most recently used now), or None."""
    with _lock:
        e = _entries.get(k)
        if e is None:
            _stats["misses"] += 1
            return None
        _entries.move_to_end(k)
        _stats["hits"] += 1
        return e


def store(k, info, target):
    """Keep a freshly parsed and validated module; returns its entry (another thread's, if it stored first)."""
    with _lock:
        e = _entries.get(k)
        if e is not None:
            return e
        e = _entries[k] = Entry(k, info, target)
        _chars[0] += len(k[-1])
        _evict()
        return e


def _evict():
    while _entries and (len(_entries) > MAX_ENTRIES or _chars[0] > MAX_CHARS):
        k, _ = _entries.popitem(last=False)
        _chars[0] -= len(k[-1])
        _stats["evictions"] += 1


def configure(max_entries: int | None = None, max_chars: int | None = None):
    """Set the cache's bounds: texts kept (0 turns the cache off) and their size in characters."""
    global MAX_ENTRIES, MAX_CHARS
    for name, v in (("max_entries", max_entries), ("max_chars", max_chars)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            from ..errors import OperandError
            raise OperandError(f"modcache.configure: {name} must be an integer >= 0, not {v!r}")
    with _lock:
        if max_entries is not None:
            MAX_ENTRIES = max_entries
        if max_chars is not None:
            MAX_CHARS = max_chars
        _evict()


def clear():
    """Forget every cached module (modules already loaded keep what they use)."""
    with _lock:
        _entries.clear()
        _chars[0] = 0


def stats() -> dict:
    """{"entries", "chars", "hits", "misses", "evictions"} since the process started."""
    with _lock:
        return {"entries": len(_entries), "chars": _chars[0], **_stats}
