#!/bin/bash
# on the GPU machine: run every case binary on its own PTX, pack the records
D=$(dirname "$0")
T=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $T/gpu.txt
cat $T/gpu.txt
for c in "$@"; do
  mkdir -p $T/c$c
  start=$(date +%s%N)
  timeout 120 $D/g$c $D/k$c.ptx $T/c$c > $T/c$c/log.txt 2>&1
  rc=$?; echo "case $c rc $rc $(( ($(date +%s%N) - start) / 1000000 )) ms" >> $T/c$c/log.txt
  cat $T/c$c/log.txt
done
python3 $D/pack_raw.py $T $OUT
ls -la $OUT
