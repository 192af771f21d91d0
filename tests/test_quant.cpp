// Quantised checkpoints (AWQ, GPTQ, compressed-tensors): their weight bytes byte for byte, how
// their configs are read, and what is refused or warned about.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/io/hf_config.hpp"

using namespace mlaplan;
using test::all_models;
using test::expect_refusal;
using test::expect_warnings;
using test::run;

namespace {

const std::string kFixtures = std::string(MLAPLAN_TEST_SOURCE_DIR) + "/tests/fixtures/";
const std::string kAwq70b = kFixtures + "llama-3.1-70b-awq-int4.json";
const std::string kGptq8b = kFixtures + "llama-3.1-8b-gptq-int4.json";
const std::string kW4a16 = kFixtures + "deepseek-v2-lite-w4a16.json";
const std::string kW8a8 = kFixtures + "qwen3-8b-w8a8-int8.json";

ModelSpec fixture(const std::string& path, const std::vector<std::string>& sets = {}) { return load_model_file(path, "fixture", sets); }

// A Llama-like config with `quantization_config` set to the given JSON text, written to a file.
std::string quantized_config(const std::string& name, const std::string& quantization) {
  const std::string path = std::filesystem::temp_directory_path() / ("mlaplan_quant_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(path) << R"({"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
    "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": false, "torch_dtype": "float16", "model_type": "llama",
    "quantization_config": )" << quantization << "}";
  return path;
}

// JSON text `base` with the keys of `patch` replaced or added (RFC 7386 merge patch).
std::string patched(const std::string& base, const std::string& patch) {
  nlohmann::json j = nlohmann::json::parse(base);
  j.merge_patch(nlohmann::json::parse(patch));
  return j.dump();
}
std::string awq(const std::string& patch = "{}") {
  return patched(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "gemm"})", patch);
}
// A compressed-tensors config whose one group has the given weights scheme.
std::string ct(const std::string& weights, const std::string& patch = "{}", const std::string& format = "pack-quantized") {
  return patched(R"({"quant_method": "compressed-tensors", "format": ")" + format +
                     R"(", "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["Linear"], "weights": )" + weights + "}}}",
                 patch);
}
const std::string kInt4Group = R"({"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 128})";

}  // namespace

TEST_CASE("Integer weight formats: one matrix byte for byte", "[quant][example]") {
  // q_proj of Llama-3.1-70B, [8192, 8192], 4-bit, 64 groups of 128 input elements per row.
  const std::int64_t values = 8192LL * 8192 / 2;       // 33,554,432 B
  const std::int64_t scales = 8192LL * 64 * 2;         // one fp16 or bf16 scale per row per group
  const std::int64_t packed_zeros = 64LL * 8192 / 8 * 4;  // 4-bit zeros, 8 to an int32, per group
  // AWQ (AutoAWQ WQLinear_GEMM): values + scales + packed zeros.
  const WeightFormat awq4 = weight_format(WeightDtype::int4);
  CHECK(weight_matrix_bytes(8192, 8192, awq4) == Bytes{values + scales + packed_zeros});
  CHECK(weight_matrix_bytes(8192, 8192, awq4) == Bytes{34865152});
  // GPTQ adds g_idx, one int32 per input column.
  WeightFormat gptq4 = awq4;
  gptq4.index_bytes_per_col = 4;
  CHECK(weight_matrix_bytes(8192, 8192, gptq4) == Bytes{values + scales + packed_zeros + 8192 * 4});
  // compressed-tensors pack-quantized, symmetric: no zeros, the two-int64 weight_shape.
  const WeightFormat ct4{.value_bits = 4, .scale_bytes = 2, .block_rows = 1, .block_cols = 128, .bytes_per_matrix = 16};
  CHECK(weight_matrix_bytes(8192, 8192, ct4) == Bytes{values + scales + 16});
  // Per channel (AWQ group_size -1; block_cols 0): one scale and one packed zero per row.
  WeightFormat channel = awq4;
  channel.block_cols = 0;
  CHECK(weight_matrix_bytes(8192, 8192, channel) == Bytes{values + 8192 * 2 + 8192 / 8 * 4});
  // int-quantized int8 per channel: a byte per value, one bf16 scale per row.
  const WeightFormat int8_channel{.value_bits = 8, .scale_bytes = 2, .block_rows = 1, .block_cols = 0};
  CHECK(weight_matrix_bytes(8192, 8192, int8_channel) == Bytes{8192LL * 8192 + 8192 * 2});
  // Per tensor: one scale for the matrix.
  const WeightFormat tensor{.value_bits = 8, .scale_bytes = 2, .block_rows = 0, .block_cols = 0};
  CHECK(weight_matrix_bytes(100, 7, tensor) == Bytes{702});
  // Ragged shapes round up: 3 x 5 int4 in groups of 2: ⌈15/2⌉ = 8 B of values, 3 x 3 scales, and per
  // group column ⌈3·4/32⌉ = 1 int32 of zeros.
  const WeightFormat g2{.value_bits = 4, .scale_bytes = 2, .block_rows = 1, .block_cols = 2, .zero_bits = 4, .zeros_packed = true};
  CHECK(weight_matrix_bytes(3, 5, g2) == Bytes{8 + 18 + 12});
  // Amortised bytes per element: 0.5 + 2/128 + 0.5/128.
  CHECK(bytes_per_element(awq4) == 0.5 + 2.5 / 128);
}

