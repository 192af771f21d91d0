#pragma once
// CPU microkernels (Eigen, fp32, one core) for every op of the MLA paths, at the shapes the cost
// model describes, plus calibration kernels. Layouts are row-major:
//   latent cache  [B·S, r + d_r]   each row: the latent c_KV, then the RoPE key
//   queries       q_nope [T, h·d_n], q_rope [T, h·d_r]   (T = B·Q new tokens)
//   absorb        q_full [T·h, r + d_r] (folded query, then RoPE part), o_lat [T·h, r], out [T, h·d_v]
//   expand        kv [B·S, h·(d_n + d_v)] (per head: K_nope then V), rope [B·S, h·d_r], out [T, h·d_v]
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "harness.hpp"

namespace mlaplan::validate {

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecF = Eigen::VectorXf;

// All buffers of one step, allocated once per shape.
struct MlaBuffers {
  MlaShape s;
  MatF cache;                  // [B·S, r + d_r]
  std::vector<MatF> w_uk;      // per head [d_n, r]
  std::vector<MatF> w_uv;      // per head [r, d_v]
  MatF w_ukv;                  // [r, h·(d_n + d_v)]: W_UK and W_UV of every head, K_nope then V per head
  MatF q_nope, q_rope;         // [T, h·d_n], [T, h·d_r]
  MatF q_full, o_lat;          // absorb: [T·h, r + d_r], [T·h, r]
  MatF kv, rope;               // expand: [B·S, h·(d_n + d_v)], [B·S, h·d_r]
  MatF out;                    // [T, h·d_v]
  std::vector<MatF> part_o;    // chunked: per chunk [T·h, d_v]
  std::vector<VecF> part_lse;  // chunked: per chunk [T·h]
  MatF kv_chunk, rope_chunk;   // chunked workspace: [C, h·(d_n + d_v)], [C, h·d_r]
};

MlaBuffers make_buffers(const MlaShape& s, std::mt19937_64& rng);

// ---- absorb ----
void q_absorb_w_uk(MlaBuffers& b);         // q_full[:, :r] = per head q_nope · W_UK
void latent_attention_mqa(MlaBuffers& b);  // o_lat = softmax(q_full · cacheᵀ) · cache[:, :r]
void out_absorb_w_uv(MlaBuffers& b);       // out = per head o_lat · W_UV
// ---- expand ----
void kv_up_proj(MlaBuffers& b);            // kv = cache[:, :r] · W_UKV
void rope_k_broadcast(MlaBuffers& b);      // rope[:, head] = cache[:, r:] for every head
void attention_mha(MlaBuffers& b);         // out = softmax([q_nope, q_rope] · [K_nope, rope]ᵀ) · V per head
// ---- chunked expand (batch 1): up-project and attend chunk by chunk, then merge ----
void chunked_expand(MlaBuffers& b);        // kv_up_proj_chunk + rope_k_broadcast + attention_mha_chunk, all chunks
void lse_merge(MlaBuffers& b);             // out = Σ_i exp(lse_i − lse) · part_o_i

// One chunk's parts of chunked_expand, for timing them separately.
void kv_up_proj_chunk(MlaBuffers& b, int chunk);
void rope_k_broadcast_chunk(MlaBuffers& b, int chunk);
void attention_mha_chunk(MlaBuffers& b, int chunk);
int chunk_count(const MlaShape& s);

// MLA attention output [T, h·d_v] of the buffers' inputs, computed the expanded way in float64
// (per-head keys and values materialised, naive softmax): the reference every kernel, CPU or
// CUDA, is checked against.
MatD reference_out(const MlaBuffers& b);

// Every kernel against its float64 reference at a shape, on fresh random inputs.
std::vector<KernelCheck> check_kernels(const MlaShape& s, std::mt19937_64& rng);

// ---- calibration ----
struct StreamResult {
  double read_bytes_per_s = 0, copy_bytes_per_s = 0, triad_bytes_per_s = 0;
};
StreamResult measure_stream(std::size_t bytes_per_array);
// Copy bandwidth (bytes read + written per second) of a working set of `bytes` (two arrays of half
// each) copied over and over: at small sets the caches serve it, at large ones DRAM.
double measure_copy(std::size_t bytes);
// Dense fp32 GEMM throughput [m, k] × [k, n], FLOP/s (median of repeats).
double measure_gemm(int m, int k, int n);

}  // namespace mlaplan::validate
