"""The PTX of the isolated TMA captures: one kernel per (operation, rank), written out as
``tests/data/tma/tma_kernels.ptx``. The GPU runs exactly that file and the replay feeds the same text to the
emulator.

    python tools/hwcapture/tma/ptxgen.py > tests/data/tma/tma_kernels.ptx

Every kernel takes the tensor map as a 128-byte ``.param`` (as ``__grid_constant__ CUtensorMap``), five
signed coordinates, an output address and a byte count, and runs 128 threads:

* ``tma_load_Nd``: fill ``nbytes`` of shared memory with 0xA5, load the box with
  ``cp.async.bulk.tensor`` completing on an mbarrier that expects ``txbytes``, wait (bounded), then copy
  the ``nbytes`` of shared memory to ``out`` after a 16-byte header {smem address, wait status}.
* ``tma_store_Nd`` / ``tma_red_OP_Nd``: fill shared memory with a byte pattern, fence the generic proxy
  against the async proxy, and store (reduce) the box into the tensor; the host reads the tensor back.
"""
RED_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
SMEM = 40960            # bytes of the data window; the mbarrier sits right after it


def _coords(n):
    return ", ".join(f"%r{20 + i}" for i in range(n))


def _params(name, extra):
    ps = [f".param .align 64 .b8 {name}_tmap[128]"] + [f".param .s32 {name}_c{i}" for i in range(5)] + extra
    return ",\n\t".join(ps)


def _prologue(name):
    lines = ["\t.reg .pred %p<8>;", "\t.reg .b32 %r<64>;", "\t.reg .b64 %rd<16>;",
             f"\tmov.b64 %rd1, {name}_tmap;", "\tcvta.param.u64 %rd2, %rd1;"]
    lines += [f"\tld.param.s32 %r{20 + i}, [{name}_c{i}];" for i in range(5)]
    lines += ["\tmov.u32 %r1, %tid.x;", "\tmov.u32 %r2, smem;", "\tsetp.eq.u32 %p1, %r1, 0;"]
    return lines


def _fill(label, value_code):
    """Every thread fills words tid*4, tid*4+512, ... below %r3 (bytes) of shared memory."""
    return ["\tshl.b32 %r4, %r1, 2;",
            f"{label}_fill:",
            "\tsetp.ge.u32 %p2, %r4, %r3;",
            f"\t@%p2 bra {label}_filled;",
            *value_code,
            "\tadd.u32 %r6, %r2, %r4;",
            "\tst.shared.u32 [%r6], %r5;",
            "\tadd.u32 %r4, %r4, 512;",
            f"\tbra {label}_fill;",
            f"{label}_filled:",
            "\tbar.sync 0;"]


# the byte pattern of the store source: byte i holds (i * 0x9E + (i >> 8) * 0x3B + 0x11) & 0xFF
PATTERN_CODE = ["\tmul.lo.u32 %r7, %r4, 0x9E;", "\tshr.u32 %r8, %r4, 8;", "\tmad.lo.u32 %r7, %r8, 0x3B, %r7;",
                "\tadd.u32 %r7, %r7, 0x11;",
                # the 4 bytes of word i: pattern(i), pattern(i+1), ... (i..i+3 share i >> 8)
                "\tand.b32 %r9, %r7, 0xFF;", "\tadd.u32 %r10, %r7, 0x9E;", "\tand.b32 %r10, %r10, 0xFF;",
                "\tadd.u32 %r11, %r7, 0x13C;", "\tand.b32 %r11, %r11, 0xFF;", "\tadd.u32 %r12, %r7, 0x1DA;",
                "\tand.b32 %r12, %r12, 0xFF;", "\tshl.b32 %r10, %r10, 8;", "\tshl.b32 %r11, %r11, 16;",
                "\tshl.b32 %r12, %r12, 24;", "\tor.b32 %r5, %r9, %r10;", "\tor.b32 %r5, %r5, %r11;",
                "\tor.b32 %r5, %r5, %r12;"]


