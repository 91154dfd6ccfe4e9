#!/bin/bash
# Measure every pattern of patterns.txt with Nsight Compute on the GPU of this machine.
# Usage (from the repository root): OUT=<folder> bash tools/hwcapture/banks/run.sh
# Then, on any machine: python tools/hwcapture/banks/collect.py <folder>  (writes tests/data/banks/).
set -u
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  nvcc --version | tail -2
  ncu --version | tail -1
} > "$OUT/env.txt" 2>&1
nvcc -arch=sm_90a -O2 -diag-suppress 550 -o banks banks.cu || exit 1
# SASS of the instructions of interest, to show what each kernel really issues.
cuobjdump -sass banks 2>/dev/null | grep -E "Function|LDS|STS|LDSM|STSM|LDGSTS|ATOMS|LDGDEPBAR|DEPBAR" > "$OUT/sass.txt"
# Ask for the optional counters only where this ncu knows them (an unknown name fails every kernel).
REQUIRED="l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts l1tex__data_pipe_lsu_wavefronts_mem_shared"
OPTIONAL="l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts \
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_stsm"
KNOWN=$(timeout 60 ncu --query-metrics 2>/dev/null | awk '{print $1}')
M=""
for m in $REQUIRED; do M="$M,$m.sum"; done
for m in $OPTIONAL; do echo "$KNOWN" | grep -qx "$m" && M="$M,$m.sum"; done
M=${M#,}
echo "metrics: $M" >> "$OUT/env.txt"
timeout ${NCU_TIMEOUT:-400} ncu --csv --print-units base --cache-control none --clock-control none \
  --metrics "$M" ./banks patterns.txt > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu exit $?" >> "$OUT/env.txt"
wc -l "$OUT/ncu.csv" >> "$OUT/env.txt"
cat "$OUT/env.txt"; tail -5 "$OUT/ncu.err"