TEST_CASE("Llama-3.1-70B AWQ int4 group 128: weight bytes by hand", "[quant][example]") {
  const ModelSpec m = fixture(kAwq70b);
  CHECK(m.quant == WeightQuant::int4);
  CHECK(m.quant_method == "awq");
  CHECK(m.quant_format == weight_format(WeightDtype::int4));
  CHECK(m.quant_dense == WeightDtype::fp16);
  CHECK(m.warnings.empty());
  // Per layer, [rows, cols]: q, o [8192, 8192]; k, v [1024, 8192]; gate, up [28672, 8192]; down
  // [8192, 28672]: 855,638,016 values, each r·c·(1/2 + 2/128 + 0.5/128) = r·c·133/256 B.
  const std::int64_t per_layer = 855638016LL * 133 / 256;
  CHECK(per_layer == 444530688);
  // Embedding and lm_head [128256, 8192] and the norms stay in fp16 (torch_dtype).
  const std::int64_t dense = 2 * 128256LL * 8192 * 2 + (80 * 2 * 8192 + 8192) * 2;
  CHECK(weight_bytes_per_rank(m, default_weight_plan(m), Parallelism{}) == Bytes{80 * per_layer + dense});
  CHECK(weight_bytes_per_rank(m, default_weight_plan(m), Parallelism{}) == Bytes{39767785472});
  // The same shapes with a bf16 checkpoint: 2 B per value.
  CHECK(weight_bytes_per_rank(m, weight_plan_for(m, WeightDtype::bf16), Parallelism{}) == Bytes{80 * 855638016LL * 2 + dense});
}

