// --explain: every number with its formula and values, checked against the studies and kept as
// reviewed golden text for DeepSeek-V3 and Llama-3.1-70B.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "helpers.hpp"
#include "mlaplan/core/explain.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/efficiency_json.hpp"

using namespace mlaplan;
using test::all_models;

namespace {

std::string golden(const std::string& name) {
  std::ifstream in(std::filesystem::path(MLAPLAN_TEST_SOURCE_DIR) / "tests" / "explain-golden" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The value of a substituted expression made of numbers ("1,152", "2.5", "1e+12"), + − · × / and
// parentheses; nullopt when it holds anything else (units, max, ⌈⌉, words), which is not checked here.
struct Arithmetic {
  std::string s;
  std::size_t i = 0;
  bool bad = false;
  char peek() {
    while (i < s.size() && s[i] == ' ') ++i;
    return i < s.size() ? s[i] : '\0';
  }
  double primary() {
    if (peek() == '(') {
      ++i;
      const double v = sum();
      if (peek() != ')') bad = true;
      ++i;
      return v;
    }
    if (peek() == '-') {
      ++i;
      return -primary();
    }
    std::string digits;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' ||
                            ((s[i] == '+' || s[i] == '-') && i > 0 && s[i - 1] == 'e') ||
                            (s[i] == ',' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))))
      if (s[i++] != ',') digits.push_back(s[i - 1]);
    if (digits.empty()) bad = true;
    return digits.empty() ? 0 : std::stod(digits);
  }
  double product() {
    double v = primary();
    for (char c = peek(); c == '*' || c == '/'; c = peek()) {
      ++i;
      const double x = primary();
      v = c == '*' ? v * x : v / x;
    }
    return v;
  }
  double sum() {
    double v = product();
    for (char c = peek(); c == '+' || c == '-'; c = peek()) {
      ++i;
      const double x = product();
      v = c == '+' ? v + x : v - x;
    }
    return v;
  }
};
std::optional<double> evaluate(std::string text) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"·", "*"}, {"×", "*"}, {"−", "-"}})
    for (std::size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  if (text.empty() || text.find_first_not_of("0123456789,.e+-*/() ") != std::string::npos) return std::nullopt;
  Arithmetic a{text};
  const double v = a.sum();
  if (a.bad || a.peek() != '\0') return std::nullopt;
  return v;
}

// Every step whose values are plain arithmetic evaluates to its result; returns how many did.
int check_arithmetic(const std::vector<ExplainStep>& steps) {
  int n = 0;
  for (const ExplainStep& x : steps)
    if (const std::optional<double> v = evaluate(x.substituted)) {
      INFO(x.quantity << ": " << x.substituted << " = " << x.result);
      CHECK(*v == Approx(x.number()).epsilon(1e-12).margin(1e-9));
      ++n;
    }
  return n;
}

const ExplainStep& step(const std::vector<ExplainStep>& steps, const std::string& quantity) {
  for (const ExplainStep& s : steps)
    if (s.quantity == quantity) return s;
  throw std::runtime_error("no step " + quantity);
}

}  // namespace

TEST_CASE("kv --explain: DeepSeek-V3 worked by hand", "[explain][example]") {
  const auto s = explain_kv(test::model("deepseek-v3"), KvDtype::bf16, {8, 1, 1}, 32768, 8, 64);
  CHECK(s[0].formula == "(kv_lora_rank + qk_rope_head_dim) · 2 B");
  CHECK(s[0].substituted == "(512 + 64) · 2 B");
  CHECK(s[0].result == "1,152 B");
  CHECK(s[1].substituted == "1,152 B · 61");
  CHECK(s[1].result == "70,272 B");
  CHECK(step(s, "bytes per sequence").result == "2,302,672,896 B");  // 1,152 · 32,768 · 61
  const auto f = explain_kv(test::model("deepseek-v3"), KvDtype::fp8_flashmla, {1, 1, 1}, 0, 1, 1);
  CHECK(f[0].substituted == "512 · 1 B + 64 · 2 B + 4 · 4 B");
  CHECK(f[0].result == "656 B");
  const auto ix = explain_kv(test::model("deepseek-v3.2-exp"), KvDtype::bf16, {1, 1, 1}, 0, 1, 1);
  CHECK(step(ix, "indexer cache bytes per token per layer").result == "132 B");
  CHECK(step(ix, "bytes per token, all layers").substituted == "(1,152 B + 132 B) · 61");
  CHECK(grouped(-1234567) == "-1,234,567");
  CHECK(grouped(999) == "999");
}

