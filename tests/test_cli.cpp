// The CLI contract: JSON keys, formats, exit codes and the exact one-line errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"

using nlohmann::json;

namespace {

using mlaplan::test::Run;
using mlaplan::test::run;

// Bad input: exit 2, one line on stderr, nothing on stdout.
void expect_error(const std::string& args, const std::string& message) {
  INFO(args);
  const Run r = run(args);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "mlaplan: " + message + "\n");
}

// A file or folder under the temp directory, named for this process, removed with everything in it
// when the test that made it ends.
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& name) : path(std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "_" + name)) {}
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

void write_temp(const TempPath& file, const std::string& text) { std::ofstream(file.path) << text; }

}  // namespace

TEST_CASE("kv --format json carries the contract keys", "[cli]") {
  const Run r = run("kv --model deepseek-v3 --format json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  CHECK(j["attention"] == "mla");
  CHECK(j["layers"] == 61);
  CHECK(j["kv_dtype"] == "bf16");
  CHECK(j["bytes_per_token"] == 70272);
  CHECK(j["bytes_per_token_per_layer"] == 1152);
  CHECK(j["indexer_bytes_per_token"] == 0);
  CHECK(j["mha_equivalent_ratio"].get<double>() == Approx(71.111).epsilon(1e-4));
  CHECK_FALSE(j.contains("total_bytes"));

  const json v32 = json::parse(run("kv -m deepseek-v3.2-exp --kv-dtype fp8_flashmla --format json").out);
  CHECK(v32["bytes_per_token_per_layer"] == 656);
  CHECK(v32["bytes_per_token"] == 40016);
  CHECK(v32["indexer_bytes_per_token"] == 8052);
  CHECK(v32["indexer_bytes_per_token_per_layer"] == 132);

  const json l = json::parse(run("kv -m llama-3.1-70b --tokens 1000 --format json").out);
  CHECK(l["attention"] == "gqa");
  CHECK(l["total_bytes"] == 327680000);

  const json mis = json::parse(run("kv -m mistral-7b --tokens 32768 --format json").out);
  CHECK(mis["total_bytes"] == 4096LL * 131072);
  CHECK(mis["layer_groups"][0]["tokens_held"] == 4096);

  // Gemma's layers do not all cost the same at long contexts.
  CHECK(json::parse(run("kv -m gemma-2-9b --format json").out)["bytes_per_token_per_layer"].is_null());
}

TEST_CASE("TP replication versus data-parallel attention in kv", "[cli]") {
  const json tp = json::parse(run("kv -m deepseek-v3 --tp 8 --tokens 4096 --sequences 8 --format json").out);
  const json dp = json::parse(run("kv -m deepseek-v3 --dp 8 --tokens 4096 --sequences 8 --format json").out);
  CHECK(tp["bytes_per_token_per_rank"] == 70272);
  CHECK(tp["total_bytes_per_rank"] == 8LL * 4096 * 70272);
  CHECK(dp["total_bytes_per_rank"] == 4096LL * 70272);
}

TEST_CASE("capacity --format json carries the contract keys", "[cli]") {
  const Run r = run("capacity --model deepseek-v3 --gpu h200 --tp 8 --format json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  for (const char* k : {"params_total", "params_active", "weight_bytes_per_rank", "kv_pool_bytes_per_rank",
                        "max_tokens_per_rank", "max_sequences", "fits", "reason"})
    CHECK(j.contains(k));
  CHECK(j["fits"] == true);
  CHECK(j["params_main"].get<double>() == Approx(671e9).epsilon(0.005));
  CHECK(j["layouts"].size() == 3);

  const json no = json::parse(run("capacity --model deepseek-v3 --gpu h200 --format json").out);
  CHECK(no["fits"] == false);
  CHECK(no["reason"] == "weights and reserve exceed the usable memory per rank");
}

TEST_CASE("Every format renders every command", "[cli]") {
  for (const char* cmd : {"models", "gpus", "kv -m qwen3-32b --tokens 5000", "capacity -m llama-3.1-8b -g h100"}) {
    for (const char* f : {"table", "csv", "md", "json"}) {
      INFO(cmd << " " << f);
      const Run r = run(std::string(cmd) + " --format " + f);
      CHECK(r.code == 0);
      CHECK(r.err.empty());
      CHECK_FALSE(r.out.empty());
      if (std::string(f) == "json") CHECK_NOTHROW(json::parse(r.out));
    }
  }
  const Run csv = run("kv -m deepseek-v3 --format csv");
  CHECK(csv.out.rfind("key,value\nmodel,deepseek-ai/DeepSeek-V3\n", 0) == 0);
  CHECK(csv.out.find("\nkv_dtype,data_bytes_per_token_per_layer,scale_bytes_per_token_per_layer,bytes_per_token,ratio_to_bf16\n") != std::string::npos);
  const Run md = run("kv -m deepseek-v3 --format md");
  CHECK(md.out.find("| bytes per token (all layers) | 70,272 B |") != std::string::npos);
}

