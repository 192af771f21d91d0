#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan + UBSan) and runs each for RUNS executions
# (default 250000) on a corpus seeded from the bundled files (and the quantised fixtures), with
# fuzz/<target>.dict as a libFuzzer dictionary where one exists. Findings land in build-fuzz/findings/.
# TARGETS="hf_config" runs only those; JOBS=N limits the build's parallelism.
# Needs: apt-get install clang libclang-rt-14-dev
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-250000}
targets=${TARGETS:-hf_config hardware override ranges report_spec engine_profile engine_dispatch engine_logs efficiency_profile serving against all_to_all}
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DMLAPLAN_FUZZ=ON \
  -DMLAPLAN_CUDA=OFF -DBUILD_TESTING=OFF -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-fuzz ${JOBS:+-j$JOBS} --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
mkdir -p build-fuzz/findings
seed() {  # seed corpus for a target
  local dir=build-fuzz/corpus/$1; rm -rf "$dir"; mkdir -p "$dir"; shift
  for f in "$@"; do cp "$f" "$dir/"; done
}
seed hf_config models/*.json tests/fixtures/*.json
seed hardware hardware/*.json
seed report_spec tests/golden/*.spec.json tests/golden/*/spec.json
seed engine_profile engines/*.json
seed engine_dispatch engines/dispatch/*.json
seed efficiency_profile hardware/efficiency/*.json
seed engine_logs validate/published/engine-logs/*.csv
seed serving validate/published/serving/*.csv
# all_to_all: each kind's first and last rows (the whole table is too large to predict per run)
mkdir -p build-fuzz/corpus/all_to_all
for f in validate/published/all-to-all/*.csv; do
  head -n 5 "$f" > "build-fuzz/corpus/all_to_all/$(basename "$f" .csv)-first.csv"
  { head -n 1 "$f"; tail -n 4 "$f"; } > "build-fuzz/corpus/all_to_all/$(basename "$f" .csv)-last.csv"
done
mkdir -p build-fuzz/corpus/override build-fuzz/corpus/ranges
printf 'kv_lora_rank=256\nq_lora_rank=null\n' > build-fuzz/corpus/override/a
printf 'quantization_config.quant_method=mxfp4\nnum_hidden_layers=1000\n' > build-fuzz/corpus/override/b
printf '0:131072:x2' > build-fuzz/corpus/ranges/a
printf '64x1@8192,2x2048@0' > build-fuzz/corpus/ranges/b
printf '1,2,4,8' > build-fuzz/corpus/ranges/c
# against: the first rows of every published timing table (whole tables are too large to fit per run)
mkdir -p build-fuzz/corpus/against
for f in validate/published/*/*.csv; do
  case $f in */sources.csv|*/serving.csv|*/engine-logs.csv|*/all-to-all/*) continue;; esac
  head -n 4 "$f" > "build-fuzz/corpus/against/$(basename "$(dirname "$f")")-$(basename "$f")"
  # ... and its header with its last rows (a table of two kernels, such as attention's, shows both)
  { head -n 1 "$f"; tail -n 3 "$f"; } > "build-fuzz/corpus/against/$(basename "$(dirname "$f")")-tail-$(basename "$f")"
  # ... and the first rows that time their input quantisation (act_quant, then the library column),
  # mid-table in the GEMM tables
  if grep -Eq ',timed(,[a-z]*)?$' "$f"; then
    { head -n 1 "$f"; grep -Em 3 ',timed(,[a-z]*)?$' "$f"; } > "build-fuzz/corpus/against/$(basename "$(dirname "$f")")-act-quant-$(basename "$f")"
  fi
done
total=0
for t in $targets; do
  log=build-fuzz/findings/$t.log
  dict=(); [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  ./build-fuzz/fuzz_$t -runs="$runs" -max_len=8192 "${dict[@]}" -artifact_prefix=build-fuzz/findings/$t- build-fuzz/corpus/$t >"$log" 2>&1 || {
    echo "fuzz_$t: FINDING (see $log)"; tail -n 30 "$log"; exit 1; }
  done_runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo 0)
  total=$((total + done_runs))
  echo "fuzz_$t: $done_runs runs, no crash, hang, leak or undefined behaviour"
done
echo "total: $total executions"