TEST_CASE("kv --explain agrees with the study on every bundled model and dtype", "[explain][property]") {
  for (const ModelSpec& m : all_models())
    for (KvDtype d : all_kv_dtypes()) {
      if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
      for (const Parallelism par : {Parallelism{1, 1, 1}, Parallelism{8, 2, 1}}) {
        if (!check_layout(m, par).ok()) continue;
        INFO(m.name << " " << to_string(d) << " TP " << par.tp);
        const KvStudy st = kv_study(m, d, par, 5000, 3, 16);
        const auto s = explain_kv(m, d, par, 5000, 3, 16);
        CHECK(s[0].value == st.per_token_per_layer.total().value);
        CHECK(step(s, "bytes per token, all layers").value == (st.per_token.total() + st.indexer_per_token).value);
        CHECK(step(s, "bytes per token on one rank").value == st.per_token_per_rank.value);
        CHECK(step(s, "bytes for all sequences").value == st.total_bytes->value);
        CHECK(step(s, "bytes on one rank").value == st.total_bytes_per_rank->value);
      }
    }
}

TEST_CASE("kv --explain golden text for DeepSeek-V3 and Llama-3.1-70B", "[explain][golden]") {
  CHECK(test::run("kv --model deepseek-v3 --tokens 32768 --sequences 8 --block-size 64 --tp 8 --explain").out == golden("kv-deepseek-v3.txt"));
  CHECK(test::run("kv --model llama-3.1-70b --tokens 32768 --sequences 8 --block-size 16 --tp 8 --dp 2 --explain").out == golden("kv-llama-3.1-70b.txt"));
}

TEST_CASE("capacity --explain agrees with the study on every bundled model", "[explain][property]") {
  const HardwareSpec h200 = load_gpu("h200");
  for (const ModelSpec& m : all_models()) {
    const Parallelism par{8, 1, 1};
    if (!check_layout(m, par).ok()) continue;
    INFO(m.name);
    CapacityRequest req;
    req.par = par;
    req.weights = default_weight_plan(m);
    req.context = 4096;
    req.block_size = 16;
    const CapacityStudy st = capacity_study(m, h200, req, [&](const Parallelism& p) { return activation_reserve_estimate(m, p, 8192); });
    const auto s = explain_capacity(m, h200, st, 8192, false);
    CHECK(step(s, "weights on one rank").value == st.result.weight_bytes_per_rank.value);
    CHECK(step(s, "activation reserve").value == st.result.reserve_bytes_per_rank.value);
    CHECK(step(s, "activation reserve").substituted.rfind("8,192 · 2 B · (2 · ", 0) == 0);
    CHECK(step(s, "KV pool on one rank").value == st.result.kv_pool_bytes_per_rank.value);
    CHECK(step(s, "tokens on one rank").value == st.result.max_tokens_per_rank);
    CHECK(step(s, "sequences in the deployment").value == st.result.max_sequences);
    std::int64_t groups = 0;
    for (const ExplainStep& x : s)
      if (x.quantity.rfind("weights on one rank: ", 0) == 0) groups += x.value;
    CHECK(groups == st.result.weight_bytes_per_rank.value);
  }
}

