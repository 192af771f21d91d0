#!/usr/bin/env bash
# The CUDA validation on a machine with an NVIDIA GPU, from a fresh checkout: builds the planner and
# mlaplan-validate for the GPU's compute capability, shows what they link (the planner: no CUDA
# library), runs `mlaplan validate --backend cuda` under a timeout, and keeps every log.
#
#   scripts/device-check.sh OUTDIR [TIMEOUT_S]
#
# Run from the repository root. TIMEOUT_S bounds the validation run (default 480: 8 minutes).
# OUTDIR receives: env.txt, nvidia-smi.txt, configure.log, build.log, ldd-mlaplan.txt,
# ldd-mlaplan-validate.txt, validate.stdout, validate.stderr, exit-codes.txt, and the run's results in
# OUTDIR/<gpu-name>/ (report.md, ops.csv, checks.csv, calibrated-gpu.json, ...).
# Exit code: the validation run's (124 when it timed out), 1 when the build fails or the planner
# links CUDA, 2 for a usage error or a machine without an NVIDIA GPU.
set -u -o pipefail

usage() {
  echo "usage: scripts/device-check.sh OUTDIR [TIMEOUT_S]" >&2
  exit 2
}
if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then usage; fi
out_arg=$1
timeout_s=${2:-480}
if ! [[ $timeout_s =~ ^[0-9]+$ ]] || [ "$timeout_s" -eq 0 ]; then
  echo "device-check: TIMEOUT_S must be a positive number of seconds, not '$timeout_s'" >&2
  exit 2
fi
if [ ! -f CMakeLists.txt ] || [ ! -d validate/cuda ]; then
  echo "device-check: run it from the repository root (no CMakeLists.txt and validate/cuda here)" >&2
  exit 2
fi
if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "device-check: no NVIDIA GPU here (nvidia-smi is missing or finds no device); nothing built or run" >&2
  exit 2
fi

mkdir -p "$out_arg" || exit 2
out=$(cd "$out_arg" && pwd) || exit 2
codes="$out/exit-codes.txt"
: > "$codes"
record() {  # record NAME CODE
  echo "$1=$2" >> "$codes"
  echo "device-check: $1 exit code $2"
}
section() {  # section TITLE FILE: prints a file under a title
  echo
  echo "==== $1"
  cat "$2"
}

# The machine and the tools.
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
record nvidia_smi "$?"
section "nvidia-smi" "$out/nvidia-smi.txt"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -n 1)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | head -n 1 | tr -d ' .')
if ! [[ $cap =~ ^[0-9]+$ ]]; then
  echo "device-check: compute capability not reported; building for 90"
  cap=90
fi
safe_name=$(printf '%s' "${gpu_name:-gpu}" | tr -c 'A-Za-z0-9._-' '-' | sed -e 's/--*/-/g' -e 's/^-//' -e 's/-$//')
if [ -z "$safe_name" ]; then safe_name=gpu; fi
nvcc_bin=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
{
  echo "gpu: ${gpu_name:-unknown}"
  echo "compute capability: $cap"
  echo "nvcc: $nvcc_bin"
  "$nvcc_bin" --version 2>&1 | tail -n 2
  cmake --version | head -n 1
  echo "c++: $(c++ --version | head -n 1)"
  echo "commit: $(git rev-parse HEAD 2> /dev/null || echo unknown)"
  echo "working tree changes:"
  git status --short 2> /dev/null
  echo "cpus: $(nproc)"
} > "$out/env.txt" 2>&1
section "environment" "$out/env.txt"

# Build: Release, warnings as errors, CUDA code for this GPU only.
generator=()
if [ ! -f build/CMakeCache.txt ]; then generator=(-G Ninja); fi
build_start=$SECONDS
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMLAPLAN_WERROR=ON -DCMAKE_CUDA_COMPILER="$nvcc_bin" \
  -DCMAKE_CUDA_ARCHITECTURES="$cap" > "$out/configure.log" 2>&1
configure_rc=$?
record configure "$configure_rc"
if [ "$configure_rc" -ne 0 ]; then
  tail -n 40 "$out/configure.log"
  echo "device-check: configuring failed (see $out/configure.log)" >&2
  exit 1
fi
if ! grep -q "CUDA validation backend enabled" "$out/configure.log"; then
  grep "mlaplan:" "$out/configure.log"
  echo "device-check: the CUDA backend is not configured (nvcc not found: $nvcc_bin)" >&2
  exit 1
fi
cmake --build build -j "$(nproc)" --target mlaplan mlaplan-validate > "$out/build.log" 2>&1
build_rc=$?
record build "$build_rc"
echo "device-check: configure and build took $((SECONDS - build_start)) s"
if [ "$build_rc" -ne 0 ]; then
  tail -n 60 "$out/build.log"
  echo "device-check: the build failed (see $out/build.log)" >&2
  exit 1
fi

# What the executables link: the validation executable CUDA, the planner no CUDA library.
ldd build/mlaplan-validate > "$out/ldd-mlaplan-validate.txt" 2>&1
record ldd_mlaplan_validate "$?"
section "ldd build/mlaplan-validate" "$out/ldd-mlaplan-validate.txt"
ldd build/mlaplan > "$out/ldd-mlaplan.txt" 2>&1
record ldd_mlaplan "$?"
section "ldd build/mlaplan" "$out/ldd-mlaplan.txt"
echo
if grep -Eiq 'libcuda|libcudart|libcublas|libnvrtc|libnvidia' "$out/ldd-mlaplan.txt"; then
  record planner_links_cuda 1
  echo "device-check: build/mlaplan links a CUDA library; it must not" >&2
  exit 1
fi
record planner_links_cuda 0
echo "device-check: build/mlaplan links no CUDA library"

# The validation run.
run_dir="$out/$safe_name"
echo "device-check: build/mlaplan validate --backend cuda --out $run_dir (timeout ${timeout_s} s)"
run_start=$SECONDS
timeout --kill-after=30 "$timeout_s" build/mlaplan validate --backend cuda --out "$run_dir" \
  > "$out/validate.stdout" 2> "$out/validate.stderr"
validate_rc=$?
record validate "$validate_rc"
echo "device-check: the validation run took $((SECONDS - run_start)) s"
section "validate stdout" "$out/validate.stdout"
section "validate stderr" "$out/validate.stderr"
if [ "$validate_rc" -eq 124 ]; then echo "device-check: the validation run timed out after ${timeout_s} s" >&2; fi
echo
echo "device-check: results in $run_dir, logs and exit codes in $out"
exit "$validate_rc"
