#!/bin/bash
# On the GPU machine: build every case (in parallel), run each binary on its own PTX, pack the records into $OUT.
#   CUTLASS=/path/to/cutlass run.sh 1 2 3 4 5 6 7 8 9 10
# Each binary g<n> loads the PTX that nvcc kept while building it (k<n>.ptx): the same translation unit's code.
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
BIN=$T/bin; mkdir -p $BIN
build() {
  c=$1; mkdir -p $BIN/keep$c
  timeout 400 nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90a -O3 -DNDEBUG -DCASE=$c \
    -I$CUTLASS/include -I$CUTLASS/tools/util/include -diag-suppress 20012 -t 2 \
    -keep -keep-dir $BIN/keep$c -o $BIN/g$c $HERE/gemm.cu > $BIN/build$c.txt 2>&1
  echo "build $c rc $?" >> $BIN/build$c.txt
  cp $BIN/keep$c/gemm.compute_90a.ptx $BIN/k$c.ptx
}
export -f build; export BIN HERE CUTLASS
start=$(date +%s)
printf "%s\n" "$@" | xargs -P 9 -I{} bash -c 'build {}'
echo "built in $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $T/gpu.txt
cat $T/gpu.txt
for c in "$@"; do
  mkdir -p $T/c$c
  cp $BIN/k$c.ptx $T/c$c/kernel.ptx 2>/dev/null
  [ -f $BIN/build$c.txt ] && tail -c 3000 $BIN/build$c.txt > $T/c$c/build.txt
  start=$(date +%s%N)
  timeout 90 $BIN/g$c $BIN/k$c.ptx $T/c$c > $T/c$c/log.txt 2>&1
  rc=$?; echo "case $c rc $rc $(( ($(date +%s%N) - start) / 1000000 )) ms" >> $T/c$c/log.txt
  cat $T/c$c/build.txt 2>/dev/null | grep -E "error|build" | head -5
  cat $T/c$c/log.txt
done
python3 $HERE/pack_raw.py $T $OUT
ls -la $OUT
