// The whole-model serving step and the plan: worked examples with exact numbers, laws over every
// bundled model, and the CLI contract (JSON keys, refusals).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/csv_records.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/serving_measurements.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan {
namespace {

using nlohmann::json;

const StepRow* row(const StepResult& r, StepComponent c) {
  for (const StepRow& x : r.rows)
    if (x.component == c) return &x;
  return nullptr;
}

// A step of one group of sequences on a layout with the model's default weights (DeepSeek-V3: fp8
// linear weights, fp8 GEMMs and dispatch), no engine, the GPU's links.
StepRequest plain_request(const ModelSpec& m, const HardwareSpec& hw, Phase phase, Parallelism par, SequenceGroup g, std::int64_t gpus_per_node = 8) {
  StepRequest req;
  req.phase = phase;
  req.w.par = par;
  req.weights = default_weight_plan(m);
  req.w.groups = {g};
  req.gpus_per_node = gpus_per_node;
  req.links = links_for(hw, StepOverheads{});
  return req;
}

// A decode step of `batch` sequences at `context` keys on a layout, at speed of light.
StepResult sol_step(const ModelSpec& m, const std::string& gpu, Parallelism par, std::int64_t batch, double context, Phase phase = Phase::decode) {
  const HardwareSpec hw = load_gpu(gpu);
  const StepRequest req = plain_request(m, hw, phase, par, phase == Phase::decode ? SequenceGroup{batch, 1, context - 1} : SequenceGroup{batch, context, 0},
                                        std::min<std::int64_t>(8, par.ranks()));
  return step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
}

TEST_CASE("Experts touched and the probability a token reaches a group of experts", "[serving]") {
  CHECK(experts_touched(2, 1) == Approx(1.0));
  CHECK(experts_touched(4, 2) == Approx(4 * (1 - 0.75 * 0.75)));  // 1.75
  CHECK(experts_touched(256, 0) == 0);
  CHECK(experts_touched(256, 1e6) == Approx(256));
  // 1 − C(224, 8) / C(256, 8): a token's 8 experts among 256, a group of 32 (one of 8 nodes).
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  CHECK(group_hit_probability(256, 32, 8) == Approx(1 - miss));
  CHECK(group_hit_probability(256, 256, 8) == 1);
  CHECK(group_hit_probability(256, 2, 1) == Approx(2.0 / 256));
}

TEST_CASE("Worked example: DeepSeek-V3 decode on one GPU, MoE FLOPs and bytes by hand", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const StepResult r = sol_step(m, "h200", Parallelism{1, 1, 1}, 128, 4096);
  // 128 tokens x 8 experts = 1,024 token-expert pairs per MoE layer, 58 MoE layers:
  // gate/up 2·1024·7168·4096 + down 2·1024·2048·7168 = 90,194,313,216 FLOPs per layer.
  const StepRow* moe = row(r, StepComponent::routed_experts);
  REQUIRE(moe);
  CHECK(moe->layers == 58);
  CHECK(moe->flops.value == Approx(58.0 * 90'194'313'216.0));
  // Weights read: the experts 1,024 uniform pairs touch, 256·(1 − (255/256)^1024) = 251.3 of 256,
  // each 3·7168·2048 fp8 bytes plus one fp32 scale per 128x128 block.
  const double touched = 256 * (1 - std::pow(255.0 / 256, 1024));
  CHECK(touched == Approx(251.348).epsilon(1e-5));
  const double wb = 1 + 4.0 / (128 * 128);
  const double gate_up = touched * 7168 * 4096 * wb + 1024 * 7168 * 2.0 + 1024 * 4096 * 2.0;
  const double down = touched * 2048 * 7168 * wb + 1024 * 2048 * 2.0 + 1024 * 7168 * 2.0;
  CHECK(moe->bytes.value == Approx(58 * (gate_up + down)));
  // Dense layers: 3, each gate/up 2·128·7168·36864 + down 2·128·18432·7168 FLOPs.
  const StepRow* dense = row(r, StepComponent::dense_mlp);
  REQUIRE(dense);
  CHECK(dense->flops.value == Approx(3.0 * (2.0 * 128 * 7168 * 36864 + 2.0 * 128 * 18432 * 7168)));
  // lm_head over 128 tokens: 2·128·7168·129280.
  CHECK(row(r, StepComponent::lm_head)->flops.value == Approx(2.0 * 128 * 7168 * 129280));
  // One GPU: no communication.
  CHECK(row(r, StepComponent::tp_allreduce) == nullptr);
  CHECK(r.communication.value == 0);
  CHECK(r.tokens_per_s_per_gpu == Approx(128 / r.step_time.value));
  CHECK(r.tpot.value == Approx(r.step_time.value));
}

TEST_CASE("Worked example: DeepSeek-V3's small kernels around attention and the MLP, bytes by hand", "[serving]") {
  // One H200, decode, 64 sequences, DeepSeek's fp8 checkpoint (block-fp8 GEMMs), bf16 cache: the
  // elementwise component's bytes over the 61 layers and the final norm. Per layer of 64 tokens:
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h200");
  StepRequest req;
  set_step_weights(req, m, std::nullopt);
  req.w.groups = {SequenceGroup{64, 1, 4095}};
  req.links = links_for(hw, StepOverheads{});
  const StepResult r = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
  const double t = 64, h = 7168, q8 = 2 + 1 + 4.0 / 128;  // a quantized value: 2 B read, 1 B + its share of a fp32 scale written
  // Input and post-attention RMSNorm, each adding the residual in the same kernel: the hidden state
  // and the residual read and both written, 2 B each.
  const double norms = 2 * t * h * 8;
  const double latent_norms = t * 1536 * 4 + t * 512 * 4;  // q_a and kv_a RMSNorms
  const double rope = t * (128 + 1) * 64 * 4;              // every head's 64-wide query part and the key's, in place
  const double store = t * 576 * 2 + t * 576 * 2;         // the latent row read, then written into the bf16 cache
  const double attn_quant = (t * h + t * 1536 + t * 128 * 128) * q8;  // before q_a/kv_a, q_b, o_proj
  const double mla = latent_norms + rope + store + attn_quant;
  // SwiGLU reads the gate and up halves (2·width values) and writes width values, 2 B each.
  const double dense = t * h * q8 + t * 18432 * 6 + t * 18432 * q8;   // quant, SwiGLU, quant
  const double gate = t * 256 * 2 + t * 8 * 8;                       // logits in; ids and weights out
  const double shared = t * h * q8 + t * 2048 * 6 + t * 2048 * q8;    // quant, SwiGLU, quant
  const double sum = 3 * t * h * 2;                                   // shared + routed, in place
  const double routed_swiglu = t * 8 * 2048 * 6;                      // one GPU: every pair's SwiGLU
  const double routed_quant = t * h * q8 + t * 8 * 2048 * q8;         // the tokens once, every pair's SwiGLU output
  const double expected = 3 * (norms + mla + dense) + 58 * (norms + mla + gate + shared + sum + routed_swiglu + routed_quant) +
                          t * h * 4;  // 2·61 + 1 norms: the first layer's input norm has no residual (2 passes of 2 B)
  const StepRow* other = row(r, StepComponent::elementwise);
  REQUIRE(other);
  CHECK(other->bytes.value == Approx(expected));
  for (OpId id : {OpId::act_quant, OpId::rope, OpId::kv_store, OpId::topk_gate, OpId::moe_sum})
    CHECK(std::find(other->ops.begin(), other->ops.end(), id) != other->ops.end());
  // Without fp8 weights nothing is quantized.
  StepRequest bf = req;
  set_step_weights(bf, m, WeightDtype::bf16);
  const StepResult rb = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), bf);
  const StepRow* other_bf = row(rb, StepComponent::elementwise);
  CHECK(std::find(other_bf->ops.begin(), other_bf->ops.end(), OpId::act_quant) == other_bf->ops.end());
  CHECK(other_bf->bytes.value == Approx(expected - 3 * (attn_quant + t * h * q8 + t * 18432 * q8) - 58 * (attn_quant + t * h * q8 + t * 2048 * q8 + routed_quant)));
}

// A GQA step's elementwise component and its op ids, at speed of light, with the engine's RoPE kernels.
StepResult gqa_step(const ModelSpec& m, const HardwareSpec& hw, Phase phase, SequenceGroup g, KvDtype kv, int prefill_kernels, int decode_kernels,
                    bool fused_by_kernel, std::int64_t tp = 1) {
  StepRequest req;
  req.phase = phase;
  req.w.par = Parallelism{tp, 1, 1};
  req.w.kv = kv;
  req.w.groups = {g};
  req.gpus_per_node = 8;
  req.links = links_for(hw, StepOverheads{});
  req.overheads.gqa_rope_kernels_prefill = prefill_kernels;
  req.overheads.gqa_rope_kernels_decode = decode_kernels;
  req.overheads.gqa_decode_kernel_fuses_rope = fused_by_kernel;
  return step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
}
bool has_op(const StepRow& r, OpId id) { return std::find(r.ops.begin(), r.ops.end(), id) != r.ops.end(); }

// A decode step of 64 sequences at 3,000 keys, bf16 weights, on `tp` ranks of a node of 8, under an
// engine's profile (its overheads and links) and `rf`.
StepResult engine_decode(const ModelSpec& m, const HardwareSpec& hw, const Roofline& rf, std::int64_t tp, const StepEngine& e, KvDtype kv = KvDtype::bf16) {
  StepRequest req;
  req.phase = Phase::decode;
  req.w.par = Parallelism{tp, 1, 1};
  req.w.kv = kv;
  set_step_weights(req, m, WeightDtype::bf16);
  req.w.groups = {SequenceGroup{64, 1, 2999}};
  req.gpus_per_node = 8;
  apply_step_engine(req, e);
  req.links = links_for(hw, req.overheads);
  return step_time(m, hw, rf, req);
}

// That two steps of `m` differ only where an engine's GQA decode kernel choice can move them: a
// non-MLA decode step's attention and the kernels around it (elementwise); nothing else, and an MLA
// or prefill step not at all.
void check_only_gqa_decode_moves(const ModelSpec& m, Phase phase, const StepResult& a, const StepResult& b) {
  for (int i = 0; i < kStepComponentCount; ++i) {
    const auto c = static_cast<StepComponent>(i);
    INFO(to_string(c));
    const bool may_move = phase == Phase::decode && !m.is_mla() && (c == StepComponent::attention_core || c == StepComponent::elementwise);
    const auto time_of = [c](const StepResult& r) {
      const StepRow* x = row(r, c);
      return x ? x->time.value : 0.0;
    };
    if (!may_move) CHECK(time_of(a) == Approx(time_of(b)).epsilon(1e-12));
  }
  if (m.is_mla() || phase == Phase::prefill) CHECK(a.step_time.value == Approx(b.step_time.value).epsilon(1e-12));
}

TEST_CASE("Worked example: residual norms and the gated activation's bytes, Llama's two norms against Gemma-2's four", "[serving]") {
  // One H100, decode, 8 sequences, bf16 weights, no RoPE kernels of the engine's: the elementwise
  // component is the norms and the gated activation. A residual norm reads the hidden state and the
  // residual and writes both (4 passes of 2 B); the activation reads the gate and up halves and
  // writes one (3 passes of 2 B per intermediate value). Of the step's 2·layers + 1 norms (Gemma:
  // 4·layers + 1) the first layer's input norm alone takes no residual (2 passes of 2 B).
  const HardwareSpec h100 = load_gpu("h100");
  const SequenceGroup decode8{8, 1, 4095};
  const double t = 8;
  {
    // Llama-2-7B: 32 layers, hidden 4096, intermediate 11008, two residual norms per layer.
    const StepResult r = gqa_step(test::model("llama-2-7b-hf"), h100, Phase::decode, decode8, KvDtype::bf16, 0, 0, false);
    const StepRow* e = row(r, StepComponent::elementwise);
    REQUIRE(e);
    const double per_layer = 2 * t * 4096 * 8 + t * 11008 * 6;
    CHECK(e->bytes.value == Approx(32 * per_layer + t * 4096 * 4));
    // Ungated, the activation reads the up projection alone: one read and one write.
    ModelSpec ungated = test::model("llama-2-7b-hf");
    ungated.gated_mlp = false;
    const StepResult ru = gqa_step(ungated, h100, Phase::decode, decode8, KvDtype::bf16, 0, 0, false);
    const StepRow* u = row(ru, StepComponent::elementwise);
    REQUIRE(u);
    CHECK(u->bytes.value == Approx(32 * (2 * t * 4096 * 8 + t * 11008 * 4) + t * 4096 * 4));
  }
  {
    // Gemma-2-9B: 42 layers, hidden 3584, intermediate 14336; its post-attention and post-feedforward
    // norms take no residual (2 passes of 2 B each), its input and pre-feedforward norms do.
    const StepResult r = gqa_step(test::model("gemma-2-9b"), h100, Phase::decode, decode8, KvDtype::bf16, 0, 0, false);
    const StepRow* e = row(r, StepComponent::elementwise);
    REQUIRE(e);
    const double per_layer = 2 * t * 3584 * 8 + 2 * t * 3584 * 4 + t * 14336 * 6;
    CHECK(e->bytes.value == Approx(42 * per_layer + t * 3584 * 4));
    CHECK(has_op(*e, OpId::rms_norm));
    CHECK(has_op(*e, OpId::swiglu));
  }
  {
    // Qwen3-8B's per-head norms of the queries and keys: 36 layers of 32 query and 8 key heads of 128,
    // a plain norm each (one read and one write of 2 B a value) beside what a model without them runs.
    const ModelSpec q = test::model("qwen3-8b");
    REQUIRE(q.qk_norm);
    ModelSpec plain = q;
    plain.qk_norm = false;
    const StepResult rq = gqa_step(q, h100, Phase::decode, decode8, KvDtype::bf16, 0, 0, false);
    const StepResult rp = gqa_step(plain, h100, Phase::decode, decode8, KvDtype::bf16, 0, 0, false);
    const StepRow* with = row(rq, StepComponent::elementwise);
    const StepRow* without = row(rp, StepComponent::elementwise);
    REQUIRE(with);
    REQUIRE(without);
    CHECK(with->bytes.value - without->bytes.value == Approx(36 * (t * 32 * 128 * 4 + t * 8 * 128 * 4)));
  }
}

TEST_CASE("Worked example: a GQA model's RoPE and cache write, by hand, where each engine runs them apart", "[serving]") {
  // Llama-3.1-8B, 32 layers of 32 query heads and 8 KV heads of 128, on one H100. Decode, 8
  // sequences: 32,768 query values and 8,192 key values per layer.
  const ModelSpec m = test::model("llama-3.1-8b");
  const HardwareSpec h100 = load_gpu("h100");
  const SequenceGroup decode8{8, 1, 4095};
  const StepResult none = gqa_step(m, h100, Phase::decode, decode8, KvDtype::bf16, 0, 0, false);
  const StepRow* base = row(none, StepComponent::elementwise);
  REQUIRE(base);
  CHECK_FALSE(has_op(*base, OpId::rope));
  CHECK_FALSE(has_op(*base, OpId::rope_kv_append));
  // vLLM and SGLang (2): a rotary kernel in place on Q and K (40,960 values read and written, 2 B
  // each: 163,840 B), then the cache write (K and V read, 32,768 B, and stored in bf16, 32,768 B).
  const StepResult two = gqa_step(m, h100, Phase::decode, decode8, KvDtype::bf16, 0, 2, false);
  const StepRow* e2 = row(two, StepComponent::elementwise);
  CHECK(e2->bytes.value - base->bytes.value == Approx(32 * (163840.0 + 65536)));
  CHECK(e2->flops.value - base->flops.value == Approx(32 * 3 * 40960.0));
  CHECK(has_op(*e2, OpId::rope));
  CHECK(has_op(*e2, OpId::kv_store));
  CHECK(two.step_time.value > none.step_time.value);
  // SGLang (3): the same rotary kernel, then K and V stored by a kernel each: the same bytes.
  const StepResult three = gqa_step(m, h100, Phase::decode, decode8, KvDtype::bf16, 0, 3, false);
  const StepRow* e3 = row(three, StepComponent::elementwise);
  CHECK(e3->bytes.value == Approx(e2->bytes.value));
  CHECK(has_op(*e3, OpId::kv_store));
  // TensorRT-LLM (1): one kernel reading Q, K and V (98,304 B) and writing Q back with K and V
  // stored (98,304 B). At 4,096 keys its launch is XQA's HMMA kernel over a bf16 cache, which leaves
  // both to that kernel: it runs.
  const StepResult one = gqa_step(m, h100, Phase::decode, decode8, KvDtype::bf16, 0, 1, true);
  const StepRow* e1 = row(one, StepComponent::elementwise);
  CHECK(e1->bytes.value - base->bytes.value == Approx(32 * 196608.0));
  CHECK(has_op(*e1, OpId::rope_kv_append));
  CHECK_FALSE(has_op(*e1, OpId::kv_store));
  // Over an fp8 cache: on Hopper XQA's QGMMA kernel rotates and appends itself, so nothing is added;
  // on Blackwell TRTLLM-GEN does not, and the kernel stores K and V at 1 B (16,384 B less per layer).
  const StepResult h_fp8 = gqa_step(m, h100, Phase::decode, decode8, KvDtype::fp8, 0, 1, true);
  const StepResult h_fp8_none = gqa_step(m, h100, Phase::decode, decode8, KvDtype::fp8, 0, 0, false);
  CHECK(row(h_fp8, StepComponent::elementwise)->bytes.value == Approx(row(h_fp8_none, StepComponent::elementwise)->bytes.value));
  CHECK_FALSE(has_op(*row(h_fp8, StepComponent::elementwise), OpId::rope_kv_append));
  const HardwareSpec b200 = load_gpu("b200");
  const StepResult b_fp8 = gqa_step(m, b200, Phase::decode, decode8, KvDtype::fp8, 0, 1, true);
  const StepResult b_fp8_none = gqa_step(m, b200, Phase::decode, decode8, KvDtype::fp8, 0, 0, false);
  CHECK(row(b_fp8, StepComponent::elementwise)->bytes.value - row(b_fp8_none, StepComponent::elementwise)->bytes.value == Approx(32 * (196608.0 - 16384)));
  // One sequence of 2 keys on H100 over a bf16 cache: 8 XQA blocks, too few (a quarter of 132 SMs),
  // so TensorRT-LLM launches MMHA, which rotates and appends itself.
  const SequenceGroup tiny{1, 1, 1};
  CHECK(row(gqa_step(m, h100, Phase::decode, tiny, KvDtype::bf16, 0, 1, true), StepComponent::elementwise)->bytes.value ==
        Approx(row(gqa_step(m, h100, Phase::decode, tiny, KvDtype::bf16, 0, 0, false), StepComponent::elementwise)->bytes.value));
  CHECK(row(gqa_step(m, h100, Phase::decode, tiny, KvDtype::bf16, 0, 1, false), StepComponent::elementwise)->bytes.value >
        row(gqa_step(m, h100, Phase::decode, tiny, KvDtype::bf16, 0, 0, false), StepComponent::elementwise)->bytes.value);
  // A speculative step's two query tokens per sequence run XQA's spec-decoding kernel, which leaves
  // RoPE to the kernel before it even over an fp8 cache on Hopper: 16 tokens, 15,360 B fewer per layer
  // than the bf16 cache's 2 x 196,608 (K and V stored at 1 byte).
  const SequenceGroup spec{8, 2, 4094};
  CHECK(row(gqa_step(m, h100, Phase::decode, spec, KvDtype::fp8, 0, 1, true), StepComponent::elementwise)->bytes.value -
            row(gqa_step(m, h100, Phase::decode, spec, KvDtype::fp8, 0, 0, false), StepComponent::elementwise)->bytes.value ==
        Approx(32 * (2 * 196608.0 - 32768)));
  // Prefill takes the prefill count: 2,048 prompt tokens, two kernels, 256 times the decode step's
  // 8 tokens; the decode count does not apply.
  const SequenceGroup prompt{1, 2048, 0};
  const double p0 = row(gqa_step(m, h100, Phase::prefill, prompt, KvDtype::bf16, 0, 2, true), StepComponent::elementwise)->bytes.value;
  const double p2 = row(gqa_step(m, h100, Phase::prefill, prompt, KvDtype::bf16, 2, 0, false), StepComponent::elementwise)->bytes.value;
  CHECK(p2 - p0 == Approx(256 * 32 * (163840.0 + 65536)));
  // MLA models run their own glue whatever the counts.
  const ModelSpec ds = test::model("deepseek-v3");
  const HardwareSpec h200 = load_gpu("h200");
  CHECK(row(gqa_step(ds, h200, Phase::decode, decode8, KvDtype::bf16, 2, 2, false), StepComponent::elementwise)->bytes.value ==
        row(gqa_step(ds, h200, Phase::decode, decode8, KvDtype::bf16, 0, 0, false), StepComponent::elementwise)->bytes.value);
}

TEST_CASE("Worked example: gpt-oss-20b's sliding-window layers run MMHA and fuse the RoPE, its full layers run XQA and do not", "[serving]") {
  // 24 layers alternating a 128-key window and full attention, 64 query heads over 8 KV heads of 64.
  // One sequence at 4,096 keys on H100 over a bf16 cache: the full layers' XQA blocks, 8 x 32 = 256,
  // times 4 reach a quarter of the 132 SMs (XQA, which leaves the RoPE to the kernel before it); the
  // window's 8 x 1 do not (MMHA, which rotates and appends itself). So 12 layers run the kernel: per
  // layer 4,096 query and 512 key values, 10,240 B read and 8,192 + 2,048 written.
  const ModelSpec m = test::model("gpt-oss-20b");
  const HardwareSpec h100 = load_gpu("h100");
  const SequenceGroup one{1, 1, 4095};
  const double with = row(gqa_step(m, h100, Phase::decode, one, KvDtype::bf16, 0, 1, true), StepComponent::elementwise)->bytes.value;
  const double without = row(gqa_step(m, h100, Phase::decode, one, KvDtype::bf16, 0, 0, false), StepComponent::elementwise)->bytes.value;
  CHECK(with - without == Approx(12 * 20480.0));
  // Without the fusing rule every layer runs it.
  const double all = row(gqa_step(m, h100, Phase::decode, one, KvDtype::bf16, 0, 1, false), StepComponent::elementwise)->bytes.value;
  CHECK(all - without == Approx(24 * 20480.0));
}

TEST_CASE("TensorRT-LLM 0.5's profile: no XQA, so a GQA decode step runs MMHA, which rotates and appends itself", "[serving][engine]") {
  const ModelSpec m = test::model("llama-2-70b-hf");
  // 0.5.0 to the next profile (1.0.0) read it; 1.0.0 on has XQA (the key's default).
  const StepEngine old = load_step_engine("trtllm@0.5.0", m);
  CHECK_FALSE(old.overheads.gqa_decode.xqa);
  CHECK(old.overheads.source.find("trtllm-0.5.0.json") != std::string::npos);
  CHECK_FALSE(load_step_engine("trtllm@0.7.1", m).overheads.gqa_decode.xqa);
  CHECK(load_step_engine("trtllm@1.0.0", m).overheads.gqa_decode.xqa);
  CHECK(load_step_engine("trtllm", m).overheads.gqa_decode.xqa);
  CHECK(load_step_engine("sglang", m).overheads.gqa_decode.xqa);
  // Llama-2-70B at TP4 on H100 (16 query heads over 2 KV heads per rank), 64 sequences at 3,000 keys
  // over a bf16 cache, under H100's calibrated profile: XQA's 128 blocks, or MMHA's 1,024 (its
  // FLOPs on CUDA cores). 1.x runs the RoPE + KV-append kernel before XQA; MMHA does both itself.
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  auto decode = [&](const StepEngine& e) { return engine_decode(m, hw, rf, 4, e); };
  const StepResult v05 = decode(old), v10 = decode(load_step_engine("trtllm@1.0.0", m));
  CHECK(has_op(*row(v10, StepComponent::elementwise), OpId::rope_kv_append));
  CHECK_FALSE(has_op(*row(v05, StepComponent::elementwise), OpId::rope_kv_append));
  const auto says_mmha = [](const StepResult& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.find("the engine has no XQA") != std::string::npos; });
  };
  CHECK(says_mmha(v05));
  CHECK_FALSE(says_mmha(v10));
  // The attention: each layer's op timed as MMHA's launch.
  Roofline no_xqa = rf;
  no_xqa.decode.xqa = false;
  const CostStudy st = cost_study(m, [&] {
    Workload w;
    w.par = Parallelism{4, 1, 1};
    w.groups = {SequenceGroup{64, 1, 2999}};
    w.projections = true;
    return w;
  }(), rf, std::nullopt, {});
  double mmha = 0, xqa = 0;
  REQUIRE(st.paths.size() == 1);  // a GQA model: the standard path alone
  for (const OpRow& r : st.paths.front().ops) {
    if (r.op.kind() != OpKind::attention) continue;
    REQUIRE(r.op.tiling.decode_kernel);
    CHECK_FALSE(launch_shape(r.op.tiling, 132).mmha);
    REQUIRE(as_launched(r.op, no_xqa).has_value());
    CHECK(launch_shape(as_launched(r.op, no_xqa)->tiling, 132).mmha);
    mmha += op_time(r.op, no_xqa).time.value * static_cast<double>(r.layers);
    xqa += op_time(r.op, rf).time.value * static_cast<double>(r.layers);
  }
  CHECK(row(v05, StepComponent::attention_core)->time.value == Approx(mmha).epsilon(1e-9));
  CHECK(row(v10, StepComponent::attention_core)->time.value == Approx(xqa).epsilon(1e-9));
  CHECK(mmha > 2 * xqa);
}

