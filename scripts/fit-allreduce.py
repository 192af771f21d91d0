#!/usr/bin/env python3
"""Fit TensorRT-LLM's and vLLM's TP all-reduce algorithms (the engine profiles' tp_allreduce rows) on H100's tables.

  scripts/fit-allreduce.py [validate/published/all-to-all/h100-sxm-allreduce.csv]

Per group size (2, 4 and 8 GPUs), on the rows scripts/aic-allreduce.py transcribed:
  1. NCCL (the trtllm@0.5.0 rows, NCCL 2.27.3): two ring rows, its low-latency and its bandwidth
     protocol, each latency + 2(n-1)/n * S / (450 GB/s * eta), the call taking the faster;
  2. TensorRT-LLM 1.3.0rc20's all-reduce op (the trtllm@1.0.0 rows): a one-shot row, latency +
     (n-1) * S / (450 GB/s * eta), beside the two NCCL rows held;
  3. vLLM's custom all-reduce under CUDA graphs (the vllm@0.9.0 rows, 0.14.0's table below 8 MiB): its
     one-shot kernel on the rows it runs it for (2 GPUs always; 4 below 512 KiB; 8 below 256 KiB:
     csrc/custom_all_reduce.cuh REDUCE_CASE), its two-shot kernel, a ring row, on the others.
S is the message's bytes per rank, 450 GB/s H100's NVLink per direction (hardware/nvidia-h100-sxm.json).
Least squares in log time over every row of the size, on a grid (latency 1-80 us, eta 0.1-1.2,
geometric), then a finer grid around the best point. A profile accepts eta up to 1; every fit
here lands below it. Prints the rows (as the profiles hold them) and
each fit's median, p90 and largest |error|; `mlaplan validate --all-to-all` reports what ships.
"""
import csv
import math
import os
import sys

BW = 450e9


def geo(lo, hi, k):
    return [lo * (hi / lo) ** (i / (k - 1)) for i in range(k)]


def around(x, k=9, span=1.25):
    return geo(x / span, x * span, k)


def load(path):
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r['mode'] != 'allreduce':
                continue
            n = int(r['gpus_per_node']) * int(r['nodes'])
            s = int(r['tokens']) * int(r['hidden']) * 2
            out.setdefault(r['engine'], {}).setdefault(n, []).append((s, float(r['measured_us']) * 1e-6))
    return out


def ring(n, s, a, e):
    return a + 2 * (n - 1) / n * s / (BW * e)


def one_shot(n, s, a, e):
    return a + (n - 1) * s / (BW * e)


def loss(model, pts):
    return sum(math.log(model(s) / t) ** 2 for s, t in pts)


def search(axes, f):
    """The best point of a grid, then of a finer grid around it."""
    def grid(ax):
        best = None
        def rec(i, p):
            nonlocal best
            if i == len(ax):
                v = f(p)
                if best is None or v < best[0]:
                    best = (v, list(p))
                return
            for x in ax[i]:
                rec(i + 1, p + [x])
        rec(0, [])
        return best[1]
    p = grid(axes)
    for _ in range(2):
        p = grid([around(x) for x in p])
    return p


def stats(model, pts):
    e = sorted(abs(model(s) / t - 1) for s, t in pts)
    return e[len(e) // 2], e[int(0.9 * (len(e) - 1))], e[-1]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'validate', 'published', 'all-to-all', 'h100-sxm-allreduce.csv')
    rows = load(path)
    nccl, trtllm, vllm = rows['trtllm@0.5.0'], rows['trtllm@1.0.0'], rows['vllm@0.9.0']
    lat, eta = geo(1e-6, 8e-5, 24), geo(0.1, 1.2, 24)
    out, vrows = [], []
    for n in sorted(nccl):
        pts = nccl[n]
        # The low-latency protocol starts sooner and streams slower than the bandwidth one.
        def f_ring(p):
            a1, e1, a2, e2 = p
            if a2 < a1 or e2 <= e1:
                return math.inf
            return loss(lambda s: min(ring(n, s, a1, e1), ring(n, s, a2, e2)), pts)
        a1, e1, a2, e2 = search([lat, eta, lat, eta], f_ring)
        nccl_t = lambda s: min(ring(n, s, a1, e1), ring(n, s, a2, e2))  # noqa: E731
        m, p90, worst = stats(nccl_t, pts)
        print(f'{n} GPUs NCCL: low latency {a1 * 1e6:.3g} us, eta {e1:.3g}; bandwidth {a2 * 1e6:.3g} us, eta {e2:.3g}: '
              f'{len(pts)} rows, median {m:.1%}, p90 {p90:.1%}, worst {worst:.1%}')
        tpts = trtllm[n]
        a0, e0 = search([lat, eta], lambda p: loss(lambda s: min(one_shot(n, s, p[0], p[1]), nccl_t(s)), tpts))
        m, p90, worst = stats(lambda s: min(one_shot(n, s, a0, e0), nccl_t(s)), tpts)
        print(f'{n} GPUs TensorRT-LLM: one-shot {a0 * 1e6:.3g} us, eta {e0:.3g}: {len(tpts)} rows, median {m:.1%}, p90 {p90:.1%}, worst {worst:.1%}')
        out.append((n, a0, e0, a1, e1, a2, e2))
        # vLLM: each kernel on the rows its rule sends it.
        below = {2: math.inf, 4: 512 * 1024, 8: 256 * 1024}[n]
        one = [(s, t) for s, t in vllm[n] if s < below]
        two = [(s, t) for s, t in vllm[n] if s >= below]
        v1 = search([lat, eta], lambda p: loss(lambda s: one_shot(n, s, p[0], p[1]), one))
        line = f'{n} GPUs vLLM: one-shot {v1[0] * 1e6:.3g} us, eta {v1[1]:.3g} ({len(one)} rows)'
        v2 = None
        if two:
            v2 = search([lat, eta], lambda p: loss(lambda s: ring(n, s, p[0], p[1]), two))
            line += f'; two-shot {v2[0] * 1e6:.3g} us, eta {v2[1]:.3g} ({len(two)} rows)'
        vt = lambda s: one_shot(n, s, *v1) if s < below else ring(n, s, *v2)  # noqa: E731
        m, p90, worst = stats(vt, vllm[n])
        print(line + f': median {m:.1%}, p90 {p90:.1%}, worst {worst:.1%}')
        vrows.append((n, below, v1, v2))
    print('tp_allreduce rows [ranks, max bytes, latency us, eta, one-shot]:')
    for n, a0, e0, a1, e1, a2, e2 in out:
        print(f'  [{n}, 0, {a0 * 1e6:.3g}, {e0:.3g}, 1], [{n}, 0, {a1 * 1e6:.3g}, {e1:.3g}, 0], [{n}, 0, {a2 * 1e6:.3g}, {e2:.3g}, 0],')
    print('vLLM (custom kernels up to 8 MiB - 1 B, the one-shot below its threshold; NCCL rows as above):')
    for n, below, v1, v2 in vrows:
        top = 8 * 1024 * 1024 - 1
        line = f'  [{n}, {top if below == math.inf else below - 1}, {v1[0] * 1e6:.3g}, {v1[1]:.3g}, 1],'
        if v2:
            line += f' [{n}, {top}, {v2[0] * 1e6:.3g}, {v2[1]:.3g}, 0],'
        print(line)


if __name__ == '__main__':
    main()
