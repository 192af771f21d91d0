#pragma once
// Element types for compute, weights and the KV cache, with their storage layouts.
#include <optional>
#include <string_view>
#include <vector>

#include "mlaplan/core/units.hpp"

namespace mlaplan {

// Arithmetic (compute) dtypes a GPU has a dense peak for.
enum class DType { fp32, tf32, bf16, fp16, fp8, fp4 };

std::string_view to_string(DType d);
std::optional<DType> parse_dtype(std::string_view s);
const std::vector<DType>& all_dtypes();
// Bits per element as stored (tf32 is stored as fp32).
int dtype_bits(DType d);
// Bytes per activation element: dtype_bits / 8.
double bytes_per_element(DType d);

// KV-cache storage layouts.
//  fp32           4 B per element (the CPU validation kernels' cache; a debugging layout).
//  bf16, fp16     2 B per element, no scales.
//  fp8            1 B per element (e4m3) with one per-tensor scale per layer: no per-token bytes.
//  fp8_flashmla   FlashMLA's MLA layout: latent in e4m3 with one fp32 scale per 128 values,
//                 RoPE key kept in bf16 (512 + 16 + 128 = 656 B for DeepSeek shapes).
//  fp4            OCP MXFP4: e2m1 values (half a byte) with one e8m0 (1 B) scale per 32 values
//                 of each stored vector.
enum class KvDtype { fp32, bf16, fp16, fp8, fp8_flashmla, fp4 };

std::string_view to_string(KvDtype d);
std::optional<KvDtype> parse_kv_dtype(std::string_view s);
const std::vector<KvDtype>& all_kv_dtypes();

// Weight storage. fp8 is e4m3 with one fp32 scale per 128x128 block of each linear weight
// (DeepSeek-V3 §3.5.2, `weight_block_size: [128, 128]`); mxfp4 is e2m1 with one e8m0 scale per
// 32 input elements (OCP MX). Only linear (matrix) weights are quantized; embeddings, norms,
// routers and biases keep the dense dtype unless the model says otherwise.
enum class WeightDtype { fp32, bf16, fp16, fp8, mxfp4 };

std::string_view to_string(WeightDtype d);
std::optional<WeightDtype> parse_weight_dtype(std::string_view s);
const std::vector<WeightDtype>& all_weight_dtypes();

// How a weight matrix [rows, cols] is stored: every size of a weight dtype derives from this one
// definition. Values of `value_bits`, plus one scale of `scale_bytes` per block of
// block_rows x block_cols elements (scale_bytes 0: no scales).
//   fp32 32 bits; bf16, fp16 16 bits; fp8 (e4m3) 8 bits + one fp32 scale per 128x128 block
//   (DeepSeek-V3 `weight_block_size`, overridable); mxfp4 (e2m1) 4 bits + one e8m0 (1 B) scale per
//   1x32 block of each row's input elements (OCP MX v1.0 §5).
struct WeightFormat {
  int value_bits = 16;
  int scale_bytes = 0;
  std::int64_t block_rows = 1;
  std::int64_t block_cols = 1;
};
WeightFormat weight_format(WeightDtype d, std::int64_t fp8_block_rows = 128, std::int64_t fp8_block_cols = 128);
// Exact bytes of one [rows, cols] matrix: ⌈rows·cols·bits/8⌉ + ⌈rows/br⌉·⌈cols/bc⌉·scale_bytes.
Bytes weight_matrix_bytes(std::int64_t rows, std::int64_t cols, const WeightFormat& f);
// Bytes per element with the scales amortised (fp8: 1 + 4/16384; mxfp4: 0.5 + 1/32), the size the
// cost model charges for weight traffic.
double bytes_per_element(const WeightFormat& f);
double bytes_per_element(WeightDtype d);

// Bytes of one vector of n values stored in a KV layout without special parts (the plain
// layouts; fp8_flashmla is MLA-specific and handled by the MLA formula).
struct KvBytes {
  Bytes data{0};    // the values themselves
  Bytes scales{0};  // per-token quantization scales stored beside them
  constexpr Bytes total() const { return data + scales; }
  friend constexpr KvBytes operator+(KvBytes a, KvBytes b) {
    return KvBytes{a.data + b.data, a.scales + b.scales};
  }
  friend constexpr KvBytes operator*(KvBytes a, std::int64_t k) {
    return KvBytes{a.data * k, a.scales * k};
  }
  constexpr auto operator<=>(const KvBytes&) const = default;
};

// One stored vector of `values` elements in a plain layout (bf16, fp16, fp8, fp4).
KvBytes kv_vector_bytes(std::int64_t values, KvDtype d);

}  // namespace mlaplan
