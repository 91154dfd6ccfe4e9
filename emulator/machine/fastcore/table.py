"""The compact form of a translated program: one int64 row per instruction, one uint64 row of immediates.

Every name here is a number the jitted loop (``loop.py``) switches on. An instruction the fast engine does
not translate keeps opcode ``SLOW``: the loop hands it back to the reference executors.
"""

# -- opcodes -----------------------------------------------------------------------------------------
SLOW = 0          # run by the reference executor (rare ops, calls, barriers, exits)
BRA = 1           # branch (guard = the condition)
MOV = 2           # d = a
ADD = 3
SUB = 4
MUL_LO = 5
MUL_HI = 6
MUL_WIDE = 7      # d (2w) = a * b (w-bit operands, extended by signedness)
MAD_LO = 8
MAD_HI = 9
MAD_WIDE = 10
SHL = 11
SHR = 12
AND = 13
OR = 14
XOR = 15
NOT = 16
MIN = 17
MAX = 18
NEG = 19
ABS = 20
SETP = 21         # integer or float comparison, optional boolean op and second destination
SELP = 22
CVT_II = 23       # integer -> integer, no .sat
LD = 24
ST = 25
FADD32 = 26       # add/sub/mul.f32 {.rn}: native IEEE binary32 (single rounding), canonical NaN
FSUB32 = 27
FMUL32 = 28
FFMA32 = 29       # fma.rn.f32 / mad.rn.f32: exact product, sum rounded to odd in binary64, then RNE
NOP = 30          # membar / fence / prefetch: nothing to do
MMA = 33          # mma.sync of the tensor-core families (X: index into the translation's mma tables)
MMA_X = 56        # as MMA, for the forms the lookup tables do not decode (tf32) and sm_90's fp8 (mmaext.py)
LDMATRIX = 34     # ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16 (Y: matrices, Z: .trans)
WGMMA = 53        # wgmma.fence / commit_group / wait_group / mma_async (wgmmax.py; X: wgmmax.W_*): run by the CTA
                  # loop (state S_WG), handed back by a warp run alone
STMATRIX = 52     # stmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16 (as LDMATRIX; V0..: the sources)
EXIT = 32         # ret / exit while no lane is inside a call: the guarded lanes exit
SHFL = 31         # shfl.sync.{up,down,bfly,idx}.b32 (X: mode; membermask operand in V0)
BFE = 36          # bfe.{u32,s32,u64,s64} (A: value, B: position, C: length, both read as u32)
BAR = 35          # bar{.cta}.sync/.arrive, barrier{.cta}{.aligned}.sync/.arrive with an immediate barrier number
                  # and no thread count (X: barrier, Y: 1 = arrive, Z: 1 = .aligned): the loop stops with ST_BAR;
                  # the CTA loop (run_cta) keeps the barriers, or, for a warp run alone, machine.cta arrives
PRMT = 50         # prmt.b32 without a mode (selector nibbles: byte index, bit 3 replicates the sign)
TF32_RNA = 51     # cvt.rna{.satfinite}.tf32.f32 (X: 1 = .satfinite): ops.cvt_narrow's integer steps
MUFU = 37         # the f32 forms of ex2/rcp .approx (fmath.py; X: form, Y: 1 = .ftz), as numerics.mufu computes
                  # them; the tables through the translation's pointers
MUFU_R = 57       # the lg2/rsqrt/sqrt .approx f32 forms of MUFU (as MUFU; fcall.entry_mufu_r)
MUFU_X = 49       # the sin/cos .approx and tanh.approx forms of MUFU (as MUFU; fcall.entry_mufu_x)
MUFU_DIV = 38     # div.approx/div.full {.ftz}.f32 (X: 1 = .full, Y: 1 = .ftz)
FMINMAX = 39      # min/max {.ftz}{.NaN}.f32 (X: 1 = min, Y: 1 = .ftz, Z: 1 = .NaN)
FNEGABS = 45      # neg/abs {.ftz}.f32 (X: 0 = abs, 1 = neg, Y: 1 = .ftz), copysign.f32 (X: 2)
FARITH = 46       # add/sub/mul/fma .rn.ftz.f32 and the add/sub ptxas contracts with a mul (fmath.F_*: X; Y: .ftz;
                  # Z: bit 0 the product negated, bit 1 the addend negated)
