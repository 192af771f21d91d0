#include "mlaplan/core/dtype.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace mlaplan {
namespace {

// Names as users type them: case does not matter (FP8, BF16, fp8_FlashMLA).
bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

template <class E, std::size_t N>
std::optional<E> lookup(const std::array<std::pair<std::string_view, E>, N>& table, std::string_view s) {
  for (const auto& [name, value] : table)
    if (same_name(name, s)) return value;
  return std::nullopt;
}

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& table, E e) {
  for (const auto& [name, value] : table)
    if (value == e) return name;
  return "?";
}

constexpr std::array<std::pair<std::string_view, DType>, 6> kDTypes{{
    {"fp32", DType::fp32}, {"tf32", DType::tf32}, {"bf16", DType::bf16},
    {"fp16", DType::fp16}, {"fp8", DType::fp8},   {"fp4", DType::fp4}}};

constexpr std::array<std::pair<std::string_view, KvDtype>, 6> kKvDtypes{{
    {"fp32", KvDtype::fp32}, {"bf16", KvDtype::bf16}, {"fp16", KvDtype::fp16}, {"fp8", KvDtype::fp8},
    {"fp8_flashmla", KvDtype::fp8_flashmla}, {"fp4", KvDtype::fp4}}};

constexpr std::array<std::pair<std::string_view, WeightDtype>, 8> kWeightDtypes{{
    {"fp32", WeightDtype::fp32}, {"bf16", WeightDtype::bf16}, {"fp16", WeightDtype::fp16}, {"fp8", WeightDtype::fp8},
    {"fp8_tensor", WeightDtype::fp8_tensor}, {"mxfp4", WeightDtype::mxfp4}, {"int4", WeightDtype::int4}, {"int8", WeightDtype::int8}}};

}  // namespace

std::string_view to_string(DType d) { return name_of(kDTypes, d); }
std::optional<DType> parse_dtype(std::string_view s) { return lookup(kDTypes, s); }
const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v{DType::fp32, DType::tf32, DType::bf16, DType::fp16, DType::fp8, DType::fp4};
  return v;
}
int dtype_bits(DType d) {
  switch (d) {
    case DType::fp32: case DType::tf32: return 32;
    case DType::bf16: case DType::fp16: return 16;
    case DType::fp8: return 8;
    case DType::fp4: return 4;
  }
  return 16;
}

double bytes_per_element(DType d) { return dtype_bits(d) / 8.0; }

std::string_view to_string(KvDtype d) { return name_of(kKvDtypes, d); }
std::optional<KvDtype> parse_kv_dtype(std::string_view s) {
  if (same_name(s, "fp8_e4m3") || same_name(s, "fp8-e4m3")) return KvDtype::fp8;
  if (same_name(s, "fp8-flashmla") || same_name(s, "flashmla")) return KvDtype::fp8_flashmla;
  return lookup(kKvDtypes, s);
}
const std::vector<KvDtype>& all_kv_dtypes() {
  static const std::vector<KvDtype> v{KvDtype::fp32, KvDtype::bf16, KvDtype::fp16, KvDtype::fp8, KvDtype::fp8_flashmla, KvDtype::fp4};
  return v;
}

std::string_view to_string(WeightDtype d) { return name_of(kWeightDtypes, d); }
std::optional<WeightDtype> parse_weight_dtype(std::string_view s) {
  if (same_name(s, "fp4")) return WeightDtype::mxfp4;
  return lookup(kWeightDtypes, s);
}
const std::vector<WeightDtype>& all_weight_dtypes() {
  static const std::vector<WeightDtype> v{WeightDtype::fp32, WeightDtype::bf16, WeightDtype::fp16, WeightDtype::fp8, WeightDtype::fp8_tensor,
                                          WeightDtype::mxfp4, WeightDtype::int4, WeightDtype::int8};
  return v;
}

