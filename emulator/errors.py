"""Every error the emulator raises: a subclass of :class:`EmulatorError`.

Messages name the instruction, the lane at fault (when one is) and the rule broken,
e.g. ``ldmatrix.sync.aligned.m8n8.x4.shared.b16: lane 5: row address 0x13 is not 16-byte aligned``.
"""
import operator


def expect_str(value, what):
    """``value`` if it is a string; otherwise an OperandError naming the argument (``what``)."""
    if not isinstance(value, str):
        shown = f"{type(value).__name__} of shape {value.shape}" if hasattr(value, "shape") else repr(value)[:60]
        raise OperandError(f"{what} must be a string, not {shown}")
    return value


def as_index(value):
    """``value`` as a Python int when it is an integer (Python, numpy, or anything with ``__index__``);
    None otherwise, so that each caller raises its own error naming the argument."""
    try:
        return operator.index(value)
    except Exception:                                  # noqa: BLE001 (a user object whose __index__ fails)
        return None


class EmulatorError(Exception):
    """Base class of every error raised by the emulator."""


class PTXSyntaxError(EmulatorError):
    """The PTX text does not parse (the message gives line and column)."""


class UnsupportedError(EmulatorError):
    """An instruction, qualifier or type the emulator (or the chosen architecture) does not support."""


class OperandError(EmulatorError):
    """Wrong operand count, kind or width for an instruction."""


class PTXValidationError(PTXSyntaxError, OperandError):
    """PTX that parses but that ptxas rejects: an undeclared register, a register whose type does not fit the
    instruction, a wrong operand count or kind, a state space the instruction does not allow, a bad immediate,
    an unknown label or name, a bad directive. The message gives line, column and the rule; the rules are
    ptxas's own (docs/kernels.md, "Validation"). It is both a :class:`PTXSyntaxError` (the text is not valid
    PTX) and an :class:`OperandError`."""


class MemoryAccessError(EmulatorError):
    """An address outside shared memory or outside every global allocation."""


class AlignmentError(MemoryAccessError):
    """An address that breaks the instruction's alignment rule."""


class AsyncHazardError(EmulatorError):
    """A cp.async destination was read or overwritten before a wait retired its copy."""


class ProxyError(AsyncHazardError):
    """Shared memory written through the generic proxy (st, ...) read by the async proxy (a TMA store,
    wgmma) without a ``fence.proxy.async`` in between."""


class MBarrierError(EmulatorError):
    """An mbarrier used against the PTX rules: uninitialised, misaligned, a count or tx-count out of range."""


class TensorMapError(OperandError):
    """Tensor-map parameters that ``cuTensorMapEncodeTiled`` refuses, or a tensor map a TMA copy cannot use."""


class WarpSyncError(EmulatorError):
    """A .sync.aligned instruction executed by a partial warp, or a barrier misuse."""


class DeviceAssertError(EmulatorError):
    """A device-side ``assert`` failed (the kernel called ``__assertfail``)."""


def fail(cls, instr, rule, lane=None):
    """Raise ``cls`` with the standard message: instruction, lane, rule."""
    where = f": lane {int(lane)}" if lane is not None else ""
    raise cls(f"{instr}{where}: {rule}")


def did_you_mean(word, candidates, where, n=3):
    """'did you mean a, b, c? (the full list: where)': the ``n`` candidates nearest to ``word``."""
    import difflib
    cands = list(candidates)
    near = difflib.get_close_matches(str(word), cands, n=n, cutoff=0.0) if cands else []
    return (f"did you mean {', '.join(near)}? " if near else "") + f"(all {len(cands)} supported: {where})"