FCVT = 47         # the common float conversions (fmath.CV_*: X; Y: integer rounding; Z: .ftz; V0: destination bits)
MUFU_DIVFMA = 48  # an add/sub ptxas contracts with div.approx/div.full .f32: rcp(b') * a' + c in one rounding
                  # (X: 1 = .full, Y: .ftz, Z: as FARITH's; A, B: the division's operands, C: the addend)
CPASYNC = 40      # cp.async.{ca,cg}.shared{::cta}.global (cpasync.py; X: cp-size, Y: 1 = .cg, A/B: dst/src base,
                  # offsets in immediate slots 0/1, C: src-size operand or -1)
CP_COMMIT = 41    # cp.async.commit_group
CP_WAIT = 42      # cp.async.wait_group N (X: N) / cp.async.wait_all (Y: 1: commit first, X: 0)
MOV_UNPACK = 91   # mov.bW {d0, .., d(n-1)}, a: element i of a into d_i (Y: n, Z: element bits, destinations V0..;
                  # the forms XROW's K_UNPACK leaves, e.g. 4 parts)
XROW = 70         # integer, bit and warp-collective rows (scalarx.py; X: scalarx.K_*, Y/Z: its parameters; W/SGN:
                  # A's type; V0: a fourth source, V0+1..V0+3: the widths B, C and V0 are read with, V0+4: their
                  # signedness (bits 0..2), V0+5/V0+6: the destination's width/signedness, V0+7: a second
                  # destination (carry flag, predicate))
ATOM = 71         # atom/red on global or this CTA's shared memory (atomics.py; X/Y/Z: space, 1, element bytes
                  # as for LD/ST; A: address, B/C: b/c read as W bits, D: the old value; V0: atomics.OPS index,
                  # V0+1: atomics.T_*)
BULKX = 73        # TMA box loads and stores (bulkx.py; X: bulkx.B_*, Y: the rank; A: tensor map, C: shared box, B:
                  # mbarrier, offsets in immediates 3, 2, 1; V0..V0+4: the coordinates)
HOPX = 72         # elect.sync, mapa, tensormap.replace.tile on shared memory, fence.proxy.async, and Hopper's
                  # instructions with nothing to do (asyncx.py; X: asyncx.K_*, K_NOP: the loop does not call)

BRX = 74          # brx.idx{.uni} (guard = the condition; A: the index, read as .u32; X: the number of targets, at
                  # most 8, their PCs in V0..V0+X-1): an index past the list goes back (the reference raises)

NAMES = {v: k for k, v in dict(globals()).items() if k.isupper() and isinstance(v, int)}
MUFU_ROWS = (MUFU, MUFU_DIV)                          # the mufu family (fcall.py; MUFU_R: mufu_r, MUFU_X: mufu_x)
# the float family (min, max, neg, abs) and farith (the .ftz and contracted arithmetic; fcall.py; FCVT: fcvt)
FLOAT_ROWS = (FMINMAX, FNEGABS, FARITH, MUFU_DIVFMA)

# -- fields of a code row --------------------------------------------------------------------------------
OP = 0            # opcode
GUARD = 1         # guard predicate operand (-1: none)
GNEG = 2          # 1: the guard is negated (@!%p)
D = 3             # destination operand
A = 4             # sources
B = 5
C = 6
W = 7             # operand type width in bits (1 for .pred)
SGN = 8           # 1: signed type (sign-extension on width changes, signed compare/min/max/shr)
X = 9             # op-specific: SETP comparison code; LD/ST space; BRA target
Y = 10            # op-specific: SETP boolean op; LD/ST vector length
Z = 11            # op-specific: SETP second destination; LD/ST element width in bytes
V0 = 12           # LD/ST: the vector's registers (V0..V0+7)
CNEG = 20         # SETP/SELP: the predicate source c is negated
FLT = 21          # SETP: 1 = f32 compare, 2 = f64 compare
WG = 22           # 1: an operand is a register some wgmma.mma_async holds (handed back while the warp's are in flight)
PDIN = 23         # the instruction's interval in its function's post-dominator tree (machine.convergence)
PDOUT = 24
SYNCPT = 25       # warp-synchronous: machine.convergence NOT_SYNC, ALL_LANES, MASK_IMM, MASK_REG (its lanes wait
                  # for the lanes it names)