TEST_CASE("Bad input: exit 2 and one exact line", "[cli][errors]") {
  expect_error("kv -m deepseek-v9", "--model: value 'deepseek-v9': no bundled model or file by that name; did you mean 'deepseek-v2'?");
  expect_error("kv -m llama-3.1-8b --tp 3", "models/meta-llama--Llama-3.1-8B.json: key 'num_attention_heads' = 32: not divisible by --tp 3");
  expect_error("kv -m llama-3.1-8b --tp 0", "--tp: value '0': must be a positive integer");
  expect_error("kv -m llama-3.1-8b --tokens 0", "--tokens: value '0': must be a positive integer");
  expect_error("kv -m llama-3.1-8b --tokens -5", "--tokens: value '-5': must be a positive integer");
  expect_error("kv -m llama-3.1-8b --kv-dtype fp9", "--kv-dtype: value 'fp9': expected one of fp32, bf16, fp16, fp8, fp8_flashmla, fp4");
  expect_error("kv -m llama-3.1-8b --kv-dtype fp8_flashmla",
               "--kv-dtype: value 'fp8_flashmla': FlashMLA's layout needs an MLA model; meta-llama/Llama-3.1-8B is gqa");
  expect_error("kv --format xml", "--format: value 'xml': expected one of table, csv, md, json");
  expect_error("kv --set kv_lora_rank=-1", "models/deepseek-ai--DeepSeek-V3.json: key 'kv_lora_rank' = -1: must be a positive integer");
  expect_error("kv --set oops", "--set: value 'oops': expected key=value");
  expect_error("capacity -g h2000", "--gpu: value 'h2000': no bundled gpu or file by that name; did you mean 'h200'?");
  expect_error("capacity --mem-util 1.5", "--mem-util: value '1.5': expected a fraction in (0, 1]");
  expect_error("capacity -m llama-3.1-8b --ep 2", "--ep: value '2': meta-llama/Llama-3.1-8B has no routed experts");
  expect_error("kv -m /nonexistent/config.json", "/nonexistent/config.json: no such file or folder");

  const TempPath bad("mlaplan_bad.json");
  write_temp(bad, "{\"hidden_size\": 4096,");
  expect_error("kv -m " + bad.str(), bad.str() + ": not valid JSON (byte 22)");
  const TempPath arr("mlaplan_arr.json");
  write_temp(arr, "[1, 2]");
  expect_error("kv -m " + arr.str(), arr.str() + ": expected a JSON object at the top level");
  const TempPath dir("mlaplan_empty_dir");
  std::filesystem::create_directories(dir.path);
  expect_error("kv -m " + dir.str(), dir.str() + ": folder holds no config.json");
}

