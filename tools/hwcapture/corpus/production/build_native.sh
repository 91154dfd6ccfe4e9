#!/bin/bash
# Compile the production kernels' PTX with each project's own flags, build the host programs, run them on the
# GPU and collect what they write (production.py native turns the folder into corpus cases).
#   TK=ThunderKittens DG=DeepGEMM CUTLASS=cutlass (checkouts) build_native.sh CAPTURE_DIR
# With PREBUILT=folder, the PTX files and host objects already built there (same commands, -c) are used.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
CAP=$1
mkdir -p "$CAP"
TK_FLAGS="-std=c++20 -O3 --use_fast_math --expt-extended-lambda --expt-relaxed-constexpr -Xcompiler=-Wno-psabi -Xcompiler=-fno-strict-aliasing -DNDEBUG -lineinfo -DKITTENS_HOPPER -gencode arch=compute_90a,code=sm_90a"
DG_FLAGS="-std=c++20 --diag-suppress=39,161,174,177,186,940 --ptxas-options=--register-usage-level=10 --gpu-architecture=sm_90a --compiler-options=-fPIC,-O3,-fconcepts,-Wno-deprecated-declarations,-Wno-abi -O3 --expt-relaxed-constexpr --expt-extended-lambda"
build() {   # name flags includes...
    local name=$1 flags=$2; shift 2
    if [ -n "$PREBUILT" ]; then
        cp "$PREBUILT/$name.ptx" "$CAP/$name.ptx"
        nvcc "$PREBUILT/$name.o" -o "$CAP/$name" -lcuda
    else
        nvcc $flags -I"$HERE" "$@" --ptx "$HERE/$name.cu" -o "$CAP/$name.ptx"
        nvcc ${flags/--gpu-architecture=sm_90a/-gencode arch=compute_90a,code=sm_90a} -I"$HERE" "$@" "$HERE/$name.cu" -o "$CAP/$name" -lcuda
    fi
}
if [ -z "$PREBUILT" ]; then
    # mha_h100.cu next to an empty harness.impl (its standalone driver, left out)
    mkdir -p "$CAP/src/attn" && cp "$TK/kernels/attention/mha_h100/mha_h100.cu" "$CAP/src/attn/" && : > "$CAP/src/attn/harness.impl"
fi
build tk_gemm "$TK_FLAGS" -I"$TK/include" -I"$TK/prototype" -I"$TK/kernels/gemm/bf16_h100" &
build tk_gemm_fp8 "$TK_FLAGS" -I"$TK/include" -I"$TK/prototype" -I"$TK/kernels/gemm/fp8_h100" &
build tk_attn "$TK_FLAGS" -I"$TK/include" -I"$TK/prototype" -I"$CAP/src/attn" &
build dg_fp8 "$DG_FLAGS" -I"$DG/deep_gemm/include" -I"$CUTLASS/include" &
wait
cd "$CAP"
CAPTURE_FLAGS="ThunderKittens: $TK_FLAGS" timeout 120 ./tk_gemm tk_gemm.ptx . || echo "tk_gemm failed: $?"
CAPTURE_FLAGS="ThunderKittens: $TK_FLAGS" timeout 120 ./tk_gemm_fp8 tk_gemm_fp8.ptx . || echo "tk_gemm_fp8 failed: $?"
CAPTURE_FLAGS="ThunderKittens: $TK_FLAGS" timeout 120 ./tk_attn tk_attn.ptx . || echo "tk_attn failed: $?"
CAPTURE_FLAGS="DeepGEMM JIT: $DG_FLAGS" timeout 120 ./dg_fp8 dg_fp8.ptx . || echo "dg_fp8 failed: $?"
python3 - <<'PY'
import json, subprocess
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                     text=True).stdout.strip()
nv = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
json.dump({"gpu": smi.split(",")[0], "nvidia_smi": smi, "nvcc": nv}, open("meta.json", "w"))
PY