TEST_CASE("GPTQ and compressed-tensors configs are read as their checkpoints store them", "[quant][config]") {
  const ModelSpec g = fixture(kGptq8b);
  CHECK(g.quant == WeightQuant::int4);
  CHECK(g.quant_format == WeightFormat{.value_bits = 4, .scale_bytes = 2, .block_rows = 1, .block_cols = 128, .zero_bits = 4,
                                       .zeros_packed = true, .index_bytes_per_col = 4});
  CHECK(g.warnings.empty());
  // MLA with w4a16: attention quantized too, the router (ignored as re:.*mlp.gate$) dense anyway.
  const ModelSpec d = fixture(kW4a16);
  CHECK(d.quant == WeightQuant::int4);
  CHECK(d.quant_format == WeightFormat{.value_bits = 4, .scale_bytes = 2, .block_rows = 1, .block_cols = 128, .bytes_per_matrix = 16});
  CHECK_FALSE(d.quant_skips_attention);
  CHECK(d.warnings.empty());
  CHECK(attention_weight_dtype(d) == WeightDtype::int4);
  // W8A8: int8 per channel, a byte per value; the activation quantization is a warning.
  const ModelSpec q = fixture(kW8a8);
  CHECK(q.quant == WeightQuant::int8);
  CHECK(q.quant_format == WeightFormat{.value_bits = 8, .scale_bytes = 2, .block_rows = 1, .block_cols = 0});
  REQUIRE(q.warnings.size() == 1);
  // An asymmetric group scheme packs its zero points; asymmetric int-quantized stores int8 ones.
  const ModelSpec asym = fixture(quantized_config("asym.json", ct(R"({"num_bits": 4, "type": "int", "symmetric": false, "strategy": "group", "group_size": 64})")));
  CHECK(asym.quant_format == WeightFormat{.value_bits = 4, .scale_bytes = 2, .block_rows = 1, .block_cols = 64, .zero_bits = 4,
                                          .zeros_packed = true, .bytes_per_matrix = 16});
  const ModelSpec naive = fixture(quantized_config("naive.json", ct(R"({"num_bits": 4, "type": "int", "symmetric": false, "strategy": "channel"})", "{}", "naive-quantized")));
  CHECK(naive.quant == WeightQuant::int4);
  CHECK(naive.quant_format == WeightFormat{.value_bits = 8, .scale_bytes = 2, .block_rows = 1, .block_cols = 0, .zero_bits = 8});
  // fp8 through compressed-tensors: per channel, scales in the checkpoint's dtype.
  const ModelSpec fp8 = fixture(quantized_config("fp8.json", ct(R"({"num_bits": 8, "type": "float", "strategy": "channel"})", "{}", "float-quantized")));
  CHECK(fp8.quant == WeightQuant::fp8_block);
  CHECK(fp8.quant_format == WeightFormat{.value_bits = 8, .scale_bytes = 2, .block_rows = 1, .block_cols = 0});
  // Grouped activation ordering stores g_idx.
  const ModelSpec ordered = fixture(quantized_config("actorder.json", ct(R"({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "actorder": "group"})")));
  CHECK(ordered.quant_format.index_bytes_per_col == 4);
  // AWQ with group_size -1: one group per row.
  CHECK(fixture(quantized_config("awq-1.json", awq(R"({"group_size": -1})"))).quant_format.block_cols == 0);
  // Attention listed as unquantized is kept dense, the way fp8's modules_to_not_convert is.
  const ModelSpec skip = fixture(quantized_config("skip.json", awq(R"({"modules_to_not_convert": ["self_attn"]})")));
  CHECK(skip.quant_skips_attention);
  CHECK(attention_weight_dtype(skip) == WeightDtype::bf16);
  CHECK(default_weight_plan(skip).quantize_attention == false);
}

TEST_CASE("Every bundled model: int4 weights weigh less than fp8 and fp8 less than int8 and bf16", "[quant][property]") {
  for (const ModelSpec& m : all_models()) {
    INFO(m.name);
    const Parallelism one{};
    const Bytes int4 = weight_bytes_per_rank(m, weight_plan_for(m, WeightDtype::int4), one);
    const Bytes fp8 = weight_bytes_per_rank(m, weight_plan_for(m, WeightDtype::fp8), one);
    const Bytes int8 = weight_bytes_per_rank(m, weight_plan_for(m, WeightDtype::int8), one);
    const Bytes bf16 = weight_bytes_per_rank(m, weight_plan_for(m, WeightDtype::bf16), one);
    CHECK(int4 < fp8);
    CHECK(fp8 < int8);  // int8's fp16 group scales and zeros cost more than fp8's 128x128 blocks
    CHECK(int8 < bf16);
    // Asking for the checkpoint's own dtype is the checkpoint's own plan.
    CHECK(weight_bytes_per_rank(m, weight_plan_for(m, checkpoint_weight_dtype(m)), one) == weight_bytes_per_rank(m, default_weight_plan(m), one));
  }
}