TEST_CASE("A config folder or file outside the bundle works", "[cli]") {
  const TempPath dir("mlaplan_model_dir");
  std::filesystem::create_directories(dir.path);
  std::filesystem::copy_file(std::string(MLAPLAN_TEST_SOURCE_DIR) + "/models/Qwen--Qwen3-8B.json", dir.path / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const Run r = run("kv -m " + dir.str() + " --format json");
  REQUIRE(r.code == 0);
  CHECK(json::parse(r.out)["bytes_per_token"] == 147456);
}

TEST_CASE("cost --format json: paths with totals, per-layer figures and ops", "[cli][cost]") {
  const Run r = run("cost --model deepseek-v3 --gpu h100 --query 1 --prefix 8191 --format json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  for (const char* path : {"absorb", "expand", "chunked"}) {
    INFO(path);
    const json& p = j["paths"][path];
    for (const char* k : {"flops_all_layers", "bytes_all_layers", "time_s_all_layers", "intensity_flop_per_byte", "bound", "flops_per_layer",
                          "bytes_per_layer", "time_s_per_layer", "intensity_flop_per_byte_per_layer", "bound_per_layer"})
      CHECK(p.contains(k));
    for (const char* k : {"flops", "bytes", "time_s"}) CHECK_FALSE(p.contains(k));  // named per layer or all layers since issue 13
    CHECK(p["ops"].is_array());
    CHECK(p["ops"][0].contains("flops_per_layer"));
    CHECK(p["flops_all_layers"].get<double>() == Approx(p["flops_per_layer"].get<double>() * 61));
  }
  CHECK(j["paths"]["expand"]["flops_per_layer"].get<double>() == 33554432.0 * 8192 + 81920.0 * 8192);
  CHECK(j["paths"]["absorb"]["ops"].size() == 3);
  CHECK(j["cheaper_by_flops"] == "absorb");
  CHECK(j["cheaper_by_time"] == "absorb");
  CHECK(j["ridge_flop_per_byte"].get<double>() == Approx(295.3).epsilon(1e-3));
  CHECK(j["eta_source"] == "h100-sxm profile (fitted on H100 SXM5 80GB): absorbed_decode, expanded_prefill, attention, attention_decode, gemm, bmm, elementwise; sparse_decode, indexer from the any profile; grouped_gemm from the hopper profile; gemm's DeepGEMM η_c from the hopper profile");
  CHECK_FALSE(j["paths"].contains("sparse"));

  const json layer = json::parse(run("cost -m deepseek-v3 --scope layer --format json").out);
  CHECK(layer["paths"]["absorb"]["ops"].size() == 7);  // q_a, q_b, kv_a, 3 core ops, o_proj
  const json v32 = json::parse(run("cost -m deepseek-v3.2-exp --prefix 65535 --format json").out);
  CHECK(v32["paths"].contains("sparse"));
  const json mixed = json::parse(run("cost -m deepseek-v3 --mix 64x1@8192,2x2048@0 --format json").out);
  CHECK(mixed["workload"] == "64 x 1 tokens after 8192, 2 x 2048 tokens after 0");
  const json gqa = json::parse(run("cost -m llama-3.1-70b --format json").out);
  CHECK(gqa["paths"].contains("standard"));
  CHECK(gqa["cheaper_by_flops"].is_null());
  const json eta = json::parse(run("cost -m deepseek-v3 --eta-compute 0.5 --eta-memory 0.8 --launch-us 4 --format json").out);
  CHECK(eta["eta_source"] == "command line");
  CHECK(eta["launch_s"].get<double>() == Approx(4e-6));
}

TEST_CASE("crossover --format json: rows, engines and the asymptote", "[cli][crossover]") {
  const Run r = run("crossover --model deepseek-v3 --prefix 0:8192:x4 --tp 1,8 --kv-dtype bf16,fp8 --format json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  CHECK(j["asymptotic_flop_crossover_query"].get<double>() == Approx(170.667).epsilon(1e-4));
  // Prefixes 0, 1, 4, 16, ..., 4096 (8 values) x 2 TP x 2 dtypes.
  REQUIRE(j["rows"].size() == 8 * 2 * 2);
  for (const json& row : j["rows"]) {
    for (const char* k : {"prefix", "tp", "kv_dtype", "flop_crossover_query", "roofline_crossover_query",
                          "vllm_flashmla_worst_penalty", "sglang_worst_penalty", "trtllm_worst_penalty"})
      CHECK(row.contains(k));
  }
  CHECK(j["rows"][0]["prefix"] == 0);
  CHECK(j["rows"][0]["vllm_flashmla_expands_from_query"] == 129);
  CHECK(j["rows"][0]["sglang_expands_from_query"] == 2);     // no prefix: MHA for any extend
  CHECK(j["rows"][3]["sglang_expands_from_query"].is_null());  // P = 16: absorbed for all Q
  CHECK(j["rows"][3]["prefix"] == 16);
  CHECK(j["rows"][0]["flop_crossover_query"] == 0);
  CHECK(j["engines"].size() == mlaplan::test::policies().size());
  CHECK(j["engines"][0]["rules_of"].get<std::string>().find("+") != std::string::npos);
  expect_error("crossover -m llama-3.1-8b", "--model: value 'llama-3.1-8b': meta-llama/Llama-3.1-8B is gqa: the expand/absorb crossover needs an MLA model");
  expect_error("crossover --prefix 10:5:x2", "--prefix: value '10:5:x2': a range a:b:step needs a <= b");
  expect_error("crossover --prefix 0:100:x1", "--prefix: value '0:100:x1': a geometric step xk needs k > 1");
  expect_error("crossover --prefix abc", "--prefix: value 'abc': 'abc' is not a number");
  expect_error("crossover --tp 3", "models/deepseek-ai--DeepSeek-V3.json: key 'num_attention_heads' = 128: not divisible by --tp 3");
  expect_error("cost --mix 4x@5", "--mix: value '4x@5': '' is not a number");
  expect_error("cost --mix 0x1@5", "--mix: value '0x1@5': count in '0x1@5' must be a whole number from 1 to 1e7");
  expect_error("cost --scope model", "--scope: value 'model': expected core or layer");
  expect_error("cost --eta-compute 2", "--eta-compute: value '2': expected a fraction in (0, 1]");
  expect_error("cost --query 0", "--query: value '0': expected a number of tokens in [1, 1e9]");
  expect_error("cost --dtype fp4 --gpu h100", "hardware/nvidia-h100-sxm.json: key 'dense_peak_tflops' = fp4: H100 SXM5 80GB has no fp4 peak");
}