TAIL = 26         # 1: straight-line code to the kernel's exit (lanes there never wait at a join)
MMASK = 27        # SYNCPT MASK_IMM: the membermask; MASK_REG: the membermask register (a 32-bit arena slot)
RANK = 28         # the order in which lane groups run (machine.convergence.Convergence.rank)
LID = 29          # LID..LID+3: the innermost loops around the instruction (-1: none), LIN/LOUT: its post-dominator
LIN = 33          # interval within each of them (machine.convergence.Convergence.joins)
LOUT = 37
NFIELDS = 41

# -- operands ----------------------------------------------------------------------------------------------
# >= 0: a register, CLASS << 28 | element index of lane 0 in the arena view of that class
# -1: none
# <= -2: immediate number (-2 - k) of the instruction's immediate row
CLASS_SHIFT = 28
INDEX_MASK = (1 << 28) - 1
PRED, R16, R32, R64 = 0, 1, 2, 3           # register classes (arena views: uint8, uint16, uint32, uint64)
CLASS_OF_WIDTH = {1: PRED, 16: R16, 32: R32, 64: R64}
CLASS_BYTES = {PRED: 1, R16: 2, R32: 4, R64: 8}
NIMM = 4
IMM_OFFSET = 3    # LD/ST: the address offset lives in immediate slot 3

# -- memory spaces (LD/ST field X) ---------------------------------------------------------------------------
GENERIC, SHARED, GLOBAL, PARAM, LOCAL = 0, 1, 2, 3, 4
SHARED_CLUSTER = 5    # .shared::cluster (memory.dsmem): any CTA of the cluster, planned by dsmemx.py only
# LOCAL rows: B is the 64-bit arena slot holding each lane's .local depot (a global allocation: KernelWarp.local_bases),
# C the depot's size in bytes; a local address is an offset into the lane's depot

# -- comparisons (SETP field X) ----------------------------------------------------------------------------
CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
        "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
CMP = {c: i for i, c in enumerate(CMPS)}
BOOLS = {None: 0, "and": 1, "or": 2, "xor": 3}

# -- exit status of the loop -------------------------------------------------------------------------------
ST_IDLE = 0       # no lane of the warp can run (exited, or waiting at a barrier)
ST_SLOW = 1       # the next instruction (state PC, MASK) needs the reference executor
ST_LOG = 2        # the shared-memory access log is full
ST_EXITED = 3     # lanes exited: the scheduler checks the barriers, then runs the warp on
ST_BAR = 4        # lanes S_MASK arrived at barrier S_PC's X (their PCs already advanced)
ST_WGWAIT = 6     # lanes S_MASK wait at the wgmma.wait_group at S_PC for the warpgroup (wgmmax.py; counted as issued)
ST_MBWAIT = 7     # lanes S_MASK of the try_wait at S_PC wait for their mbarrier's phase (ctaloop.py; counted as issued;
                  # the other lanes of the group moved on)
ST_PICK = 8       # the warp's lanes diverged and the lane-group pick (pickcall.pick_c) is not bound: the engine binds
                  # it and runs the loop on, or picks in Python (engine.bind_pick); the instructions before ran
ST_DEFER = 5      # no instruction ran: every runnable lane group waits for lanes parked elsewhere (a join, a
                  # warp-synchronous instruction; machine.convergence)

# -- fields of the state vector ----------------------------------------------------------------------------
(S_STATUS, S_PC, S_MASK, S_BUDGET, S_ISSUED, S_INFLIGHT, S_NLOG, S_EXECUTED, S_SMEM_PTR, S_SMEM_SIZE,
 S_PARAM_PTR, S_PARAM_SIZE, S_LASTALLOC, S_CTA, S_BACK, S_SPIN_CHECK, S_WG_REGS, S_WG_SMEM) = range(18)