TEST_CASE("Quantization configs that make no sense are refused in one line", "[quant][hostile]") {
  struct Case {
    std::string quantization, message;
  };
  const Case cases[] = {
      {awq(R"({"bits": 3.5})"), "key 'quantization_config.bits' = 3.5: expected an integer"},
      {awq(R"({"bits": 0})"), "key 'quantization_config.bits' = 0: must be a positive integer"},
      {awq(R"({"group_size": 0})"), "key 'quantization_config.group_size' = 0: expected a positive group size, or -1 for one group per row"},
      {awq(R"({"group_size": -2})"), "key 'quantization_config.group_size' = -2: must be at least -1"},
      {awq(R"({"group_size": "128"})"), "key 'quantization_config.group_size' = \"128\": expected an integer"},
      {awq(R"({"zero_point": "yes"})"), "key 'quantization_config.zero_point' = \"yes\": expected true or false"},
      {awq(R"({"modules_to_not_convert": "lm_head"})"), "key 'quantization_config.modules_to_not_convert' = \"lm_head\": expected an array of module names"},
      {R"({"quant_method": "gptq", "group_size": 128})", "key 'quantization_config.bits' = (absent): required field is missing"},
      {R"({"quant_method": "gptq", "bits": 4, "desc_act": 1})", "key 'quantization_config.desc_act' = 1: expected true or false"},
      {R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": 7})",
       "key 'quantization_config.config_groups' = 7: expected an object of quantization schemes"},
      {R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": 5}})",
       "key 'quantization_config.config_groups.group_0' = 5: expected an object with targets and weights"},
      {ct(R"({"num_bits": "4", "type": "int"})"), "key 'quantization_config.config_groups.group_0.weights.num_bits' = \"4\": expected an integer"},
      {ct(R"({"num_bits": 4, "type": "int", "strategy": "group"})"),
       "key 'quantization_config.config_groups.group_0.weights.group_size' = (absent): required field is missing"},
      {ct(R"({"num_bits": 4, "type": "int", "strategy": "group", "group_size": -128})"),
       "key 'quantization_config.config_groups.group_0.weights.group_size' = -128: must be a positive integer"},
      {ct(R"({"num_bits": 4})"), "key 'quantization_config.config_groups.group_0.weights.type' = (absent): required field is missing"},
      {ct(kInt4Group, R"({"ignore": [7]})"), "key 'quantization_config.ignore' = [7]: entry 7 is not a module name"},
  };
  for (const Case& c : cases) {
    const std::string f = quantized_config("bad.json", c.quantization);
    expect_refusal("capacity -m " + f, f + ": " + c.message);
  }
}

TEST_CASE("Quantizations mlaplan does not model are one warning each and the answer still printed", "[quant][warnings]") {
  struct Case {
    std::string quantization, warning;
  };
  const std::string bf16 = "weights counted as bf16 unless --weight-dtype says otherwise";
  const Case cases[] = {
      {R"({"quant_method": "gptq", "bits": 3, "group_size": 128})", "key 'quantization_config.bits' = 3: mlaplan models 4- and 8-bit integer weights: " + bf16},
      {R"({"quant_method": "gptq", "bits": 4, "desc_act": true})",
       "key 'quantization_config.desc_act' = true: act-order: kernels gather each group's scales through g_idx, a cost mlaplan does not model (the bytes are exact)"},
      {R"({"quant_method": "gptq", "bits": 4, "checkpoint_format": "marlin"})",
       "key 'quantization_config.checkpoint_format' = \"marlin\": a layout mlaplan does not model: weights counted in AutoGPTQ's layout"},
      {awq(R"({"version": "gemv"})"), "key 'quantization_config.version' = \"gemv\": a layout mlaplan does not model: weights counted in AutoAWQ's GEMM layout"},
      {awq(R"({"w_bit": 4})"), "key 'quantization_config.w_bit' = 4: not one of the AWQ settings mlaplan reads: ignored"},
      {awq(R"({"modules_to_not_convert": ["mlp.down_proj"]})"),
       "key 'quantization_config.modules_to_not_convert' = [\"mlp.down_proj\"]: keeps 'mlp.down_proj' unquantized: mlaplan counts it quantized"},
      {awq(R"({"modules_to_not_convert": ["model.layers.0.mlp", "model.layers.1.mlp"]})"),
       "key 'quantization_config.modules_to_not_convert' = [\"model.layers.0.mlp\",\"model.layers.1.mlp\"]: 2 entries name one layer's module "
       "(first 'model.layers.0.mlp'): mlaplan quantizes every layer alike and counts them quantized"},
      {ct(kInt4Group, "{}", "marlin-24"), "key 'quantization_config.format' = \"marlin-24\": a compressed-tensors format mlaplan does not model: " + bf16},
      {ct(R"({"num_bits": 4, "type": "float", "strategy": "group", "group_size": 16})", "{}", "nvfp4-pack-quantized"),
       "key 'quantization_config.format' = \"nvfp4-pack-quantized\": a compressed-tensors format mlaplan does not model: " + bf16},
      {ct(R"({"num_bits": 2, "type": "int", "strategy": "channel"})"),
       "key 'quantization_config.config_groups.group_0.weights.num_bits' = 2: int weights of 2 bits: mlaplan models int4, int8 and fp8: " + bf16},
      {ct(kInt4Group, R"({"kv_cache_scheme": {"num_bits": 8, "type": "float"}})"),
       "key 'quantization_config.kv_cache_scheme' = {\"num_bits\":8,\"type\":\"float\"}: a quantized KV cache: mlaplan counts the cache at --kv-dtype "
       "(default bf16); give --kv-dtype fp8 to match"},
  };
  for (const Case& c : cases) {
    const std::string f = quantized_config("warn.json", c.quantization);
    expect_warnings("capacity -m " + f, {f + ": " + c.warning});
  }
  // The fixtures read without a word, but for W8A8's activations.
  for (const std::string& f : {kAwq70b, kGptq8b, kW4a16}) CHECK(run("capacity -m " + f).err.empty());
  expect_warnings("kv -m " + kW8a8,
                  {kW8a8 + ": key 'quantization_config.config_groups.group_0.input_activations' = {\"dynamic\":true,\"num_bits\":8,\"strategy\":\"token\","
                           "\"symmetri...: activation quantization mlaplan does not model: activations counted at --dtype"});
}

