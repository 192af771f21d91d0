#!/usr/bin/env python3
"""Project H800's transcribed DeepSeek-V3.2 (DSA) tables onto the columns `mlaplan-validate --against` reads.

  scripts/h800-dsa-tables.py   (writes validate/published/h800/indexer-deepgemm.csv and
                                 validate/published/h800/sparse-attention-flashmla.csv)

Inputs (validate/published/h800/other-kernels/, provenance in validate/published/SOURCES.md):
- h800-indexer-infersim.csv: InferSim's runs of DeepGEMM's lightning-indexer logits kernels,
  fp8_paged_mqa_logits (decode: 64 sequences, 1 or 2 new tokens, every context exactly kv_len) and
  fp8_mqa_logits (prefill: one sequence of `query` new tokens after kv_len - query cached ones),
  64 heads x 128, fp8. The logits kernel alone (not the top-k).
- h800-sparse_decode-infersim.csv: InferSim's runs of FlashMLA's sparse decode (flash_mla_with_kvcache
  with indices): 64 sequences, 1 new token, 128 heads, top-k 2048, FlashMLA's fp8 cache (656 B per
  token). kv_len is the mean context (varlen); the kernel reads 2,048 keys per query whatever it is.
- h800-sparse_prefill-infersim.csv: InferSim's runs of FlashMLA's sparse prefill (flash_mla_sparse_fwd):
  one sequence of 4,096 new tokens, kv_len keys in all, 128 heads, top-k 2048, bf16 cache. The same
  sparse latent attention over the top-k keys, so the same family: it fixes the compute efficiency
  the decode rows, all of one work size, leave free.
- h800-sparse_decode-flashmladeepdive.csv: FlashMLA's headline sparse decode figure (410 TFLOPS at
  batch 128, 2 new tokens, 128 heads, top-k 2048; latency derived from the FLOP count). Its kv_len
  is not stated; 32,768 (the repository's test case) is used, which any length above the top-k
  gives alike.
Output columns: kernel, batch, query, kv_len, heads, head_dim (indexer) or topk and kv_dtype
(sparse_decode), latency_us.
"""
import csv
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'validate', 'published', 'h800')
SRC = os.path.join(HERE, 'other-kernels')


def write(name, header, rows):
    path = os.path.join(HERE, name)
    with open(path, 'w', newline='') as f:
        w = csv.writer(f, lineterminator='\n')
        w.writerow(header)
        w.writerows(rows)
    print(f'{path}: {len(rows)} rows')


with open(os.path.join(SRC, 'h800-indexer-infersim.csv')) as f:
    rows = [['indexer', r['batch'], r['query'], r['kv_len'], r['heads'], r['head_dim'], r['latency_us']] for r in csv.DictReader(f)]
write('indexer-deepgemm.csv', ['kernel', 'batch', 'query', 'kv_len', 'heads', 'head_dim', 'latency_us'], rows)
with open(os.path.join(SRC, 'h800-sparse_decode-infersim.csv')) as f:
    rows = [['sparse_decode', r['batch'], r['query'], r['kv_len'], r['heads'], r['topk'], 'fp8_flashmla', r['latency_us']] for r in csv.DictReader(f)]
with open(os.path.join(SRC, 'h800-sparse_decode-flashmladeepdive.csv')) as f:
    rows += [['sparse_decode', r['batch'], r['query'], 32768, r['heads'], r['topk'], 'fp8_flashmla', r['latency_us_derived']] for r in csv.DictReader(f)]
with open(os.path.join(SRC, 'h800-sparse_prefill-infersim.csv')) as f:
    rows += [['sparse_decode', r['batch'], r['query'], r['kv_len'], r['heads'], r['topk'], 'bf16', r['latency_us']] for r in csv.DictReader(f)]
write('sparse-attention-flashmla.csv', ['kernel', 'batch', 'query', 'kv_len', 'heads', 'topk', 'kv_dtype', 'latency_us'], rows)