S_WG_READS, S_DIRTY, S_DIRTY_N = 18, 19, 20   # shared stores beside the async proxy (memx.py): raw pointers to the
                                               # CTA's wgmma read counts (int32 a byte) and async-proxy marks (bool a
                                               # byte), 0: none; the number of stores the loop marked
S_WG, S_WARP = 21, 22     # the CTA's wgmma arrays (wgmmax.WgTable.ctl's address, 0: none) and the warp run_cta runs
S_MBAR, S_MBAR_N, S_MBAR_CHANGED = 23, 24, 25  # the CTA's mbarrier table (memory.mbarrier.MBarriers.rows: raw pointer,
                                               # rows in use; 0: the mbarrier rows go back) and the number of changes
                                               # the loop made to it (asyncx.py)
S_GTAB, S_GTAB_N = 26, 27     # the global-memory table (engine.global_table: raw pointer, rows), for the HOPX rows
S_MBW, S_MBSTALL = 28, 29     # 1: a try_wait whose phase has not completed parks its lanes in the CTA loop (0: goes
                              # back); the lanes it parked (hopcall.py -> loop.run)
S_BARSEQ, S_BARCNT, S_BAR_ID, S_BAR_CNT = 30, 31, 32, 33   # the CTA loop's barrier table (raw pointers to its
                              # bar_seq and thread counts) and the barrier number and count of the last BAR row
S_MBINIT, S_MBAR_CAP, S_MBAR_REBUILT = 34, 35, 36   # 1: mbarrier.init/inval run in the loop (the CTA loop, which
                              # gives MBarriers its Python objects back); the table's rows; 1: the loop added or freed
S_BULK = 37                   # the staging area of the TMA rows (bulkx.Staging's control vector; 0: they go back)
S_CLUSTER = 38                # the CTA's cluster (hopcall.py: CL_* rows of raw pointers; 0: a CTA alone, remote rows
                              # go back)
NSTATE = 39              # S_CTA: 1 when the CTA loop (run_cta) runs the warp (it arrives at ST_BAR itself);
                   # S_BACK: backward branches the warp took; S_SPIN_CHECK: machine.cta.SPIN_CHECK;
                   # S_WG_REGS: 1 while wgmma.mma_async of this warp hold registers (rows with WG go back);
                   # S_WG_SMEM: 1 while wgmma.mma_async of the CTA read shared memory (cp.async goes back)

# -- the CTA loop's own state (run_cta), kept between its calls --------------------------------------------
C_STATUS, C_WARP, C_INWARP, C_PROGRESSED, C_SEQ = range(5)
C_YIELDED, C_VERCHG, C_NSTALL, C_ASYNC, C_MBSEQ = range(5, 10)   # ctaloop.py: a warp yielded with its state changed
                  # this round; the mbarriers changed this round; mbarrier stall records; 1: copies may be in flight
                  # (the round's end goes to Python, which pumps them); the stall counter (without wgmma)
C_BARCNT = 10     # C_BARCNT + b: the thread count barrier b was first used with (-1: every non-exited thread)
NCSTATE = C_BARCNT + 16
CTA_DONE, CTA_SLOW, CTA_DEADLOCK = 0, 1, 2   # C_STATUS: every thread exited / warp C_WARP needs Python / stuck
# the CTA loop's per-warp wait records (ctaloop.py): int64 (warps, MB_ROWS, 32)
MB_SEQ, MB_ADDR, MB_VAL, MB_PAR, MB_LADDR, MB_LVAL, MB_LPAR, MB_W, MB_YPC, MB_YEXIT = range(10)
MB_ROWS = 10      # MB_SEQ..MB_PAR: per lane, the stall record (-1: none), barrier, parity or state, 1 = .parity;
                  # MB_L*: the warp's last stall (its reason); MB_W: per-warp scalars (MW_*); MB_YPC/MB_YEXIT: the
                  # PCs and exits at the warp's last yield (with its arena in the snapshot array)
MW_LSEQ, MW_LMASK, MW_LPC, MW_YVALID, MW_XVER, MW_YVER = range(6)