def load_kernel(n):
    name = f"tma_load_{n}d"
    body = _prologue(name) + [f"\tld.param.u32 %r3, [{name}_nbytes];", f"\tld.param.u32 %r13, [{name}_tx];"]
    body += _fill(name, ["\tmov.u32 %r5, 0xA5A5A5A5;"])
    body += ["\tfence.proxy.async.shared::cta;",
             f"\tadd.u32 %r14, %r2, {SMEM};",
             "\t@%p1 mbarrier.init.shared::cta.b64 [%r14], 1;",
             "\tfence.mbarrier_init.release.cluster;",
             "\tbar.sync 0;",
             "\t@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r14], %r13;",
             f"\t@%p1 cp.async.bulk.tensor.{n}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
             f"[%r2], [%rd2, {{{_coords(n)}}}], [%r14];",
             "\tmov.u32 %r15, 0;",
             f"{name}_wait:",
             "\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [%r14], 0;",
             f"\t@%p3 bra {name}_done;",
             "\tadd.u32 %r15, %r15, 1;",
             "\tsetp.lt.u32 %p4, %r15, 200000;",
             f"\t@%p4 bra {name}_wait;",
             f"{name}_done:",
             "\tbar.sync 0;",
             f"\tld.param.u64 %rd4, [{name}_out];",
             "\tcvta.to.global.u64 %rd4, %rd4;",
             "\t@%p1 st.global.u32 [%rd4], %r2;",
             "\tselp.u32 %r16, 1, 0, %p3;",
             "\t@%p1 st.global.u32 [%rd4+4], %r16;",
             "\tshl.b32 %r4, %r1, 2;",
             f"{name}_copy:",
             "\tsetp.ge.u32 %p2, %r4, %r3;",
             f"\t@%p2 bra {name}_end;",
             "\tadd.u32 %r6, %r2, %r4;",
             "\tld.shared.u32 %r5, [%r6];",
             "\tcvt.u64.u32 %rd5, %r4;",
             "\tadd.u64 %rd6, %rd4, %rd5;",
             "\tst.global.u32 [%rd6+16], %r5;",
             "\tadd.u32 %r4, %r4, 512;",
             f"\tbra {name}_copy;",
             f"{name}_end:",
             "\tret;"]
    params = _params(name, [f".param .u64 {name}_out", f".param .u32 {name}_nbytes", f".param .u32 {name}_tx"])
    return f".visible .entry {name}(\n\t{params}\n)\n.reqntid 128\n{{\n" + "\n".join(body) + "\n}\n"


def store_kernel(n, red=None):
    name = f"tma_red_{red}_{n}d" if red else f"tma_store_{n}d"
    body = _prologue(name) + [f"\tld.param.u32 %r3, [{name}_nbytes];"]
    body += _fill(name, PATTERN_CODE)
    op = (f"cp.reduce.async.bulk.tensor.{n}d.global.shared::cta.{red}.tile.bulk_group" if red else
          f"cp.async.bulk.tensor.{n}d.global.shared::cta.tile.bulk_group")
    body += ["\tfence.proxy.async.shared::cta;",
             "\tbar.sync 0;",
             f"\t@%p1 {op} [%rd2, {{{_coords(n)}}}], [%r2];",
             "\t@%p1 cp.async.bulk.commit_group;",
             "\t@%p1 cp.async.bulk.wait_group 0;",
             "\tret;"]
    params = _params(name, [f".param .u32 {name}_nbytes"])
    return f".visible .entry {name}(\n\t{params}\n)\n.reqntid 128\n{{\n" + "\n".join(body) + "\n}\n"


def module():
    parts = [".version 8.0", ".target sm_90a", ".address_size 64", "",
             f".extern .shared .align 1024 .b8 smem[];", ""]
    for n in range(1, 6):
        parts.append(load_kernel(n))
        parts.append(store_kernel(n))
        for r in RED_OPS:
            parts.append(store_kernel(n, r))
    return "\n".join(parts)


def pattern(nbytes):
    """The store source pattern that the kernels write into shared memory (numpy mirror of PATTERN_CODE)."""
    import numpy as np
    i = np.arange(nbytes, dtype=np.int64)
    return ((i & ~3) * 0x9E + ((i & ~3) >> 8) * 0x3B + 0x11 + (i & 3) * 0x9E).astype(np.uint32).astype(np.uint8)


if __name__ == "__main__":
    print(module())
