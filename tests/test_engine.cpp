// Engine-faithful capacity: the profiles in engines/, each engine's budget rule, the public logs they
// reproduce, and hostile profiles and log tables.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/engine_logs.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/registry.hpp"

using namespace mlaplan;
using mlaplan::test::run;

namespace {

constexpr double G = static_cast<double>(kGiB);
Bytes gib(double g) { return Bytes{std::llround(g * G)}; }

Bytes weights_without_mtp(const ModelSpec& m, const WeightPlan& w, const Parallelism& par) {
  Bytes b{0};
  for (const WeightTensor& t : weight_tensors(m))
    if (t.group != WeightGroup::mtp) b += tensor_bytes_per_rank(m, t, w, par);
  return b;
}

Bytes sum_lines(const EngineCapacity& e) {
  Bytes s{0};
  for (const BudgetLine& l : e.lines) s += l.bytes;
  return s;
}

// A loaded parameter as a profile writes it: a flag as true or false, a table as its rows.
nlohmann::json param_json(const std::string& key, const SourcedValue& v) {
  const EngineParamSpec* spec = find_engine_param(key);
  if (spec && spec->kind == ParamKind::flag) return {{"value", v.value != 0}, {"source", v.source}};
  if (!v.rows.empty()) return {{"value", v.rows}, {"source", v.source}};
  return {{"value", v.value}, {"source", v.source}};
}

// A profile JSON with one parameter replaced (or removed when value is null).
nlohmann::json profile_with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json j = nlohmann::json::parse(R"({"engine": "trtllm", "name": "t", "since": "1.0", "summary": "s", "parameters": {}})");
  const EngineProfile base = load_engine("trtllm");
  for (const auto& [k, v] : base.params) j["parameters"][k] = param_json(k, v);
  if (value.is_null()) j["parameters"].erase(key);
  else j["parameters"][key] = value;
  return j;
}