TEST_CASE("capacity --engine --explain: the budget lines add up and the blocks follow", "[explain][property]") {
  const HardwareSpec h200 = load_gpu("h200");
  for (const EngineProfile& p : bundled_engines())
    for (const char* name : {"deepseek-r1", "llama-3.1-8b"}) {
      const ModelSpec m = test::model(name);
      INFO(p.label() << " " << name);
      const EngineCapacity e = engine_capacity(m, h200, p, default_weight_plan(m), {8, 1, 1}, KvDtype::bf16, EngineSettings{}, 0);
      if (!e.fits()) continue;
      const auto s = explain_engine_capacity(e);
      CHECK(step(s, "the lines' sum").value == e.total_seen.value);
      const std::int64_t block = std::max<std::int64_t>(1, e.block_size);
      CHECK(step(s, "blocks").value == e.kv_pool.value / (e.kv_bytes_per_token.value * block));
      CHECK(step(s, "tokens the engine logs").value == e.engine_kv_tokens);
    }
}

TEST_CASE("capacity --explain golden text for DeepSeek-V3 and Llama-3.1-70B", "[explain][golden]") {
  CHECK(test::run("capacity --model deepseek-v3 --gpu h200 --tp 8 --context 32768 --block-size 64 --explain").out == golden("capacity-deepseek-v3.txt"));
  CHECK(test::run("capacity --model llama-3.1-70b --gpu h100 --tp 4 --dp 2 --context 8192 --block-size 16 --explain").out ==
        golden("capacity-llama-3.1-70b.txt"));
  CHECK(test::run("capacity --model deepseek-r1 --gpu h200 --tp 8 --engine vllm@0.7.3 --explain").out == golden("capacity-engine-deepseek-r1.txt"));
}

TEST_CASE("explain arithmetic: the checker reads what the steps write", "[explain][example]") {
  CHECK(evaluate("2 · 128 · (2 · 512 + 64)") == 278528.0);
  CHECK(evaluate("1,152 · 61 − 2 / 4") == 70271.5);
  CHECK(evaluate("1e+3 + 0.5") == 1000.5);
  CHECK_FALSE(evaluate("max(1, 2)"));
  CHECK_FALSE(evaluate("1,152 B · 61"));
}

TEST_CASE("cost --explain: DeepSeek-V3 decode worked by hand", "[explain][example]") {
  const ModelSpec m = test::model("deepseek-v3");
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  Workload w;
  w.groups.assign(1, SequenceGroup{1, 1, 8191});
  const CostStudy st = cost_study(m, w, rf);
  const auto s = explain_cost(m, w, rf, st);
  CHECK(step(s, "absorbed FLOPs per pair").substituted == "2 · 128 · (2 · 512 + 64)");
  CHECK(step(s, "absorbed FLOPs per pair").result == "278,528 FLOP");
  CHECK(step(s, "expanded FLOPs per pair").result == "81,920 FLOP");
  CHECK(step(s, "expand FLOPs per cached token").result == "33,554,432 FLOP (33.55 MFLOP)");
  CHECK(step(s, "attention pairs per sequence").substituted == "1 · 8,191 + 1 · (1 + 1) / 2");
  CHECK(step(s, "attention pairs per sequence").number() == 8192);
  // One layer of decode at 8K: expand 275.5 GFLOP against absorb 2.3 GFLOP (design §2).
  CHECK(step(s, "expand: FLOPs, all layers").number() / 61 == Approx(275.5e9).epsilon(1e-3));
  CHECK(step(s, "absorb: FLOPs, all layers").number() / 61 == Approx(2.3e9).epsilon(2e-2));
  CHECK(check_arithmetic(s) > 20);
}

