"""The PTX ISA for sm_90a, instruction by instruction: what the emulator executes (and the H100 capture that
proves it bit for bit) and what it refuses (and why).  ``tools/docs/supported.py`` writes it into
docs/supported.md; tests/test_coverage.py runs every sample in a kernel and keeps the list true (an executed entry
runs, a refused one raises an ``UnsupportedError`` or ``PTXValidationError`` containing its ``match``).

Each entry: (instruction, a sample line ptxas 13.0 accepts for sm_90a unless the reason says otherwise,
"run" or "refused", evidence or reason, match (refused only)).  The samples run in ``KERNEL``: one CTA of 128
threads in a cluster of one, registers ``%r %rd %f %fd %p %h`` (b32, b64, f32, f64, pred, b16) 0..9, ``%rd1``
pointing at 4 KiB of zeroed global memory, ``smem`` (1 KiB) and an initialised mbarrier ``mbar`` in shared
memory.
"""

KERNEL = """.version 8.7
.target sm_90a
.address_size 64
.func f0() { ret; }
.visible .entry k(.param .u64 p) .reqnctapercluster 1, 1, 1
{
.reg .b32 %r<10>; .reg .b64 %rd<10>; .reg .f32 %f<10>; .reg .f64 %fd<10>; .reg .pred %p<4>; .reg .b16 %h<10>;
.shared .align 128 .b8 smem[1024];
.shared .align 8 .b64 mbar;
tgts: .branchtargets L9;
ld.param.u64 %rd1, [p];
mov.u32 %r9, mbar;
mbarrier.init.shared::cta.b64 [%r9], 128;
bar.sync 0;
@SAMPLE@
L9:
ret;
}
"""

SCALAR = "H100 scalar capture, every form ptxas accepts x 2,048 edge-heavy inputs (tests/test_scalar_diff.py)"
MUFU = "H100 capture of the approximate-math unit over every input of its range (tests/test_mufu.py)"
KERNELS = "H100 kernel captures (tests/test_kernel_hw.py, tests/data/kernels)"
DATAMOVE = "H100 capture (tests/test_datamove_hw.py)"
TMA = "H100 captures of TMA loads, stores, reductions and Triton/warp-specialised kernels (tests/test_tma_hw.py)"
ATOM = "H100 capture of every form (tests/test_atomics_diff.py)"
ASYNC = "H100 capture of every form (tests/test_atomics_async.py)"
HINT = "no architectural effect (a cache or scheduling hint); its operands are checked"
CLUSTER = "semantics (tests/test_cluster.py); the captured nvcc cluster kernels of the corpus (tests/test_corpus.py)"
NOT_SM90 = "ptxas 13 rejects it for sm_90a (Blackwell, sm_100a and later)"

