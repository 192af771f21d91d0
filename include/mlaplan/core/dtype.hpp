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
// (DeepSeek-V3 §3.5.2, `weight_block_size: [128, 128]`); fp8_tensor is e4m3 with one fp32 scale per
// weight matrix (NVIDIA Model Optimizer's FP8_DEFAULT_CFG, weights and inputs at `axis: None`: the
// Llama FP8 checkpoints TensorRT-LLM benchmarks), run by per-tensor-scaled fp8 GEMMs; mxfp4 is e2m1 with one e8m0 scale per
// 32 input elements (OCP MX); int4 and int8 are integers with one scale (and, when asymmetric, one
// zero point) per group of input elements (AWQ, GPTQ, compressed-tensors; group size from the
// config). Only linear (matrix) weights are quantized; embeddings, norms, routers and biases keep
// the dense dtype unless the model says otherwise.
enum class WeightDtype { fp32, bf16, fp16, fp8, fp8_tensor, mxfp4, int4, int8 };

std::string_view to_string(WeightDtype d);
std::optional<WeightDtype> parse_weight_dtype(std::string_view s);
const std::vector<WeightDtype>& all_weight_dtypes();
// fp8 values, block-scaled or per-tensor: GEMMs on them run at the fp8 peak.
constexpr bool is_fp8(WeightDtype d) { return d == WeightDtype::fp8 || d == WeightDtype::fp8_tensor; }

// How a weight matrix [rows, cols] (rows = output features, cols = input features) is stored:
// every size of a weight dtype derives from this one definition.
//   values      `value_bits` each, packed: ⌈rows·cols·value_bits/8⌉ B;
//   scales      one of `scale_bytes` per block of block_rows x block_cols elements (a block side of
//               0 spans the whole dimension: block_cols 0 is one scale per output row, per channel;
//               both 0 is one scale per matrix, per tensor);
//   zero points one of `zero_bits` per scale block when the quantization is asymmetric (0: none
//               stored); packed into int32 words along the output rows when zeros_packed
//               (⌈rows·zero_bits/32⌉·4 B per block column), else one per byte-aligned slot;
//   g_idx       `index_bytes_per_col` per input column (GPTQ's int32 group index);
//   per matrix  `bytes_per_matrix` of bookkeeping (compressed-tensors' weight_shape).
// The defaults, for a --weight-dtype the checkpoint does not carry:
//   fp32 32 bits; bf16, fp16 16 bits; fp8 (e4m3) 8 bits + one fp32 scale per 128x128 block
//   (DeepSeek-V3 `weight_block_size`); mxfp4 (e2m1) 4 bits + one e8m0 (1 B) scale per 1x32 block
//   of each row's input elements (OCP MX v1.0 §5); int4, int8: AutoAWQ's and AutoGPTQ's asymmetric
//   group-128 layout, one fp16 scale and one packed zero point of the value width per 128 input
//   elements of each row. A checkpoint's own format (io/hf_config) replaces these.
struct WeightFormat {
  int value_bits = 16;
  int scale_bytes = 0;
  std::int64_t block_rows = 1;
  std::int64_t block_cols = 1;
  int zero_bits = 0;
  bool zeros_packed = false;
  int index_bytes_per_col = 0;
  int bytes_per_matrix = 0;
  bool operator==(const WeightFormat&) const = default;
};
WeightFormat weight_format(WeightDtype d);
// fp8 with another scale block shape (a config's `weight_block_size`).
WeightFormat fp8_block_format(std::int64_t block_rows, std::int64_t block_cols);
// Exact bytes of one [rows, cols] matrix: values + scales + zero points + g_idx + per-matrix bytes,
//   ⌈rows·cols·bits/8⌉ + ⌈rows/br⌉·⌈cols/bc⌉·scale_bytes + ⌈cols/bc⌉·⌈rows·zero_bits/32⌉·4 (packed)
//   + cols·index_bytes_per_col + bytes_per_matrix.
Bytes weight_matrix_bytes(std::int64_t rows, std::int64_t cols, const WeightFormat& f);
// Bytes per element with scales and zero points amortised over their blocks (fp8: 1 + 4/16384;
// mxfp4: 0.5 + 1/32; int4 g128: 0.5 + 2/128 + 0.5/128), the size the cost model charges for weight
// traffic. Per-column and per-matrix bytes depend on the shape and are left out (GPTQ's g_idx is
// 4/rows B per element: under 0.1% of a real matrix), and so is a scale whose block spans a whole dimension (block side 0).
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
