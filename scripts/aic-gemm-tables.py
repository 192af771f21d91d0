#!/usr/bin/env python3
"""Transcribe aiconfigurator's TensorRT-LLM GEMM latency tables into validate/published/<gpu>/gemm-trtllm.csv.

  scripts/aic-gemm-tables.py AICONFIGURATOR_GIT_DIR [COMMIT]

AICONFIGURATOR_GIT_DIR is a clone of ai-dynamo/aiconfigurator (a bare mirror works: files are read
with `git show`); COMMIT defaults to 095f58a5, the commit the tables were taken from. For H100 and
B200, `gemm/trtllm/1.3.0rc20/gemm_perf.parquet` (TensorRT-LLM's Linear, `torch_flow`), the first row
of each shape with m a power of two up to 16384 and n and k in {256, 512, 1024, 1536, 2048, 4096,
7168, 8192, 16384}, for three kernels:

  bf16        gemm_dtype bfloat16
  fp8         gemm_dtype fp8_block: e4m3 inputs with 128x128 block scales on the weight (DeepSeek's fp8)
  fp8_tensor  gemm_dtype fp8: e4m3 inputs with one scale per tensor (NVIDIA Model Optimizer's FP8)

latency in microseconds (the table's milliseconds with the decimal point moved), nothing interpolated, rows in that order.

The fp8 (per-tensor) Linear quantises its input dynamically inside the timed call (the collector's
weights carry no input scale: collector/trtllm/collect_gemm.py:198-201): an amax pass
(`compute_scale`) and the quantisation (`scale_matrix`) before the GEMM. Their own timings on the same
[m, k] input, from `quantize/trtllm/1.3.0rc20/{computescale,scale_matrix}_perf.parquet`, are written in
the fp8_tensor rows' `other_us` (their sum): the time the row includes beyond the GEMM, which
`--against` adds to its prediction of the GEMM (aiconfigurator derives its static-scale fp8 GEMM by
subtracting the same tables).

The fp8 (block) Linear also quantises its bf16 input inside the timed call, per 1x128 group, in a
kernel of its own before the GEMM: on Hopper TensorRT-LLM's fp8_quantize_1x128 then
fp8_block_scaling_gemm, on Blackwell (SM100) per_token_quant_and_transform ahead of DeepGEMM
(collector/trtllm/collect_gemm.py:248-254 at 095f58a5, citing modules/linear.py:1111-1133 at
1.3.0rc20). No table times that kernel alone, so those rows say `act_quant` timed and `--against`
adds the kernel's modelled time (its elementwise parameters) to its prediction of the GEMM.
On Blackwell that GEMM is DeepGEMM's (the same collector lines), so B200's fp8 rows say `library`
deepgemm: `--against` times them with the family's DeepGEMM efficiency, apart from Hopper's
fp8_block_scaling_gemm (the column empty, the engine's own kernel).
H20 and H200 are never transcribed: they are held out.
"""
import csv
import decimal
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parquet2csv  # noqa: E402

DATA = 'aic-core/src/aiconfigurator_core/systems/data'
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'validate', 'published')
GPUS = {'h100-sxm': 'h100_sxm', 'b200': 'b200_sxm', 'gb200': 'gb200'}
DEEPGEMM = {'b200', 'gb200'}  # GPUs whose block-fp8 Linear runs DeepGEMM (SM100)
VERSION = '1.3.0rc20'
MS = [2 ** i for i in range(15)]
NK = [256, 512, 1024, 1536, 2048, 4096, 7168, 8192, 16384]
KINDS = [('bf16', 'bfloat16'), ('fp8', 'fp8_block'), ('fp8_tensor', 'fp8')]


def rows_of(git_dir, commit, path):
    rows = parquet2csv.rows_at(git_dir, commit, path)
    if rows is None:
        sys.exit(f'aic-gemm-tables: {path} is not at {commit}')
    return rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    git_dir, commit = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else '095f58a5'
    for folder, system in GPUS.items():
        other = {}
        for table in ('computescale', 'scale_matrix'):
            seen = set()
            for r in rows_of(git_dir, commit, f'{DATA}/{system}/quantize/trtllm/{VERSION}/{table}_perf.parquet'):
                key = (int(r['m']), int(r['k']))
                if r['quant_dtype'] != 'fp8' or key in seen:
                    continue
                seen.add(key)
                other[key] = other.get(key, decimal.Decimal(0)) + decimal.Decimal(r['latency']).scaleb(3)
        first = {}
        for r in rows_of(git_dir, commit, f'{DATA}/{system}/gemm/trtllm/{VERSION}/gemm_perf.parquet'):
            # milliseconds to microseconds by moving the decimal point: no rounding on the way
            first.setdefault((r['gemm_dtype'], int(r['m']), int(r['n']), int(r['k'])), format(decimal.Decimal(r['latency']).scaleb(3).normalize(), 'f'))
        out = io.StringIO()
        w = csv.writer(out, lineterminator='\n')
        w.writerow(['kernel', 'm', 'n', 'k', 'dtype', 'latency_us', 'other_us', 'act_quant', 'library'])
        for dtype, source in KINDS:
            for m in MS:
                for n in NK:
                    for k in NK:
                        v = first.get((source, m, n, k))
                        if v is None:
                            sys.exit(f'aic-gemm-tables: {system} has no {source} row for m={m} n={n} k={k}')
                        extra = ''
                        if dtype == 'fp8_tensor':
                            if (m, k) not in other:
                                sys.exit(f'aic-gemm-tables: {system} has no compute_scale and scale_matrix rows for m={m} k={k}')
                            extra = format(other[(m, k)].normalize(), 'f')
                        w.writerow(['gemm', m, n, k, dtype, v, extra, 'timed' if dtype == 'fp8' else '',
                                    'deepgemm' if dtype == 'fp8' and folder in DEEPGEMM else ''])
        with open(os.path.join(ROOT, folder, 'gemm-trtllm.csv'), 'w') as f:
            f.write(out.getvalue())
        print(f'wrote validate/published/{folder}/gemm-trtllm.csv')


if __name__ == '__main__':
    main()