TEST_CASE("Every bundled model: an engine without XQA changes only a GQA decode step's attention and the kernels around it", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (const ModelSpec& m : test::all_models()) {
    INFO(m.name);
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      auto step = [&](bool xqa) {
        StepRequest req = plain_request(m, hw, phase, Parallelism{1, 1, 1}, phase == Phase::decode ? SequenceGroup{16, 1, 2047} : SequenceGroup{2, 512, 0});
        req.overheads.gqa_rope_kernels_decode = 1;
        req.overheads.gqa_decode_kernel_fuses_rope = true;
        req.overheads.gqa_decode.xqa = xqa;
        return step_time(m, hw, rf, req);
      };
      check_only_gqa_decode_moves(m, phase, step(false), step(true));
    }
  }
}

TEST_CASE("TensorRT-LLM 0.8's profile: XQA by default for head groups of 8 only, MMHA for the others", "[serving][engine]") {
  const ModelSpec llama70 = test::model("llama-2-70b-hf"), mistral = test::model("mistral-7b-v0.1");
  const StepEngine v08 = load_step_engine("trtllm@0.8.0", llama70);
  CHECK(v08.overheads.gqa_decode.xqa);
  CHECK(v08.overheads.gqa_decode.xqa_only_group == 8);
  CHECK(v08.overheads.source.find("trtllm-0.8.0.json") != std::string::npos);
  CHECK(load_step_engine("trtllm@0.9.0", llama70).overheads.gqa_decode.xqa_only_group == 8);
  CHECK(load_step_engine("trtllm@1.0.0", llama70).overheads.gqa_decode.xqa_only_group == 0);  // every group
  CHECK_FALSE(load_step_engine("trtllm@0.7.1", llama70).overheads.gqa_decode.xqa);
  // 64 sequences at 3,000 keys over a bf16 cache on H100: Llama-2-70B at TP4 (16 query heads over 2
  // KV heads a rank, a group of 8) runs XQA under 0.8 as under 1.0; Mistral-7B at TP1 (32 over 8, a
  // group of 4) runs MMHA under 0.8 as under 0.5, and XQA under 1.0.
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  auto decode = [&](const ModelSpec& m, std::int64_t tp, const std::string& engine) { return engine_decode(m, hw, rf, tp, load_step_engine(engine, m)); };
  const auto attention = [](const StepResult& r) { return row(r, StepComponent::attention_core)->time.value; };
  const auto says_group = [](const StepResult& r) {
    return std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.find("take 8 query heads per KV head only (gqa_decode_xqa_group), each rank here 4") != std::string::npos; });
  };
  const StepResult l08 = decode(llama70, 4, "trtllm@0.8.0"), l10 = decode(llama70, 4, "trtllm@1.0.0"), l05 = decode(llama70, 4, "trtllm@0.5.0");
  // Over a bf16 cache 0.8's XQA is 1.0's but for multi-block mode, off in 0.8.
  StepEngine v10_one_block = load_step_engine("trtllm@1.0.0", llama70);
  v10_one_block.overheads.gqa_decode.multi_block = false;
  CHECK(attention(l08) == Approx(attention(engine_decode(llama70, hw, rf, 4, v10_one_block))).epsilon(1e-12));
  CHECK(attention(l08) != Approx(attention(l10)).epsilon(1e-6));
  CHECK(attention(l05) > 2 * attention(l08));
  CHECK_FALSE(says_group(l08));
  const StepResult m08 = decode(mistral, 1, "trtllm@0.8.0"), m10 = decode(mistral, 1, "trtllm@1.0.0"), m05 = decode(mistral, 1, "trtllm@0.5.0");
  CHECK(attention(m08) == Approx(attention(m05)).epsilon(1e-12));
  CHECK(attention(m08) > 1.5 * attention(m10));
  CHECK(says_group(m08));
  CHECK_FALSE(says_group(m10));
  // The group is each rank's: Llama-2-70B at TP16 holds 4 query heads and one replicated KV head a
  // rank, a group of 4, so MMHA runs and the note says so (at TP4, 16 over 2: XQA, no note).
  const StepResult l08tp16 = decode(llama70, 16, "trtllm@0.8.0");
  CHECK(says_group(l08tp16));
  // An MHA model (Llama-2-7B, a group of 1) runs MMHA under every version: no note, though 0.8's
  // launch differs from 1.0's (no multi-block split at 3,000 keys).
  const StepResult mha08 = decode(test::model("llama-2-7b-hf"), 1, "trtllm@0.8.0");
  CHECK(std::none_of(mha08.notes.begin(), mha08.notes.end(), [](const std::string& n) { return n.find("gqa_decode_xqa_group") != std::string::npos; }));
  CHECK(attention(l08tp16) > attention(decode(llama70, 16, "trtllm@1.0.0")));
  // The op itself: MMHA's launch where the group is not the one XQA takes.
  Roofline only8 = rf;
  only8.decode.xqa_only_group = 8;
  Op op;
  op.tiling.decode_kernel = true;
  op.tiling.xqa_group = true;
  op.tiling.head_group = 4;
  CHECK_FALSE(xqa_takes_group(only8, op.tiling));
  REQUIRE(as_launched(op, only8).has_value());
  CHECK_FALSE(as_launched(op, only8)->tiling.xqa_group);
  op.tiling.head_group = 8;
  CHECK(xqa_takes_group(only8, op.tiling));
  CHECK_FALSE(as_launched(op, only8).has_value());
  CHECK(xqa_takes_group(rf, op.tiling));  // no group named: every one
}

