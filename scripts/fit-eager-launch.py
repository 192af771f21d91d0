#!/usr/bin/env python3
"""Fit the host time per kernel launch (eager_launch_us) of serving rows whose engine ran without CUDA graphs.

  MLAPLAN=build/mlaplan scripts/fit-eager-launch.py [ID_PREFIX]   (default trtllm05-llama2-)

Takes the rows of validate/published/serving/serving.csv whose id starts with ID_PREFIX, and for
every value on a grid (0 to 60 us by 0.25 us) reproduces them with `mlaplan validate --serving` and
that value in their eager_launch_us column. The fit minimises the sum of squared log errors
(log(predicted / measured)) over the rows. Prints each row's error at no launch cost and at the fit,
and its error when the fit leaves that row out: the rows are the parameter's only data, so the
leave-one-out column is the one to judge it by. The default prefix takes TensorRT-LLM v0.5's H100
rows; its A100 and L40S rows (trtllm05-a100-, trtllm05-l40s-) ran on other hosts and carry the H100
rows' value as a transfer (give their prefix to fit them on their own).
"""
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
GRID = [i * 0.25 for i in range(0, 241)]


def predictions(mlaplan, header, rows, value):
    """Each row's prediction with eager_launch_us = value."""
    with tempfile.TemporaryDirectory() as d:
        out = io.StringIO()
        fields = header + ([] if 'eager_launch_us' in header else ['eager_launch_us'])
        w = csv.DictWriter(out, fieldnames=fields, lineterminator='\n')
        w.writeheader()
        for r in rows:
            w.writerow({**r, 'eager_launch_us': f'{value:g}' if value > 0 else ''})
        with open(os.path.join(d, 'rows.csv'), 'w') as f:
            f.write(out.getvalue())
        res = subprocess.run([mlaplan, 'validate', '--serving', d, '--format', 'json'], capture_output=True, text=True, check=True)
        return {r['id']: r['predicted'] for r in json.loads(res.stdout)['serving']}


def best(values, measured, ids):
    """The grid value with the least sum of squared log errors over ids."""
    cost = {v: sum(math.log(p[i] / measured[i]) ** 2 for i in ids) for v, p in values.items()}
    return min(cost, key=lambda v: (cost[v], v))


def main():
    prefix = sys.argv[1] if len(sys.argv) > 1 else 'trtllm05-llama2-'
    mlaplan = os.environ.get('MLAPLAN', os.path.join(ROOT, 'build', 'mlaplan'))
    with open(os.path.join(ROOT, 'validate', 'published', 'serving', 'serving.csv')) as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames)
        rows = [r for r in reader if r['id'].startswith(prefix)]
    if not rows:
        sys.exit(f'no row of serving.csv has an id starting with {prefix!r}')
    ids = [r['id'] for r in rows]
    measured = {r['id']: float(r['measured']) for r in rows}
    values = {v: predictions(mlaplan, header, rows, v) for v in GRID}
    fit = best(values, measured, ids)
    left = {i: best(values, measured, [j for j in ids if j != i]) for i in ids}
    print(f'eager_launch_us fitted on {len(ids)} rows ({prefix}*): {fit:g} us per kernel launch')
    print(f'{"row":34} {"measured":>10} {"no launch":>10} {"fitted":>10} {"left out":>10} {"fit w/o row":>11}')
    for i in ids:
        err = lambda p: f'{p / measured[i] - 1:+.1%}'
        print(f'{i:34} {measured[i]:10.4g} {err(values[0.0][i]):>10} {err(values[fit][i]):>10} {err(values[left[i]][i]):>10} {left[i]:11g}')


if __name__ == '__main__':
    main()
