#!/usr/bin/env python3
"""Project H800's transcribed grouped-GEMM tables onto the columns `mlaplan-validate --against` reads.

  scripts/h800-grouped-gemm.py   (writes validate/published/h800/grouped-gemm-deepgemm.csv)

Inputs (validate/published/h800/other-kernels/, provenance in validate/published/SOURCES.md):
- h800-grouped_gemm-infersim.csv: InferSim's DeepGEMM m_grouped_fp8_gemm_nt_{masked,contiguous}
  runs. Each group's rows were drawn at random around m_per_group_expected, so the rows in all (m)
  are the table's implied_total_valid_m (derived from InferSim's own MFU, near-integer). A group
  with no rows reads no weights: at an expected 1 row per group about half the groups drew 0, so
  the groups read are m there (one row each); from 2 rows up every group has rows.
- h800-grouped_gemm-deepgemmreadme.csv: DeepGEMM's README table, every group with m_per_group rows.
Output columns: kernel, layout (not read), groups, m, n, k, dtype, latency_us.
"""
import csv
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'validate', 'published', 'h800')
SRC = os.path.join(HERE, 'other-kernels')
out = []
with open(os.path.join(SRC, 'h800-grouped_gemm-infersim.csv')) as f:
    for r in csv.DictReader(f):
        m = round(float(r['implied_total_valid_m']))
        groups = int(r['num_groups']) if float(r['m_per_group_expected']) >= 2 else min(m, int(r['num_groups']))
        if m < 1:
            continue
        out.append(['grouped_gemm', r['layout'], groups, m, r['n'], r['k'], 'fp8', r['latency_us']])
with open(os.path.join(SRC, 'h800-grouped_gemm-deepgemmreadme.csv')) as f:
    for r in csv.DictReader(f):
        g = int(r['num_groups'])
        out.append(['grouped_gemm', r['layout'], g, g * int(r['m_per_group']), r['n'], r['k'], 'fp8', r['latency_us']])
path = os.path.join(HERE, 'grouped-gemm-deepgemm.csv')
with open(path, 'w', newline='') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['kernel', 'layout', 'groups', 'm', 'n', 'k', 'dtype', 'latency_us'])
    w.writerows(out)
print(f'{path}: {len(out)} rows')
