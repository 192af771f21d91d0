// HF config interpretation: attention kind from fields, head_dim, windows, MoE, quantization,
// overrides, and the exact one-line errors for bad configs.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hardware_json.hpp"

using namespace mlaplan;
using nlohmann::json;
using test::model;

namespace {

json llama_like() {
  return json{{"hidden_size", 4096}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
              {"num_hidden_layers", 32}, {"intermediate_size", 14336}, {"vocab_size", 128256},
              {"tie_word_embeddings", false}, {"model_type", "llama"}};
}

std::string error_of(const json& cfg) {
  try {
    parse_hf_config(cfg, "cfg.json", "test");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Attention kind comes from the fields, not model_type", "[config]") {
  CHECK(model("deepseek-v3").attention == AttentionKind::mla);
  CHECK(model("llama-3.1-8b").attention == AttentionKind::gqa);
  json mha = llama_like();
  mha["num_key_value_heads"] = 32;
  mha["model_type"] = "deepseek_v3";  // a misleading model_type changes nothing
  CHECK(parse_hf_config(mha, "x", "x").attention == AttentionKind::mha);
  json mqa = llama_like();
  mqa["num_key_value_heads"] = 1;
  CHECK(parse_hf_config(mqa, "x", "x").attention == AttentionKind::mqa);
  json absent = llama_like();
  absent.erase("num_key_value_heads");
  CHECK(parse_hf_config(absent, "x", "x").attention == AttentionKind::mha);
  json mla = llama_like();
  mla.update(json{{"kv_lora_rank", 512}, {"qk_rope_head_dim", 64}, {"qk_nope_head_dim", 128}, {"v_head_dim", 128}});
  mla["model_type"] = "llama";
  CHECK(parse_hf_config(mla, "x", "x").attention == AttentionKind::mla);
}

TEST_CASE("head_dim is read when present and derived only when absent", "[config]") {
  const ModelSpec q = model("qwen3-32b");
  CHECK(q.head_dim == 128);
  CHECK(q.heads * q.head_dim == 8192);
  CHECK(q.hidden == 5120);
  CHECK_FALSE(q.head_dim_derived);
  const ModelSpec l = model("llama-3.1-70b");
  CHECK(l.head_dim == 128);
  CHECK(l.head_dim_derived);
  CHECK(kv_bytes_per_token(q, KvDtype::bf16).total() == Bytes{2 * 8 * 128 * 2 * 64});
}

TEST_CASE("Sliding windows: Qwen ships one it does not use, Mistral slides everywhere", "[config]") {
  for (const char* name : {"qwen2.5-7b", "qwen2.5-72b", "qwen3-8b"}) {
    INFO(name);
    CHECK_FALSE(model(name).has_sliding_layers());
  }
  const ModelSpec on = model("qwen2.5-7b", {"use_sliding_window=true", "max_window_layers=20"});
  CHECK_FALSE(on.layers[19].sliding);
  CHECK(on.layers[20].sliding);
  CHECK(on.layers[20].window == 131072);
  const ModelSpec mis = model("mistral-7b");
  CHECK(std::all_of(mis.layers.begin(), mis.layers.end(), [](const LayerSpec& l) { return l.sliding && l.window == 4096; }));
  CHECK_FALSE(model("mixtral-8x7b").has_sliding_layers());  // sliding_window: null
}

TEST_CASE("Gemma-2 alternates local and global, gpt-oss follows layer_types and has sinks", "[config]") {
  const ModelSpec g = model("gemma-2-27b");
  CHECK(g.layers[0].sliding);
  CHECK_FALSE(g.layers[1].sliding);
  CHECK(g.layers[0].window == 4096);
  CHECK(g.norms_per_layer == 4);
  const ModelSpec o = model("gpt-oss-20b");
  CHECK(o.layers[0].sliding);
  CHECK(o.layers[0].window == 128);
  CHECK_FALSE(o.layers[1].sliding);
  CHECK(o.attention_sinks);
  CHECK(o.quant == WeightQuant::mxfp4);
  CHECK(o.quant_skips_attention);
  // Gemma-3 style pattern: every 6th layer global.
  json g3 = llama_like();
  g3.update(json{{"sliding_window", 512}, {"sliding_window_pattern", 6}, {"num_hidden_layers", 12}});
  const ModelSpec m3 = parse_hf_config(g3, "x", "x");
  CHECK(m3.layers[0].sliding);
  CHECK_FALSE(m3.layers[5].sliding);
  CHECK_FALSE(m3.layers[11].sliding);
}

TEST_CASE("MoE, MTP and quantization fields", "[config]") {
  const ModelSpec m = model("deepseek-v3");
  REQUIRE(m.moe);
  CHECK(m.moe->routed_experts == 256);
  CHECK(m.moe->shared_experts == 1);
  CHECK(m.moe->experts_per_token == 8);
  CHECK(m.moe->expert_intermediate == 2048);
  CHECK_FALSE(m.layers[2].moe);
  CHECK(m.layers[3].moe);
  CHECK(m.mtp_layers == 1);
  CHECK(m.quant == WeightQuant::fp8_block);
  CHECK(m.quant_format.block_rows == 128);
  CHECK(m.mla->q_lora_rank == 1536);
  CHECK(model("deepseek-v2-lite").mla->q_lora_rank == 0);  // null in the config
  CHECK(model("mixtral-8x7b").moe->routed_experts == 8);   // num_local_experts
  CHECK(model("gpt-oss-20b").moe->experts_per_token == 4);
}

TEST_CASE("A multimodal config's text_config is the language model", "[config]") {
  json wrapped{{"model_type", "llava"}, {"text_config", llama_like()}, {"vision_config", {{"hidden_size", 1024}}}};
  const ModelSpec m = parse_hf_config(wrapped, "x", "x");
  CHECK(m.hidden == 4096);
  CHECK(m.attention == AttentionKind::gqa);
  apply_override(wrapped, "num_key_value_heads=32");
  CHECK(parse_hf_config(wrapped, "x", "x").attention == AttentionKind::mha);
}

TEST_CASE("Overrides given with --set apply before interpretation", "[config]") {
  const ModelSpec m = model("deepseek-v3", {"kv_lora_rank=256"});
  CHECK(kv_bytes_per_token_per_layer(m, KvDtype::bf16).total() == Bytes{(256 + 64) * 2});
  const ModelSpec q = model("deepseek-v3", {"q_lora_rank=null"});
  CHECK(q.mla->q_lora_rank == 0);
  json c = llama_like();
  apply_override(c, "quantization_config.quant_method=fp8");
  CHECK(c["quantization_config"]["quant_method"] == "fp8");
  apply_override(c, "model_type=mistral");
  CHECK(c["model_type"] == "mistral");
  CHECK_THROWS_WITH(apply_override(c, "novalue"), "--set: value 'novalue': expected key=value");
}

TEST_CASE("Bad configs give one exact line naming file, key and value", "[config][errors]") {
  json c = llama_like();
  c["num_attention_heads"] = 0;
  CHECK(error_of(c) == "cfg.json: key 'num_attention_heads' = 0: must be a positive integer");
  c = llama_like();
  c["hidden_size"] = "4096";
  CHECK(error_of(c) == "cfg.json: key 'hidden_size' = \"4096\": expected an integer");
  c = llama_like();
  c.erase("vocab_size");
  CHECK(error_of(c) == "cfg.json: key 'vocab_size' = (absent): required field is missing");
  c = llama_like();
  c["num_key_value_heads"] = 64;
  CHECK(error_of(c) == "cfg.json: key 'num_key_value_heads' = 64: more KV heads than query heads (32)");
  c = llama_like();
  c["num_key_value_heads"] = 5;
  CHECK(error_of(c) == "cfg.json: key 'num_key_value_heads' = 5: does not divide num_attention_heads 32");
  c = llama_like();
  c["num_hidden_layers"] = -3;
  CHECK(error_of(c) == "cfg.json: key 'num_hidden_layers' = -3: must be a positive integer");
  c = llama_like();
  c["kv_lora_rank"] = 512;
  CHECK(error_of(c).rfind("cfg.json: key 'qk_rope_head_dim' = (absent): MLA field missing", 0) == 0);
  c = llama_like();
  c["hidden_size"] = 4097;
  CHECK(error_of(c) == "cfg.json: key 'hidden_size' = 4097: head_dim is absent and hidden_size is not divisible by num_attention_heads 32");
  c = llama_like();
  c["layer_types"] = json::array({"full_attention"});
  CHECK(error_of(c) == "cfg.json: key 'layer_types' = [\"full_attention\"]: has 1 entries but num_hidden_layers is 32");
  c = llama_like();
  c["index_topk"] = 2048;
  CHECK(error_of(c) == "cfg.json: key 'index_n_heads' = (absent): indexer field missing: index_n_heads, index_head_dim and index_topk go together");
  c = llama_like();
  c["hidden_size"] = 1.5;
  CHECK(error_of(c) == "cfg.json: key 'hidden_size' = 1.5: expected an integer");
}

TEST_CASE("Hardware specs: units converted once, every number sourced", "[config][hardware]") {
  const HardwareSpec h = load_gpu("h200");
  CHECK(h.memory_capacity == Bytes{141 * kGiB});
  CHECK(h.memory_bandwidth == BytesPerSecond{4.8e12});
  CHECK(*h.peak_flops(DType::bf16) == FlopsPerSecond{989e12});
  CHECK(*h.ridge_flop_per_byte(DType::bf16) == Approx(206.04).epsilon(1e-3));
  CHECK(*load_gpu("h100").ridge_flop_per_byte(DType::bf16) == Approx(295.3).epsilon(1e-3));
  CHECK(load_gpu("H100-SXM").name == "H100 SXM5 80GB");  // case-insensitive
  for (const auto& e : bundled_gpus()) {
    const HardwareSpec g = load_hardware_file(e.path);
    INFO(g.name);
    CHECK(g.memory_capacity.value > 0);
    CHECK(g.peak_flops(DType::bf16));
    CHECK(g.sources.count("memory_capacity"));
    CHECK(g.sources.count("memory_bandwidth"));
    CHECK(g.sm_count > 0);
    CHECK(g.sm_clock_hz >= 1e9);  // a GQA decode block's cost is SM cycles (block_cost_scale)
    CHECK(g.sources.count("sm_clock"));
    CHECK(!g.architecture.empty());  // efficiencies transfer within an architecture
  }
  CHECK(load_gpu("a100").sm_clock_hz == 1.41e9);
  CHECK(load_gpu("h100").sm_clock_hz == 1.98e9);
  CHECK(load_gpu("b200").sm_clock_hz == 1.965e9);
  // The clock: one sourced number of 100 to 10,000 MHz, written back as read.
  const json clocked{{"name", "X"},
                     {"memory_capacity_gib", {{"value", 80}, {"source", "s"}}},
                     {"memory_bandwidth_tb_per_s", {{"value", 3}, {"source", "s"}}},
                     {"dense_peak_tflops", {{"bf16", {{"value", 900}, {"source", "s"}}}}},
                     {"sm_boost_clock_mhz", {{"value", 1755}, {"source", "deviceQuery"}}}};
  const HardwareSpec with_clock = parse_hardware(clocked, "x.json");
  CHECK(with_clock.sm_clock_hz == 1.755e9);
  CHECK(parse_hardware(hardware_to_json(with_clock), "y.json").sm_clock_hz == 1.755e9);
  for (const double mhz : {0.0, -1.0, 99.0, 10001.0}) {
    json c = clocked;
    c["sm_boost_clock_mhz"]["value"] = mhz;
    INFO(mhz);
    CHECK_THROWS_WITH(parse_hardware(c, "x.json"), Catch::Contains("x.json: key 'sm_boost_clock_mhz") && (Catch::Contains("positive") || Catch::Contains("100 to 10,000 MHz")));
  }
  json unsourced = clocked;
  unsourced["sm_boost_clock_mhz"].erase("source");
  CHECK_THROWS_WITH(parse_hardware(unsourced, "x.json"), "x.json: key 'sm_boost_clock_mhz.source' = (absent): every hardware number needs a source");
  json texty = clocked;
  texty["sm_boost_clock_mhz"]["value"] = "1980";
  CHECK_THROWS_WITH(parse_hardware(texty, "x.json"), Catch::Contains("x.json: key 'sm_boost_clock_mhz.value'"));
  CHECK(load_gpu("h800").architecture == "hopper");
  CHECK(load_gpu("b200").architecture == "blackwell");
  CHECK_THROWS_WITH(parse_hardware(json{{"name", "X"}, {"architecture", "Hopper"}}, "x.json"),
                    "x.json: key 'architecture' = \"Hopper\": expected ampere, ada, hopper, blackwell, cdna3 or cdna4");
  json bad{{"name", "X"}, {"memory_capacity_gib", {{"value", 80}}}};
  CHECK_THROWS_WITH(parse_hardware(bad, "x.json"),
                    "x.json: key 'memory_capacity_gib.source' = (absent): every hardware number needs a source");
  bad = json{{"name", "X"}, {"memory_capacity_gib", {{"value", 80}, {"source", "s"}}},
             {"memory_bandwidth_tb_per_s", {{"value", -1}, {"source", "s"}}}};
  CHECK_THROWS_WITH(parse_hardware(bad, "x.json"), "x.json: key 'memory_bandwidth_tb_per_s.value' = -1: expected a positive number");
}

TEST_CASE("Names resolve case-insensitively with 'did you mean' on a miss", "[config]") {
  CHECK(model("DeepSeek-V3").name == "deepseek-ai/DeepSeek-V3");
  CHECK(model("deepseek-ai/deepseek-v3").name == "deepseek-ai/DeepSeek-V3");
  CHECK(model("qwen2.5-72b").name == "Qwen/Qwen2.5-72B-Instruct");
  CHECK(model("mixtral-8x7b").name == "mistralai/Mixtral-8x7B-v0.1");
  CHECK_THROWS_WITH(model("lama-3.1-8b"),
                    "--model: value 'lama-3.1-8b': no bundled model or file by that name; did you mean 'llama-3.1-8b'?");
  CHECK_THROWS_WITH(load_gpu("h2000"), "--gpu: value 'h2000': no bundled gpu or file by that name; did you mean 'h200'?");
}