TEST_CASE("TensorRT-LLM 0.8's XQA generation: Ampere-style on Hopper, chosen by its blocks alone, one block per sequence and KV head", "[serving][engine]") {
  const ModelSpec llama70 = test::model("llama-2-70b-hf");
  // The keys: 0.5 and 0.8 (and the versions up to the next profile) false, 1.0 true.
  for (const char* v : {"trtllm@0.5.0", "trtllm@0.8.0", "trtllm@0.9.0"}) {
    INFO(v);
    const StepOverheads o = load_step_engine(v, llama70).overheads;
    CHECK_FALSE(o.gqa_decode.xqa_hopper_kernel);
    CHECK_FALSE(o.gqa_decode.xqa_fp8_forced);
    CHECK_FALSE(o.gqa_decode.multi_block);
  }
  for (const char* v : {"trtllm@1.0.0", "trtllm", "sglang", "vllm"}) {
    INFO(v);
    const StepOverheads o = load_step_engine(v, llama70).overheads;
    CHECK(o.gqa_decode.xqa_hopper_kernel);
    CHECK(o.gqa_decode.xqa_fp8_forced);
    CHECK(o.gqa_decode.multi_block);
  }
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  Roofline v08 = rf;
  v08.decode.xqa_only_group = 8;
  v08.decode.xqa_hopper_kernel = false;
  v08.decode.xqa_fp8_forced = false;
  v08.decode.multi_block = false;
  // Llama-2-70B at TP4 (2 KV heads a rank, a group of 8), an fp8 cache, on H100's 132 SMs.
  const auto attention_op = [&](SequenceGroup g) {
    Workload w;
    w.par = Parallelism{4, 1, 1};
    w.groups = {g};
    w.kv = KvDtype::fp8;
    const CostStudy st = cost_study(llama70, w, rf, std::nullopt, {});
    REQUIRE(st.paths.size() == 1);
    for (const OpRow& r : st.paths.front().ops)
      if (r.op.kind() == OpKind::attention) return r.op;
    FAIL("no attention op");
    return Op{};
  };
  // One sequence at 4,096 keys. 1.0: the fp8 cache sends it to XQA, 2 blocks split 16 ways
  // (multi-block), 32 CTAs. 0.8: XQA's test counts its 2 blocks (4 x 2 < 132 SMs), so MMHA runs, one
  // block per query head, unsplit: 16 CTAs.
  const Op one = attention_op(SequenceGroup{1, 1, 4095});
  REQUIRE(one.tiling.decode_kernel);
  REQUIRE(one.fp8_cache);
  CHECK(one.tiling.split_k == 16);
  CHECK_FALSE(as_launched(one, rf).has_value());
  const LaunchShape xqa = launch_shape(one.tiling, 132);
  CHECK_FALSE(xqa.mmha);
  CHECK(xqa.ctas == 32);
  const std::optional<Op> one08 = as_launched(one, v08);
  REQUIRE(one08.has_value());
  CHECK_FALSE(one08->tiling.xqa_fp8_cache);
  CHECK(one08->tiling.split_k == 1);
  CHECK(one08->tiling.mmha_key_tiles == 1);
  CHECK(one08->tiling.xqa_gain_blocks == 2);
  const LaunchShape mmha = launch_shape(one08->tiling, 132);
  CHECK(mmha.mmha);
  CHECK(mmha.ctas == 16);
  CHECK(one08->fp8_cache);  // MMHA's fp8-cache instantiation keeps the family's fp8-cache costs
  CHECK(op_time(one, v08).time.value > 2 * op_time(one, rf).time.value);
  // With multi-block mode on and 1.x's 128 keys a block (0.8 counted 512), XQA's test would count
  // 2 x 32 blocks: XQA again, Ampere-style.
  Roofline v08_split = v08;
  v08_split.decode.multi_block = true;
  const std::optional<Op> split = as_launched(one, v08_split);
  REQUIRE(split.has_value());
  CHECK_FALSE(launch_shape(split->tiling, 132).mmha);
  CHECK_FALSE(split->fp8_cache);
  // 64 sequences at 3,000 keys: 128 blocks reach a quarter of the SMs, so XQA under either, but 0.8's
  // is the Ampere-style kernel (the family's costs, not its fp8-cache pair) and unsplit.
  const Op many = attention_op(SequenceGroup{64, 1, 2999});
  const std::optional<Op> many08 = as_launched(many, v08);
  REQUIRE(many08.has_value());
  CHECK_FALSE(launch_shape(many08->tiling, 132).mmha);
  CHECK(launch_shape(many08->tiling, 132).ctas == 128);
  CHECK_FALSE(many08->fp8_cache);
  Op hmma = many;
  hmma.fp8_cache = false;
  hmma.tiling.split_k = 1;
  hmma.tiling.mmha_key_tiles = 1;
  hmma.tiling.xqa_gain_blocks = 128;
  hmma.tiling.xqa_fp8_cache = false;
  CHECK(op_time(many, v08).time.value == Approx(op_time(hmma, rf).time.value).epsilon(1e-12));
  // The step: 0.8 runs the RoPE + KV-append kernel before that XQA launch, 1.0's QGMMA kernel does both.
  auto step = [&](const std::string& engine) { return engine_decode(llama70, hw, rf, 4, load_step_engine(engine, llama70), KvDtype::fp8); };
  const StepResult s08 = step("trtllm@0.8.0"), s10 = step("trtllm@1.0.0");
  CHECK(has_op(*row(s08, StepComponent::elementwise), OpId::rope_kv_append));
  CHECK_FALSE(has_op(*row(s10, StepComponent::elementwise), OpId::rope_kv_append));
  CHECK(row(s08, StepComponent::attention_core)->time.value == Approx(op_time(many, v08).time.value * 80).epsilon(1e-9));
  // A speculative step (several query tokens) is XQA's multi-query kernel under either: untouched.
  Op spec = many;
  spec.tiling.multi_query = true;
  CHECK_FALSE(as_launched(spec, v08).has_value());
}

