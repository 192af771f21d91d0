#!/usr/bin/env python3
"""Transcribe aiconfigurator's DeepEP all-to-all timings into validate/published/all-to-all/.

  scripts/aic-deepep.py AICONFIGURATOR_GIT_DIR [COMMIT]

Reads (with `git show`, so a bare mirror works) the H100 SXM tables aiconfigurator collected with
SGLang 0.5.6.post2's DeepEP build, DeepSeek-V3's shape (hidden 7168, top-8 of 256 or 288 experts),
8 GPUs per node, 1-8 nodes:

  wideep_deepep_ll_perf.parquet      low-latency kernels (decode): dispatch_avg_t_us, combine_avg_t_us
  wideep_deepep_normal_perf.parquet  normal kernels (prefill): transmit + notify, as aiconfigurator
                                     adds them (rust/.../perf_database/moe_a2a.rs), the rows with 20
                                     SMs (DeepEP's default, SGLang's comm_sms)

and writes h100-sxm-deepep.csv in the format `mlaplan validate --all-to-all` reads: one row per
(kernel, op), nothing interpolated, rows in the source's order. Dispatch sends fp8 values with one
fp32 scale per 128 (SGLang's DeepEP dispatch of block-fp8 activations), combine bf16.

H20 and H200 are never transcribed: they are held out.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

aic = import_module('aic-tables')

SYSTEM, VERSION = 'h100_sxm', '0.5.6.post2'
OUT = os.path.join(aic.ROOT, 'all-to-all', 'h100-sxm-deepep.csv')
HEADER = ['id', 'gpu', 'engine', 'mode', 'op', 'nodes', 'gpus_per_node', 'tokens', 'hidden', 'topk', 'experts', 'dtype', 'measured_us', 'source']


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) == 3 else 'HEAD'
    base = f'{aic.DATA}/{SYSTEM}/comm/sglang/{VERSION}'
    out = []
    for kind, mode in (('ll', 'low_latency'), ('normal', 'normal')):
        path = f'{base}/wideep_deepep_{kind}_perf.parquet'
        rows = aic.parquet2csv.rows_at(git_dir, commit, path)
        if rows is None:
            sys.exit(f'{path}: not found at {commit}')
        source = f'ai-dynamo/aiconfigurator@{commit[:8]} {path}'
        for r in rows:
            if r['hidden_size'] != '7168' or (kind == 'normal' and r['dispatch_sms'] != '20'):
                continue
            for op in ('dispatch', 'combine'):
                us = float(r[f'{op}_avg_t_us']) if kind == 'll' else float(r[f'{op}_transmit_us']) + float(r[f'{op}_notify_us'])
                rid = f"{kind}-n{r['node_num']}-e{r['num_experts']}-t{r['num_token']}-{op}"
                out.append([rid, 'h100-sxm', 'sglang', mode, op, r['node_num'], 8, r['num_token'], r['hidden_size'], r['num_topk'],
                            r['num_experts'], 'fp8' if op == 'dispatch' else 'bf16', f'{us:.6g}', source])
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    aic.write(OUT, HEADER, out)


if __name__ == '__main__':
    main()