COVERAGE = [
    # ---- integer arithmetic
    *[(n, s, "run", SCALAR, "") for n, s in (
        ("add / sub / mul / mad", "add.s32 %r1, %r2, %r3;\nmul.hi.u32 %r1, %r2, %r3;\nmad.lo.s32 %r1, %r2, %r3, %r4;"),
        ("mul24 / mad24", "mul24.lo.u32 %r1, %r2, %r3;\nmad24.lo.s32 %r1, %r2, %r3, %r4;"),
        ("sad", "sad.u32 %r1, %r2, %r3, %r4;"), ("div / rem (integer)", "div.s32 %r1, %r2, %r3;\nrem.u32 %r1, %r2, %r3;"),
        ("abs / neg / min / max", "abs.s32 %r1, %r2;\nneg.s32 %r1, %r2;\nmin.s32 %r1, %r2, %r3;\nmax.u32 %r1, %r2, %r3;"),
        ("popc / clz / bfind / fns / brev", "popc.b32 %r1, %r2;\nclz.b32 %r1, %r2;\nbfind.u32 %r1, %r2;\n"
                                            "fns.b32 %r1, %r2, %r3, 1;\nbrev.b32 %r1, %r2;"),
        ("bfe / bfi", "bfe.u32 %r1, %r2, %r3, %r4;\nbfi.b32 %r1, %r2, %r3, %r4, %r5;"),
        ("szext", "szext.clamp.s32 %r1, %r2, %r3;"), ("bmsk", "bmsk.wrap.b32 %r1, %r2, %r3;"),
        ("dp4a / dp2a", "dp4a.u32.u32 %r1, %r2, %r3, %r4;\ndp2a.lo.s32.s32 %r1, %r2, %r3, %r4;"),
        ("add.cc / addc / sub.cc / subc / mad.cc / madc",
         "add.cc.u32 %r1, %r2, %r3;\naddc.u32 %r4, %r2, %r3;\nmad.lo.cc.u32 %r1, %r2, %r3, %r4;\nmadc.hi.u32 %r4, %r2, %r3, %r4;"),
        # ---- floating point
        ("testp / copysign", "testp.finite.f32 %p1, %f1;\ncopysign.f32 %f1, %f2, %f3;"),
        ("add / sub / mul / fma / mad (f32, f64; rounding, .ftz, .sat)", "add.rn.ftz.f32 %f1, %f2, %f3;\nfma.rn.f64 %fd1, %fd2, %fd3, %fd4;"),
        ("div / rcp / sqrt (IEEE, .full)", "div.full.f32 %f1, %f2, %f3;\nrcp.rn.f64 %fd1, %fd2;\nsqrt.rn.f32 %f1, %f2;"),
        ("min / max (.NaN, .xorsign.abs)", "min.NaN.f32 %f1, %f2, %f3;\nmax.xorsign.abs.f32 %f1, %f2, %f3;"),
        ("half arithmetic (f16, bf16, x2; .relu)", "fma.rn.relu.f16x2 %r1, %r2, %r3, %r4;"),
        ("set / setp / selp / slct", "set.lt.u32.s32 %r1, %r2, %r3;\nsetp.lt.and.s32 %p1, %r2, %r3, %p2;\n"
                                     "selp.b32 %r1, %r2, %r3, %p1;\nslct.s32.s32 %r1, %r2, %r3, %r4;"),
        ("and / or / xor / not / cnot / lop3", "and.b32 %r1, %r2, %r3;\nor.pred %p1, %p2, %p3;\nnot.b32 %r1, %r2;\n"
                                                "cnot.b32 %r1, %r2;\nlop3.b32 %r1, %r2, %r3, %r4, 0x96;"),
        ("shf / shl / shr", "shf.l.wrap.b32 %r1, %r2, %r3, %r4;\nshl.b32 %r1, %r2, %r3;\nshr.s32 %r1, %r2, %r3;"),
        ("prmt", "prmt.b32 %r1, %r2, %r3, %r4;"),
        ("cvt (every float/integer pair, f16x2/bf16x2/tf32, e4m3x2/e5m2x2)", "cvt.rn.f16.f32 %h1, %f1;\n"
                                                                             "cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;"),
        ("cvt.pack", "cvt.pack.sat.u8.s32.b32 %r1, %r2, %r3, %r4;"),
        ("SIMD video: vadd2/4 vsub2/4 vavrg2/4 vabsdiff2/4 vmin2/4 vmax2/4 vset2/4", "vadd2.u32.u32.u32 %r1, %r2, %r3, %r4;"),
    )],
    ("sin / cos / lg2 / ex2 / tanh / rsqrt / rcp.approx / sqrt.approx (f32, f16, bf16; rcp/rsqrt.approx.ftz.f64)",
     "sin.approx.f32 %f1, %f2;\nex2.approx.f16 %h1, %h2;\ntanh.approx.bf16 %h1, %h2;\nrsqrt.approx.ftz.f64 %fd1, %fd2;",
     "run", MUFU, ""),
    # ---- data movement
    ("mov / ld / st / ldu / ld.global.nc (every space, vector widths)",
     "mov.u32 %r1, %r2;\nld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\nldu.global.u32 %r1, [%rd1];\n"
     "st.shared.u32 [smem], %r1;", "run", KERNELS, ""),
    ("shfl.sync", "shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;", "run", KERNELS, ""),
    ("cvta / isspacep", "cvta.to.global.u64 %rd2, %rd1;\nisspacep.shared %p1, %rd1;", "run", KERNELS, ""),
    ("prefetch / prefetchu / prefetch.tensormap / createpolicy", "prefetch.global.L2::evict_last [%rd1];\n"
     "prefetchu.L1 [%rd1];\nprefetch.tensormap [%rd1];\n"
     "createpolicy.fractional.L2::evict_last.b64 %rd2, 1.0;", "run", HINT, ""),
    ("cp.async.bulk.prefetch / cp.async.bulk.prefetch.tensor (.tile)", "cp.async.bulk.prefetch.L2.global [%rd1], 16;",
     "run", HINT, ""),
    ("applypriority", "applypriority.global.L2::evict_normal [%rd1], 128;", "refused",
     "a cache-priority hint the emulator has no executor for yet", "applypriority"),
    ("discard", "discard.global.L2 [%rd1], 128;", "refused",
     "after it the line's memory contents are undefined: nothing to reproduce", "discard"),
    ("ldmatrix / stmatrix (every .x1/.x2/.x4, .trans) / movmatrix",
     "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [smem];\n"
     "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [smem], {%r1, %r2, %r3, %r4};\nmovmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;",
     "run", DATAMOVE, ""),
    ("cp.async (.ca/.cg, groups, cp.async.mbarrier.arrive)", "cp.async.ca.shared.global [smem], [%rd1], 4;\n"
     "cp.async.commit_group;\ncp.async.wait_group 0;\ncp.async.mbarrier.arrive.noinc.shared::cta.b64 [%r9];", "run", DATAMOVE + "; the captured GEMM kernels", ""),
    ("cp.async.bulk / cp.reduce.async.bulk / bulk groups",
     "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [smem], 16;\ncp.async.bulk.commit_group;\n"
     "cp.async.bulk.wait_group.read 0;", "run", TMA, ""),
    ("cp.async.bulk.tensor / cp.reduce.async.bulk.tensor (.tile, 1d-5d, multicast)",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smem], [%rd1, {%r1, %r2}], [%r9];",
     "run", TMA, ""),
    ("im2col tensor copies and prefetches",
     "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [smem], [%rd1, {%r1, %r2, %r3}], [%r9], {%h1};",
     "refused", "no im2col address generation is modelled, and none was captured", "im2col"),
    ("tensormap.replace / tensormap.cp_fenceproxy / fence.proxy.tensormap",
     "tensormap.replace.tile.global_address.shared::cta.b1024.b64 [smem], %rd1;\n"
     "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [smem], 128;",
     "run", "semantics (tests/test_tma.py); the tensor maps' bytes equal the driver's (tests/data/tma/tensormap_encode.npz); "
     "the captured Triton corpus kernels (tests/test_corpus.py)", ""),
    ("mapa / getctarank", "mapa.shared::cluster.u32 %r1, %r2, 0;\ngetctarank.shared::cluster.u32 %r1, %r2;", "run",
     CLUSTER, ""),
    # ---- texture / surface / multimem / stack
    ("tex / tld4 / txq / istypep", "txq.width.b32 %r1, [%rd1];", "refused",
     "textures need the driver's texture objects and filtering hardware: not modelled", "txq"),
    ("suld / sust / sured / suq", "suq.width.b32 %r1, [%rd1];", "refused",
     "surfaces need the driver's surface objects: not modelled", "suq"),
    ("multimem.ld_reduce / multimem.st / multimem.red", "multimem.st.relaxed.sys.global.u32 [%rd1], %r1;", "refused",
     "needs NVLink multicast memory across GPUs: nothing to run it on", "multimem"),
    ("stacksave / stackrestore / alloca", "alloca.u64 %rd2, 16;", "refused",
     "dynamic stack allocation is not modelled (nvcc emits it only for variable-length local arrays)", "alloca"),
    # ---- control flow
    ("bra / brx.idx / call / ret / exit", "bra.uni L9;", "run",
     "H100 divergence and control-flow captures (tests/test_divergence.py, tests/test_ctrlflow.py)", ""),
    # ---- synchronisation
    ("bar / barrier (.sync, .arrive, .red) / bar.warp.sync", "bar.sync 0;\nbar.warp.sync -1;\n"
     "bar.red.popc.u32 %r1, 0, %p1;", "run", KERNELS, ""),
    ("barrier.cluster", "barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;", "run", CLUSTER, ""),
    ("membar / fence (incl. .proxy.async, .mbarrier_init)", "membar.gl;\nfence.acq_rel.gpu;\n"
     "fence.proxy.async.shared::cta;\nfence.mbarrier_init.release.cluster;", "run",
     "ordering only: the emulator runs one thread's memory operations in program order", ""),
    ("atom / red (every form)", "atom.global.add.u32 %r1, [%rd1], %r2;\nred.shared.add.u32 [smem], %r2;", "run", ATOM, ""),
    ("red.async / st.async", "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [smem], %r2, [%r9];", "run",
     ASYNC, ""),
    ("vote / match / activemask / redux / elect", "vote.sync.ballot.b32 %r1, %p1, -1;\nmatch.any.sync.b32 %r1, %r2, -1;\n"
     "activemask.b32 %r1;\nredux.sync.add.u32 %r1, %r2, -1;\nelect.sync %r1|%p1, -1;", "run", KERNELS, ""),
    ("griddepcontrol", "griddepcontrol.launch_dependents;\ngriddepcontrol.wait;", "run",
     "a grid runs after the one before it has finished, so both are satisfied at once; the captured coresident "
     "kernels (tests/test_coresident.py)", ""),
    ("mbarrier (init, inval, arrive, arrive_drop, expect_tx, complete_tx, test_wait, try_wait, pending_count, "
     "remote arrive)", "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd2, [%r9], 0;\n"
     "mbarrier.test_wait.shared::cta.b64 %p1, [%r9], %rd2;\nmbarrier.pending_count.b64 %r1, %rd2;\n"
     "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r9], 0;", "run",
     "phases and tx-counts (tests/test_mbarrier.py); the captured TMA and warp-specialised kernels", ""),
    ("setmaxnreg", "setmaxnreg.inc.sync.aligned.u32 240;", "run", "a register-budget hint: no effect on values", ""),
    # ---- tensor cores
    ("mma.sync (every sm_90 form)", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, "
     "{%r1, %r2}, {%r3}, {%f5, %f6, %f7, %f8};", "run", "H100 capture (tests/test_mma_captures.py)", ""),
    ("mma.sp / mma.sp::ordered_metadata (every sm_90a form)",
     "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, "
     "{%r3, %r4}, {%f5, %f6, %f7, %f8}, 0x44444444, 0;", "run", "H100 capture (tests/test_mma_sp.py)", ""),
    ("wmma (load, store, mma)", "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 "
     "{%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [smem];", "run", "H100 capture (tests/test_wmma.py)", ""),
    ("wgmma.mma_async / fence / commit_group / wait_group",
     "wgmma.fence.sync.aligned;\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;", "run",
     "H100 captures (tests/test_wgmma_captures.py)", ""),
    ("wgmma.mma_async.sp (every sm_90a form)", "wgmma.fence.sync.aligned;\nwgmma.mma_async.sp.sync.aligned.m64n8k32."
     "f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd2, %rd3, %r1, 0, 1, 1, 1, 0, 0;\nwgmma.commit_group.sync.aligned;\n"
     "wgmma.wait_group.sync.aligned 0;", "run", "H100 capture: 104 forms (every type, both selectors, A from "
     "registers and shared memory, transposes, negative scales) and undefined metadata (tests/test_wgmma_sp.py)",
     ""),
    # ---- miscellaneous
    ("nanosleep / brkpt / trap", "nanosleep.u32 100;", "run", KERNELS + "; trap and brkpt stop the launch with an error", ""),
    ("pmevent / pmevent.mask", "pmevent 1;", "refused", "signals a profiler's performance-monitor event: no "
     "profiler to signal", "pmevent"),
    ("scalar video instructions vadd vsub vabsdiff vmin vmax vshl vshr vmad vset",
     "vadd.u32.u32.u32.sat %r1, %r2, %r3;", "refused", "not implemented (nvcc does not emit them)", "vadd"),
    # ---- special registers
    ("%tid %ntid %laneid %warpid %nwarpid %ctaid %nctaid %lanemask_* %dynamic_smem_size %total_smem_size %cluster_*",
     "mov.u32 %r1, %warpid;\nmov.u32 %r2, %lanemask_lt;\nmov.u32 %r3, %total_smem_size;", "run",
     "their CUDA values (docs/kernels.md)", ""),
    ("%clock / %clock64 / %globaltimer(_lo, _hi) / %smid / %nsmid",
     "mov.u64 %rd2, %clock64;\nmov.u64 %rd3, %globaltimer;\nmov.u32 %r1, %smid;\nmov.u32 %r2, %nsmid;", "run",
     "a documented deterministic model: %clock counts the warp's issued instructions, %globaltimer = 32 ns x that "
     "count, %smid = linear CTA id mod 132, %nsmid = 132 (docs/kernels.md)", ""),
    ("%gridid %pm0..7(_64) %envreg0..31 %aggr_smem_size %reserved_smem_offset_* %current_graph_exec",
     "mov.u32 %r1, %envreg0;", "refused", "set by the driver or a profiler: no model of their values", "envreg0"),
    # ---- not sm_90a
    ("cvt to/from e2m1x2, e2m3x2, e3m2x2, ue8m0x2; cvt.rs", "cvt.rn.satfinite.e2m3x2.f32 %h1, %f1, %f2;", "refused",
     NOT_SM90, "e2m3x2"),
    ("tcgen05.* (tensor memory, 5th-generation MMA)", "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem], 32;",
     "refused", NOT_SM90, "tcgen05"),
    ("st.bulk / clusterlaunchcontrol / mma .kind::f8f6f4 and block scaling", "st.bulk.weak.shared::cta [smem], 64, 0;",
     "refused", NOT_SM90, "bulk"),
]