TEST_CASE("Every bundled model: each XQA-generation key off changes only a GQA decode step's attention and the kernels around it", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (const ModelSpec& m : test::all_models()) {
    INFO(m.name);
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      for (KvDtype kv : {KvDtype::bf16, KvDtype::fp8}) {
        auto step = [&](int off) {
          StepRequest req = plain_request(m, hw, phase, Parallelism{1, 1, 1}, phase == Phase::decode ? SequenceGroup{4, 1, 4095} : SequenceGroup{2, 512, 0});
          req.w.kv = kv;
          req.overheads.gqa_rope_kernels_decode = 1;
          req.overheads.gqa_decode_kernel_fuses_rope = true;
          req.overheads.gqa_decode.xqa_hopper_kernel = off != 0;
          req.overheads.gqa_decode.xqa_fp8_forced = off != 1;
          req.overheads.gqa_decode.multi_block = off != 2;
          return step_time(m, hw, rf, req);
        };
        const StepResult all = step(-1);
        for (int off = 0; off < 3; ++off) {
          INFO("key off: " << off);
          const StepResult r = step(off);
          check_only_gqa_decode_moves(m, phase, r, all);
          // Over a bf16 cache neither the Hopper kernel nor the fp8 rule applies.
          if (kv == KvDtype::bf16 && off < 2) CHECK(r.step_time.value == Approx(all.step_time.value).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("Every bundled model: XQA for its own head group only times as XQA for every group, for another group as no XQA", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (const ModelSpec& m : test::all_models()) {
    INFO(m.name);
    const double group = m.kv_heads > 0 ? std::max(1.0, static_cast<double>(m.heads) / static_cast<double>(m.kv_heads)) : 1.0;
    auto step = [&](bool xqa, double only) {
      StepRequest req = plain_request(m, hw, Phase::decode, Parallelism{1, 1, 1}, SequenceGroup{16, 1, 2047});
      req.overheads.gqa_decode.xqa = xqa;
      req.overheads.gqa_decode.xqa_only_group = only;
      return step_time(m, hw, rf, req);
    };
    const StepResult every = step(true, 0), own = step(true, group), other = step(true, group + 1), none = step(false, 0);
    for (int i = 0; i < kStepComponentCount; ++i) {
      const auto c = static_cast<StepComponent>(i);
      INFO(to_string(c));
      const auto time_of = [c](const StepResult& r) {
        const StepRow* x = row(r, c);
        return x ? x->time.value : 0.0;
      };
      CHECK(time_of(own) == Approx(time_of(every)).epsilon(1e-12));
      CHECK(time_of(other) == Approx(time_of(none)).epsilon(1e-12));
    }
    CHECK(own.step_time.value == Approx(every.step_time.value).epsilon(1e-12));
    CHECK(other.step_time.value == Approx(none.step_time.value).epsilon(1e-12));
  }
}

TEST_CASE("Every bundled GQA model: the RoPE kernels add their bytes once per layer, per rank, and never save time", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100");
  for (const ModelSpec& m : test::all_models()) {
    if (m.is_mla()) continue;
    INFO(m.name);
    for (std::int64_t tp : {1, 2}) {
      if (!check_layout(m, Parallelism{tp, 1, 1}).ok()) continue;
      for (Phase phase : {Phase::decode, Phase::prefill}) {
        const SequenceGroup g = phase == Phase::decode ? SequenceGroup{16, 1, 2047} : SequenceGroup{2, 512, 0};
        const double tokens = phase == Phase::decode ? 16 : 1024;
        const std::int64_t kvh = kv_heads_per_rank(m, tp);
        const double cache = static_cast<double>(gqa_kv_bytes_per_token_per_layer(kvh, m.head_dim, KvDtype::fp8).total().value);
        const StepResult base = gqa_step(m, hw, phase, g, KvDtype::fp8, 0, 0, false, tp);
        for (int kernels : {1, 2, 3}) {
          INFO(kernels);
          const StepResult with = gqa_step(m, hw, phase, g, KvDtype::fp8, kernels, kernels, false, tp);
          double per_layer = 0;
          for (const Op& op : gqa_rope_and_cache_write(kernels, tokens, static_cast<double>(m.heads) / static_cast<double>(tp), static_cast<double>(kvh),
                                                       static_cast<double>(m.head_dim), 2, cache))
            per_layer += op.bytes_read.value + op.bytes_written.value;
          CHECK(row(with, StepComponent::elementwise)->bytes.value - row(base, StepComponent::elementwise)->bytes.value ==
                Approx(per_layer * static_cast<double>(m.num_layers())));
          CHECK(with.step_time.value >= base.step_time.value);
        }
      }
    }
  }
}

TEST_CASE("Worked example: the expanded path's keys are assembled, each head's K_nope copied beside its RoPE part", "[serving]") {
  // DeepSeek-V3 prefill on 8 H200s, DP8: 1,024 tokens per rank. kv_b_proj writes 128 heads x (128
  // K_nope + 128 V) per token; the expanded path copies K_nope into the 192-wide keys: per layer
  // 1,024 x 128 x 128 bf16 values read and as many written, over all 61 layers. A rule that runs the
  // same batch absorbed (the latent read as it is) has every other small kernel and not the copy.
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h200");
  auto other_bytes = [&](double threshold, std::string& path, double chunk = 0) {
    StepRequest req = plain_request(m, hw, Phase::prefill, Parallelism{1, 8, 8}, SequenceGroup{64, 128, 0});
    EnginePolicy rule;
    rule.rule = ExtendRule::query_split;  // Q <= threshold absorbs
    rule.threshold = threshold;
    rule.chunk_tokens = chunk;
    req.policy = rule;
    const StepResult r = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
    path = r.attention_path;
    const StepRow* other = row(r, StepComponent::elementwise);
    REQUIRE(other);
    CHECK((std::find(other->ops.begin(), other->ops.end(), OpId::k_nope_copy) != other->ops.end()) == (path != "absorb"));
    return other->bytes.value;
  };
  std::string expanded, absorbed;
  const double with_copy = other_bytes(0, expanded), without = other_bytes(1e9, absorbed);
  REQUIRE(expanded == "expand");
  REQUIRE(absorbed == "absorb");
  CHECK(with_copy - without == Approx(61 * 2 * 1024.0 * 128 * 128 * 2).epsilon(1e-12));  // 4,093,640,704 B
  // Expanded 256 keys at a time, the copies together move the same bytes.
  std::string chunked;
  CHECK(other_bytes(0, chunked, 256) - without == Approx(61 * 2 * 1024.0 * 128 * 128 * 2).epsilon(1e-12));
  CHECK(chunked == "chunked");
}

TEST_CASE("Worked example: expert-parallel prefill scatters tokens to expert rows and gathers them back", "[serving]") {
  // DeepSeek-V3 prefill on 8 H200s, EP8 DP8: 64 sequences of 128 tokens, 1,024 tokens per rank. Each
  // rank receives 1,024·8 = 8,192 (token, expert) pairs; a token reaches a rank holding 32 of the 256
  // experts with probability p = 1 − C(224, 8) / C(256, 8), so 8·1,024·p tokens arrive once each.
  const ModelSpec m = test::model("deepseek-v3");
  const StepResult r = sol_step(m, "h200", Parallelism{1, 8, 8}, 64, 128, Phase::prefill);
  const StepRow* moe = row(r, StepComponent::routed_experts);
  REQUIRE(moe);
  CHECK(std::find(moe->ops.begin(), moe->ops.end(), OpId::expert_scatter) != moe->ops.end());
  CHECK(std::find(moe->ops.begin(), moe->ops.end(), OpId::expert_gather) != moe->ops.end());
  const double pairs = 8192, recv = 8 * 1024 * group_hit_probability(256, 32, 8);
  const double token_fp8 = 7168 * (1 + 4.0 / 128);  // fp8 values and a scale per 128, as dispatched
  const double wb = 1 + 4.0 / (128 * 128);
  const double touched = experts_touched(32, pairs);
  const double grouped = grouped_gemm_op(OpId::expert_gate_up, pairs, touched, 7168, 4096, wb, 2).bytes().value +
                         grouped_gemm_op(OpId::expert_down, pairs, touched, 2048, 7168, wb, 2).bytes().value;
  const double scatter = (recv + pairs) * token_fp8, gather = (pairs + recv) * 7168 * 2;
  CHECK(moe->bytes.value == Approx(58 * (grouped + scatter + gather)).epsilon(1e-9));
  // Decode's low-latency all-to-all delivers the expert layout itself: no scatter or gather.
  const StepResult d = sol_step(m, "h200", Parallelism{1, 8, 8}, 64, 4096);
  const StepRow* dm = row(d, StepComponent::routed_experts);
  REQUIRE(dm);
  CHECK(std::find(dm->ops.begin(), dm->ops.end(), OpId::expert_scatter) == dm->ops.end());
}

TEST_CASE("Routed experts take the grouped-GEMM family's calibrated time: H800, worked from the profile", "[serving]") {
  // DeepSeek-V3 decode on one H800, 128 sequences: 1,024 pairs over 251.35 touched experts per MoE
  // layer, gate/up [7168, 4096] and down [2048, 7168] fp8 block-scaled, each at
  // fixed + max(F / (fp8 peak·η_c·w), B / (bandwidth·η_m·w)) under the H800 profile's grouped_gemm.
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  const auto profile = efficiency_for(hw, bundled_efficiency());
  REQUIRE(profile);
  const auto& k = profile->kernel(KernelFamily::grouped_gemm);
  REQUIRE(k);
  StepRequest req;
  req.phase = Phase::decode;
  req.weights = default_weight_plan(m);
  req.w.groups = {SequenceGroup{128, 1, 4095}};
  req.gpus_per_node = 1;
  req.links = links_for(hw, StepOverheads{});
  const StepResult r = step_time(m, hw, roofline_for(hw, DType::bf16, *profile), req);
  const double touched = 256 * (1 - std::pow(255.0 / 256, 1024));
  const double wb = 1 + 4.0 / (128 * 128);
  double per_layer = 0;
  for (auto [in, out] : {std::pair{7168.0, 4096.0}, std::pair{2048.0, 7168.0}}) {
    Op op = grouped_gemm_op(OpId::expert_gate_up, 1024, touched, in, out, wb, 2);
    op.fp8 = true;
    per_layer += calibrated_time(op, *k, *hw.peak_flops(DType::fp8), hw.memory_bandwidth, static_cast<double>(hw.sm_count), hw.sm_clock_hz, true, Bytes{0}).time().value;
  }
  const StepRow* moe = row(r, StepComponent::routed_experts);
  REQUIRE(moe);
  CHECK(moe->time.value == Approx(58 * per_layer).epsilon(1e-9));
  CHECK(moe->time.value > moe->bound.value);  // slower than speed of light
}

TEST_CASE("fp8 weights with per-tensor scales: fp8 GEMMs at the family's per-tensor efficiency, block-scaled at its fp8 one", "[serving]") {
  // Llama-3.1-8B prefill on H100 under its calibrated profile: the MLP's GEMMs and the attention
  // projections (QKV, output) are compute-bound, so their times differ by the efficiencies and peaks
  // (the bytes differ only by the scales).
  const ModelSpec m = test::model("llama-3.1-8b");
  const HardwareSpec hw = load_gpu("h100");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  const KernelEfficiency gemm = *rf.kernels[static_cast<std::size_t>(KernelFamily::gemm)];
  REQUIRE(gemm.eta_compute_fp8);
  REQUIRE(gemm.eta_compute_fp8_tensor);
  for (const StepComponent c : {StepComponent::dense_mlp, StepComponent::attention_projections}) {
    auto time_of = [&](WeightDtype d, std::optional<WeightDtype> attention = std::nullopt) {
      StepRequest req;
      req.phase = Phase::prefill;
      set_step_weights(req, m, d);  // linear and attention weights in d
      if (attention) req.w.weights = *attention;  // a checkpoint that keeps attention dense
      req.w.groups = {SequenceGroup{8, 4096, 0}};
      req.gpus_per_node = 1;
      req.links = links_for(hw, StepOverheads{});
      const StepResult r = step_time(m, hw, rf, req);
      const StepRow* part = row(r, c);
      REQUIRE(part);
      return part->time.value;
    };
    INFO(to_string(c));
    const double block = time_of(WeightDtype::fp8), tensor = time_of(WeightDtype::fp8_tensor), bf16 = time_of(WeightDtype::bf16);
    CHECK(tensor / block == Approx(*gemm.eta_compute_fp8 / *gemm.eta_compute_fp8_tensor).epsilon(0.02));
    // Per-tensor fp8 at the fp8 peak (twice bf16's on H100) with its own efficiency.
    CHECK(tensor / bf16 == Approx(gemm.eta_compute / (2 * *gemm.eta_compute_fp8_tensor)).epsilon(0.02));
    // fp8 MLP weights beside dense attention: the projections follow the attention weights.
    const double mixed = time_of(WeightDtype::fp8_tensor, WeightDtype::bf16);
    CHECK(mixed == Approx(c == StepComponent::attention_projections ? bf16 : tensor).epsilon(1e-9));
  }
}

TEST_CASE("Worked example: TP all-reduce and EP all-to-all bytes", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  // TP8 decode, 64 sequences: a ring all-reduce sends 2·7/8·64·7168·2 B per call, two calls per layer
  // (after attention and after the MLP), 61 layers; the logits gather 7/8·64·129280·4 B once.
  const StepResult tp = sol_step(m, "h200", Parallelism{8, 1, 1}, 64, 4096);
  const StepRow* ar = row(tp, StepComponent::tp_allreduce);
  REQUIRE(ar);
  CHECK(ar->link_bytes.value == Approx(2 * 61 * (2.0 * 7 / 8 * 64 * 7168 * 2) + 7.0 / 8 * 64 * 129280 * 4));
  // NVLink at 450 GB/s per direction (H200 file), speed of light.
  CHECK(ar->time.value == Approx(ar->link_bytes.value / 450e9));
  CHECK(ar->bound_by == "nvlink");

  // EP16 over two 8-GPU nodes, DP16 attention, decode (low latency): 16 tokens per rank, each to 8
  // experts; 8/16 of them on the other node cross the network, 7/16 go over NVLink. fp8 dispatch
  // (7168 + 7168/128·4 B), bf16 combine (7168·2 B).
  const StepResult ep = sol_step(m, "h200", Parallelism{1, 16, 16}, 256, 4096);
  const StepRow* d = row(ep, StepComponent::ep_dispatch);
  const StepRow* c = row(ep, StepComponent::ep_combine);
  REQUIRE(d);
  REQUIRE(c);
  const double per_token = 7168 * (1 + 4.0 / 128);
  CHECK(d->link_bytes.value == Approx(58 * 16 * 8 * (8.0 / 16 + 7.0 / 16) * per_token));
  CHECK(c->link_bytes.value == Approx(58 * 16 * 8 * (8.0 / 16 + 7.0 / 16) * 7168 * 2));
  // The network (50 GB/s per GPU) is the bottleneck: time = network bytes / 50 GB/s.
  CHECK(d->time.value == Approx(58 * 16 * 8 * (8.0 / 16) * per_token / 50e9));
  CHECK(d->bound_by == "network");
  // Prefill (normal mode) deduplicates per node: a token crosses the network once if any of its 8
  // experts is on the other node.
  const StepResult pf = sol_step(m, "h200", Parallelism{1, 16, 16}, 16, 1024, Phase::prefill);
  const double hit = group_hit_probability(256, 128, 8);
  CHECK(row(pf, StepComponent::ep_dispatch)->time.value == Approx(58 * 1024 * 1 * hit * per_token / 50e9));
}

TEST_CASE("Worked example: the low-latency MoE path quantizes inside its kernels, the normal one in kernels of its own", "[serving]") {
  // DeepSeek-V3 (fp8), decode, 8 x H200 at EP8 DP8: 8 tokens per rank, 64 token-expert pairs, 58 MoE
  // layers. Normal mode quantizes the tokens before the dispatch (8 x 7,168 values) and the SwiGLU
  // output before the down GEMM (64 x 2,048), and its SwiGLU writes bf16; low-latency mode writes the
  // SwiGLU output in fp8 with its scales from the SwiGLU kernel itself. A quantized value: 2 B read,
  // 1 B and 4/128 B of scale written.
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h200");
  StepRequest req;
  req.w.par = Parallelism{1, 8, 8};
  req.weights = default_weight_plan(m);
  req.w.groups = {SequenceGroup{64, 1, 4095}};
  req.gpus_per_node = 8;
  req.links = links_for(hw, StepOverheads{});
  req.moe_imbalance = 1;
  StepRequest ll = req, normal = req;
  ll.ep_mode = EpMode::low_latency;
  normal.ep_mode = EpMode::normal;
  const Roofline rf = roofline_for(hw, DType::bf16, Efficiency{});
  const StepResult r_ll = step_time(m, hw, rf, ll), r_normal = step_time(m, hw, rf, normal);
  const StepRow* e_ll = row(r_ll, StepComponent::elementwise);
  const StepRow* e_normal = row(r_normal, StepComponent::elementwise);
  REQUIRE(e_ll);
  REQUIRE(e_normal);
  const double q8 = 2 + kBlockFp8ValueBytes;
  const double per_layer = 8 * 7168 * q8 + 64 * 2048 * q8 + 64 * 2048 * (2 - kBlockFp8ValueBytes);
  CHECK(e_normal->bytes.value - e_ll->bytes.value == Approx(58 * per_layer));
}

TEST_CASE("MTP: tokens per step 1 + accepted drafts, TPOT the step over them", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  StepRequest req;
  req.w.par = Parallelism{1, 1, 1};
  req.w.groups = {SequenceGroup{32, 2, 4094}};
  req.w.spec_tokens = 1;
  req.mtp_draft = 1;
  req.mtp_accept = 0.8;
  const StepResult r = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
  CHECK(r.output_tokens == Approx(32 * 1.8));
  CHECK(r.tpot.value == Approx(r.step_time.value / 1.8));
  const StepRow* mtp = row(r, StepComponent::mtp);
  REQUIRE(mtp);
  CHECK(mtp->layers == 1);
  // The module's own kernels: its norms (enorm, hnorm and the layer's) and the concatenation before
  // eh_proj, reported under mtp with its layer.
  for (OpId id : {OpId::mtp_concat, OpId::rms_norm, OpId::mtp_eh_proj}) CHECK(std::find(mtp->ops.begin(), mtp->ops.end(), id) != mtp->ops.end());
  // Two drafts: 1 + 0.8 + 0.64 tokens per step.
  req.mtp_draft = 2;
  req.w.groups = {SequenceGroup{32, 3, 4093}};
  const StepResult r2 = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
  CHECK(r2.output_tokens == Approx(32 * 2.44));
  CHECK(row(r2, StepComponent::mtp)->layers == 2);
}

TEST_CASE("Every bundled model: components add up, calibrated is no faster than speed of light, more is slower", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100");
  const Roofline cal = default_roofline(hw, DType::bf16, bundled_efficiency());
  const Roofline sol = speed_of_light(cal);
  for (const ModelSpec& m : test::all_models()) {
    INFO(m.name);
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      for (Parallelism par : {Parallelism{1, 1, 1}, Parallelism{2, 2, 1}, Parallelism{1, 4, m.moe ? 4 : 1}}) {
        if (!check_layout(m, par).ok()) continue;
        StepRequest req;
        req.phase = phase;
        req.w.par = par;
        req.gpus_per_node = 8;
        req.links = links_for(hw, StepOverheads{});
        req.overheads.per_step_decode = Seconds{1e-3};
        req.overheads.per_step_prefill = Seconds{2e-3};
        req.w.groups = {phase == Phase::decode ? SequenceGroup{16, 1, 2047} : SequenceGroup{4, 512, 0}};
        const StepResult a = step_time(m, hw, cal, req);
        const StepResult s = step_time(m, hw, sol, req);
        double sum = 0;
        for (const StepRow& r : a.rows) sum += r.time.value;
        CHECK(sum == Approx(a.compute.value + a.communication.value + a.overhead.value));
        CHECK(a.step_time.value == Approx(a.compute.value + a.communication.value + a.overhead.value));
        CHECK(a.overhead.value == (phase == Phase::decode ? 1e-3 : 2e-3));
        CHECK(a.step_time >= s.step_time);
        CHECK(s.step_time.value == Approx(s.step_bound.value + s.overhead.value));
        for (const StepRow& r : a.rows) CHECK(r.time.value >= r.bound.value * (1 - 1e-9));
        // Twice the batch costs more time, and no less throughput per GPU at speed of light in decode.
        StepRequest twice = req;
        twice.w.groups[0].count *= 2;
        const StepResult b = step_time(m, hw, cal, twice);
        CHECK(b.step_time > a.step_time);
        if (phase == Phase::decode) CHECK(step_time(m, hw, sol, twice).tokens_per_s_per_gpu >= s.tokens_per_s_per_gpu * (1 - 1e-9));
        CHECK(a.tokens_per_s_per_gpu == Approx((phase == Phase::decode ? a.output_tokens : a.input_tokens) / a.step_time.value / static_cast<double>(a.gpus)));
        // Under overlap, with the low-latency kernels' SM time, the rows still add up to compute and
        // communication, and the step is those less what the overlap hides.
        if (m.moe && par.ep > 1) {
          StepRequest o = req;
          o.two_batch_overlap = true;
          o.ll_sm_per_token = Seconds{1e-6};
          const StepResult t = step_time(m, hw, cal, o);
          double osum = 0;
          for (const StepRow& r : t.rows) osum += r.time.value;
          CHECK(osum == Approx(t.compute.value + t.communication.value + t.overhead.value));
          CHECK(t.step_time.value == Approx(t.compute.value + t.communication.value - t.overlap_saving.value + t.overhead.value));
          const StepRow* k = row(t, StepComponent::ep_kernels);
          CHECK((phase == Phase::decode) == (k != nullptr));  // decode splits 4 sequences per rank; prefill's 1 does not
          if (k) CHECK(k->time.value == Approx(t.comm_kernels_sm.value));
        }
      }
    }
  }
}

TEST_CASE("Two-batch overlap needs two sequences on a rank, and never adds time", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (std::int64_t per_rank : {1, 2, 3, 16}) {
    for (Phase phase : {Phase::prefill, Phase::decode}) {
      StepRequest req;
      req.phase = phase;
      req.w.par = Parallelism{1, 32, 32};
      req.weights = default_weight_plan(m);
      req.w.groups = {step_group(phase, 32 * per_rank, 4096, 0)};
      req.gpus_per_node = 8;
      req.links = links_for(hw, StepOverheads{});
      const StepResult off = step_time(m, hw, rf, req);
      req.two_batch_overlap = true;
      const StepResult on = step_time(m, hw, rf, req);
      INFO(per_rank << " per rank, " << to_string(phase));
      if (per_rank == 1) {
        CHECK(on.step_time.value == Approx(off.step_time.value));  // nothing to split
      } else {
        // Each layer takes at least the compute and the communication of both micro-batches.
        for (const LayerKindRow& k : on.layer_kinds) CHECK(k.time >= std::max(k.compute, k.communication));
      }
      CHECK(on.step_bound <= on.step_time);
    }
  }
}

TEST_CASE("SGLang's two-batch-overlap decode cost: added once per decode step that splits, never in prefill", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h100-sxm");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  StepRequest req;
  apply_step_engine(req, load_step_engine("sglang", m));
  // engines/sglang-0.5.4.json: 5 ms per decode step (InferSim's scheduler) and 4.986 ms more with
  // overlap (fitted on the LMSYS blog's decode sweep), 30 ms per prefill step.
  CHECK(req.overheads.per_step_decode.value == Approx(5e-3));
  CHECK(req.overheads.per_step_tbo_decode.value == Approx(4.986e-3));
  req.links = links_for(hw, req.overheads);
  req.w.par = Parallelism{1, 72, 72};
  req.weights = default_weight_plan(m);
  req.gpus_per_node = 8;
  req.two_batch_overlap = true;
  for (std::int64_t per_rank : {1, 2, 256})
    for (Phase phase : {Phase::prefill, Phase::decode}) {
      INFO(per_rank << " per rank, " << to_string(phase));
      req.phase = phase;
      req.w.groups = {step_group(phase, 72 * per_rank, 2048, 0)};
      const StepResult r = step_time(m, hw, rf, req);
      const double expected = phase == Phase::prefill ? 30e-3 : per_rank == 1 ? 5e-3 : 5e-3 + 4.986e-3;
      CHECK(r.overhead.value == Approx(expected));
      const StepRow* oh = row(r, StepComponent::overhead);
      REQUIRE(oh);
      CHECK(oh->time.value == Approx(expected));
    }
}

TEST_CASE("Worked example: SGLang's MoE imbalance by EP size, linear in ln EP between the chart's points", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const StepOverheads o = load_step_engine("sglang", m).overheads;
  // engines/sglang-0.5.4.json: [8, 1.060], [16, 1.109], [32, 1.250], [72, 1.235] (LMSYS's EPLB chart).
  REQUIRE(o.moe_imbalance_by_ep.size() == 4);
  CHECK(moe_imbalance_at(o, 1) == 1);
  CHECK(moe_imbalance_at(o, 8) == Approx(1.060));
  CHECK(moe_imbalance_at(o, 32) == Approx(1.250));
  // EP 4: from EP 1 (one rank, 1) to EP 8: 1 + 0.060 · ln 4 / ln 8 = 1.04.
  CHECK(moe_imbalance_at(o, 4) == Approx(1.04));
  // EP 24: 1.109 + 0.141 · ln 1.5 / ln 2 = 1.19348.
  CHECK(moe_imbalance_at(o, 24) == Approx(1.109 + 0.141 * std::log(1.5) / std::log(2.0)));
  // EP 48: 1.250 − 0.015 · ln 1.5 / ln 2.25 = 1.2425; past the last point the last value.
  CHECK(moe_imbalance_at(o, 48) == Approx(1.25 - 0.015 * std::log(1.5) / std::log(2.25)));
  CHECK(moe_imbalance_at(o, 144) == Approx(1.235));
  // A profile with one figure (TensorRT-LLM: 1.11) applies it at every EP size above 1.
  const StepOverheads t = load_step_engine("trtllm", m).overheads;
  CHECK(t.moe_imbalance_by_ep.empty());
  CHECK(moe_imbalance_at(t, 4) == Approx(1.11));
  CHECK(moe_imbalance_at(t, 256) == Approx(1.11));
  CHECK(moe_imbalance_at(t, 1) == 1);

  // The step uses the curve at its own EP size, and reports it; a given one wins; no EP, none.
  const HardwareSpec hw = load_gpu("h100-sxm");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  StepRequest req;
  apply_step_engine(req, load_step_engine("sglang", m));
  req.links = links_for(hw, req.overheads);
  req.weights = default_weight_plan(m);
  req.phase = Phase::prefill;
  for (std::int64_t ep : {16, 24, 32, 72}) {
    req.w.par = Parallelism{1, ep, ep};
    req.gpus_per_node = 8;
    req.w.groups = {step_group(Phase::prefill, ep * 4, 4096, 0)};
    INFO("EP" << ep);
    CHECK(step_time(m, hw, rf, req).moe_imbalance == Approx(moe_imbalance_at(req.overheads, static_cast<double>(ep))));
  }
  req.moe_imbalance = 1.5;
  CHECK(step_time(m, hw, rf, req).moe_imbalance == 1.5);
  req.w.par = Parallelism{8, 1, 1};
  req.w.groups = {step_group(Phase::prefill, 4, 4096, 0)};
  CHECK(step_time(m, hw, rf, req).moe_imbalance == 1);
}

TEST_CASE("Every bundled MoE model: the hottest rank's expert FLOPs and all-to-all bytes scale with the imbalance", "[serving][property]") {
  // Time is not monotone in the imbalance: a row tile more per expert can let split-K fill the SMs
  // (DeepSeek-V2-Lite, EP16, 64 requests per rank: routed experts 58.8 us per layer balanced, 52.3 us
  // at 2x). What the imbalance must do exactly is scale the busiest rank's work and traffic.
  const HardwareSpec hw = load_gpu("h100-sxm");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  auto sum = [](const StepResult& r, StepComponent c, bool link) {
    double x = 0;
    for (const StepRow& row : r.rows)
      if (row.component == c) x += link ? row.link_bytes.value : row.flops.value;
    return x;
  };
  for (const ModelSpec& m : test::all_models()) {
    if (!m.moe) continue;
    INFO(m.name);
    StepRequest req;
    apply_step_engine(req, load_step_engine("sglang", m));
    req.links = links_for(hw, req.overheads);
    req.gpus_per_node = 8;
    for (Phase phase : {Phase::decode, Phase::prefill}) {
      req.phase = phase;
      req.w.par = Parallelism{1, 16, 16};
      if (!check_layout(m, req.w.par).ok()) continue;
      req.w.groups = {step_group(phase, 16 * (phase == Phase::decode ? 64 : 2), 2048, 0)};
      req.moe_imbalance = 1.0;
      const StepResult even = step_time(m, hw, rf, req);
      for (double imb : {1.1, 1.25, 2.0}) {
        INFO(to_string(phase) << ", imbalance " << imb);
        req.moe_imbalance = imb;
        const StepResult r = step_time(m, hw, rf, req);
        CHECK(r.moe_imbalance == imb);
        CHECK(sum(r, StepComponent::routed_experts, false) == Approx(imb * sum(even, StepComponent::routed_experts, false)));
        for (StepComponent c : {StepComponent::ep_dispatch, StepComponent::ep_combine})
          CHECK(sum(r, c, true) == Approx(imb * sum(even, c, true)));
      }
      // The engine's own figure at EP16 lies between the balanced case and twice the mean.
      req.moe_imbalance.reset();
      const double own = step_time(m, hw, rf, req).moe_imbalance;
      CHECK(own > 1);
      CHECK(own < 2);
    }
  }
}

TEST_CASE("Low-latency overlap: the MTP layer's dispatch, experts and combine run in one chain, as the main layers' do", "[serving]") {
  // A network slow enough that the chain binds (10 GB/s per GPU between nodes): the MTP module's MoE
  // layer takes at least its all-to-all plus its routed experts, which the main model's MoE layer
  // runs on the same tokens in a step without MTP. (Its experts are reported under mtp; the chain
  // once left them out and took the all-to-all alone.)
  const ModelSpec m = test::model("deepseek-v3");
  HardwareSpec hw = load_gpu("h100-sxm");
  hw.scale_out_bandwidth_per_direction = BytesPerSecond{10e9};
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  StepRequest req;
  apply_step_engine(req, load_step_engine("sglang", m));
  req.links = links_for(hw, req.overheads);
  req.w.par = Parallelism{1, 72, 72};
  req.weights = default_weight_plan(m);
  req.gpus_per_node = 8;
  req.two_batch_overlap = true;
  req.w.groups = {step_group(Phase::decode, 72 * 256, 2050, 0)};
  auto kind = [](const StepResult& r, const std::string& name) {
    for (const LayerKindRow& k : r.layer_kinds)
      if (k.kind == name) return k;
    FAIL("no " << name << " layer kind");
    return LayerKindRow{};
  };
  const LayerKindRow main = kind(step_time(m, hw, rf, req), "moe");
  const Seconds experts = main.by_component[static_cast<std::size_t>(StepComponent::routed_experts)];
  REQUIRE(experts.value > 0);
  req.mtp_draft = 1;
  req.mtp_accept = 0.6;
  req.w.spec_tokens = 1;
  req.w.groups = {step_group(Phase::decode, 72 * 256, 2050, 1)};
  const LayerKindRow mtp = kind(step_time(m, hw, rf, req), "mtp");
  CHECK(mtp.communication.value > mtp.compute.value);  // the chain binds
  CHECK(mtp.time.value >= (mtp.communication + experts).value * (1 - 1e-9));
}

// DeepSeek's prefill profile's layout on H800 (EP32, 128 prompts of 4,096 tokens), with two-batch
// overlap and datasheet links.
StepRequest ds_prefill_overlap(const HardwareSpec& hw) {
  StepRequest req;
  req.phase = Phase::prefill;
  req.w.par = Parallelism{1, 32, 32};
  req.w.groups = {SequenceGroup{128, 4096, 0}};
  req.gpus_per_node = 8;
  req.links = links_for(hw, StepOverheads{});
  req.two_batch_overlap = true;
  return req;
}

TEST_CASE("Two-batch overlap under the normal all-to-all: between the longer stream and the sum, compute on the SMs it leaves", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  StepRequest req = ds_prefill_overlap(hw);
  const Roofline rf = roofline_for(hw, DType::bf16, Efficiency{});
  const StepResult t = step_time(m, hw, rf, req);
  CHECK(t.overlap_saving.value > 0);
  double hidden = 0;
  for (const LayerKindRow& k : t.layer_kinds) {
    INFO(k.kind);
    hidden += static_cast<double>(k.count) * (k.compute.value + k.communication.value - k.time.value);
    CHECK(k.time.value >= std::max(k.compute.value, k.communication.value) * (1 - 1e-12));
    CHECK(k.time.value <= (k.compute.value + k.communication.value) * (1 + 1e-12));
  }
  CHECK(t.overlap_saving.value == Approx(hidden));
  CHECK(t.step_time.value == Approx(t.compute.value + t.communication.value - t.overlap_saving.value));
  // DeepEP's 20 of the H800's 132 SMs: every compute op of a MoE layer takes 132/112 of its time,
  // the communication and the dense layers (nothing to overlap) none.
  req.comm_sms = 20;
  const StepResult held = step_time(m, hw, rf, req);
  for (std::size_t i = 0; i < t.layer_kinds.size(); ++i) {
    const LayerKindRow &a = t.layer_kinds[i], &b = held.layer_kinds[i];
    INFO(a.kind);
    const double share = a.kind == "moe" ? 132.0 / 112 : 1;
    CHECK(b.compute.value == Approx(a.compute.value * share));
    CHECK(b.communication.value == Approx(a.communication.value));
    for (std::size_t c = 0; c < kStepComponentCount; ++c)
      if (category_of(static_cast<StepComponent>(c)) != "dispatch" && category_of(static_cast<StepComponent>(c)) != "combine")
        CHECK(b.by_component[c].value == Approx(a.by_component[c].value * share));
  }
}

TEST_CASE("The normal all-to-all beside overlapped compute takes its slowdown, and alone or at low latency it does not", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  StepRequest req = ds_prefill_overlap(hw);
  req.comm_sms = 24;
  const Roofline rf = roofline_for(hw, DType::bf16, Efficiency{});
  const StepResult alone = step_time(m, hw, rf, req);
  StepRequest slow = req;
  slow.links.normal.overlap_slowdown = 1.25;
  const StepResult beside = step_time(m, hw, rf, slow);
  for (std::size_t i = 0; i < alone.layer_kinds.size(); ++i) {
    const LayerKindRow &a = alone.layer_kinds[i], &b = beside.layer_kinds[i];
    INFO(a.kind);
    CHECK(b.compute.value == a.compute.value);
    CHECK(b.communication.value == Approx(a.communication.value * (a.kind == "moe" ? 1.25 : 1)));
    for (StepComponent c : {StepComponent::ep_dispatch, StepComponent::ep_combine})
      CHECK(b.by_component[static_cast<std::size_t>(c)].value == Approx(a.by_component[static_cast<std::size_t>(c)].value * 1.25));
    // The schedule: the layer's stages with the communication 1.25 times as long.
    CHECK(b.time >= a.time);
  }
  CHECK(beside.step_bound.value == Approx(alone.step_bound.value));  // the speed of light is the transfer's
  // Without overlap the all-to-all runs alone: no slowdown.
  req.two_batch_overlap = slow.two_batch_overlap = false;
  CHECK(step_time(m, hw, rf, slow).step_time.value == step_time(m, hw, rf, req).step_time.value);
  // Decode's low-latency kind holds no SMs and keeps its time.
  req.two_batch_overlap = slow.two_batch_overlap = true;
  req.comm_sms = slow.comm_sms = 0;
  req.phase = slow.phase = Phase::decode;
  req.w.groups = slow.w.groups = {SequenceGroup{32 * 64, 1, 4096}};
  CHECK(step_time(m, hw, rf, slow).step_time.value == step_time(m, hw, rf, req).step_time.value);

  // The SGLang profile carries it; profiles without the key keep 1.
  CHECK(load_step_engine("sglang", m).overheads.normal.overlap_slowdown == Approx(1.24));
  CHECK(load_step_engine("sglang", m).overheads.low_latency.overlap_slowdown == 1);
  CHECK(load_step_engine("vllm", m).overheads.normal.overlap_slowdown == 1);
  CHECK(load_step_engine("trtllm", m).overheads.normal.overlap_slowdown == 1);
}

TEST_CASE("Over every bundled model, the all-to-all's overlap slowdown moves only dispatch and combine, and never speeds a step", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100-sxm");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (const ModelSpec& m : test::all_models()) {
    INFO(m.name);
    StepRequest req;
    apply_step_engine(req, load_step_engine("sglang", m));
    req.links = links_for(hw, req.overheads);
    set_step_weights(req, m, std::nullopt);
    req.phase = Phase::prefill;
    req.w.par = Parallelism{1, 8, m.moe ? 8 : 1};
    if (!check_layout(m, req.w.par).ok()) continue;
    req.w.groups = {SequenceGroup{16, 1024, 0}};
    req.gpus_per_node = 8;
    req.two_batch_overlap = true;
    StepRequest alone = req;
    alone.links.normal.overlap_slowdown = 1;
    const StepResult a = step_time(m, hw, rf, alone), b = step_time(m, hw, rf, req);
    CHECK(b.step_time.value >= a.step_time.value * (1 - 1e-12));
    CHECK(b.compute.value == a.compute.value);
    for (std::size_t c = 0; c < b.rows.size(); ++c) {
      const StepComponent comp = b.rows[c].component;
      INFO(to_string(comp));
      const bool a2a = comp == StepComponent::ep_dispatch || comp == StepComponent::ep_combine;
      CHECK(b.rows[c].time.value == Approx(a.rows[c].time.value * (a2a ? 1.24 : 1)));
      CHECK(b.rows[c].bound.value == Approx(a.rows[c].bound.value));
    }
    if (!m.moe) CHECK(b.step_time.value == a.step_time.value);  // no all-to-all to slow
  }
}

TEST_CASE("Worked example: two micro-batches through MoE layers, in SGLang's prefill order", "[serving][example]") {
  // Per micro-batch: attention 3, shared experts 1, routed experts 2, dispatch 2, combine 4.
  // One layer: compute A_a [0,3] A_b [3,6]; dispatch D_a [3,5] D_b [6,8]; experts M_a [6,8] M_b
  // [8,10]; combine C_a [8,12] C_b [12,16]; the shared experts [10,12]: 16.
  OverlapStages s;
  s.attention = Seconds{3};
  s.shared = Seconds{1};
  s.experts = Seconds{2};
  s.dispatch = Seconds{2};
  s.combine = Seconds{4};
  CHECK(two_batch_pipeline(s, 0).value == 0);
  CHECK(two_batch_pipeline(s, 1).value == 16);
  // Two layers: S_a [10,11], A_a waits for C_a: [12,15]; S_b [15,16], A_b [16,19]; D_a [16,18], D_b
  // [19,21]; M_a [19,21], C_a [21,25]; M_b [21,23], C_b [25,29]; the shared experts [23,25]: 29.
  CHECK(two_batch_pipeline(s, 2).value == 29);
  // Each further layer adds 13, more than either stream's 12: the attention of a waits for its combine.
  CHECK(two_batch_pipeline(s, 3).value == 42);
  CHECK(two_batch_pipeline(s, 10).value == Approx(16 + 9 * 13.0));
}

TEST_CASE("The two-batch schedule fed DeepSeek's own prefill bars gives its layer time within 1%", "[serving][example]") {
  // The profile's bars per MoE layer, both micro-batches (serving.md): attention 5.64 ms, GEMM 8.43,
  // MoE 12.39, other 5.12, dispatch 9.47 + 2.08 barrier, combine 17.25 + 2.01; overall 34.63. The
  // shared experts (1.31 ms, the model's on 108 SMs) leave the GEMM bar for their own stage.
  OverlapStages s;
  s.shared = Seconds{1.31e-3 / 2};
  s.attention = Seconds{(5.64e-3 + 8.43e-3 + 5.12e-3 - 1.31e-3) / 2};
  s.experts = Seconds{12.39e-3 / 2};
  s.dispatch = Seconds{(9.47e-3 + 2.08e-3) / 2};
  s.combine = Seconds{(17.25e-3 + 2.01e-3) / 2};
  const double per_layer = two_batch_pipeline(s, 58).value / 58;
  CHECK(per_layer == Approx(34.63e-3).epsilon(0.01));
  CHECK(per_layer > 31.58e-3);  // more than the compute stream: the schedule's bubbles
}

TEST_CASE("The two-batch pipeline lies between its busier stream and running everything in turn", "[serving][property]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 5);
  for (int i = 0; i < 2000; ++i) {
    OverlapStages s;
    s.attention = Seconds{u(rng)};
    s.shared = Seconds{u(rng)};
    s.experts = Seconds{u(rng)};
    s.dispatch = Seconds{i % 7 == 0 ? 0 : u(rng)};
    s.combine = Seconds{i % 7 == 0 ? 0 : u(rng)};
    const std::int64_t layers = 1 + i % 60;
    const double n = static_cast<double>(layers);
    const double compute = 2 * n * (s.attention + s.shared + s.experts).value, comm = 2 * n * (s.dispatch + s.combine).value;
    const double t = two_batch_pipeline(s, layers).value;
    INFO(i);
    CHECK(t >= std::max(compute, comm) * (1 - 1e-12));
    CHECK(t <= (compute + comm) * (1 + 1e-12));
    if (comm == 0) CHECK(t == Approx(compute));
  }
}

TEST_CASE("Worked example: the low-latency all-to-all kernels' SM time under overlap, at DeepSeek's decode profile", "[serving]") {
  // EP128 DP128 on H800, 128 sequences per GPU at 4K: under overlap each micro-batch dispatches 64
  // tokens per rank, so a MoE layer's send kernels and receive hooks take 0.957 us x 128 tokens
  // = 122.496 us of SM time (the row's 0.957 us per token: DeepSeek's decode profile, 0.245 ms per
  // layer over its 256 tokens with MTP), 58 MoE layers 7.104768 ms.
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  StepRequest req;
  req.w.par = Parallelism{1, 128, 128};
  req.weights = default_weight_plan(m);
  req.gpus_per_node = 8;
  req.links = links_for(hw, StepOverheads{});
  req.two_batch_overlap = true;
  auto moe = [](const StepResult& r) {
    for (const LayerKindRow& k : r.layer_kinds)
      if (k.kind == "moe") return k;
    FAIL("no MoE layer kind");
    return LayerKindRow{};
  };
  for (Phase phase : {Phase::decode, Phase::prefill}) {
    INFO(to_string(phase));
    req.phase = phase;
    req.w.groups = {step_group(phase, 128 * 128, 4096, 0)};
    req.ll_sm_per_token = Seconds{0};
    const StepResult off = step_time(m, hw, rf, req);
    req.ll_sm_per_token = Seconds{0.957e-6};
    const StepResult on = step_time(m, hw, rf, req);
    if (phase == Phase::prefill) {  // the normal kind holds its SMs for the whole transfer: nothing added
      CHECK(on.comm_kernels_sm.value == 0);
      CHECK(on.step_time.value == Approx(off.step_time.value));
      continue;
    }
    const double sm = 0.957e-6 * 128;
    CHECK(on.comm_kernels_sm.value == Approx(58 * sm));
    CHECK(on.comm_kernels_sm.value == Approx(7.104768e-3));
    const LayerKindRow a = moe(off), b = moe(on);
    CHECK(b.compute.value - a.compute.value == Approx(sm));
    CHECK(b.by_component[static_cast<std::size_t>(StepComponent::ep_kernels)].value == Approx(sm));
    const StepRow* kernels = row(on, StepComponent::ep_kernels);
    REQUIRE(kernels);
    CHECK(kernels->time.value == Approx(58 * sm));
    CHECK(kernels->layers == 58);
    CHECK(b.communication.value == Approx(a.communication.value));
    // Only the SM side grows: the layer is the longer of the old bound and the new compute.
    CHECK(b.time.value == Approx(std::max(a.time.value, a.compute.value + sm)));
    CHECK(on.step_time.value == Approx(off.step_time.value + 58 * (b.time.value - a.time.value)));
    CHECK(on.step_time.value > off.step_time.value);  // this step is bound by its SMs
    // Without overlap the kernels run to the end of their transfer, which is already charged.
    req.two_batch_overlap = false;
    const StepResult plain = step_time(m, hw, rf, req);
    req.ll_sm_per_token = Seconds{0};
    CHECK(plain.step_time.value == Approx(step_time(m, hw, rf, req).step_time.value));
    CHECK(plain.comm_kernels_sm.value == 0);
    req.two_batch_overlap = true;
    // With one MTP draft the main layers dispatch 256 tokens per rank and the MTP layer 128:
    // 0.957 us x (58 x 256 + 128) = 0.957 us x 14,976 = 14.332032 ms.
    req.ll_sm_per_token = Seconds{0.957e-6};
    req.mtp_draft = 1;
    req.mtp_accept = 0.6;
    req.w.spec_tokens = 1;
    req.w.groups = {step_group(phase, 128 * 128, 4096, 1)};
    CHECK(step_time(m, hw, rf, req).comm_kernels_sm.value == Approx(14.332032e-3));
    req.mtp_draft = 0;
    req.w.spec_tokens = 0;
  }
}

TEST_CASE("Worked example: steps without CUDA graphs wait on the host's launches, Llama-2-7B on H100", "[serving][example]") {
  // Llama-2-7B at TP 1 launches 8 kernels per layer as the step models it (the fused QKV projection,
  // attention and o_proj of its standard path; two RMSNorms; gate_up, SwiGLU and down) and 4 once
  // (embedding, final norm, lm_head, sampling). At 1 ms per launch the host, not the GPU, sets
  // every layer's time: (32 x 8 + 4) x 1 ms = 260 ms, the excess over the GPU's time reported as the
  // launch wait, inside the overhead.
  const std::string base = "step --model llama-2-7b-hf --gpu h100-sxm --engine none --phase prefill --batch 1 --context 128 --format json";
  const json gpu = json::parse(test::run(base).out);
  const json host = json::parse(test::run(base + " --eager-launch-us 1000").out);
  CHECK(host["step_time_s"].get<double>() == Approx(0.260).epsilon(1e-12));
  CHECK(host["eager_launch_s"].get<double>() == Approx(1e-3));
  CHECK(host["launch_wait_s"].get<double>() == Approx(0.260 - gpu["step_time_s"].get<double>()).epsilon(1e-12));
  CHECK(host["overhead_s"].get<double>() == Approx(host["launch_wait_s"].get<double>()));
  CHECK(host["compute_s"].get<double>() == Approx(gpu["compute_s"].get<double>()));
  CHECK(gpu["launch_wait_s"].get<double>() == 0);
  // TP 4 adds the two all-reduces per layer and the vocabulary's all-gather once: (80 x 10 + 5) x 1 ms.
  const json tp4 = json::parse(test::run("step --model llama-2-70b-hf --gpu h100-sxm --engine none --phase prefill --tp 4 --batch 1 --context 128 "
                                         "--eager-launch-us 1000 --format json").out);
  CHECK(tp4["step_time_s"].get<double>() == Approx(0.805).epsilon(1e-12));
  // A 2,048-token prompt runs longer kernels than the host takes to launch at 20 us: no wait.
  const json long_prompt = json::parse(test::run("step --model llama-2-7b-hf --gpu h100-sxm --engine none --phase prefill --batch 1 --context 2048 "
                                                 "--eager-launch-us 20 --format json").out);
  CHECK(long_prompt["launch_wait_s"].get<double>() == 0);
  test::expect_refusal(base + " --eager-launch-us -1", "--eager-launch-us: value '-1': expected microseconds per kernel from 0 to 1000000");
  test::expect_refusal("plan --model llama-2-7b-hf --gpu h100-sxm --sequences 8 --context 4096 --eager-launch-us 10",
                       "--eager-launch-us: value '10': --sequences asks the memory-only question; it takes no serving flags");
  test::expect_refusal("plan --model llama-2-7b-hf --gpu h100-sxm --sequences 8 --context 4096 --links-from sglang",
                       "--links-from: value 'sglang': --sequences asks the memory-only question; it takes no serving flags");
}

TEST_CASE("Every bundled model: a launch-bound step waits on the host, never runs faster, and its parts still add up", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h100-sxm");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (const ModelSpec& m : test::all_models()) {
    for (Phase phase : {Phase::prefill, Phase::decode}) {
      StepRequest req;
      req.phase = phase;
      req.w.par = m.moe ? Parallelism{1, 8, 8} : Parallelism{2, 1, 1};
      if (!check_layout(m, req.w.par).ok()) req.w.par = Parallelism{1, 1, 1};
      req.weights = default_weight_plan(m);
      req.w.groups = {step_group(phase, 16, phase == Phase::decode ? 2048 : 512, 0)};
      req.gpus_per_node = 8;
      req.links = links_for(hw, StepOverheads{});
      const StepResult base = step_time(m, hw, rf, req);
      INFO(m.name << " " << to_string(phase));
      CHECK(base.launch_wait.value == 0);
      Seconds previous = base.step_time;
      double one_second = 0;
      for (double us : {1.0, 10.0, 100.0, 1e6, 2e6}) {
        req.eager_launch = Seconds{us * 1e-6};
        const StepResult st = step_time(m, hw, rf, req);
        INFO(us << " us per launch");
        CHECK(st.step_time >= previous);
        CHECK(st.step_time.value == Approx(base.step_time.value + st.launch_wait.value).epsilon(1e-12));
        CHECK(st.compute.value == Approx(base.compute.value));
        CHECK(st.overlap_saving.value == Approx(base.overlap_saving.value).margin(1e-12));  // the wait is not an overlap
        double rows = 0;
        for (const StepRow& r : st.rows) rows += r.time.value;
        CHECK(rows == Approx(st.compute.value + st.communication.value + st.overhead.value));
        CHECK(st.step_time.value == Approx(st.compute.value + st.communication.value - st.overlap_saving.value + st.overhead.value));
        for (const LayerKindRow& k : st.layer_kinds) CHECK(k.time >= k.compute);
        previous = st.step_time;
        if (us == 1e6) {
          // A second per launch: every layer waits on the host, so the step is a whole number of
          // launches, at least one per layer.
          one_second = st.step_time.value;
          CHECK(one_second == Approx(std::round(one_second)).epsilon(1e-9));
          CHECK(one_second >= static_cast<double>(m.num_layers()));
        }
        if (us == 2e6) CHECK(st.step_time.value == Approx(2 * one_second).epsilon(1e-9));  // wholly the host's: twice the launch, twice the step
      }
    }
  }
}

TEST_CASE("Launches are counted per micro-batch and per chunk, and a lead the host built up hides a later launch-bound layer", "[serving]") {
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec hw = load_gpu("h800");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  auto request = [&](Phase phase, std::int64_t batch, double context) {
    StepRequest req;
    req.phase = phase;
    req.w.par = Parallelism{1, 8, 8};
    req.weights = default_weight_plan(m);
    req.w.groups = {step_group(phase, batch, context, 0)};
    req.gpus_per_node = 8;
    req.links = links_for(hw, StepOverheads{});
    req.eager_launch = Seconds{1};  // a second per launch: every layer's time is its launches
    return req;
  };
  auto per_layer = [](const StepResult& r, const std::string& kind) {
    for (const LayerKindRow& k : r.layer_kinds)
      if (k.kind == kind) return k.time.value;
    return 0.0;
  };
  // Two-batch overlap launches every kernel and collective of a layer once per micro-batch.
  StepRequest one = request(Phase::decode, 64, 4096);
  StepRequest two = one;
  two.two_batch_overlap = true;
  const StepResult a = step_time(m, hw, rf, one), b = step_time(m, hw, rf, two);
  for (const char* kind : {"dense", "moe"}) {
    INFO(kind);
    CHECK(per_layer(a, kind) > 5);
    CHECK(per_layer(b, kind) == Approx(2 * per_layer(a, kind)));
  }
  CHECK(per_layer(b, "once") == Approx(per_layer(a, "once")));
  // The chunked path launches its up-projection, key copy and attention once per chunk: 1,024
  // tokens per rank in chunks of 256 keys add at least 3 launches for each of the 3 further chunks.
  StepRequest expanded = request(Phase::prefill, 64, 128);
  EnginePolicy rule;
  rule.rule = ExtendRule::query_split;  // every prompt expands
  expanded.policy = rule;
  StepRequest chunked = expanded;
  rule.chunk_tokens = 256;
  chunked.policy = rule;
  const StepResult e = step_time(m, hw, rf, expanded), c = step_time(m, hw, rf, chunked);
  REQUIRE(e.attention_path == "expand");
  REQUIRE(c.attention_path == "chunked");
  CHECK(per_layer(c, "moe") - per_layer(e, "moe") >= 9);
  // A long prompt's GPU-bound layers put the host ahead; the few kernels after them (the final norm,
  // lm_head, sampling) launch from that lead and the GPU never waits.
  const ModelSpec llama = test::model("llama-2-7b-hf");
  const HardwareSpec h100 = load_gpu("h100-sxm");
  StepRequest prompt;
  prompt.phase = Phase::prefill;
  prompt.weights = default_weight_plan(llama);
  prompt.w.groups = {SequenceGroup{1, 2048, 0}};
  prompt.links = links_for(h100, StepOverheads{});
  const Roofline rh = default_roofline(h100, DType::bf16, bundled_efficiency());
  const StepResult gpu_bound = step_time(llama, h100, rh, prompt);
  const double once_gpu = per_layer(gpu_bound, "once");
  prompt.eager_launch = Seconds{once_gpu / 4 * 1.5};  // alone, the 4 once-per-step kernels would wait
  const StepResult led = step_time(llama, h100, rh, prompt);
  CHECK(led.launch_wait.value == 0);
  CHECK(led.step_time.value == Approx(gpu_bound.step_time.value));
}

TEST_CASE("step --links-from times the communication with another profile's links, not its overheads", "[serving][cli]") {
  const std::string base = "step --model deepseek-v3 --gpu h800 --phase prefill --dp 32 --ep 32 --batch 64 --context 4096 --moe-imbalance 1 --format json";
  const json none = json::parse(test::run(base + " --engine none").out);
  const json sglang = json::parse(test::run(base + " --engine sglang").out);
  const json links = json::parse(test::run(base + " --engine none --links-from sglang").out);
  CHECK(none["links_source"] == "none (--engine none)");
  CHECK(links["links_source"].get<std::string>().find("engines/sglang-") != std::string::npos);
  CHECK(links["overhead_s"].get<double>() == 0);
  CHECK(sglang["overhead_s"].get<double>() > 0);
  // SGLang's DeepEP fit: 85% of the network and a fixed time per call, so more than the datasheet's.
  CHECK(links["communication_s"].get<double>() == Approx(sglang["communication_s"].get<double>()));
  CHECK(links["communication_s"].get<double>() > none["communication_s"].get<double>() * 1.1);
  CHECK(links["compute_s"].get<double>() == Approx(none["compute_s"].get<double>()));
  test::expect_refusal("step --dp 8 --ep 8 --batch 64 --links-from deepep", "--links-from: value 'deepep': expected vllm, sglang or trtllm, optionally @VERSION");
}

TEST_CASE("step CLI: JSON keys, memory check and refusals", "[serving][cli]") {
  const test::Run r = test::run("step --model deepseek-v3 --gpu h200 --tp 8 --batch 64 --context 4096 --format json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  for (const char* k : {"step_time_s", "tokens_per_s_per_gpu", "tpot_s", "time_model", "eta_source", "attention_path", "fits", "components", "layers"})
    CHECK(j.contains(k));
  CHECK(j["time_model"] == "calibrated");
  CHECK(j["fits"] == true);
  CHECK(j["components"].size() >= 8);
  const json p = json::parse(test::run("step --model deepseek-v3 --gpu h200 --tp 8 --phase prefill --batch 2 --context 8k --format json").out);
  CHECK(p.contains("ttft_s"));
  CHECK(p["attention_path"].get<std::string>().rfind("expand", 0) == 0);
  // Too many sequences for the memory: still timed, with the reason.
  const json big = json::parse(test::run("step --model deepseek-v3 --gpu h200 --tp 8 --batch 4096 --context 128k --format json").out);
  CHECK(big["fits"] == false);
  CHECK(big["reason"].get<std::string>().find("tokens of cache per GPU") != std::string::npos);

  test::expect_refusal("step --model llama-3.1-8b --mtp 1", "--mtp: value '1': meta-llama/Llama-3.1-8B has no MTP module (num_nextn_predict_layers is 0)");
  test::expect_refusal("step --tp 8 --gpus 16", "--gpus: value '16': the layout TP8 DP1 EP1 runs on 8 GPUs (TP x DP)");
  test::expect_refusal("step --tp 8 --ep-mode normal", "--ep-mode: value 'normal': no all-to-all without --ep > 1");
  test::expect_refusal("step --phase both", "--phase: value 'both': expected prefill or decode");
  test::expect_refusal("step --tp 8 --nodes 3", "--nodes: value '3': expected a divisor of the 8 GPUs");
  test::expect_refusal("step --tp 16 --nodes 1", "--nodes: value '1': 16 GPUs per node exceed H200 SXM 141GB's scale-up domain of 8");
  test::expect_refusal("step --mtp-accept 1.5", "--mtp-accept: value '1.5': expected a probability in [0, 1]");
  test::expect_refusal("step --context 1k --query 2", "--context: value '1024': give --context, or --query/--prefix/--mix, not both");
  test::expect_refusal("step --moe-imbalance 0.5", "--moe-imbalance: value '0.5': expected a ratio from 1 to 1000");
  test::expect_refusal("step --tp 1 --dp 32 --ep 32 --batch 1", "--batch: value '1': 1 sequence for DP 32: every replica needs one");
  test::expect_refusal("step --mtp 2 --query 1 --prefix 4000", "--query: value '1': a decode step with --mtp 2 verifies 3 tokens per sequence");
  test::expect_refusal("step --tp 8 --moe-imbalance 2", "--moe-imbalance: value '2': the busiest EP rank: give --ep > 1");
  test::expect_refusal("step --dp 8 --ep 8 --tbo --comm-sms 20 --batch 64",
                       "--comm-sms: value '20': decode uses the low-latency all-to-all, which holds no SMs; --comm-sms is for the normal kind");
  test::expect_refusal("step --dp 8 --ep 8 --comm-sms 20 --batch 64 --phase prefill", "--comm-sms: value '20': applies with --tbo");
  test::expect_refusal("step --dp 8 --ep 8 --batch 64 --ll-sm-us-per-token 1", "--ll-sm-us-per-token: value '1': applies with --tbo");
  test::expect_refusal("step --dp 8 --ep 8 --batch 64 --tbo --ll-sm-us-per-token -1", "--ll-sm-us-per-token: value '-1': expected microseconds per token from 0 to 1000000");
  test::expect_refusal("step --dp 8 --ep 8 --batch 64 --tbo --phase prefill --ll-sm-us-per-token 1",
                       "--ll-sm-us-per-token: value '1': prefill uses the normal all-to-all, which holds SMs for its whole transfer; --ll-sm-us-per-token is for the low-latency kind");
  test::expect_refusal("step --dp 8 --ep 8 --batch 64 --tbo --ep-mode normal --ll-sm-us-per-token 1",
                       "--ll-sm-us-per-token: value '1': the normal all-to-all holds SMs for its whole transfer; --ll-sm-us-per-token is for the low-latency kind");
  test::expect_refusal("step --model llama-3.1-8b --dp 8 --batch 64 --tbo --ll-sm-us-per-token 1",
                       "--ll-sm-us-per-token: value '1': meta-llama/Llama-3.1-8B has no routed experts to dispatch");
  test::expect_refusal("step --dp 8 --batch 64 --tbo --ll-sm-us-per-token 1", "--ll-sm-us-per-token: value '1': no all-to-all without --ep > 1");
  const json ll = json::parse(test::run("step --dp 8 --ep 8 --batch 64 --tbo --ll-sm-us-per-token 1 --format json").out);
  CHECK(ll["comm_kernels_sm_s"].get<double>() == Approx(1e-6 * 8 * 58));  // 8 tokens per rank, 58 MoE layers
  test::expect_refusal("step --gpu l40s --tp 2 --model llama-3.1-8b",
                       "hardware/nvidia-l40s.json: key 'scale_up_domain_gpus' = (absent): 2 GPUs need the GPUs per scale-up domain; give --nodes");
}

TEST_CASE("plan answers DeepSeek-R1 on H200, 4K in / 1K out, TPOT <= 50 ms, in under a second", "[serving][cli]") {
  const auto t0 = std::chrono::steady_clock::now();
  const test::Run r = test::run("plan --model deepseek-r1 --gpu h200 --isl 4096 --osl 1024 --tpot-ms 50 --rate 20 --format json");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.code == 0);
  CHECK(s < 5);  // generous under sanitizers; the release build takes well under a second
  const json j = json::parse(r.out);
  REQUIRE(j["best_tpot_s"].is_number());
  CHECK(j["best_tpot_s"].get<double>() <= 0.050);
  CHECK(j["pareto"].size() >= 3);
  CHECK(j["fewest_gpus_for_rate"].is_number());
  // The Pareto front: TPOT rises as throughput rises.
  double last_tpot = 0, last_tps = 0;
  for (const json& row : j["pareto"]) {
    CHECK(row["tpot_s"].get<double>() >= last_tpot);
    CHECK(row["tokens_per_s_per_gpu"].get<double>() >= last_tps);
    last_tpot = row["tpot_s"], last_tps = row["tokens_per_s_per_gpu"];
  }
  // The memory-only question.
  const json mem = json::parse(test::run("plan --model deepseek-r1 --gpu h200 --sequences 256 --context 32k --format json").out);
  REQUIRE(mem["fewest_gpus"].is_number());
  for (const json& row : mem["layouts"])
    if (row["holds"] == true) CHECK(row["gpus"] == mem["fewest_gpus"]);
  test::expect_refusal("plan --sequences 10", "--sequences: value '10': give --context, the tokens each sequence holds");
  test::expect_refusal("plan --sequences 10 --context 1k --tpot-ms 5", "--tpot-ms: value '5': --sequences asks the memory-only question; it takes no serving flags");
  test::expect_refusal("plan --tpot-ms -1", "--tpot-ms: value '-1': expected milliseconds in (0, 1e7]");
  test::expect_refusal("plan --max-gpus 96", "--max-gpus: value '96': expected a power of two (layouts of 1, 2, 4, ... GPUs are tried)");
  test::expect_refusal("plan --sequences 5 --context 1k --tbo", "--tbo: value 'true': --sequences asks the memory-only question; it takes no serving flags");
  // Layout-dependent serving flags apply per layout in a plan.
  CHECK(test::run("plan --tbo --ep-mode normal --max-gpus 8 --format json").code == 0);
  // A held layout: only its rows, and the document says what was held.
  const json held = json::parse(test::run("plan --model llama-3.1-70b --gpu h100 --max-gpus 8 --tp 4 --format json").out);
  CHECK(held["held_layout"] == "TP4");
  REQUIRE(!held["layouts"].empty());
  for (const json& row : held["layouts"]) CHECK(row["layout"].get<std::string>().rfind("TP4 ", 0) == 0);
  test::expect_refusal("plan --tp 3", "--tp: value '3': expected a power of two (the layouts plan tries)");
  test::expect_refusal("plan --max-gpus 4 --tp 8", "--tp: value '8': must be at most 4");
  test::expect_refusal("plan --model llama-3.1-8b --ep 2", "--ep: value '2': meta-llama/Llama-3.1-8B has no routed experts to split");
  test::expect_refusal("plan --max-gpus 8 --tp 4 --dp 4", "--dp: value '4': no layout of at most 8 GPUs has --tp 4 --dp 4 (TP x DP GPUs; EP 1 or every rank)");
  test::expect_refusal("plan --max-gpus 8 --tp 2 --dp 2 --ep 2", "--ep: value '2': no layout of at most 8 GPUs has --tp 2 --dp 2 --ep 2 (TP x DP GPUs; EP 1 or every rank)");
  test::expect_refusal("plan --sequences 5 --context 1k --tp 2", "--tp: value '2': --sequences asks the memory-only question; it takes no serving flags");
}

TEST_CASE("Link and overhead inputs are checked", "[serving][hostile]") {
  json hw = json::parse(R"({"name": "X", "vendor": "v", "memory_capacity_bytes": {"value": 1e9, "source": "s"},
    "memory_bandwidth_tb_per_s": {"value": 1, "source": "s"}, "dense_peak_tflops": {"bf16": {"value": 100, "source": "s"}},
    "scale_up_domain_gpus": {"value": 1.5, "source": "s"}})");
  CHECK_THROWS_WITH(parse_hardware(hw, "x.json"), "x.json: key 'scale_up_domain_gpus' = 1.5: expected a whole number of GPUs from 1 to 10^6");
  hw["scale_up_domain_gpus"]["value"] = 0;
  CHECK_THROWS_WITH(parse_hardware(hw, "x.json"), Catch::Contains("scale_up_domain_gpus"));
  hw["scale_up_domain_gpus"]["value"] = 72;
  hw["scale_out_bandwidth_gb_per_s_per_direction"] = {{"value", 100}, {"source", "s"}};
  const HardwareSpec ok = parse_hardware(hw, "x.json");
  CHECK(ok.scale_up_domain_gpus == 72);
  CHECK(ok.scale_out_bandwidth_per_direction.value == 100e9);
  CHECK(hardware_to_json(ok)["scale_out_bandwidth_gb_per_s_per_direction"]["value"] == 100);
}

}  // namespace
}  // namespace mlaplan