namespace {

// The explained numbers are the study's: per op (in order), per path, the engines' penalties.
void check_cost_explain(const ModelSpec& m, const Workload& w, const Roofline& rf, std::optional<Bytes> budget, const std::vector<double>& chunks = {}) {
  const CostStudy st = cost_study(m, w, rf, budget, m.is_mla() ? test::policies() : std::vector<EnginePolicy>{}, chunks);
  const auto s = explain_cost(m, w, rf, st);
  std::vector<const ExplainStep*> flops, bytes, times;
  for (const ExplainStep& x : s) {
    auto ends = [&x](const std::string& tail) { return x.quantity.size() > tail.size() && x.quantity.compare(x.quantity.size() - tail.size(), tail.size(), tail) == 0; };
    if (ends(": FLOPs per layer")) flops.push_back(&x);
    if (ends(": bytes per layer")) bytes.push_back(&x);
    if (ends(": time per layer")) times.push_back(&x);
  }
  std::size_t k = 0;
  for (const PathResult& p : st.paths) {
    const std::string label = p.kind == PathKind::chunked ? "chunked (C = " + grouped(static_cast<std::int64_t>(p.chunk)) + ")" : std::string(to_string(p.kind));
    INFO(label);
    CHECK(step(s, label + ": FLOPs, all layers").number() == p.cost.flops.value);
    CHECK(step(s, label + ": bytes, all layers").number() == p.cost.bytes.value);
    CHECK(step(s, label + ": time, all layers").number() == p.cost.time.value);
    if (p.kind == PathKind::split) continue;
    for (const OpRow& o : p.ops) {
      REQUIRE(k < flops.size());
      INFO(flops[k]->quantity);
      CHECK(flops[k]->number() == o.op.flops.value);
      CHECK(bytes[k]->number() == o.op.bytes().value);
      CHECK(times[k]->number() == o.time.time.value);
      CHECK(times[k]->number() == op_time(o.op, rf).time.value);
      ++k;
    }
  }
  CHECK(k == flops.size());
  for (const EngineChoice& e : st.engines) {
    const double penalty = step(s, e.name + ": penalty").number();
    CHECK((penalty == e.penalty || (std::isinf(penalty) && std::isinf(e.penalty))));
  }
  CHECK(check_arithmetic(s) >= 8);
}

}  // namespace

TEST_CASE("cost --explain agrees with the study on every bundled model", "[explain][property]") {
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{0.7, 0.8, "test"}, Seconds{2e-6});
  for (const ModelSpec& m : all_models())
    for (const std::int64_t tp : {std::int64_t{1}, std::int64_t{8}}) {
      Parallelism par{tp, 2, 1};
      if (!check_layout(m, par).ok()) continue;
      INFO(m.name << " TP " << tp);
      Workload w;
      w.par = par;
      w.weights = attention_weight_dtype(m);
      w.groups.assign(1, SequenceGroup{32, 1, 8191});
      check_cost_explain(m, w, rf, std::nullopt);
      w.groups.assign(1, SequenceGroup{2, 3000, 0});
      w.projections = true;
      w.kv = m.is_mla() ? KvDtype::fp8_flashmla : KvDtype::fp8;
      check_cost_explain(m, w, rf, Bytes{std::int64_t{1} << 28}, {1024, 4096});
      w.projections = false;
      w.kv = KvDtype::fp4;
      w.kv_splits = 4;
      w.groups = std::vector<SequenceGroup>{SequenceGroup{16, 1, 4096}, SequenceGroup{1, 2048, 100}};
      check_cost_explain(m, w, rf, std::nullopt);
    }
}

