// A strict, self-explaining CLI (issue 13): overrides only of keys that mean something, hybrid
// architectures refused, sizes as people write them, and the warnings a user must see while the
// answer is still printed. Every case states its exact line and exit code.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using mlaplan::test::expect_refusal;
using mlaplan::test::expect_warnings;
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

// Two argument lists that must print the same answer.
void expect_same(const std::string& a, const std::string& b) {
  INFO(a + "  vs  " + b);
  const Run ra = run(a), rb = run(b);
  CHECK(ra.code == 0);
  CHECK(ra.err == rb.err);
  CHECK(ra.out == rb.out);
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

TEST_CASE("An unknown model_type is read from its fields with one note on stderr", "[strict][architecture]") {
  expect_warnings("kv --set model_type=deepseek_v9",
                  {kDeepSeek + ": key 'model_type' = \"deepseek_v9\": not a model type mlaplan knows: read as mla from its fields"});
  // The bundled models are all known: no warning on stderr.
  for (const char* name : {"deepseek-v3", "deepseek-v3.2-exp", "llama-3.1-70b", "qwen3-8b", "gemma-2-9b", "gpt-oss-20b", "mixtral-8x7b"})
    CHECK(run(std::string("kv -m ") + name).err.empty());
  // A config without model_type says nothing of it.
  CHECK(run("kv -m " + temp_config("plain.json", llama_like())).err.empty());
}

TEST_CASE("Token counts take 32k and 1M and refuse fractions", "[strict][numbers]") {
  expect_same("kv --tokens 32k --format json", "kv --tokens 32768 --format json");
  expect_same("kv --tokens 1M --format json", "kv --tokens 1048576 --format json");
  expect_same("capacity --context 128K --format json", "capacity --context 131072 --format json");
  expect_same("cost --prefix 32k --query 2k --batch 1k --chunk 8k --format json",
              "cost --prefix 32768 --query 2048 --batch 1024 --chunk 8192 --format json");
  expect_same("cost --mix 64x1@8k,2x2k@0 --format json", "cost --mix 64x1@8192,2x2048@0 --format json");
  expect_same("crossover --prefix 0:128k:x4 --tp 1,8 --format json", "crossover --prefix 0:131072:x4 --tp 1,8 --format json");
  expect_same("capacity --engine vllm --max-model-len 32k --max-batched-tokens 16k --format json",
              "capacity --engine vllm --max-model-len 32768 --max-batched-tokens 16384 --format json");

  expect_refusal("cost --query 1.5", "--query: value '1.5': expected a whole number of tokens (e.g. 4096, 32k, 1M)");
  expect_refusal("cost --batch 2.5", "--batch: value '2.5': expected a whole number of sequences (e.g. 4096, 32k, 1M)");
  expect_refusal("kv --tokens 32q", "--tokens: value '32q': expected a whole number of tokens (e.g. 4096, 32k, 1M)");
  expect_refusal("kv --tokens k", "--tokens: value 'k': expected a whole number of tokens (e.g. 4096, 32k, 1M)");
  expect_refusal("capacity --context 0.7k", "--context: value '0.7k': expected a whole number of tokens (e.g. 4096, 32k, 1M)");
  expect_refusal("capacity --context -1", "--context: value '-1': must be a positive integer");
  expect_refusal("capacity --context 2048G", "--context: value '2199023255552': must be at most 1099511627776");
  expect_refusal("cost --mix 2x1@1.5q", "--mix: value '2x1@1.5q': '1.5q' is not a finite number");
  expect_refusal("crossover --prefix 0:1x:x2", "--prefix: value '0:1x:x2': '1x' is not a finite number");
}

TEST_CASE("List flags: cost --chunk sweeps and single-value flags say they take one value", "[strict][numbers]") {
  const Run r = run("cost --chunk 1k,4k --prefix 32k --format json");
  REQUIRE(r.code == 0);
  // A model without a latent has no chunked path: the flag is refused, not ignored.
  expect_refusal("cost --model llama-3.1-70b --chunk 4096",
                 "--chunk: value '4096': meta-llama/Llama-3.1-70B is gqa: it has no latent to expand in chunks");
  const json j = json::parse(r.out);
  CHECK_FALSE(j["paths"].contains("chunked"));
  CHECK(j["paths"]["chunked_1024"]["chunk_tokens"] == 1024);
  CHECK(j["paths"]["chunked_4096"]["chunk_tokens"] == 4096);
  // Smaller chunks re-read W_UKV once per chunk: more bytes.
  CHECK(j["paths"]["chunked_1024"]["bytes_per_layer"].get<double>() > j["paths"]["chunked_4096"]["bytes_per_layer"].get<double>());
  expect_same("cost --chunk 1k:4k:x4 --format json", "cost --chunk 1024,4096 --format json");
  CHECK(json::parse(run("cost --format json").out)["paths"]["chunked"]["chunk_tokens"] == 8192);
  expect_refusal("cost --chunk 1.5", "--chunk: value '1.5': expected whole numbers of tokens in [1, 1e12]");
  expect_refusal("cost --chunk 0,8", "--chunk: value '0,8': expected whole numbers of tokens in [1, 1e12]");
  const std::string one = "takes one value here, not a list (cost sweeps --chunk; crossover --prefix, --tp and --kv-dtype; report sweeps in its spec)";
  expect_refusal("cost --query 1,2", "--query: value '1,2': " + one);
  expect_refusal("cost --tp 1,8", "--tp: value '1,8': " + one);
  expect_refusal("crossover --batch 1,4", "--batch: value '1,4': " + one);
  expect_refusal("kv --tokens 1k,2k", "--tokens: value '1k,2k': " + one);
}

TEST_CASE("Number flags refuse what they cannot hold in one line naming flag and value", "[strict][numbers]") {
  expect_refusal("kv --tp 1.5", "--tp: value '1.5': expected a whole number");
  expect_refusal("kv --tp 99999999999999999999", "--tp: value '99999999999999999999': expected a whole number");
  expect_refusal("capacity --mem-util abc", "--mem-util: value 'abc': expected a number");
  expect_refusal("cost --eta-compute 0.5x", "--eta-compute: value '0.5x': expected a number");
  expect_refusal("capacity --reserve-gib -5", "--reserve-gib: value '-5': expected GiB from 0 to 10^6");
  expect_refusal("capacity --engine vllm --reserve-gib -5",
                 "--reserve-gib: value '-5': the engine's profile sizes activations; leave --reserve-gib out with --engine");
}

TEST_CASE("Commands and flags that do not exist are named with the nearest", "[strict][numbers]") {
  expect_refusal("", "no command: expected one of models, gpus, kv, capacity, cost, crossover, report, validate, step, plan (mlaplan --help says what each does)");
  expect_refusal("capacty", "unknown command 'capacty': did you mean 'capacity'?");
  expect_refusal("zzzzzzzzzz",
                 "unknown command 'zzzzzzzzzz': expected one of models, gpus, kv, capacity, cost, crossover, report, validate, step, plan (mlaplan --help says what each does)");
  expect_refusal("kv --tokenz 5", "--tokenz: not a flag of kv; did you mean '--tokens'?");
  expect_refusal("kv 5", "5: unexpected argument: kv takes flags only (mlaplan kv --help lists them)");
}

TEST_CASE("Dtype and GPU names are case-insensitive everywhere", "[strict][numbers]") {
  expect_same("kv --kv-dtype FP8 --format json", "kv --kv-dtype fp8 --format json");
  expect_same("kv --kv-dtype FP8_FlashMLA --format json", "kv --kv-dtype fp8_flashmla --format json");
  expect_same("cost --dtype BF16 --kv-dtype FP8 --format json", "cost --dtype bf16 --kv-dtype fp8 --format json");
  expect_same("capacity --weight-dtype FP8 -g H200 --format json", "capacity --weight-dtype fp8 -g h200 --format json");
  expect_same("crossover --kv-dtype BF16,FP8 --tp 8 --format json", "crossover --kv-dtype bf16,fp8 --tp 8 --format json");
}

TEST_CASE("Warnings that matter: one line each on stderr and the answer still printed", "[strict][warnings]") {
  expect_warnings("capacity -m qwen3-8b --context 128K",
                  {"--context: value '131072': beyond max_position_embeddings 40960 of models/Qwen--Qwen3-8B.json"});
  expect_warnings("kv -m gemma-2-9b --tokens 1M",
                  {"--tokens: value '1048576': beyond max_position_embeddings 8192 of models/google--gemma-2-9b.json"});
  expect_warnings("cost -m qwen3-8b --prefix 40960",
                  {"--prefix: value '40960': 40961 tokens, beyond max_position_embeddings 40960 of models/Qwen--Qwen3-8B.json"});
  expect_warnings("cost -m qwen3-8b --mix 2x1@8k,1x1@40k",
                  {"--mix: value '2x1@8k,1x1@40k': 40961 tokens, beyond max_position_embeddings 40960 of models/Qwen--Qwen3-8B.json"});
  expect_warnings("crossover --prefix 0:256k:x4 --tp 8",
                  {"--prefix: value '0:256k:x4': 262145 tokens, beyond max_position_embeddings 163840 of " + kDeepSeek});
  expect_warnings("capacity -m qwen3-8b --engine vllm --max-model-len 64k",
                  {"--max-model-len: value '65536': beyond max_position_embeddings 40960 of models/Qwen--Qwen3-8B.json"});
  // Within the model's positions: nothing on stderr.
  expect_warnings("capacity -m qwen3-8b --context 40960", {});
  expect_warnings("cost -m qwen3-8b --prefix 40959", {});

  const std::string flashmla = "--kv-dtype: value 'fp8_flashmla': FlashMLA defines this layout for kv_lora_rank 512 and qk_rope_head_dim 64, not 256 and 64: "
                               "its bytes are extrapolated";
  expect_warnings("kv --set kv_lora_rank=256 --kv-dtype fp8_flashmla", {flashmla});
  expect_warnings("capacity --set kv_lora_rank=256 --kv-dtype fp8_flashmla", {flashmla});
  expect_warnings("crossover --set kv_lora_rank=256 --kv-dtype bf16,fp8_flashmla,fp8_flashmla --tp 8", {flashmla});
  expect_warnings("kv --kv-dtype fp8_flashmla", {});

  expect_warnings("kv --set quantization_config.quant_method=bitsandbytes",
                  {kDeepSeek + ": key 'quantization_config.quant_method' = \"bitsandbytes\": a quantization mlaplan does not model: weights counted as bf16 "
                               "unless --weight-dtype says otherwise"});
  // Warnings come in the order they arise, each once; an error afterwards drops them all.
  expect_warnings("kv -m qwen3-8b --set model_type=qwen9 --tokens 64k",
                  {"models/Qwen--Qwen3-8B.json: key 'model_type' = \"qwen9\": not a model type mlaplan knows: read as gqa from its fields",
                   "--tokens: value '65536': beyond max_position_embeddings 40960 of models/Qwen--Qwen3-8B.json"});
  expect_refusal("kv -m qwen3-8b --set model_type=qwen9 --tokens 64k --tp 3",
                 "models/Qwen--Qwen3-8B.json: key 'num_attention_heads' = 32: not divisible by --tp 3");
}

TEST_CASE("The report's sweep axes take comma lists as well as repeats", "[strict][numbers]") {
  const fs::path dir = fs::temp_directory_path() / ("mlaplan_strict_report_" + std::to_string(getpid()));
  const std::string a = (dir / "lists").string(), b = (dir / "repeats").string();
  fs::create_directories(dir);
  REQUIRE(run("report --model deepseek-v3,deepseek-v2-lite --kv-dtype bf16,FP8 --context 4k,32k --tp 8 --out " + a).code == 0);
  REQUIRE(run("report --model deepseek-v3 --model deepseek-v2-lite --kv-dtype bf16 --kv-dtype fp8 --context 4096,32768 --tp 8 --out " + b).code == 0);
  for (const char* csv : {"capacity.csv", "kv.csv", "crossover.csv"}) {
    INFO(csv);
    std::ifstream ia(fs::path(a) / csv), ib(fs::path(b) / csv);
    std::stringstream sa, sb;
    sa << ia.rdbuf();
    sb << ib.rdbuf();
    CHECK_FALSE(sa.str().empty());
    CHECK(sa.str() == sb.str());
  }
  fs::remove_all(dir);
}
