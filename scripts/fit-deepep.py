#!/usr/bin/env python3
"""Fit an engine profile's all-to-all parameters on DeepEP timings, one kind at a time.

  scripts/fit-deepep.py low_latency|normal [validate/published/all-to-all/h100-sxm-deepep.csv]

The model is core/serving's all_to_all_time. Low latency: one message per (token, expert) on another
rank. Normal: a token crosses the network once per other node holding one of its experts and NVLink
once per other rank of a node that does (uniform routing: the probability a group of g of E experts
holds one of a token's k is 1 - C(E-g, k)/C(E, k)). Either way time = max(NVLink bytes / (NVLink
bandwidth x eta_up), network bytes / (network bandwidth x eta_out)) + latency, the latency one value
within a node and another once a call crosses the network. Dispatch and combine share the four
parameters. Prints the ones that minimise the median |error| over the file's rows of that kind (grid
search, coarse then fine; median and p90 as mlaplan-validate's ape_stats) and the error they reach;
`mlaplan validate --all-to-all` reports the error of what the profile ships.

Bandwidths: hardware/nvidia-h100-sxm.json (the GPU of the rows).
"""
import csv
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = {'low_latency': 'll', 'normal': 'normal'}


def frange(lo, hi, step):
    n = int(round((hi - lo) / step))
    return [lo + i * step for i in range(n + 1)]


def hit(experts, group, k):
    if group >= experts:
        return 1.0
    miss = 1.0
    for i in range(k):
        miss *= max(0.0, experts - group - i) / (experts - i)
    return 1 - miss


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in KEYS:
        sys.exit(__doc__)
    mode = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) == 3 else os.path.join(HERE, '..', 'validate', 'published', 'all-to-all', 'h100-sxm-deepep.csv')
    hw = json.load(open(os.path.join(HERE, '..', 'hardware', 'nvidia-h100-sxm.json')))
    up_bw = hw['scale_up_bandwidth_gb_per_s_per_direction']['value'] * 1e9
    out_bw = hw['scale_out_bandwidth_gb_per_s_per_direction']['value'] * 1e9
    rows = []
    for r in csv.DictReader(open(path)):
        if r['mode'] != mode:
            continue
        nodes, g = int(r['nodes']), int(r['gpus_per_node'])
        ep, e, k, t = nodes * g, int(r['experts']), int(r['topk']), int(r['tokens'])
        b = int(r['hidden']) * (1 + 4 / 128 if r['dtype'] == 'fp8' else 2)
        if mode == 'low_latency':
            up, out = t * k * (g - 1) / ep * b, t * k * (ep - g) / ep * b
        else:
            up = t * nodes * (g - 1) * hit(e, e / ep, k) * b
            out = t * (nodes - 1) * hit(e, e / nodes, k) * b if nodes > 1 else 0
        rows.append((up / up_bw, out / out_bw, float(r['measured_us']) * 1e-6))

    def errors(p):
        l_in, l_out, eu, eo = p
        errs = sorted(abs((max(up / eu, out / eo) + (l_out if out > 0 else l_in)) / t - 1) for up, out, t in rows)
        return errs[len(errs) // 2], errs[math.ceil(0.9 * len(errs)) - 1]

    us = 1e-6
    lat_in, lat_out, step = (frange(4 * us, 30 * us, 2 * us), frange(10 * us, 40 * us, 2 * us), 2 * us) if mode == 'low_latency' else \
        (frange(10 * us, 80 * us, 4 * us), frange(20 * us, 160 * us, 8 * us), 4 * us)
    best = None
    for l_in in lat_in:
        for l_out in lat_out:
            for eu in frange(0.2, 1.0, 0.05):
                for eo in frange(0.3, 1.0, 0.05):
                    e = errors((l_in, l_out, eu, eo))
                    if best is None or e[0] < best[0][0]:
                        best = (e, (l_in, l_out, eu, eo))
    c = best[1]
    for l_in in frange(c[0] - step, c[0] + step, 1 * us):
        for l_out in frange(c[1] - 2 * step, c[1] + 2 * step, 1 * us):
            for eu in frange(c[2] - 0.05, min(1.0, c[2] + 0.05), 0.025):
                for eo in frange(c[3] - 0.05, min(1.0, c[3] + 0.05), 0.025):
                    e = errors((l_in, l_out, eu, eo))
                    if e[0] < best[0][0]:
                        best = (e, (l_in, l_out, eu, eo))
    (med, p90), (l_in, l_out, eu, eo) = best
    key = KEYS[mode]
    print(f'{len(rows)} {mode} rows of {path}')
    print(f'{key}_latency_intranode_us {l_in / us:.0f}  {key}_latency_internode_us {l_out / us:.0f}  {key}_eta_scale_up {eu:.3f}  {key}_eta_scale_out {eo:.3f}')
    print(f'median |error| {100 * med:.1f}%  p90 {100 * p90:.1f}%')


if __name__ == '__main__':
    main()