TEST_CASE("Weight dtypes int4 and int8 are taken in any case", "[quant][strict]") {
  const test::Run a = run("capacity -m llama-3.1-8b --weight-dtype INT4 --format json"), b = run("capacity -m llama-3.1-8b --weight-dtype int4 --format json");
  CHECK(a.code == 0);
  CHECK(a.out == b.out);
  const auto j = nlohmann::json::parse(a.out);
  CHECK(j["weight_dtype"] == "int4 linear, bf16 other");
  // On the AWQ checkpoint, int4 is the checkpoint's own format: the same answer as the default.
  CHECK(run("capacity -m " + kAwq70b + " --weight-dtype int4 --format json").out == run("capacity -m " + kAwq70b + " --format json").out);
}

TEST_CASE("A default that decides the answer is named on stderr", "[quant][warnings]") {
  // bf16 forced on an fp8 checkpoint: does not fit, where the checkpoint's own fp8 does.
  expect_warnings("capacity -m deepseek-v3 -g h200 --tp 8 --weight-dtype bf16",
                  {"--weight-dtype: value 'bf16': does not fit (weights and reserve exceed the usable memory per rank); "
                   "with the checkpoint's own fp8 weights it fits 21 sequences"});
  expect_warnings("capacity -m " + kAwq70b + " -g h100-sxm --weight-dtype bf16",
                  {"--weight-dtype: value 'bf16': does not fit (weights and reserve exceed the usable memory per rank); "
                   "with the checkpoint's own int4 weights it fits 3 sequences"});
  // The other way: int4 forced on a bf16 checkpoint fits where the checkpoint's own weights do not.
  expect_warnings("capacity -m llama-3.1-70b -g h100-sxm --weight-dtype int4",
                  {"--weight-dtype: value 'int4': fits 3 sequences; with the checkpoint's own bf16 weights it does not fit "
                   "(weights and reserve exceed the usable memory per rank)"});
  // The default bf16 cache cannot hold one sequence, an fp8 one can.
  expect_warnings("capacity -m llama-3.1-8b -g rtx-4090 --context 64k",
                  {"--kv-dtype: value 'bf16': the default does not fit (the KV pool per rank cannot hold one sequence of the requested context); "
                   "--kv-dtype fp8 fits 1 sequence"});
  // Nothing when the flip changes nothing, or when the user chose the cache dtype.
  expect_warnings("capacity -m deepseek-v3 -g h200 --tp 8 --weight-dtype fp8", {});
  expect_warnings("capacity -m llama-3.1-8b -g rtx-4090 --context 64k --kv-dtype bf16", {});
}
