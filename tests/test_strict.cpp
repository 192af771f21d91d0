// A strict, self-explaining CLI (issue 13): overrides only of keys that mean something, hybrid
// architectures refused, sizes as people write them, and the warnings a user must see while the
// answer is still printed. Every case states its exact line and exit code.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using mlaplan::test::expect_refusal;
using mlaplan::test::Run;
using mlaplan::test::run;

const std::string kDeepSeek = "models/deepseek-ai--DeepSeek-V3.json";

std::string temp_config(const std::string& name, const json& cfg) {
  const fs::path p = fs::temp_directory_path() / ("mlaplan_strict_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(p) << cfg.dump();
  return p.string();
}

json llama_like() {
  return json{{"hidden_size", 4096},   {"num_attention_heads", 32}, {"num_key_value_heads", 8},      {"num_hidden_layers", 4},
              {"intermediate_size", 14336}, {"vocab_size", 128256}, {"tie_word_embeddings", false}};
}

}  // namespace

TEST_CASE("Strict overrides: --set takes a key the config has or one the reader understands", "[strict][set]") {
  expect_refusal("kv --set kv_lora_ranc=256",
                 "--set: value 'kv_lora_ranc=256': 'kv_lora_ranc' is neither a key of " + kDeepSeek + " nor one mlaplan reads; did you mean 'kv_lora_rank'?");
  expect_refusal("kv --set a.b.c=5", "--set: value 'a.b.c=5': 'a' is neither a key of " + kDeepSeek + " nor one mlaplan reads");
  expect_refusal("kv --set rope_scaling.factr=40", "--set: value 'rope_scaling.factr=40': 'rope_scaling.factr' is neither a key of " +
                                                        kDeepSeek + " nor one mlaplan reads; did you mean 'rope_scaling.factor'?");
  expect_refusal("kv --set rope_scaling.factor.x=1", "--set: value 'rope_scaling.factor.x=1': 'factor' is not an object");
  expect_refusal("kv --set hidden_size.x=1", "--set: value 'hidden_size.x=1': 'hidden_size' is not an object");
  // Keys the config lacks but the reader understands are what-ifs, nested ones included.
  const std::string llama = temp_config("llama.json", llama_like());
  CHECK(run("kv -m " + llama + " --set head_dim=64").code == 0);
  CHECK(run("kv -m " + llama + " --set quantization_config.quant_method=fp8").code == 0);
  expect_refusal("kv -m " + llama + " --set quantization_config.weight_blok_size=[64,64]",
                 "--set: value 'quantization_config.weight_blok_size=[64,64]': 'quantization_config.weight_blok_size' is neither a key of " + llama +
                     " nor one mlaplan reads; did you mean 'quantization_config.weight_block_size'?");
  // A nested key the config has (DeepSeek-V3's rope_scaling.factor) is accepted.
  const Run r = run("kv --set rope_scaling.factor=40 --format json");
  CHECK(r.code == 0);
  CHECK(json::parse(r.out)["bytes_per_token"] == 70272);
}

TEST_CASE("Hybrid decoders with state-space or linear-attention layers are refused naming the field", "[strict][architecture]") {
  const std::string why = "mlaplan models decoders whose every layer is attention, and would cost the other layers as attention";
  const std::string jamba = std::string(MLAPLAN_TEST_SOURCE_DIR) + "/tests/fixtures/jamba-mini.json";
  expect_refusal("kv -m " + jamba,
                 jamba + ": key 'attn_layer_period' = 8: attention on only some layers, state-space (Mamba) layers between: " + why);
  expect_refusal("capacity -m " + jamba, jamba + ": key 'attn_layer_period' = 8: attention on only some layers, state-space (Mamba) layers between: " + why);

  json mamba = llama_like();
  mamba["mamba_d_state"] = 16;
  const std::string m = temp_config("mamba.json", mamba);
  expect_refusal("kv -m " + m, m + ": key 'mamba_d_state' = 16: a state-space or linear-attention field: " + why);

  json blocks = llama_like();
  blocks["layers_block_type"] = {"mamba", "attention", "mamba", "mamba"};
  const std::string b = temp_config("blocks.json", blocks);
  expect_refusal("kv -m " + b, b + ": key 'layers_block_type' = [\"mamba\",\"attention\",\"mamba\",\"mamba\"]: layers of other kinds than attention: " + why);

  json linear = llama_like();
  linear["layer_types"] = {"linear_attention", "linear_attention", "linear_attention", "full_attention"};
  const std::string l = temp_config("linear.json", linear);
  expect_refusal("kv -m " + l, l + ": key 'layer_types' = [\"linear_attention\",\"linear_attention\",\"linear_attention\"...: "
                                   "entry 0 = \"linear_attention\": a layer that keeps a recurrent state, not a KV cache: mlaplan models "
                                   "decoders whose every layer is attention");

  expect_refusal("kv -m llama-3.1-8b --set model_type=jamba",
                 "models/meta-llama--Llama-3.1-8B.json: key 'model_type' = \"jamba\": a hybrid decoder: " + why);
}