namespace mlaplan {
namespace {

const std::string kServingDir = std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/published/serving";

TEST_CASE("Serving measurements: each row's command prints the prediction, and the results file is current", "[serving][validate]") {
  const std::vector<ServingCheck> checks = check_serving(read_serving_measurements(kServingDir));
  REQUIRE(checks.size() >= 30);
  // The committed results (the README's table) are what the current model predicts.
  const auto committed = parse_csv(read_text(std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/results/serving/serving.csv"));
  // The rows' table follows the summary fields: its header is the row that starts with "id".
  std::size_t line = 0;
  while (line < committed.size() && committed[line].front() != "id") ++line;
  REQUIRE(committed.size() >= line + checks.size() + 1);
  const auto header = committed[line];
  const auto col = [&](const std::string& k) { return static_cast<std::size_t>(std::find(header.begin(), header.end(), k) - header.begin()); };
  std::vector<double> totals;
  for (const ServingCheck& c : checks) {
    INFO(c.row.id << ": mlaplan " << c.command);
    while (line < committed.size() && committed[line][col("id")] != c.row.id) ++line;
    REQUIRE(line < committed.size());
    CHECK(std::stod(committed[line][col("predicted")]) == Approx(c.predicted).epsilon(1e-6));
    if (c.row.role == "total") totals.push_back(std::abs(c.error));
    // The command a reader copies prints the same number.
    if (c.row.role != "total" || c.row.metric == "moe_layer_s") continue;
    const test::Run r = test::run(c.command + " --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    const std::string key = c.row.metric == "best_tokens_per_s_per_gpu" ? "best_tokens_per_s_per_gpu" : c.row.metric;
    CHECK(j[key].get<double>() == Approx(c.predicted).epsilon(1e-9));
  }
  // The published error: the upper median of the totals within 5.3%, and 85 of the 86 within 20% (README,
  // Validation). Past 20%: TensorRT-LLM v0.5's Llama-2-7B first token at 2,048 tokens (-24.8%, slower
  // than the fp8 GEMMs the H100 profile is fitted on, TensorRT-LLM 1.3's). How the figures moved:
  //  - MMHA's compute as a rate per SM cycle (mmha_flops_per_sm_cycle), not a fraction of the FP32
  //    peak, took A100's left-out p90 under 30% but moved the MHA rows (MMHA in every decode step)
  //    slower: H100's own rate refitted 18.53 -> 18.38 FLOPs per SM cycle (Llama-2-7B -0.4..-0.6
  //    points), and L40S's rows, under the pooled `any` profile, whose fit now takes a memory pass
  //    apart (serial_memory) and 24.9 FLOPs per cycle of its 142 SMs (8.9 TFLOP/s, against 9.8 at
  //    10.7% of its FP32 peak), -0.2/-0.6/-4.5/-4.0% -> -1.6/-4.9/-7.0/-6.8%. 68 within 10% and 85 within
  //    20% as before; the upper median 4.58% -> 5.23%;
  //  - MMHA's own fraction of the bandwidth (eta_memory_mmha, fitted on the GQA decode tables where
  //    rows run both MMHA and XQA: A100 0.99 where XQA's is 0.64) took A100's Llama-2-7B throughput,
  //    MHA and so MMHA in every decode step, from -7.3%..-19.9% to -4.1%..+9.5% (v0.5 and v0.8), with
  //    v0.8's A100 launch time refitted (45.25 -> 45.5 us): median 5.5% -> 4.6% (upper 4.58%);
  //  - TensorRT-LLM's TP all-reduce as its own algorithms (tp_allreduce, fitted on H100's NCCL and
  //    TensorRT-LLM tables; 0.8's custom kernels up to their 8 MB workspace, NCCL beyond; 0.5 NCCL
  //    alone) where it was one ring at 80% of NVLink plus 10 us: v0.8's Llama-2-70B at 128/2,048 on 4
  //    H100s, whose 8.4 MB all-reduces run NCCL at 63 us where the ring took 45, +26.4% -> +17.3%;
  //    with v0.8's A100 launch time refitted on it (45.5 -> 45.25 us): 85 within 20%, median 5.5%;
  //  - v0.8's rows (24, on H100 and A100, under the 0.8.0 profile) took them from 62 totals, median
  //    3.5%, 61 within 20%, to 86, 5.8%, 82, at v0.5's launch times. Their own host's launch time,
  //    fitted on them (20.5 us on H100, 45.5 us on A100), took the 70B first tokens at 128 tokens on 8
  //    GPUs from +27.5% and +31.8% to +6.7% and +13.1%; 0.8's XQA generation (Ampere-style on Hopper,
  //    chosen by its blocks alone, multi-block off) took 70B 128/2,048 from +27.9% to +26.4%: 84 within
  //    20%, median 5.7%;
  //  - the normal all-to-all's slowdown beside overlapped compute (SGLang's profile, 1.24) took SGLang's
  //    H100 prefill +12.3/+16.0/+20.4% -> -2.6/+2.9/+7.3% and DeepSeek's prefill profile +14.6% -> +4.7%;
  //  - v0.5's rows came with their own profile (MMHA decode) and their host's launch time (24.5 us on
  //    H100, 53 us on A100, fitted on them); the plan also tries the batch memory holds (L40S 7B
  //    128/2,048: -26.7% -> -3.2%, with 63 sequences that fit, not 32).
  std::sort(totals.begin(), totals.end());
  CHECK(totals.size() == 86);
  CHECK(totals[totals.size() / 2] <= 0.053);
  CHECK(std::count_if(totals.begin(), totals.end(), [](double e) { return e <= 0.20; }) >= 85);
}

TEST_CASE("Serving measurements: a decode profile's overlapped dispatch and combine parts are flagged as not like for like", "[serving][validate]") {
  const auto note = [](const ServingMeasurement& r) {
    const Document d = serving_document({ServingCheck{.row = r, .predicted = 1, .error = 0, .command = "step"}});
    return std::any_of(d.notes.begin(), d.notes.end(), [](const std::string& n) { return n.find("not like for like") != std::string::npos; });
  };
  ServingMeasurement r;
  r.role = "part", r.phase = "decode", r.metric = "layer_combine_s", r.tbo = true, r.measured = 1;
  CHECK(note(r));
  r.tbo = false;  // without overlap the transfer is on the critical path, as published
  CHECK_FALSE(note(r));
  r.tbo = true, r.metric = "layer_moe_s";
  CHECK_FALSE(note(r));
}

std::string serving_error(const std::string& text) {
  try {
    (void)parse_serving_csv(text, "s.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST_CASE("Serving measurement CSVs: hostile input is refused naming the row and column", "[serving][hostile]") {
  const std::string header =
      "id,kind,role,model,gpu,engine,phase,tp,dp,ep,nodes,batch,context,isl,osl,mtp,mtp_accept,tbo,comm_sms,moe_imbalance,weight_dtype,kv_dtype,metric,"
      "measured,confidence,source\n";
  const std::string good = "a,step,total,deepseek-v3,h800,none,decode,1,8,8,1,64,4096,,,,,false,,,,,tokens_per_s_per_gpu,100,H,src\n";
  CHECK(serving_error(header + good) == "(accepted)");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string row = good;
    row.replace(row.find(from), from.size(), to);
    return serving_error(header + row);
  };
  CHECK(serving_error("") == "s.csv: empty file: expected a header row and data rows");
  CHECK(serving_error(header) == "s.csv: no data rows under the header");
  CHECK(serving_error("id,kind\n") == "s.csv: key 'header' = role: missing column");
  CHECK(with("tokens_per_s_per_gpu", "tokens_per_gpu").rfind("s.csv, row 2: key 'metric' = tokens_per_gpu: expected one of", 0) == 0);
  CHECK(with(",false,", ",yes,") == "s.csv, row 2: key 'tbo' = yes: expected true or false");
  CHECK(with(",false,,", ",false,20,") == "s.csv, row 2: key 'comm_sms' = 20: applies with tbo true");
  CHECK(with(",100,H", ",0,H") == "s.csv, row 2: key 'measured' = 0: expected a positive number");
  CHECK(with(",100,H", ",-1,H") == "s.csv, row 2: key 'measured' = -1: expected a number from 0 to 1000000000000");
  CHECK(with(",8,8,1,", ",8,8,3,") == "s.csv, row 2: key 'nodes' = 3: expected a divisor of the 8 GPUs (TP x DP)");
  CHECK(with(",4096,,,", ",4096,128,,") == "s.csv, row 2: key 'isl' = 128: isl and osl belong to plan rows");
  CHECK(with(",H,src", ",X,src") == "s.csv, row 2: key 'confidence' = X: expected one of H, M, L; did you mean 'H'?");
  CHECK(with(",4096,", ",1.5,") == "s.csv, row 2: key 'context' = 1.5: expected a whole number");
  CHECK(with("step,", "simulate,").rfind("s.csv, row 2: key 'kind' = simulate: expected one of step, plan", 0) == 0);
  CHECK(with(",,,,,false", ",,,0,0.5,false") == "s.csv, row 2: key 'mtp_accept' = 0.5: no draft tokens to accept (mtp is 0)");
  // A plan row holds its TP and DP (powers of two) and EP where given (1 or every rank).
  const std::string plan_row = "p,plan,total,deepseek-v3,h800,none,,2,2,,,64,,128,128,,,false,,,,,best_tokens_per_s_per_gpu,100,H,src\n";
  auto plan_with = [&](const std::string& from, const std::string& to) {
    std::string row = plan_row;
    row.replace(row.find(from), from.size(), to);
    return serving_error(header + row);
  };
  CHECK(serving_error(header + plan_row) == "(accepted)");
  CHECK(plan_with(",2,2,,,", ",3,2,,,") == "s.csv, row 2: key 'tp' = 3: a plan holds a power of two (the layouts plan tries)");
  CHECK(plan_with(",2,2,,,", ",2,2,2,,") == "s.csv, row 2: key 'ep' = 2: a plan holds EP 1 or every rank (4), or searches it when empty");
  CHECK(plan_with(",2,2,,,", ",2,2,4,2,") == "s.csv, row 2: key 'nodes' = 2: a plan derives its nodes; leave it empty");
  CHECK(plan_with(",2,2,,,", ",2,2,4,,") == "(accepted)");
  // The optional column: absent above; given, it applies to decode rows with overlap.
  const std::string header_ll = header.substr(0, header.size() - 1) + ",ll_sm_us_per_token\n";
  const std::string good_ll = good.substr(0, good.size() - 1) + ",0.5\n";
  CHECK(serving_error(header_ll + good_ll) == "s.csv, row 2: key 'll_sm_us_per_token' = 0.5: applies with tbo true");
  std::string tbo_ll = good_ll;
  tbo_ll.replace(tbo_ll.find(",false,"), 7, ",true,");
  CHECK(serving_error(header_ll + tbo_ll) == "(accepted)");
  CHECK(serving_error(header_ll + tbo_ll.substr(0, tbo_ll.size() - 5) + ",-1\n") == "s.csv, row 2: key 'll_sm_us_per_token' = -1: expected a number from 0 to 1000000");
  CHECK(serving_error(header_ll.substr(0, header_ll.size() - 1) + ",ll_sm_us_per_token\n" + tbo_ll.substr(0, tbo_ll.size() - 1) + ",0.5\n") ==
        "s.csv: key 'header' = ll_sm_us_per_token: column given twice");
  std::string ep1_ll = tbo_ll;
  ep1_ll.replace(ep1_ll.find(",1,8,8,1,"), 9, ",1,8,1,1,");
  CHECK_THROWS_WITH(check_serving(parse_serving_csv(header_ll + ep1_ll, "s.csv")),
                    "s.csv (row 'a'): key 'll_sm_us_per_token' = 0.5: the expert-parallel all-to-all's kernels: needs a MoE model and ep > 1");
  std::string prefill_ll = tbo_ll;
  prefill_ll.replace(prefill_ll.find(",decode,"), 8, ",prefill,");
  CHECK_THROWS_WITH(check_serving(parse_serving_csv(header_ll + prefill_ll, "s.csv")),
                    "s.csv (row 'a'): key 'll_sm_us_per_token' = 0.5: the low-latency (decode) all-to-all's kernels; prefill uses the normal kind");
  // Rows that parse but name what does not exist are refused when reproduced.
  const auto rows = parse_serving_csv(header + "a,step,total,deepseek-v3,h800,vllm@0.1,decode,1,8,8,1,64,4096,,,,,false,,,,,tpot_s,0.01,H,src\n", "s.csv");
  CHECK_THROWS_AS(check_serving(rows), InputError);
  const auto mtp = parse_serving_csv(header + "a,step,total,llama-3.1-8b,h100,none,decode,1,1,1,1,8,96,,,1,0.5,false,,,,,tpot_s,0.01,H,src\n", "s.csv");
  CHECK_THROWS_WITH(check_serving(mtp), "s.csv (row 'a'): key 'mtp' = 1: meta-llama/Llama-3.1-8B has no MTP module");
  // The optional links_from column: an engine whose link efficiencies the row's communication takes.
  const std::string header_links = header.substr(0, header.size() - 1) + ",links_from\n";
  const std::string row_links = "a,step,total,deepseek-v3,h800,none,decode,1,8,8,1,64,4096,,,,,false,,,,,tpot_s,0.01,H,src,";
  CHECK_NOTHROW(check_serving(parse_serving_csv(header_links + row_links + "sglang\n", "s.csv")));
  CHECK_THROWS_WITH(check_serving(parse_serving_csv(header_links + row_links + "deepep\n", "s.csv")),
                    "s.csv (row 'a') links_from: value 'deepep': expected vllm, sglang or trtllm, optionally @VERSION");
  const auto with_links = check_serving(parse_serving_csv(header_links + row_links + "sglang\n", "s.csv"));
  CHECK(with_links.front().command.find(" --links-from sglang") != std::string::npos);
  // The optional eager_launch_us column: the host's time per kernel launch, passed as the flag.
  const std::string header_eager = header.substr(0, header.size() - 1) + ",eager_launch_us\n";
  const std::string row_eager = "a,step,total,llama-2-7b-hf,h100-sxm,trtllm,prefill,1,1,1,1,1,128,,,,,false,,,fp8_tensor,fp8,ttft_s,0.007,H,src,";
  const auto eager = check_serving(parse_serving_csv(header_eager + row_eager + "26\n", "s.csv"));
  const auto graphs = check_serving(parse_serving_csv(header_eager + row_eager + "\n", "s.csv"));
  CHECK(eager.front().command.find(" --eager-launch-us 26") != std::string::npos);
  CHECK(graphs.front().command.find("--eager-launch-us") == std::string::npos);
  CHECK(eager.front().predicted > graphs.front().predicted);
  CHECK(serving_error(header_eager + row_eager + "-1\n") == "s.csv, row 2: key 'eager_launch_us' = -1: expected a number from 0 to 1000000");
  CHECK(serving_error(header_eager + row_eager + "fast\n").rfind("s.csv, row 2: key 'eager_launch_us' = fast", 0) == 0);
  // A GPU or model the row names but the registry lacks is refused naming the row and its column.
  const auto gpu = parse_serving_csv(header + "a,step,total,deepseek-v3,h900,none,decode,1,8,8,1,64,4096,,,,,false,,,,,tpot_s,0.01,H,src\n", "s.csv");
  CHECK_THROWS_WITH(check_serving(gpu), "s.csv (row 'a') gpu: value 'h900': no bundled gpu or file by that name; did you mean 'h100'?");
  const auto model = parse_serving_csv(header + "a,step,total,deepseek-v9,h800,none,decode,1,8,8,1,64,4096,,,,,false,,,,,tpot_s,0.01,H,src\n", "s.csv");
  CHECK_THROWS_WITH(check_serving(model), "s.csv (row 'a') model: value 'deepseek-v9': no bundled model or file by that name; did you mean 'deepseek-v2'?");
}

}  // namespace
}  // namespace mlaplan

namespace mlaplan {
namespace {

TEST_CASE("plan tries the batch memory holds where memory cuts the tried batches short", "[serving]") {
  const std::vector<std::int64_t> tried{1, 2, 4, 8, 16, 32, 64};
  CHECK(plan_batches(tried, 63) == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 63});
  // The batches tried up to a largest: the powers of two below it, and it (a benchmark's 120 or 896).
  CHECK(batch_ladder(64) == tried);
  CHECK(batch_ladder(120) == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 120});
  CHECK(batch_ladder(1) == std::vector<std::int64_t>{1});
  CHECK(batch_ladder(3) == std::vector<std::int64_t>{1, 2, 3});
  CHECK(batch_ladder(0).empty());
  // plan tries the table's batch itself: TensorRT-LLM v0.8's 7B row at 120 sequences of 128 + 2,048
  // tokens (8 candidates: 1 .. 64 and 120), where it once refused any batch but a power of two.
  const test::Run r120 = test::run("plan --model llama-2-7b-hf --gpu h100-sxm --engine trtllm@0.8.0 --isl 128 --osl 2048 --max-gpus 1 --tp 1 --dp 1 "
                                   "--max-batch 120 --weight-dtype fp8_tensor --kv-dtype fp8 --format json");
  REQUIRE(r120.code == 0);
  const json j120 = json::parse(r120.out);
  CHECK(j120["candidates"] == 8);
  CHECK(j120["best_batch"] == 120);
  CHECK(plan_batches(tried, 64) == tried);
  CHECK(plan_batches(tried, 1000) == tried);  // the largest tried batch bounds it
  CHECK(plan_batches(tried, 3) == std::vector<std::int64_t>{1, 2, 3});
  CHECK(plan_batches(tried, 1) == std::vector<std::int64_t>{1});
  CHECK(plan_batches(tried, 0).empty());
  CHECK(plan_batches({4, 16}, 2) == std::vector<std::int64_t>{2});  // below the smallest tried batch: the most that fit
  CHECK(plan_batches({4, 16}, 9) == std::vector<std::int64_t>{4, 9});

  // TensorRT-LLM v0.5's Llama-2-7B on L40S, 128 in / 2,048 out, at most 64 sequences: 63 fit at
  // 2,176 tokens, so the plan runs 63, where powers of two alone stopped at 32.
  const test::Run r = test::run(
      "plan --model llama-2-7b-hf --gpu l40s --engine trtllm@0.5.0 --isl 128 --osl 2048 --max-gpus 1 --tp 1 --dp 1 --max-batch 64 "
      "--weight-dtype fp8_tensor --kv-dtype fp8 --format json");
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  CHECK(j["best_batch"].get<std::int64_t>() == 63);
  const json& rows = j["pareto"];
  REQUIRE(rows.size() == 7);
  CHECK(rows.back()["batch"].get<std::int64_t>() == 63);
  CHECK(rows.back()["memory_limited"].get<bool>());
  CHECK(rows.back()["max_sequences"].get<std::int64_t>() == 63);
  CHECK_FALSE(rows.front()["memory_limited"].get<bool>());
}

TEST_CASE("plan over every bundled model: rows fit, the best meets the target, the Pareto front is monotone", "[serving][property]") {
  const HardwareSpec hw = load_gpu("h200");
  const Roofline rf = default_roofline(hw, DType::bf16, bundled_efficiency());
  for (const ModelSpec& m : test::all_models()) {
    INFO(m.name);
    PlanRequest p;
    apply_step_engine(p.base, load_step_engine("sglang", m));
    p.base.links = links_for(hw, p.base.overheads);
    set_step_weights(p.base, m, std::nullopt);
    p.isl = 2048;
    p.osl = 256;
    p.tpot_limit = Seconds{0.05};
    p.max_gpus = 16;
    p.batches = {1, 4, 16, 64};
    const PlanResult r = plan_layouts(m, hw, rf, p);
    REQUIRE(!r.rows.empty());
    for (const PlanRow& row : r.rows) {
      CHECK(row.batch <= row.max_sequences);
      // A batch is a tried one, or the most that fit where memory cuts the tried ones short (and
      // then the layout's largest).
      const std::int64_t per_replica = row.batch / row.par.dp, fit = row.max_sequences / row.par.dp;
      CHECK(row.batch % row.par.dp == 0);
      const bool tried = std::find(p.batches.begin(), p.batches.end(), per_replica) != p.batches.end();
      CHECK(row.memory_limited == !tried);
      if (row.memory_limited) CHECK((per_replica == fit && fit < p.batches.back()));
      for (const PlanRow& x : r.rows)
        if (x.par == row.par && row.memory_limited) CHECK(x.batch <= row.batch);
      // Every tried batch that fits is a row.
      for (std::int64_t b : p.batches)
        if (b <= fit)
          CHECK(std::any_of(r.rows.begin(), r.rows.end(), [&](const PlanRow& x) { return x.par == row.par && x.batch == b * row.par.dp; }));
      CHECK(row.gpus == row.par.ranks());
      CHECK(row.tpot.value > 0);
      CHECK(row.tokens_per_s_per_gpu > 0);
      CHECK(row.meets == (row.tpot <= p.tpot_limit));
    }
    if (r.best) {
      CHECK(r.rows[*r.best].meets);
      for (const PlanRow& row : r.rows)
        if (row.meets) CHECK(row.tokens_per_s_per_gpu <= r.rows[*r.best].tokens_per_s_per_gpu);
    }
    // Along the front, more throughput costs more TPOT.
    std::vector<const PlanRow*> front;
    for (const PlanRow& row : r.rows)
      if (row.pareto) front.push_back(&row);
    std::sort(front.begin(), front.end(), [](const PlanRow* a, const PlanRow* b) { return a->tpot < b->tpot; });
    for (std::size_t i = 1; i < front.size(); ++i) CHECK(front[i]->tokens_per_s_per_gpu > front[i - 1]->tokens_per_s_per_gpu);
    // Holding a layout's TP, DP and EP keeps exactly the searched rows of that layout, unchanged.
    for (const PlanRow& row : r.rows) {
      if (row.batch != 1) continue;
      PlanRequest h = p;
      h.tp = row.par.tp, h.dp = row.par.dp, h.ep = row.par.ep;
      const PlanResult held = plan_layouts(m, hw, rf, h);
      std::size_t n = 0;
      for (const PlanRow& x : r.rows) n += x.par == row.par ? 1 : 0;
      REQUIRE(held.rows.size() == n);
      for (const PlanRow& x : held.rows) {
        CHECK(x.par == row.par);
        if (x.batch == row.batch) CHECK(x.tokens_per_s_per_gpu == row.tokens_per_s_per_gpu);
      }
    }
  }
}

TEST_CASE("a step's block-fp8 GEMMs run the library the engine's profile names for the GPU's architecture", "[serving]") {
  // DeepSeek-V3 prefill on H100 (block-fp8 linears): the same step under an engine that runs DeepGEMM
  // on Hopper and one that runs its own kernels. The dense MLPs' GEMMs are compute-bound at 4,096
  // tokens a rank, so their times differ by the two efficiencies; the attention projections (beside
  // kv_b_proj, not a DeepGEMM launch here) are faster; the attention kernels and the all-to-all do
  // not move.
  const ModelSpec m = test::model("deepseek-v3");
  const HardwareSpec h100 = load_gpu("h100");
  const Roofline rf = default_roofline(h100, DType::bf16, bundled_efficiency());
  const KernelEfficiency& g = *rf.kernels[static_cast<std::size_t>(KernelFamily::gemm)];
  REQUIRE(g.eta_compute_fp8);
  REQUIRE(g.eta_compute_deepgemm);  // H100's tables time no DeepGEMM: its architecture's
  auto step_with = [&](bool hopper, bool blackwell, const HardwareSpec& hw, const Roofline& r) {
    StepRequest req;
    req.phase = Phase::prefill;
    set_step_weights(req, m, WeightDtype::fp8);
    req.w.groups = {SequenceGroup{8, 4096, 0}};
    req.w.par.ep = 8, req.w.par.dp = 8;
    StepOverheads o;
    o.deepgemm_hopper = hopper, o.deepgemm_blackwell = blackwell;
    use_overheads(req, o);
    req.links = links_for(hw, o);
    return step_time(m, hw, r, req);
  };
  const StepResult own = step_with(false, true, h100, rf), deep = step_with(true, false, h100, rf);
  const StepRow* a = row(own, StepComponent::dense_mlp);
  const StepRow* b = row(deep, StepComponent::dense_mlp);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(b->time.value / a->time.value == Approx(*g.eta_compute_fp8 / *g.eta_compute_deepgemm).epsilon(0.03));
  CHECK(row(deep, StepComponent::attention_projections)->time.value < row(own, StepComponent::attention_projections)->time.value);
  for (const StepComponent c : {StepComponent::attention_core, StepComponent::ep_dispatch, StepComponent::ep_combine}) {
    const StepRow* x = row(own, c);
    const StepRow* y = row(deep, c);
    if (x && y) CHECK(x->time.value == y->time.value);
  }
  // The Blackwell flag does not reach a Hopper GPU, nor the Hopper one a Blackwell GPU.
  CHECK(step_with(false, true, h100, rf).step_time.value == step_with(false, false, h100, rf).step_time.value);
  const HardwareSpec b200 = load_gpu("b200");
  auto flags = [](bool hopper, bool blackwell) {
    StepOverheads o;
    o.deepgemm_hopper = hopper, o.deepgemm_blackwell = blackwell;
    return o;
  };
  CHECK_FALSE(runs_deepgemm(flags(true, false), b200));
  CHECK(runs_deepgemm(flags(false, true), b200));
  CHECK_FALSE(runs_deepgemm(flags(true, true), load_gpu("a100-80gb")));
  // The bundled profiles: SGLang 0.5.4 runs DeepGEMM on both, TensorRT-LLM on Blackwell, vLLM 0.9 on neither.
  CHECK(runs_deepgemm(step_overheads(load_engine("sglang@0.5.4", "t")), h100));
  CHECK_FALSE(runs_deepgemm(step_overheads(load_engine("trtllm@1.0.0", "t")), h100));
  CHECK(runs_deepgemm(step_overheads(load_engine("trtllm@1.0.0", "t")), b200));
  CHECK_FALSE(runs_deepgemm(step_overheads(load_engine("vllm@0.9.0", "t")), b200));
}

}  // namespace
}  // namespace mlaplan
