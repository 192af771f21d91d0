#!/usr/bin/env python3
"""Transcribe aiconfigurator's TP all-reduce timings into validate/published/all-to-all/.

  scripts/aic-allreduce.py AICONFIGURATOR_GIT_DIR [COMMIT]

Reads (with `git show`, so a bare mirror works) three H100 SXM tables of one all-reduce over 2, 4 and 8
GPUs of one node, message sizes from 128 to 2^29 values:

  comm/nccl/2.27.3/nccl_perf.parquet                    NCCL's ncclAllReduce, fp16 ('half') rows
  comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet   TensorRT-LLM's all-reduce op (its AUTO
                                                        strategy: custom kernels or NCCL), bf16
  comm/vllm/0.14.0/custom_allreduce_perf.parquet        vLLM's custom all-reduce under CUDA graphs
                                                        (backend vllm_graph), bf16, messages below
                                                        its 8 MiB limit

and writes h100-sxm-allreduce.csv in the format `mlaplan validate --all-to-all` reads: mode and op
`allreduce`, the message's values as `tokens` with `hidden` 1, topk and experts 1, dtype bf16 (every
table's values are 2 bytes), `latency` (milliseconds) as measured_us. The NCCL rows are predicted with
the trtllm@0.5.0 profile (TensorRT-LLM before its custom all-reduce: NCCL alone), the TensorRT-LLM rows
with trtllm@1.0.0, the vLLM rows with vllm@0.9.0. Nothing interpolated; rows in the source's order (NCCL's table holds each size
twice, two runs; both are kept).

H20 and H200 are never transcribed: they are held out.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

aic = import_module('aic-tables')

SYSTEM = 'h100_sxm'
OUT = os.path.join(aic.ROOT, 'all-to-all', 'h100-sxm-allreduce.csv')
HEADER = ['id', 'gpu', 'engine', 'mode', 'op', 'nodes', 'gpus_per_node', 'tokens', 'hidden', 'topk', 'experts', 'dtype', 'measured_us', 'source']
# (id prefix, table, engine profile that predicts it, dtype column, dtype, other column that must
# match, its value, the largest message in bytes kept (0: all)). vLLM's rows: those under CUDA graphs
# (backend vllm_graph, as it decodes) below its custom all-reduce's 8 MiB limit; at 0.14.0 larger
# messages run torch symmetric memory (on by default since September 2025), which the 0.6.5-0.9.0
# profiles that predict them do not have.
TABLES = (
    ('nccl', 'comm/nccl/2.27.3/nccl_perf.parquet', 'trtllm@0.5.0', 'nccl_dtype', 'half', None, None, 0),
    ('trtllm', 'comm/trtllm/1.3.0rc20/custom_allreduce_perf.parquet', 'trtllm@1.0.0', 'allreduce_dtype', 'bfloat16', None, None, 0),
    ('vllm', 'comm/vllm/0.14.0/custom_allreduce_perf.parquet', 'vllm@0.9.0', 'allreduce_dtype', 'bfloat16', 'backend', 'vllm_graph', 8 * 1024 * 1024 - 1),
)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) == 3 else 'HEAD'
    out = []
    for name, rel, engine, dtype_col, dtype, col, value, largest in TABLES:
        path = f'{aic.DATA}/{SYSTEM}/{rel}'
        rows = aic.parquet2csv.rows_at(git_dir, commit, path)
        if rows is None:
            sys.exit(f'{path}: not found at {commit}')
        source = f'ai-dynamo/aiconfigurator@{commit[:8]} {path}'
        seen = {}
        for r in rows:
            if r['op_name'] != 'all_reduce' or r[dtype_col] != dtype or (col and r[col] != value):
                continue
            if largest and int(r['message_size']) * 2 > largest:
                continue
            key = (r['num_gpus'], r['message_size'])
            seen[key] = seen.get(key, 0) + 1
            rid = f"{name}-g{r['num_gpus']}-v{r['message_size']}" + (f"-run{seen[key]}" if seen[key] > 1 else '')
            us = float(r['latency']) * 1000
            out.append([rid, 'h100-sxm', engine, 'allreduce', 'allreduce', 1, r['num_gpus'], r['message_size'], 1, 1, 1, 'bf16', f'{us:.6g}', source])
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    aic.write(OUT, HEADER, out)


if __name__ == '__main__':
    main()
