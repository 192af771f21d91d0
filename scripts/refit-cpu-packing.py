#!/usr/bin/env python3
"""Refits one CPU validation run's measurements with and without the packing term: an A/B of the
model on the same timings, which two runs cannot give on a shared machine (their noise differs).

    scripts/refit-cpu-packing.py validate/results/cpu

Reads DIR/ops.csv and the calibration line of DIR/report.md; for each op whose Eigen products pack
(the folds and the attention kernels) fits, on the rows marked train, the model of validate/fit.cpp:

    time = max(F / (peak·η_c), B / (bw·η_m)) + t0 + calls·t_call + packed / (bw·η_pack)

with η_pack held at 0 ("none") or fitted ("packing"), and prints the held-out error per op and per
kind. bw is the cache level's bandwidth where the op's working set fits, else DRAM's. calls and
packed bytes follow validate/cpu_backend.cpp (cpu_calls, cpu_packed) for DeepSeek-V3's head shapes,
the only ones the grid times. The search is one coarse pass (no refinement), so its errors sit a
little above the C++ fit's; the comparison between the two variants is what it is for. Needs numpy.
"""
import csv
import math
import re
import sys

import numpy as np

R, D_R, D_N, D_V, KEY_BLOCK, CHUNK = 512, 64, 128, 128, 256, 1024
KIND = {"q_absorb_w_uk": "bmm", "out_absorb_w_uv": "bmm", "attention_mha": "attention",
        "latent_attention_mqa": "attention", "attention_mha_chunk": "attention"}


def shape(r):
    return int(r["heads"]), int(r["batch"]), int(r["query"]), int(r["prefix"])


def blocks(n):
    return math.ceil(n / KEY_BLOCK)


def calls(r):
    h, b, q, p = shape(r)
    keys, op = p + q, r["op"]
    if op == "attention_mha":
        return b * h * blocks(keys)
    if op == "attention_mha_chunk":
        return h * math.ceil(keys / CHUNK) * blocks(min(CHUNK, keys))
    if op == "latent_attention_mqa":
        return b * blocks(keys)
    return h  # the folds: one product per head


def packed(r):
    h, b, q, p = shape(r)
    keys, op, f32 = p + q, r["op"], 4
    if op == "q_absorb_w_uk":
        return h * D_N * R * f32 if b * q > 1 else 0
    if op == "out_absorb_w_uv":
        return h * R * D_V * f32 if b * q > 1 else 0
    if op == "latent_attention_mqa":
        return b * keys * ((R + D_R) + R) * f32
    if op == "attention_mha":
        return b * h * keys * (D_N + D_R + D_V) * f32 if q > 1 else 0
    return h * keys * (D_N + D_R + D_V) * f32 if q > 1 else 0  # attention_mha_chunk (batch 1)


def fit(rows, peak, dram, cache_bw, cache_bytes, with_packing):
    F = np.array([float(r["flops"]) for r in rows])
    B = np.array([float(r["bytes"]) for r in rows])
    M = np.array([float(r["measured_s"]) for r in rows])
    chunks = np.array([math.ceil((int(r["prefix"]) + int(r["query"])) / CHUNK) if r["op"].endswith("_chunk") else 1 for r in rows])
    bw = np.where(B / chunks <= cache_bytes, cache_bw, dram)
    C = np.array([calls(r) for r in rows], float)
    K = np.array([packed(r) for r in rows], float)
    train = np.array([r["split"] == "train" for r in rows])
    best = None
    for eta_c in np.geomspace(0.3, 1.5, 31):
        t_c = F / (peak * eta_c)
        for eta_m in np.geomspace(0.01, 16, 41):
            base = np.maximum(t_c, B / (bw * eta_m))
            for t0 in (0, 1e-6, 5e-6, 20e-6):
                for t_call in [0] + list(np.geomspace(2e-8, 2e-5, 13)):
                    for eta_p in [0] + (list(np.geomspace(0.01, 16, 25)) if with_packing else []):
                        pred = base + t0 + t_call * C + (K / (bw * eta_p) if eta_p else 0)
                        loss = np.sum(np.log(pred[train] / M[train]) ** 2)
                        if best is None or loss < best[0]:
                            best = (loss, (eta_c, eta_m, t0, t_call, eta_p), pred)
    return best[1], np.abs(best[2] / M - 1)[~train]


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "validate/results/cpu"
    rows = list(csv.DictReader(open(f"{d}/ops.csv")))
    report = open(f"{d}/report.md").read()
    peak = float(re.search(r"fp32 GEMM ([\d.]+) GFLOP", report).group(1)) * 1e9
    dram = float(re.search(r"triad ([\d.]+) GB/s", report).group(1)) * 1e9
    level = re.search(r"cache level: ([\d.]+) GB/s up to (\d+) MiB", report)
    cache_bw, cache_bytes = float(level.group(1)) * 1e9, int(level.group(2)) * 2**20
    by_kind = {}
    for op in KIND:
        op_rows = [r for r in rows if r["op"] == op]
        for variant, with_packing in (("none", False), ("packing", True)):
            params, err = fit(op_rows, peak, dram, cache_bw, cache_bytes, with_packing)
            by_kind.setdefault((KIND[op], variant), []).extend(err)
            print(f"{op:22} {variant:8} eta_c {params[0]:.3f} eta_m {params[1]:.3f} t0 {params[2]:.1e} t_call {params[3]:.1e} "
                  f"eta_pack {params[4]:.3f}: held-out median {np.median(err):.1%} p90 {np.percentile(err, 90):.1%}", flush=True)
    for (kind, variant), err in by_kind.items():
        print(f"{kind:10} {variant:8} {len(err)} held-out ops: median {np.median(err):.1%} p90 {np.percentile(err, 90):.1%}")


if __name__ == "__main__":
    main()