std::string parse_error(const nlohmann::json& j) {
  try {
    (void)parse_engine_profile(j, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string csv_error(const std::string& text) {
  try {
    (void)parse_engine_log_csv(text, "logs.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

const std::string kHeader =
    "id,engine,model,gpu,tp,dp,ep,weight_dtype,kv_dtype,mem_util,max_model_len,max_num_seqs,max_batched_tokens,block_size,"
    "enforce_eager,mtp,logged_kv_tokens,logged_kv_gib,logged_weights_gib,logged_activation_gib,logged_non_torch_gib,kind,source\n";

}  // namespace

TEST_CASE("vLLM 0.7.3 and DeepSeek-R1 on 8 x H200: the budget worked by hand", "[engine][example]") {
  const ModelSpec m = test::model("deepseek-r1");
  const HardwareSpec hw = load_gpu("h200");
  const EngineProfile p = load_engine("vllm@0.7.3");
  CHECK(p.since.text == "0.7.2");
  const Parallelism par{8, 1, 1};
  EngineSettings s;
  s.mem_util = 0.85;
  s.max_model_len = 128000;
  s.max_num_seqs = 1024;
  s.max_batched_tokens = 32000;
  s.block_size = 16;
  const WeightPlan w = default_weight_plan(m);
  const EngineCapacity e = engine_capacity(m, hw, p, w, par, KvDtype::bf16, s, 0);

  // torch's total: 139.81 GiB; 0.85 of it usable.
  CHECK(e.total_seen.value == 150119844413);
  CHECK(e.lines[0].bytes.value == 150119844413 - 127601867751);
  // Weights: the checkpoint's without MTP, plus per layer (61) the bf16 W_UK and W_UV copies
  // (2 · 16 heads · 128 · 512 · 2 B = 4,194,304 B) and the fp8 folds W_UQ·W_UK (8,192 × 1,536 + 64·12
  // block scales · 4 B = 12,585,984 B) and W_UV·W_O (7,168 × 8,192 + 56·64·4 = 58,734,592 B).
  CHECK(e.weights == weights_without_mtp(m, w, par) + Bytes{(4194304LL + 12585984 + 58734592) * 61});
  // Activation: the fused-MoE peak over 32,000 tokens (chunk 32,768): 4 hidden copies
  // 2·32000·4·7168 + workspace 2·32000·8·(512 + 256 + 7168) + fp8 input 32000·7168.
  CHECK(e.activation.value == 1835008000 + 4063232000 + 229376000);
  // The sampler over 1,024 rows peaks lower: 38 · 1024 · 129280 + 2·32000·7168 + 2·1024·7168.
  CHECK(38LL * 1024 * 129280 + 2LL * 32000 * 7168 + 2LL * 1024 * 7168 < e.activation.value);
  // Non-torch: 1.79 GiB + 3 doublings · 1.79 GiB.
  CHECK(e.non_torch == gib(7.16));
  // The latent padded to 256 B: 576 · 2 = 1,152 -> 1,280 B per layer, · 61 layers.
  CHECK(e.kv_bytes_per_token.value == 78080);
  const std::int64_t budget = 127601867751 - e.weights.value - e.activation.value - e.non_torch.value;
  CHECK(e.blocks == budget / (78080 * 16));
  CHECK(e.engine_kv_tokens == e.blocks * 16);
  CHECK(sum_lines(e) == e.total_seen);
  // The log: 294,688 tokens (18,418 blocks of 16).
  CHECK(std::abs(static_cast<double>(e.engine_kv_tokens) / 294688.0 - 1) < 0.05);
  CHECK(e.engine_max_concurrency == Approx(static_cast<double>(e.engine_kv_tokens) / 128000.0));
}

TEST_CASE("SGLang 0.4.3 and DeepSeek-R1 on 16 x H20: mem_fraction_static of the memory before weights", "[engine][example]") {
  const ModelSpec m = test::model("deepseek-r1");
  const HardwareSpec hw = load_gpu("h20");
  const EngineProfile p = load_engine("sglang@0.4.3");
  EngineSettings s;
  s.mem_util = 0.93;
  const Parallelism par{16, 1, 1};
  const WeightPlan w = default_weight_plan(m);
  const EngineCapacity e = engine_capacity(m, hw, p, w, par, KvDtype::bf16, s, 0);
  // Cell: (512 + 64) · 61 · 2 B; no pages in 0.4.3.
  CHECK(e.kv_bytes_per_token.value == 70272);
  CHECK(e.block_size == 1);
  // KV = 0.93 · F0 − weights (experts TP-split, W_UK/W_UV
  // copies in fp8: 16/16 heads... one head per rank: 128·512 + 128·512 fp8 plus block scales).
  // F0 = torch's total (97,285 MiB) − 0.61 GiB of CUDA context.
  CHECK(hw.memory_torch_total.value == 97285LL << 20);
  const double f0 = static_cast<double>(hw.memory_torch_total.value - gib(0.61).value);
  const double expected = std::floor((0.93 * f0 - static_cast<double>(e.weights.value)) / 70272.0);
  CHECK(std::abs(static_cast<double>(e.engine_kv_tokens) - expected) <= 1.0);
  CHECK(e.weights > weights_without_mtp(m, w, par));
  CHECK(sum_lines(e) == e.total_seen);
  CHECK(std::abs(static_cast<double>(e.engine_kv_tokens) / 712400.0 - 1) < 0.05);
  // The default fraction follows TP: 0.79 at TP 16, 0.88 at TP 1.
  const EngineCapacity d = engine_capacity(m, hw, p, w, par, KvDtype::bf16, EngineSettings{}, 0);
  CHECK(d.mem_util == 0.79);
}

TEST_CASE("SGLang 0.5.4: the default fraction from nvidia-smi's memory less the reserve", "[engine][example]") {
  const EngineProfile p = load_engine("sglang");
  CHECK(p.since.text == "0.5.4");
  // DeepSeek-V3 on 8 x H200 (143,771 MiB): 512 + max(8192, 2048)·1.5 + 512·2 + 8·128 + 1,536 (MLA
  // prefill graphs) = 16,384 MiB; (143,771 − 16,384) / 143,771 = 0.8860 -> 0.886.
  const SglangFraction v3 = sglang_reserved_fraction(p, load_gpu("h200"), test::model("deepseek-v3"), Parallelism{8, 1, 1}, EngineSettings{});
  CHECK(v3.reserved_mib == 16384);
  CHECK(v3.fraction == 0.886);
  // Llama-3.1-8B on one H100 (81,559 MiB): 512 + 12,288 + 256·2 + 128 + 58 prefill graph sizes · 8
  // (4..32/4, 48..256/16, 288..512/32, 576..1024/64, 1280..4096/256, 4608..8192/512) = 13,904 MiB.
  const SglangFraction l8 = sglang_reserved_fraction(p, load_gpu("h100-sxm"), test::model("llama-3.1-8b"), Parallelism{}, EngineSettings{});
  CHECK(l8.reserved_mib == 13904);
  CHECK(l8.fraction == 0.830);
  // DP attention over 8 ranks: + 512·8·3 + 512·8·1.5 (max_bs > 300) = 34,816 MiB in all.
  CHECK(sglang_reserved_fraction(p, load_gpu("h200"), test::model("deepseek-v3"), Parallelism{1, 8, 8}, EngineSettings{}).reserved_mib == 34816);
  // Speculative decoding adds 4 GiB; eager mode drops the prefill graphs.
  EngineSettings spec;
  spec.mtp = 1;
  CHECK(sglang_reserved_fraction(p, load_gpu("h200"), test::model("deepseek-v3"), Parallelism{8, 1, 1}, spec).reserved_mib == 16384 + 4096);
  EngineSettings eager;
  eager.enforce_eager = true;
  CHECK(sglang_reserved_fraction(p, load_gpu("h200"), test::model("deepseek-v3"), Parallelism{8, 1, 1}, eager).reserved_mib == 16384 - 1536);
  // A small GPU: the 10 GiB floor does not apply below 60 GiB; RTX 4090 (no nvidia-smi figure: torch's).
  const SglangFraction small = sglang_reserved_fraction(p, load_gpu("rtx-4090"), test::model("llama-3.1-8b"), Parallelism{}, EngineSettings{});
  CHECK(small.chunked_prefill_size == 2048);
  CHECK(small.cuda_graph_max_bs == 24);
}

TEST_CASE("TensorRT-LLM: the fraction applies to what is free after the warm-up", "[engine][example]") {
  const ModelSpec m = test::model("llama-3.1-8b");
  const HardwareSpec hw = load_gpu("h100-sxm");
  const EngineProfile p = load_engine("trtllm");
  const EngineCapacity e = engine_capacity(m, hw, p, default_weight_plan(m), Parallelism{}, KvDtype::bf16, EngineSettings{}, 0);
  const Bytes free_after = e.total_seen - e.weights - e.activation - e.non_torch;
  const double kv = std::floor(static_cast<double>(free_after.value) * 0.9);
  CHECK(e.block_size == 32);
  CHECK(e.blocks == static_cast<std::int64_t>(kv) / (131072 * 32));
  CHECK(sum_lines(e) == e.total_seen);
}

TEST_CASE("TensorRT-LLM 0.19, the first release with DeepSeek-V3, caches the latent, where 0.8's profile does not", "[engine][example]") {
  const ModelSpec m = test::model("deepseek-v3");
  const EngineProfile v019 = load_engine("trtllm@0.19");
  CHECK(v019.since.text == "0.19.0");
  CHECK(load_engine("trtllm@0.19.1").since.text == "0.19.0");
  CHECK(load_engine("trtllm@0.18.2").since.text == "0.8.0");
  CHECK(load_engine("trtllm@1.0.0").since.text == "1.0.0");
  // 61 layers x the 576-wide latent (512 + 64), K only: 1 B a value over an fp8 cache, 2 over bf16.
  CHECK(engine_kv_bytes_per_token(m, v019, KvDtype::fp8, Parallelism{8, 1, 1}, 0).value == 61 * 576);
  CHECK(engine_kv_bytes_per_token(m, v019, KvDtype::bf16, Parallelism{8, 1, 1}, 0).value == 61 * 576 * 2);
  // 0.8.0's profile (no MLA model then): per-head K and V, 16 heads a rank at TP8, each 192 wide.
  CHECK(engine_kv_bytes_per_token(m, load_engine("trtllm@0.8.0"), KvDtype::fp8, Parallelism{8, 1, 1}, 0).value == 61 * 16 * 2 * 192);
  // The rest of its memory is 1.0.0's: 0.9 of what the warm-up leaves, 32-token blocks.
  const HardwareSpec hw = load_gpu("h200");
  const EngineCapacity a = engine_capacity(m, hw, v019, default_weight_plan(m), Parallelism{8, 1, 1}, KvDtype::fp8, EngineSettings{}, 0);
  const EngineCapacity b = engine_capacity(m, hw, load_engine("trtllm@1.0.0"), default_weight_plan(m), Parallelism{8, 1, 1}, KvDtype::fp8, EngineSettings{}, 0);
  CHECK(a.block_size == 32);
  CHECK(a.blocks == b.blocks);
  CHECK(sum_lines(a) == a.total_seen);
}

TEST_CASE("TensorRT-LLM 0.8: trtllm-build's 128-token blocks and the inflight batcher's 0.9 of free memory", "[engine][example]") {
  const ModelSpec m = test::model("llama-3.1-8b");
  const HardwareSpec hw = load_gpu("h100-sxm");
  const EngineCapacity e = engine_capacity(m, hw, load_engine("trtllm@0.8.0"), default_weight_plan(m), Parallelism{}, KvDtype::bf16, EngineSettings{}, 0);
  const Bytes free_after = e.total_seen - e.weights - e.activation - e.non_torch;
  // 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 B = 131,072 B a token.
  CHECK(e.block_size == 128);
  CHECK(e.blocks == static_cast<std::int64_t>(std::floor(static_cast<double>(free_after.value) * 0.9)) / (131072 * 128));
  // 0.5.0's: 64-token blocks and 0.85.
  const EngineCapacity v05 = engine_capacity(m, hw, load_engine("trtllm@0.5.0"), default_weight_plan(m), Parallelism{}, KvDtype::bf16, EngineSettings{}, 0);
  CHECK(v05.block_size == 64);
  CHECK(v05.blocks == static_cast<std::int64_t>(std::floor(static_cast<double>((v05.total_seen - v05.weights - v05.activation - v05.non_torch).value) * 0.85)) / (131072 * 64));
}

TEST_CASE("vLLM before MLA support caches per-head K and V padded to 256", "[engine][example]") {
  const ModelSpec m = test::model("deepseek-v2-lite");
  const EngineProfile old = load_engine("vllm@0.6.5");
  const EngineProfile v1 = load_engine("vllm");
  // 27 layers · 16 heads · 256 · 2 (K and V) · 2 B.
  CHECK(engine_kv_bytes_per_token(m, old, KvDtype::fp16, Parallelism{}, 0).value == 27 * 16 * 256 * 2 * 2);
  // Later: the 576-wide latent, 1,152 B per layer.
  CHECK(engine_kv_bytes_per_token(m, v1, KvDtype::bf16, Parallelism{}, 0).value == 27 * 1152);
  // V1 forces FlashMLA's 64-token blocks on MLA models.
  const EngineCapacity e = engine_capacity(m, load_gpu("h100-sxm"), v1, default_weight_plan(m), Parallelism{}, KvDtype::bf16, EngineSettings{}, 0);
  CHECK(e.block_size == 64);
}

TEST_CASE("MTP loads its weights and one more cache layer and engines leave it out by default", "[engine][example]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h200");
  const EngineProfile p = load_engine("vllm");
  const Parallelism par{8, 1, 1};
  EngineSettings on;
  on.mtp = 1;
  const EngineCapacity off = engine_capacity(m, hw, p, default_weight_plan(m), par, KvDtype::bf16, EngineSettings{}, 0);
  const EngineCapacity with = engine_capacity(m, hw, p, default_weight_plan(m), par, KvDtype::bf16, on, 0);
  CHECK(off.mtp == 0);
  CHECK(with.mtp == 1);
  CHECK(with.kv_bytes_per_token.value == 62 * 1152);
  CHECK(off.kv_bytes_per_token.value == 61 * 1152);
  CHECK(with.weights > off.weights);
  CHECK(with.engine_kv_tokens < off.engine_kv_tokens);
}

TEST_CASE("DP attention: experts split over all ranks and attention whole on each", "[engine][example]") {
  const ModelSpec m = test::model("deepseek-r1");
  const EngineProfile sg = load_engine("sglang");
  const WeightPlan w = default_weight_plan(m);
  const Parallelism dp{1, 8, 1}, tp{8, 1, 1};
  const Bytes dpw = engine_weight_bytes(m, sg, w, dp, false);
  const Bytes tpw = engine_weight_bytes(m, sg, w, tp, false);
  // Routed experts are the same share in both; attention and embeddings are whole under DP.
  Bytes experts{0};
  for (const WeightTensor& t : weight_tensors(m))
    if (t.group == WeightGroup::routed_experts) experts += tensor_bytes(t, w);
  CHECK(dpw > tpw);
  CHECK(dpw < tpw + experts);  // not the whole expert set: split over the 8 ranks
}

TEST_CASE("Every profile on every bundled model: budget lines add up and tokens fit the pool", "[engine][property]") {
  std::vector<HardwareSpec> gpus = {load_gpu("h100-sxm"), load_gpu("h200"), load_gpu("b200"), load_gpu("rtx-4090")};
  for (const EngineProfile& p : bundled_engines()) {
    for (const ModelSpec& m : test::all_models()) {
      for (const HardwareSpec& hw : gpus) {
        for (std::int64_t tp : {1, 8}) {
          const Parallelism par{tp, 1, 1};
          if (!check_layout(m, par).ok()) continue;
          INFO(p.label() << " " << m.name << " " << hw.name << " TP" << tp);
          const EngineCapacity e = engine_capacity(m, hw, p, default_weight_plan(m), par, KvDtype::bf16, EngineSettings{}, 8192);
          CHECK(sum_lines(e) == e.total_seen);
          CHECK(e.engine_kv_tokens % e.block_size == 0);
          CHECK(e.kv_pool.value == e.blocks * e.block_size * e.kv_bytes_per_token.value);
          CHECK(e.kv_bytes_per_token.value >= (kv_bytes_per_token(m, KvDtype::bf16, tp).total() + indexer_bytes_per_token(m)).value);
          CHECK(e.fits() == (e.kv_pool.value > 0 && e.sequences_at_context >= 1));
          for (const BudgetLine& l : e.lines)
            if (l.key != "over_budget") CHECK(l.bytes.value >= 0);
        }
      }
    }
  }
}

TEST_CASE("Every bundled engine log is reproduced within 5%", "[engine][validation]") {
  const auto checks = check_engine_logs(read_engine_logs(std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/published/engine-logs"));
  REQUIRE(checks.size() >= 8);
  for (const EngineLogCheck& c : checks) {
    INFO(c.row.id << ": " << c.error);
    CHECK(std::abs(c.error) <= 0.05);
  }
}

TEST_CASE("capacity with an engine: the flagship command and its JSON keys", "[engine][cli]") {
  const auto r = run("capacity --model deepseek-r1 --gpu h200 --tp 8 --engine vllm@0.7.3 --mem-util 0.85 --max-model-len 128000 "
                     "--max-batched-tokens 32000 --block-size 16 --format json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double tokens = j["engine_kv_tokens"].get<double>();
  CHECK(std::abs(tokens / 294688.0 - 1) < 0.05);
  CHECK(j.contains("engine_max_concurrency"));
  std::int64_t sum = 0;
  for (const auto& row : j["budget"])
    if (row["line"] != "total") sum += row["bytes"].get<std::int64_t>();
  CHECK(sum == j["total_seen_bytes_per_rank"].get<std::int64_t>());

  const auto plain = run("capacity --model deepseek-r1 --gpu h200 --tp 8 --format json");
  REQUIRE(plain.code == 0);
  CHECK(!nlohmann::json::parse(plain.out).contains("engine_kv_tokens"));
}

TEST_CASE("Engine names and versions resolve or exit 2 naming the flag", "[engine][hostile]") {
  CHECK(load_engine("vllm").since.text == "0.9.0");
  CHECK(load_engine("VLLM@0.7.3").since.text == "0.7.2");
  CHECK(load_engine("vllm@0.8.5").since.text == "0.8.0");
  CHECK(load_engine("vllm@0.8").since.text == "0.8.0");  // 0.8 is 0.8.0
  CHECK(load_engine("vllm@0.7").since.text == "0.6.5");
  CHECK(load_engine("trtllm@1").since.text == "1.0.0");
  CHECK(load_engine("tensorrt-llm").family == EngineFamily::trtllm);
  CHECK(load_engine("sglang@0.5.0").since.text == "0.4.3");
  auto expect = [](const std::string& args, const std::string& message) {
    INFO(args);
    const auto r = run(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "mlaplan: " + message + "\n");
  };
  expect("capacity --engine vllmm", "--engine: value 'vllmm': expected vllm, sglang or trtllm, optionally @VERSION; did you mean 'vllm'?");
  expect("capacity --engine vllm@0.5.0", "--engine: value 'vllm@0.5.0': older than every bundled vllm capacity profile (the oldest describes 0.6.5 and later)");
  expect("capacity --engine vllm@x.y", "--engine: value 'vllm@x.y': expected a version such as 0.7.3 after '@'");
  expect("capacity --engine /nonexistent/p.json", "/nonexistent/p.json: no such file");
  expect("capacity --max-model-len 4096", "--max-model-len: value '4096': an engine setting: give --engine vllm|sglang|trtllm[@VERSION] with it");
  expect("capacity --engine vllm --reserve-gib 4", "--reserve-gib: value '4': the engine's profile sizes activations; leave --reserve-gib out with --engine");
  expect("capacity --engine vllm --model llama-3.1-8b --mtp 1", "--mtp: value '1': meta-llama/Llama-3.1-8B has no MTP module (num_nextn_predict_layers is 0)");
  expect("capacity --engine vllm --mtp 1 --no-mtp", "--no-mtp: value 'true': give --mtp N or --no-mtp, not both");
  expect("capacity --engine vllm --mtp 0", "--mtp: value '0': expected speculative tokens from 1 to 64");
  expect("capacity --engine vllm --max-num-seqs 0", "--max-num-seqs: value '0': must be a positive integer");
  expect("capacity --engine vllm@", "--engine: value 'vllm@': expected a version such as 0.7.3 after '@'");
  expect("capacity --engine vllm --tp 8 --mem-util 5", "--mem-util: value '5': expected a fraction in (0, 1]");
  expect("capacity --engine vllm --mem-util nan", "--mem-util: value 'nan': expected a fraction in (0, 1]");
  expect("capacity --mem-util -0.5", "--mem-util: value '-0.5': expected a fraction in (0, 1]");
  expect("capacity --block-size 0", "--block-size: value '0': must be a positive integer");
  expect("capacity --engine sglang@0.4.3 --max-num-seqs 64", "--max-num-seqs: value '64': the sglang@0.4.3+ profile's rule does not read it");
  expect("capacity --engine sglang@0.4.3 --max-batched-tokens 4096", "--max-batched-tokens: value '4096': the sglang@0.4.3+ profile's rule does not read it");
  expect("capacity --engine trtllm --enforce-eager", "--enforce-eager: value 'true': the trtllm@1.0.0+ profile's rule does not read it");
  // SGLang 0.5.4 reads the chunked-prefill size and eager mode (its reserve rule), not max_num_seqs.
  CHECK(run("capacity --engine sglang --max-batched-tokens 4096 --enforce-eager").code == 0);
  // vLLM V1 on an A100 takes the small-GPU defaults whatever its memory.
  const auto a100 = nlohmann::json::parse(run("capacity --engine vllm --gpu a100-80gb --model llama-3.1-8b --format json").out);
  CHECK(a100["max_batched_tokens"] == 2048);
  CHECK(a100["max_num_seqs"] == 256);
  // Dispatch rules for cost and crossover: one engine's at a version, refused where it cannot serve.
  expect("cost --engine vllm@0.6.5", "--engine: value 'vllm@0.6.5': older than every bundled vllm dispatch profile (the oldest describes 0.7.2 and later)");
  expect("cost --model deepseek-v3.2-exp --engine sglang@0.4.3",
         "--engine: value 'sglang@0.4.3': sglang@0.4.3+ predates DeepSeek-V3.2's sparse attention and cannot serve deepseek-ai/DeepSeek-V3.2-Exp (dsa.rule unsupported)");
  expect("crossover --engine tgi", "--engine: value 'tgi': expected vllm, sglang or trtllm, optionally @VERSION");
  expect("cost --spec-tokens 65", "--spec-tokens: value '65': expected draft tokens from 0 to 64");
  expect("crossover --spec-tokens -1", "--spec-tokens: value '-1': expected draft tokens from 0 to 64");
  expect("crossover --workspace-gib 1e7", "--workspace-gib: value '10000000': expected GiB from 0 to 10^6");
  const auto old = nlohmann::json::parse(run("cost --engine sglang@0.4.3 --batch 32 --query 2 --prefix 1024 --tp 8 --format json").out);
  CHECK(old["engines"].size() == 2);
  CHECK(old["engines"]["sglang_triton"]["path"] == "absorb");     // a prefix: absorbed
  CHECK(old["engines"]["sglang_flashinfer"]["path"] == "expand");  // every extend
  const auto spec = nlohmann::json::parse(run("cost --engine sglang@0.4.3 --batch 32 --query 2 --prefix 1024 --tp 8 --spec-tokens 1 --format json").out);
  CHECK(spec["engines"]["sglang_flashinfer"]["path"] == "expand");  // 0.4.3 verifies through forward_normal too
  const auto now = nlohmann::json::parse(run("cost --engine sglang --batch 32 --query 2 --prefix 1024 --tp 8 --spec-tokens 1 --format json").out);
  CHECK(now["engines"]["sglang"]["path"] == "absorb");
}

TEST_CASE("Hostile engine profiles: one line naming the file and key and value", "[engine][hostile]") {
  CHECK(parse_error(profile_with("mem_util", {{"value", 1.5}, {"source", "x"}})) ==
        "p.json: key 'parameters.mem_util.value' = 1.5: expected a fraction in (0, 1]");
  CHECK(parse_error(profile_with("mem_util", {{"value", 0.9}})) ==
        "p.json: key 'parameters.mem_util.source' = (absent): every engine number needs a source");
  CHECK(parse_error(profile_with("mem_util", {{"value", 0.9}, {"source", ""}})) ==
        "p.json: key 'parameters.mem_util.source' = \"\": every engine number needs a source");
  CHECK(parse_error(profile_with("mem_utl", {{"value", 0.9}, {"source", "x"}})) ==
        "p.json: key 'parameters.mem_utl' = {\"source\":\"x\",\"value\":0.9}: not a trtllm parameter; did you mean 'mem_util'?");
  CHECK(parse_error(profile_with("pre_load_gib", {{"value", 1}, {"source", "x"}})) ==
        "p.json: key 'parameters.pre_load_gib' = {\"source\":\"x\",\"value\":1}: not a trtllm parameter");
  CHECK(parse_error(profile_with("block_size", {{"value", 1.5}, {"source", "x"}})) ==
        "p.json: key 'parameters.block_size.value' = 1.5: expected a whole number from 1 to 10^12");
  CHECK(parse_error(profile_with("block_size", {{"value", 0}, {"source", "x"}})) ==
        "p.json: key 'parameters.block_size.value' = 0: expected a whole number from 1 to 10^12");
  CHECK(parse_error(profile_with("moe_chunk_tokens", {{"value", 0}, {"source", "x"}})) == "(accepted)");  // 0 = no chunking
  // The RoPE kernel counts: 0 to 3 (gqa_rope_and_cache_write), nothing else.
  for (const char* key : {"gqa_rope_kernels_prefill", "gqa_rope_kernels_decode"}) {
    INFO(key);
    for (int ok : {0, 1, 2, 3}) CHECK(parse_error(profile_with(key, {{"value", ok}, {"source", "x"}})) == "(accepted)");
    for (const char* bad : {"4", "-1", "1.5", "1e9"})
      CHECK(parse_error(profile_with(key, {{"value", nlohmann::json::parse(bad)}, {"source", "x"}})) ==
            fmt::format("p.json: key 'parameters.{}.value' = {}: expected a whole number from 0 to 3", key, nlohmann::json::parse(bad).dump()));
  }
  CHECK(parse_error(profile_with("gqa_decode_kernel_fuses_rope", {{"value", 1}, {"source", "x"}})) ==
        "p.json: key 'parameters.gqa_decode_kernel_fuses_rope.value' = 1: expected true or false");
  CHECK(parse_error(profile_with("gqa_decode_xqa", {{"value", 0}, {"source", "x"}})) ==
        "p.json: key 'parameters.gqa_decode_xqa.value' = 0: expected true or false");
  CHECK(parse_error(profile_with("gqa_decode_xqa", {{"value", false}})) ==
        "p.json: key 'parameters.gqa_decode_xqa.source' = (absent): every engine number needs a source");
  CHECK(parse_error(profile_with("gqa_decode_xqa", {{"value", false}, {"source", "x"}})) == "(accepted)");
  // XQA's generation: three flags, each with its source.
  for (const char* key : {"gqa_decode_xqa_hopper_kernel", "gqa_decode_fp8_forces_xqa", "gqa_decode_multi_block"}) {
    INFO(key);
    for (bool ok : {false, true}) CHECK(parse_error(profile_with(key, {{"value", ok}, {"source", "x"}})) == "(accepted)");
    for (const char* bad : {"0", "1", "\"false\"", "null"})
      CHECK(parse_error(profile_with(key, {{"value", nlohmann::json::parse(bad)}, {"source", "x"}})) ==
            fmt::format("p.json: key 'parameters.{}.value' = {}: expected true or false", key, nlohmann::json::parse(bad).dump()));
    CHECK(parse_error(profile_with(key, {{"value", true}})) == fmt::format("p.json: key 'parameters.{}.source' = (absent): every engine number needs a source", key));
  }
  // XQA's one head group: 0 (every group) to 32, XQA's largest.
  for (int ok : {0, 8, 32}) CHECK(parse_error(profile_with("gqa_decode_xqa_group", {{"value", ok}, {"source", "x"}})) == "(accepted)");
  for (const char* bad : {"33", "-1", "1.5"})
    CHECK(parse_error(profile_with("gqa_decode_xqa_group", {{"value", nlohmann::json::parse(bad)}, {"source", "x"}})) ==
          fmt::format("p.json: key 'parameters.gqa_decode_xqa_group.value' = {}: expected a whole number from 0 to 32", nlohmann::json::parse(bad).dump()));
  CHECK(parse_error(profile_with("gqa_decode_xqa_group", {{"value", "8"}, {"source", "x"}})).find("gqa_decode_xqa_group.value") != std::string::npos);
  // The all-to-all's slowdown beside overlapped compute: a factor from 1 to 100.
  for (double ok : {1.0, 1.24, 100.0}) CHECK(parse_error(profile_with("normal_overlap_slowdown", {{"value", ok}, {"source", "x"}})) == "(accepted)");
  for (const char* bad : {"0.9", "0", "-1", "101"})
    CHECK(parse_error(profile_with("normal_overlap_slowdown", {{"value", nlohmann::json::parse(bad)}, {"source", "x"}})) ==
          fmt::format("p.json: key 'parameters.normal_overlap_slowdown.value' = {}: expected a factor from 1 to 100", bad));
  CHECK(parse_error(profile_with("normal_overlap_slowdown", {{"value", "1.2"}, {"source", "x"}})) ==
        "p.json: key 'parameters.normal_overlap_slowdown.value' = \"1.2\": expected a number");
  CHECK(parse_error(profile_with("loads_mtp", {{"value", 1}, {"source", "x"}})) ==
        "p.json: key 'parameters.loads_mtp.value' = 1: expected true or false");
  CHECK(parse_error(profile_with("non_torch_gib", {{"value", -1}, {"source", "x"}})) ==
        "p.json: key 'parameters.non_torch_gib.value' = -1: expected GiB from 0 to 10^6");
  CHECK(parse_error(profile_with("non_torch_gib", {{"value", "1"}, {"source", "x"}})) ==
        "p.json: key 'parameters.non_torch_gib.value' = \"1\": expected a number");
  CHECK(parse_error(profile_with("non_torch_gib", {{"value", 1}, {"source", "x"}, {"note", "y"}})) ==
        "p.json: key 'parameters.non_torch_gib.note' = \"y\": unknown key (value, source)");
  CHECK(parse_error(profile_with("mem_util", nullptr)) == "p.json: key 'parameters.mem_util' = (absent): required for trtllm");
  nlohmann::json j = profile_with("mem_util", {{"value", 0.9}, {"source", "x"}});
  j["engine"] = "tgi";
  CHECK(parse_error(j) == "p.json: key 'engine' = \"tgi\": expected vllm, sglang or trtllm");
  j["engine"] = "trtllm";
  j["since"] = "1..2";
  CHECK(parse_error(j) == "p.json: key 'since' = \"1..2\": expected a version such as 0.7.3");
  j["since"] = "1.0";
  j["extra"] = 1;
  CHECK(parse_error(j) == "p.json: key 'extra' = 1: unknown key (engine, name, since, summary, parameters)");
  CHECK(parse_error(nlohmann::json::array()) == "p.json: expected a JSON object");
  // SGLang: one default-fraction rule, complete, with tiers in order.
  nlohmann::json sg = nlohmann::json::parse(std::string(R"({"engine": "sglang", "name": "s", "since": "1.0", "summary": "s", "parameters": {}})"));
  for (const auto& [k, v] : load_engine("sglang@0.4.3").params) sg["parameters"][k] = param_json(k, v);
  CHECK(parse_error(sg) == "(accepted)");
  nlohmann::json both = sg;
  both["parameters"]["reserved_base_mib"] = {{"value", 512}, {"source", "x"}};
  CHECK(parse_error(both) == "p.json: give one default-fraction rule: the mem_util_tp* tiers or the reserved_* rule, not both");
  nlohmann::json partial = sg;
  partial["parameters"].erase("mem_util_tp8");
  CHECK(parse_error(partial) == "p.json: the tier rule lacks parameters.mem_util_tp8");
  nlohmann::json tiers = nlohmann::json::parse(std::string(R"({"engine": "sglang", "name": "s", "since": "1.0", "summary": "s"})"));
  tiers["parameters"] = nlohmann::json::object();
  for (const auto& [k, v] : load_engine("sglang").params) tiers["parameters"][k] = param_json(k, v);
  CHECK(parse_error(tiers) == "(accepted)");
  tiers["parameters"]["gpu_tiers"]["value"] = nlohmann::json::parse("[[20, 2048, 8, 8], [10, 2048, 8, 8], [0, 1, 1, 1]]");
  CHECK(parse_error(tiers) == "p.json: parameters.gpu_tiers: bounds must rise, the last being 0");
  tiers["parameters"]["gpu_tiers"]["value"] = nlohmann::json::parse("[[20, 2048, 8]]");
  CHECK(parse_error(tiers) == "p.json: key 'parameters.gpu_tiers.value' = [20,2048,8]: expected a row of 4 numbers");
  tiers["parameters"]["gpu_tiers"]["value"] = 3;
  CHECK(parse_error(tiers) == "p.json: key 'parameters.gpu_tiers.value' = 3: expected 1 to 64 rows of 4 numbers");
  // The MoE imbalance by EP size: whole EP sizes from 2, ascending, imbalances >= 1, not beside moe_imbalance.
  nlohmann::json imb = sg;
  // `profile` with table parameter `key` set to `rows`, parsed.
  auto with_table = [&](nlohmann::json& profile, const char* key, const char* rows) {
    profile["parameters"][key] = {{"value", nlohmann::json::parse(rows)}, {"source", "x"}};
    return parse_error(profile);
  };
  auto by_ep = [&](const char* rows) { return with_table(imb, "moe_imbalance_by_ep", rows); };
  CHECK(by_ep("[[8, 1.06], [72, 1.235]]") == "(accepted)");
  CHECK(by_ep("[[8, 1.06], [8, 1.1]]") == "p.json: moe_imbalance_by_ep: [8, 1.1] (expected whole EP sizes from 2, ascending)");
  CHECK(by_ep("[[16, 1.1], [8, 1.06]]") == "p.json: moe_imbalance_by_ep: [8, 1.06] (expected whole EP sizes from 2, ascending)");
  CHECK(by_ep("[[1, 1]]") == "p.json: moe_imbalance_by_ep: [1, 1] (expected whole EP sizes from 2, ascending)");
  CHECK(by_ep("[[8.5, 1.1]]") == "p.json: moe_imbalance_by_ep: [8.5, 1.1] (expected whole EP sizes from 2, ascending)");
  CHECK(by_ep("[[8, 0.9]]") == "p.json: moe_imbalance_by_ep: [8, 0.9] (the busiest rank holds at least the mean: expected an imbalance >= 1)");
  CHECK(by_ep("[[8, 1.1, 3]]") == "p.json: key 'parameters.moe_imbalance_by_ep.value' = [8,1.1,3]: expected a row of 2 numbers");
  CHECK(by_ep("[[8, -1]]") == "p.json: key 'parameters.moe_imbalance_by_ep.value' = [8,-1]: expected numbers from 0 to 10^9");
  CHECK(by_ep("[]") == "p.json: key 'parameters.moe_imbalance_by_ep.value' = []: expected 1 to 64 rows of 2 numbers");
  imb["parameters"]["moe_imbalance"] = {{"value", 1.1}, {"source", "x"}};
  CHECK(by_ep("[[8, 1.06]]") == "p.json: moe_imbalance_by_ep: give it or moe_imbalance, not both");
  // TP all-reduce algorithms: whole groups from 2, whole bytes, an efficiency in (0, 1], one-shot 0 or 1.
  nlohmann::json ar = sg;
  auto reduce = [&](const char* rows) { return with_table(ar, "tp_allreduce", rows); };
  CHECK(reduce("[[2, 0, 2.74, 0.563, 1], [8, 8000000, 3.14, 0.594, 1], [8, 0, 48.9, 0.967, 0]]") == "(accepted)");
  CHECK(reduce("[[2, 0, 2.74, 0.563, 1], [8, 8000000, 48.9, 0.967, 0]]") == "p.json: tp_allreduce: no row for 8 ranks takes any message (expected one with max bytes 0)");
  CHECK(reduce("[[1, 0, 3, 0.5, 1]]") == "p.json: tp_allreduce: [1, 0, 3, 0.5, 1] (expected a whole group of at least 2 ranks)");
  CHECK(reduce("[[2.5, 0, 3, 0.5, 1]]") == "p.json: tp_allreduce: [2.5, 0, 3, 0.5, 1] (expected a whole group of at least 2 ranks)");
  CHECK(reduce("[[2, 1.5, 3, 0.5, 1]]") == "p.json: tp_allreduce: [2, 1.5, 3, 0.5, 1] (expected whole bytes, 0 for any message)");
  CHECK(reduce("[[2, 0, 3, 0, 1]]") == "p.json: tp_allreduce: [2, 0, 3, 0, 1] (expected a fraction of the NVLink bandwidth above 0, at most 1)");
  CHECK(reduce("[[2, 0, 3, 1.5, 1]]") == "p.json: tp_allreduce: [2, 0, 3, 1.5, 1] (expected a fraction of the NVLink bandwidth above 0, at most 1)");
  CHECK(reduce("[[2, 0, 3, 0.5, 2]]") == "p.json: tp_allreduce: [2, 0, 3, 0.5, 2] (expected one-shot 0 or 1)");
  CHECK(reduce("[[2, 0, 3, 0.5]]") == "p.json: key 'parameters.tp_allreduce.value' = [2,0,3,0.5]: expected a row of 5 numbers");
  CHECK(reduce("[[2, 0, -3, 0.5, 1]]") == "p.json: key 'parameters.tp_allreduce.value' = [2,0,-3,0.5,1]: expected numbers from 0 to 10^9");
  CHECK(reduce("[]") == "p.json: key 'parameters.tp_allreduce.value' = []: expected 1 to 64 rows of 5 numbers");
  CHECK(reduce("3") == "p.json: key 'parameters.tp_allreduce.value' = 3: expected 1 to 64 rows of 5 numbers");
  // Every bundled profile parses and names a source for every number.
  for (const EngineProfile& p : bundled_engines())
    for (const auto& [k, v] : p.params) CHECK(!v.source.empty());
}

TEST_CASE("Hostile engine-log tables: one line naming the file and row and column and value", "[engine][hostile]") {
  const std::string ok = "a,vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,0.9,8192,,,,,,,53.29,,,,logged,src\n";
  CHECK(csv_error(kHeader + ok) == "(accepted)");
  CHECK(csv_error("") == "logs.csv: empty file: expected a header row and data rows");
  CHECK(csv_error(kHeader) == "logs.csv: no data rows under the header");
  std::string bad_header = kHeader;
  bad_header.replace(bad_header.find("mem_util"), 8, "mem_utl");
  CHECK(csv_error(bad_header + ok) == "logs.csv: key 'header' = mem_utl: unknown column; did you mean 'mem_util'?");
  CHECK(csv_error(kHeader + "a,vllm\n") == "logs.csv, row 2: 2 cells where the header has 23");
  CHECK(csv_error(kHeader + "a,vllm,llama-3.1-8b,h100-sxm,x,1,1,,bf16,0.9,8192,,,,,,,53.29,,,,logged,src\n") ==
        "logs.csv, row 2: key 'tp' = x: expected a number");
  CHECK(csv_error(kHeader + "a,vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,1.5,8192,,,,,,,53.29,,,,logged,src\n") ==
        "logs.csv, row 2: key 'mem_util' = 1.5: expected a number from 0 to 1");
  CHECK(csv_error(kHeader + "a,vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,0.9,8192,,,,maybe,,,53.29,,,,logged,src\n") ==
        "logs.csv, row 2: key 'enforce_eager' = maybe: expected true or false");
  CHECK(csv_error(kHeader + "a,vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,0.9,8192,,,,,,,,,,,logged,src\n") ==
        "logs.csv, row 2: key 'logged_kv_tokens' = (empty): a row needs logged_kv_tokens or a positive logged_kv_gib");
  CHECK(csv_error(kHeader + "a,vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,0.9,8192,,,,,,,53.29,,,,guessed,src\n") ==
        "logs.csv, row 2: key 'kind' = guessed: expected logged or derived");
  CHECK(csv_error(kHeader + ",vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,0.9,8192,,,,,,,53.29,,,,logged,src\n") ==
        "logs.csv, row 2: key 'id' = (empty): required");
  CHECK(csv_error(kHeader + "a,vllm,llama-3.1-8b,h100-sxm,1,1,1,,bf16,0.9,1e400,,,,,,,53.29,,,,logged,src\n") ==
        "logs.csv, row 2: key 'max_model_len' = 1e400: expected a number");
  // A row the profile cannot serve names the row.
  const auto rows = parse_engine_log_csv(kHeader + "a,vllm,deepseek-v3,rtx-4090,1,1,1,,bf16,0.9,8192,,,,,,,1,,,,logged,src\n", "logs.csv");
  try {
    (void)check_engine_logs(rows);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("logs.csv (row 'a'): the profile leaves no KV pool", 0) == 0);
  }
}

TEST_CASE("report with an engine: capacity through the profile and a spec that checks itself", "[engine][report]") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("mlaplan_engine_report_" + std::to_string(::getpid()))).string();
  const auto r = run("report --engine sglang@0.4.3 --layouts 8x1x1 --out " + dir);
  REQUIRE(r.code == 0);
  std::ifstream spec(dir + "/spec.json");
  const auto j = nlohmann::json::parse(spec);
  CHECK(j["engine"] == "sglang@0.4.3");
  CHECK(!j.contains("mem_util"));  // the profile's default fraction stands
  std::ifstream md(dir + "/report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  CHECK(text.find("as SGLang allocates it (profile `engines/sglang-0.4.3.json`") != std::string::npos);
  CHECK(run("report --check " + dir).code == 0);
  std::filesystem::remove_all(dir);
  const auto bad = run("report --engine sglung --out " + dir);
  CHECK(bad.code == 2);
  CHECK(bad.err == "mlaplan: --engine: value 'sglung': expected vllm, sglang or trtllm, optionally @VERSION; did you mean 'sglang'?\n");
  CHECK(!std::filesystem::exists(dir));
}

TEST_CASE("A profile's low-latency all-to-all SM time reaches the step, and a bad one is refused", "[engine][hostile]") {
  const EngineProfile p = parse_engine_profile(profile_with("ll_sm_us_per_token", {{"value", 0.957}, {"source", "DeepSeek's decode profile"}}), "p.json");
  const StepOverheads o = step_overheads(p);
  CHECK(o.ll_sm_per_token.value == Approx(0.957e-6));
  StepRequest req;
  StepEngine e;
  e.overheads = o;
  apply_step_engine(req, e);
  CHECK(req.ll_sm_per_token.value == Approx(0.957e-6));
  CHECK(step_overheads(load_engine("sglang")).ll_sm_per_token.value == 0);  // no bundled profile carries it
  CHECK_THAT(parse_error(profile_with("ll_sm_us_per_token", {{"value", -1}, {"source", "s"}})), Catch::Equals("p.json: key 'parameters.ll_sm_us_per_token.value' = -1: expected a number from 0 to 10^9"));
  CHECK_THAT(parse_error(profile_with("ll_sm_us_per_token", {{"value", 1}})), Catch::Contains("ll_sm_us_per_token"));
}

TEST_CASE("Hardware totals as software sees them cannot exceed the memory", "[engine][hostile]") {
  nlohmann::json h = nlohmann::json::parse(R"({"name": "x", "memory_capacity_bytes": {"value": 1000, "source": "s"},
      "memory_bandwidth_gb_per_s": {"value": 1, "source": "s"}, "dense_peak_tflops": {"bf16": {"value": 1, "source": "s"}},
      "memory_torch_total_bytes": {"value": 2000, "source": "s"}})");
  try {
    (void)parse_hardware(h, "g.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "g.json: key 'memory_torch_total_bytes' = 2000: exceeds the memory capacity memory_capacity_bytes (1000)");
  }
  h["memory_torch_total_bytes"]["value"] = 900;
  h["memory_smi_total_mib"] = {{"value", 1}, {"source", "s"}};
  try {
    (void)parse_hardware(h, "g.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "g.json: key 'memory_smi_total_mib' = 1: exceeds the memory capacity memory_capacity_bytes (1000)");
  }
  // Every bundled GPU with a torch total has it below its capacity, and H100/H200/B200/H20 have both.
  for (const char* g : {"h100-sxm", "h200", "b200", "h20"}) {
    const HardwareSpec hw = load_gpu(g);
    CHECK(hw.memory_torch_total.value > 0);
    CHECK(hw.memory_smi_total.value > hw.memory_torch_total.value);
    CHECK(hw.memory_smi_total <= hw.memory_capacity);
  }
}

namespace {

std::string dispatch_error(const nlohmann::json& j) {
  try {
    (void)parse_dispatch_profile(j, "d.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

nlohmann::json dispatch_json() {
  return nlohmann::json::parse(R"({"engine": "sglang", "since": "1.0", "summary": "s",
    "fold_weights": {"value": "bf16", "source": "f"}, "chunk_tokens": {"value": 131072, "source": "c"},
    "policies": {"sglang_x": {"name": "X", "backends": "x", "rule": "prefix_sum", "threshold": 8192, "spec_as_decode": true, "source": "p"}},
    "dsa": {"rule": "dense_short", "threshold": 131072, "source": "d"}})");
}

}  // namespace

TEST_CASE("Dispatch rules are data: every bundled file parses and cites its sources", "[engine][dispatch]") {
  const std::vector<DispatchProfile> all = bundled_dispatch();
  REQUIRE(!all.empty());
  for (const DispatchProfile& d : all) {
    INFO(d.file);
    CHECK(!d.policies.empty());
    for (const EnginePolicy& e : d.policies) {
      CHECK(e.key.rfind(std::string(to_string(d.family)), 0) == 0);
      CHECK(e.source.find("PENDING") == std::string::npos);
      CHECK(e.engine == d.label());
    }
  }
  // Parsed exactly as written.
  const DispatchProfile d = parse_dispatch_profile(dispatch_json(), "d.json");
  REQUIRE(d.policies.size() == 1);
  const EnginePolicy& e = d.policies[0];
  CHECK(e.key == "sglang_x");
  CHECK(e.rule == ExtendRule::prefix_sum);
  CHECK(e.threshold == 8192);
  CHECK(e.spec_as_decode);
  CHECK(e.dsa == DsaRule::dense_short);
  CHECK(e.dsa_threshold == 131072);
  CHECK(e.chunk_tokens == 131072);
  CHECK(e.fold_weights == WeightDtype::bf16);
  CHECK(e.engine == "sglang@1.0+");
  CHECK(e.source == "p; fold: f; chunk: c; DSA: d");
  // Versions pick the newest rules at or below them, as capacity profiles do.
  CHECK(load_dispatch("sglang").since.text == "0.5.4");
  CHECK(load_dispatch("sglang@0.5.3").since.text == "0.4.3");
  CHECK(load_dispatch("vllm@0.10").since.text == "0.8.0");
  CHECK(load_dispatch("vllm").label() == "vllm@0.11.1+");
}

TEST_CASE("Hostile dispatch profiles: one line naming the file and key and value", "[engine][dispatch][hostile]") {
  CHECK(dispatch_error(dispatch_json()) == "(accepted)");
  auto with = [](const std::string& pointer, const nlohmann::json& v) {
    nlohmann::json j = dispatch_json();
    if (v.is_null()) {
      const auto slash = pointer.rfind('/');
      j[nlohmann::json::json_pointer(pointer.substr(0, slash))].erase(pointer.substr(slash + 1));
    } else {
      j[nlohmann::json::json_pointer(pointer)] = v;
    }
    return j;
  };
  CHECK(dispatch_error(with("/policies/sglang_x/rule", "prefix_summ")) ==
        "d.json: key 'policies.sglang_x.rule' = \"prefix_summ\": expected query_split, prefix_sum, no_prefix or every_extend");
  CHECK(dispatch_error(with("/policies/sglang_x/treshold", 1)) ==
        "d.json: key 'policies.sglang_x.treshold' = 1: unknown key; did you mean 'threshold'?");
  CHECK(dispatch_error(with("/policies/sglang_x/threshold", nullptr)) ==
        "d.json: key 'policies.sglang_x.threshold' = (absent): required by rule prefix_sum");
  CHECK(dispatch_error(with("/policies/sglang_x/threshold", 0)) ==
        "d.json: key 'policies.sglang_x.threshold' = 0: expected a whole number of tokens from 1 to 10^12");
  CHECK(dispatch_error(with("/policies/sglang_x/threshold", 1.5)) ==
        "d.json: key 'policies.sglang_x.threshold' = 1.5: expected a whole number of tokens from 1 to 10^12");
  nlohmann::json every = with("/policies/sglang_x/rule", "every_extend");
  CHECK(dispatch_error(every) == "d.json: key 'policies.sglang_x.threshold' = 8192: rule every_extend has no threshold");
  CHECK(dispatch_error(with("/policies/sglang_x/source", "")) ==
        "d.json: key 'policies.sglang_x.source' = \"\": every dispatch rule needs a source");
  CHECK(dispatch_error(with("/policies/sglang_x/spec_as_decode", "yes")) ==
        "d.json: key 'policies.sglang_x.spec_as_decode' = \"yes\": expected true or false");
  nlohmann::json other = dispatch_json();
  other["policies"]["vllm_x"] = other["policies"]["sglang_x"];
  CHECK(dispatch_error(other).rfind("d.json: key 'policies.vllm_x' = ", 0) == 0);
  CHECK(dispatch_error(other).find(": a policy key is snake_case and starts with 'sglang'") != std::string::npos);
  CHECK(dispatch_error(with("/policies", nlohmann::json::object())) == "d.json: key 'policies' = {}: expected an object of KEY -> rule");
  CHECK(dispatch_error(with("/fold_weights/value", "int3")) ==
        "d.json: key 'fold_weights.value' = \"int3\": expected bf16, fp16, fp32, fp8, fp8_tensor, mxfp4, int4, int8 or \"checkpoint\"");
  CHECK(dispatch_error(with("/chunk_tokens/value", -1)) ==
        "d.json: key 'chunk_tokens.value' = -1: expected a whole number of tokens from 0 to 10^12");
  CHECK(dispatch_error(with("/chunk_tokens", nullptr)) == "d.json: key 'chunk_tokens' = (absent): required in a dispatch profile");
  CHECK(dispatch_error(with("/dsa/rule", "sparse")) == "d.json: key 'dsa.threshold' = 131072: rule sparse has no threshold");
  CHECK(dispatch_error(with("/dsa/threshold", nullptr)) == "d.json: key 'dsa.threshold' = (absent): required by rule dense_short");
  CHECK(dispatch_error(with("/dsa/rule", "dense")) ==
        "d.json: key 'dsa.rule' = \"dense\": expected sparse, dense_short, packed_tokens, max_kv or unsupported");
  CHECK(dispatch_error(with("/engine", "tgi")) == "d.json: key 'engine' = \"tgi\": expected vllm, sglang or trtllm");
  CHECK(dispatch_error(with("/sumary", "s")) == "d.json: key 'sumary' = \"s\": unknown key; did you mean 'summary'?");
  CHECK(dispatch_error(nlohmann::json::array()) == "d.json: expected a JSON object");
}
