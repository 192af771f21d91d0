#!/usr/bin/env python3
"""Fit an engine profile's step_overhead_tbo_decode_us on its engine's decode rows with two-batch overlap.

  scripts/fit-tbo-overhead.py [ENGINE]   (default sglang)

Reads the measurements (validate/published/serving/serving.csv), the committed predictions
(validate/results/serving/serving.csv, as `mlaplan validate --serving` writes them) and the value
the profile ships (engines/<ENGINE>-*.json, the newest). For every decode row of ENGINE with tbo
true and a tokens_per_s_per_gpu metric, the time the model is missing is
  tokens emitted per GPU per step x (1 / measured - 1 / predicted) + the shipped value,
and the fit is their median. Prints each row's missing time, the fit, and each row's error when the
fit leaves that row out (the rows are the parameter's only data: judge it by that column).
"""
import csv
import glob
import json
import os
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def main():
    engine = sys.argv[1] if len(sys.argv) > 1 else 'sglang'
    profile = sorted(glob.glob(os.path.join(ROOT, 'engines', f'{engine}-*.json')),
                     key=lambda p: [int(x) for x in os.path.basename(p)[len(engine) + 1:-5].split('.')])[-1]
    shipped = json.load(open(profile))['parameters'].get('step_overhead_tbo_decode_us', {}).get('value', 0) * 1e-6
    src = {r['id']: r for r in csv.DictReader(open(os.path.join(ROOT, 'validate', 'published', 'serving', 'serving.csv')))}
    lines = list(csv.reader(open(os.path.join(ROOT, 'validate', 'results', 'serving', 'serving.csv'))))
    start = next(i for i, r in enumerate(lines) if r and r[0] == 'id')
    predicted = {r[0]: dict(zip(lines[start], r)) for r in lines[start + 1:] if len(r) == len(lines[start])}
    rows = []
    for rid, s in src.items():
        if s['engine'] != engine or s['phase'] != 'decode' or s['tbo'] != 'true' or s['metric'] != 'tokens_per_s_per_gpu':
            continue
        emitted = int(s['batch']) / int(s['dp']) * (1 + int(s['mtp'] or 0) * float(s['mtp_accept'] or 0))
        m, p = float(s['measured']), float(predicted[rid]['predicted'])
        rows.append((rid, emitted, m, emitted / p - shipped, emitted / m - emitted / p + shipped))
    fit = statistics.median(r[4] for r in rows)
    print(f'{len(rows)} {engine} decode rows with two-batch overlap; shipped {shipped * 1e6:.0f} us ({os.path.relpath(profile, ROOT)})')
    for rid, emitted, m, base, missing in rows:
        others = statistics.median(r[4] for r in rows if r[0] != rid)
        loo = emitted / (base + others) / m - 1
        print(f'  {rid:32} missing {missing * 1e3:6.2f} ms   error with the fit on the others {100 * loo:+5.1f}%')
    print(f'step_overhead_tbo_decode_us {fit * 1e6:.0f}')


if __name__ == '__main__':
    main()