TEST_CASE("cost --explain agrees with the study under calibrated profiles: an unsplit decode kernel and fp8 compute", "[explain][property]") {
  const ModelSpec m = load_model("deepseek-v3");
  Workload w;
  w.groups.assign(1, SequenceGroup{4, 1, 8191});
  // A100's profile: its decode kernel walks every key in one block per sequence.
  const Roofline a100 = default_roofline(load_gpu("a100"), DType::bf16, bundled_efficiency());
  REQUIRE(a100.calibrated());
  REQUIRE_FALSE(a100.kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)]->split_kv);
  check_cost_explain(m, w, a100, std::nullopt);
  const auto s = explain_cost(m, w, a100, cost_study(m, w, a100, std::nullopt, test::policies(), {}));
  CHECK(step(s, "absorb latent_attention_mqa: time per layer").formula.find("no split-KV") != std::string::npos);
  // H100 at fp8 compute: the fp8 families' own efficiency.
  const Roofline h100 = default_roofline(load_gpu("h100"), DType::fp8, bundled_efficiency());
  REQUIRE(h100.fp8_compute);
  w.groups.assign(1, SequenceGroup{2, 3000, 0});
  check_cost_explain(m, w, h100, std::nullopt);
  const auto f = explain_cost(m, w, h100, cost_study(m, w, h100, std::nullopt, test::policies(), {}));
  CHECK(step(f, "expand attention_mha: time per layer").formula.find("fp8 η_c") != std::string::npos);
}

TEST_CASE("crossover --explain agrees with the study on every bundled MLA model", "[explain][property]") {
  const HardwareSpec h200 = load_gpu("h200");
  const Roofline rf = roofline_for(h200, DType::bf16, h200.efficiency);
  for (const ModelSpec& m : all_models()) {
    if (!m.is_mla()) continue;
    INFO(m.name);
    CrossoverSweepSpec sp;
    sp.prefixes = {0, 1000, 8192};
    for (const std::int64_t tp : {std::int64_t{1}, std::int64_t{8}})
      if (check_layout(m, {tp, 1, 1}).ok()) sp.tps.push_back(tp);
    sp.kvs = {KvDtype::bf16, KvDtype::fp8_flashmla};
    sp.batch = 4;
    sp.base.weights = attention_weight_dtype(m);
    sp.budget = step_workspace_budget(m, h200, 0.9);
    for (bool causal : {true, false}) {
      sp.base.causal = causal;
      const CrossoverStudy st = crossover_study(m, rf, sp);
      const auto s = explain_crossover(m, rf, sp, st);
      CHECK(step(s, "FLOP-only Q* as P grows").number() == st.asymptotic_flop_crossover_query);
      for (const CrossoverRow& r : st.rows) {
        const std::string at = "TP " + std::to_string(r.tp) + ", " + std::string(to_string(r.kv)) + ", P " + grouped(static_cast<std::int64_t>(r.prefix));
        INFO(at);
        CHECK(step(s, at + ": FLOP-only Q*").number() == r.flop_crossover_query);
        const double q = step(s, at + ": roofline Q*").number();
        CHECK((q == r.roofline_crossover_query || (std::isinf(q) && std::isinf(r.roofline_crossover_query))));
      }
      CHECK(check_arithmetic(s) >= 1);  // the limit's closed form
    }
  }
}

TEST_CASE("cost and crossover --explain golden text for DeepSeek-V3 and Llama-3.1-70B", "[explain][golden]") {
  CHECK(test::run("cost --model deepseek-v3 --gpu h200 --tp 8 --batch 32 --prefix 8191 --engine sglang --explain").out == golden("cost-deepseek-v3.txt"));
  CHECK(test::run("cost --model llama-3.1-70b --gpu h100 --tp 4 --batch 8 --prefix 8191 --explain").out == golden("cost-llama-3.1-70b.txt"));
  CHECK(test::run("crossover --model deepseek-v3 --gpu h200 --prefix 0,8192 --tp 1,8 --batch 4 --engine sglang --explain").out ==
        golden("crossover-deepseek-v3.txt"));
  // Llama is not MLA: there is no expand/absorb crossover to derive.
  test::expect_refusal("crossover --model llama-3.1-70b --explain",
                       "--model: value 'llama-3.1-70b': meta-llama/Llama-3.1-70B is gqa: the expand/absorb crossover needs an MLA model");
}