WeightFormat weight_format(WeightDtype d) {
  switch (d) {
    case WeightDtype::fp32: return {.value_bits = 32};
    case WeightDtype::bf16:
    case WeightDtype::fp16: return {.value_bits = 16};
    case WeightDtype::fp8: return fp8_block_format(128, 128);
    case WeightDtype::fp8_tensor: return fp8_block_format(0, 0);  // one scale: a block spanning the matrix
    case WeightDtype::mxfp4: return {.value_bits = 4, .scale_bytes = 1, .block_rows = 1, .block_cols = 32};
    case WeightDtype::int4:
    case WeightDtype::int8: {
      // AutoAWQ WQLinear_GEMM / AutoGPTQ QuantLinear: fp16 scales [in/128, out], int32-packed zeros
      // [in/128, out·bits/32] (see io/hf_config.cpp for the sources).
      const int bits = d == WeightDtype::int4 ? 4 : 8;
      return {.value_bits = bits, .scale_bytes = 2, .block_rows = 1, .block_cols = 128, .zero_bits = bits, .zeros_packed = true};
    }
  }
  return {};
}

WeightFormat fp8_block_format(std::int64_t block_rows, std::int64_t block_cols) {
  return {.value_bits = 8, .scale_bytes = 4, .block_rows = block_rows, .block_cols = block_cols};
}

Bytes weight_matrix_bytes(std::int64_t rows, std::int64_t cols, const WeightFormat& f) {
  const std::int64_t values = sat_mul(rows, cols);
  const std::int64_t value_bytes = f.value_bits % 8 == 0 ? sat_mul(values, f.value_bits / 8) : ceil_div(sat_mul(values, f.value_bits), 8);
  // Scale blocks along each side; a side of 0 spans the whole dimension.
  const std::int64_t block_rows = f.block_rows > 0 ? ceil_div(rows, f.block_rows) : 1;
  const std::int64_t block_cols = f.block_cols > 0 ? ceil_div(cols, f.block_cols) : 1;
  const std::int64_t scales = f.scale_bytes > 0 ? sat_mul(sat_mul(block_rows, block_cols), f.scale_bytes) : 0;
  // Zero points: one per scale block, packed into int32 words along the output rows, or one per
  // byte-aligned slot.
  std::int64_t zeros = 0;
  if (f.zero_bits > 0) {
    const std::int64_t per_column = f.zeros_packed ? sat_mul(ceil_div(sat_mul(block_rows, f.zero_bits), 32), 4)
                                                   : sat_mul(block_rows, ceil_div(f.zero_bits, 8));
    zeros = sat_mul(block_cols, per_column);
  }
  const std::int64_t index = sat_mul(cols, f.index_bytes_per_col);
  return Bytes{sat_add(sat_add(sat_add(value_bytes, scales), sat_add(zeros, index)), f.bytes_per_matrix)};
}

double bytes_per_element(const WeightFormat& f) {
  if (f.block_rows <= 0 || f.block_cols <= 0) return f.value_bits / 8.0;
  const double block = static_cast<double>(f.block_rows) * static_cast<double>(f.block_cols);
  return f.value_bits / 8.0 + static_cast<double>(f.scale_bytes) / block + f.zero_bits / 8.0 / block;
}
double bytes_per_element(WeightDtype d) { return bytes_per_element(weight_format(d)); }

// values · b for 16/8-bit layouts; MXFP4 is values/2 bytes plus one 1-byte scale per 32 values.
KvBytes kv_vector_bytes(std::int64_t values, KvDtype d) {
  switch (d) {
    case KvDtype::fp32: return {Bytes{values} * 4, Bytes{0}};
    case KvDtype::bf16:
    case KvDtype::fp16: return {Bytes{values} * 2, Bytes{0}};
    case KvDtype::fp8:
    case KvDtype::fp8_flashmla: return {Bytes{values}, Bytes{0}};
    case KvDtype::fp4: return {Bytes{ceil_div(values, 2)}, Bytes{ceil_div(values, 32)}};
  }
  return {};
}

}  // namespace mlaplan
