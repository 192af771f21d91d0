#!/usr/bin/env python3
"""Transcribe aiconfigurator's per-op latency tables into validate/published/<gpu>/ CSVs.

  scripts/aic-tables.py AICONFIGURATOR_GIT_DIR [COMMIT]

AICONFIGURATOR_GIT_DIR is a clone of ai-dynamo/aiconfigurator (a bare mirror works: files are
read with `git show`). Writes, per GPU, the tables below in the format `mlaplan-validate
--against` reads (latency in microseconds; nothing interpolated, rows in the source's order):

  bmm-trtllm.csv          mla_bmm_perf: TensorRT-LLM's W_UK (mla_gen_pre) and W_UV (mla_gen_post)
                          per-head folds, bf16 rows only (the folds vLLM and SGLang run; the fp8 rows
                          are block-scaled fp8 on H100 and dequantised bf16 on B200, two kernels)
  elementwise-trtllm.csv  scale_matrix_perf: TensorRT-LLM's static_quantize_e4m3_per_tensor, one
                          pass over an [m, k] bf16 matrix writing fp8 (GPUs with fp8 only)
  attention-trtllm.csv    generation_attention_perf (attention_decode) and context_attention_perf
                          (attention): TensorRT-LLM's
                          attention op (GQA/MQA, RoPE and the cache write included) for Llama-like
                          shapes: head_dim 128, no window, 8-64 query heads over 1-8 KV heads; decode
                          rows (kv_len = the cached tokens + the new one; bf16 kernel over a bf16 or
                          fp8 cache) and causal prompts (seq_len; bf16, or the fp8 kernel on an fp8
                          cache); the first row of each shape; kv_pool k_only where the
                          collector's pool held keys only (before its 1.3.0rc20 tables);
                          preprocess trtllm on every row (the op's RoPE + KV-append kernel)

  absorbed-decode-trtllm.csv   generation_mla_perf: TensorRT-LLM's MLA generation step, one query
                          token per sequence (kv_len = step + 1), bf16 or fp8 cache; GPUs whose
                          tables are at 1.3.0rc20 (MLA_GPUS)
  expanded-prefill-trtllm.csv  context_mla_perf: its MLA context attention over expanded Q/K/V,
                          causal, `batch` prompts of seq_len tokens; preprocess trtllm on every row
                          (the op's RoPE pass and, with fp8 context MLA, its Q/K/V quantisation)

H20 and H200 are never transcribed: they are held out.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parquet2csv  # noqa: E402

DATA = 'aic-core/src/aiconfigurator_core/systems/data'
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'validate', 'published')

# mlaplan folder: (aiconfigurator system, TensorRT-LLM version of the tables already transcribed,
# whether its attention tables were timed over a keys-only pool). Until its 1.3.0rc20 tables the
# collector gave GQA attention TensorRT-LLM's CacheType.SELFKONLY pool, whose value offsets are the
# key offsets (collector/trtllm/collect_attn.py@efcae124:98; CacheType.SELF from dec5f4cd): those
# rows get kv_pool k_only, which `mlaplan-validate --against` reads.
GPUS = {
    'a100-80gb': ('a100_sxm', '1.0.0', True),
    'h100-sxm': ('h100_sxm', '1.3.0rc20', False),
    'b200': ('b200_sxm', '1.3.0rc20', False),
    'gb200': ('gb200', '1.3.0rc20', False),
}
# GPUs whose MLA tables this script writes: those at 1.3.0rc20, one row per shape in the source
# (A100's 1.0.0 tables repeat shapes across TP sizes and were transcribed by hand before this script).
MLA_GPUS = {'h100-sxm', 'b200', 'gb200'}
# The tables' dtype names as the CSVs write them.
DTYPE = {'bfloat16': 'bf16', 'fp8': 'fp8'}


def write(path, header, rows):
    with open(path, 'w', newline='') as f:
        w = csv.writer(f, lineterminator='\n')
        w.writerow(header)
        w.writerows(rows)
    print(f'{path}: {len(rows)} rows')


def write_mla(git_dir, commit, folder, system, version):
    rows = parquet2csv.rows_at(git_dir, commit, f'{DATA}/{system}/mla/trtllm/{version}/generation_mla_perf.parquet')
    if rows:
        out = [['absorbed_decode', r['batch_size'], str(int(r['step']) + 1), r['num_heads'], '1', DTYPE[r['kv_cache_dtype']],
                f"{float(r['latency']) * 1000:.4f}"] for r in rows]
        write(os.path.join(ROOT, folder, 'absorbed-decode-trtllm.csv'), ['kernel', 'batch', 'kv_len', 'heads', 'query', 'kv_dtype', 'latency_us'], out)
    rows = parquet2csv.rows_at(git_dir, commit, f'{DATA}/{system}/mla/trtllm/{version}/context_mla_perf.parquet')
    if rows:
        out = [['expanded_prefill', r['batch_size'], r['isl'], r['num_heads'], r['isl'], DTYPE[r['kv_cache_dtype']],
                f"{float(r['latency']) * 1000:.4f}", 'trtllm'] for r in rows]
        write(os.path.join(ROOT, folder, 'expanded-prefill-trtllm.csv'),
              ['kernel', 'batch', 'seq_len', 'heads', 'query', 'kv_dtype', 'latency_us', 'preprocess'], out)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    git_dir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) == 3 else 'HEAD'
    for folder, (system, version, k_only) in GPUS.items():
        os.makedirs(os.path.join(ROOT, folder), exist_ok=True)
        if folder in MLA_GPUS:
            write_mla(git_dir, commit, folder, system, version)
        src = f'{DATA}/{system}/mla_bmm/trtllm/{version}/mla_bmm_perf.parquet'
        rows = parquet2csv.rows_at(git_dir, commit, src)
        if rows:
            fold = {'mla_gen_pre': 'q_absorb_w_uk', 'mla_gen_post': 'out_absorb_w_uv'}
            out = [['bmm', fold[r['op_name']], r['num_tokens'], r['num_heads'], 'bf16', f"{float(r['latency']) * 1000:.4f}"]
                   for r in rows if r['bmm_dtype'] == 'bfloat16' and r['op_name'] in fold]
            write(os.path.join(ROOT, folder, 'bmm-trtllm.csv'), ['kernel', 'op', 'batch', 'heads', 'dtype', 'latency_us'], out)
        src = f'{DATA}/{system}/quantize/trtllm/{version}/scale_matrix_perf.parquet'
        rows = parquet2csv.rows_at(git_dir, commit, src)
        if rows:
            out = [['elementwise', r['m'], r['k'], 'fp8', f"{float(r['latency']) * 1000:.4f}"] for r in rows if r['quant_dtype'] == 'fp8']
            write(os.path.join(ROOT, folder, 'elementwise-trtllm.csv'), ['kernel', 'm', 'k', 'dtype', 'latency_us'], out)
        out, seen = [], set()
        for phase in ('generation', 'context'):
            rows = parquet2csv.rows_at(git_dir, commit, f'{DATA}/{system}/attention/trtllm/{version}/{phase}_attention_perf.parquet') or []
            for r in rows:
                kv, kernel = DTYPE.get(r['kv_cache_dtype']), DTYPE.get(r['attn_dtype'])
                if r['window_size'] != '0' or r['head_dim'] != '128' or r['num_heads'] not in ('8', '16', '32', '64'):
                    continue
                if r['num_key_value_heads'] not in ('1', '2', '4', '8') or kv is None or kernel is None:
                    continue
                if (phase == 'generation' and kernel != 'bf16') or (phase == 'context' and kernel != kv):
                    continue
                decode = phase == 'generation'
                kv_len = str(int(r['step']) + 1) if decode else ''
                seq_len = '' if decode else r['isl']
                key = (phase, r['batch_size'], kv_len, seq_len, r['num_heads'], r['num_key_value_heads'], kv, kernel)
                if key in seen:
                    continue
                seen.add(key)
                out.append(['attention_decode' if decode else 'attention', r['batch_size'], kv_len, seq_len, r['num_heads'], r['num_key_value_heads'], '128', kv, kernel]
                           + (['k_only'] if k_only else []) + [f"{float(r['latency']) * 1000:.4f}", 'trtllm'])
        if out:
            # preprocess trtllm: the op launches TensorRT-LLM's RoPE + KV-append kernel where it runs
            # apart from the attention kernel, and `--against` adds it (add_trtllm_preprocessing).
            write(os.path.join(ROOT, folder, 'attention-trtllm.csv'),
                  ['kernel', 'batch', 'kv_len', 'seq_len', 'heads', 'kv_heads', 'head_dim', 'kv_dtype', 'dtype'] + (['kv_pool'] if k_only else []) + ['latency_us', 'preprocess'],
                  out)


if __name__ == '__main__':
    main()
