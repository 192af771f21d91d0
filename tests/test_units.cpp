// Unit types, dtype sizes defined once, and op ids: the type system keeps units apart and the
// definitions agree with each other.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <type_traits>

#include "helpers.hpp"
#include "mlaplan/core/dtype.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/core/units.hpp"

using namespace mlaplan;

// Quantities of different units do not add, compare or convert implicitly.
static_assert(!std::is_invocable_v<std::plus<>, Flops, BytesF>);
static_assert(!std::is_invocable_v<std::plus<>, Seconds, double>);
static_assert(!std::is_convertible_v<Flops, double>);
static_assert(!std::is_convertible_v<double, Seconds>);
static_assert(!std::is_invocable_v<std::less<>, Bytes, BytesF>);
static_assert(std::is_same_v<decltype(Flops{1} / FlopsPerSecond{1}), Seconds>);
static_assert(std::is_same_v<decltype(BytesF{1} / BytesPerSecond{1}), Seconds>);
static_assert(std::is_same_v<decltype(Flops{1} / BytesF{1}), double>);
static_assert(std::is_same_v<decltype(Flops{1} / Seconds{1}), FlopsPerSecond>);

TEST_CASE("Units combine only as physics allows", "[units]") {
  CHECK(Flops{2e12} / FlopsPerSecond{1e12} == Seconds{2});
  CHECK(BytesF{3e9} / BytesPerSecond{1.5e9} == Seconds{2});
  CHECK(Flops{1000} / BytesF{4} == 250);
  CHECK(FlopsPerSecond{989e12} / BytesPerSecond{4.8e12} == Approx(206.04).epsilon(1e-4));
  CHECK(to_real(Bytes{70272}) == BytesF{70272});
  CHECK(Seconds{1} + Seconds{2} == Seconds{3});
}

TEST_CASE("Weight dtype sizes: one definition, exact per matrix, amortised per element", "[units][dtype]") {
  // fp8 with 128x128 fp32 block scales (DeepSeek-V3's q_a_proj: 1536 x 7168).
  CHECK(weight_matrix_bytes(1536, 7168, weight_format(WeightDtype::fp8)) == Bytes{1536LL * 7168 + 12 * 56 * 4});
  // fp8 with one fp32 scale per matrix (Model Optimizer's per-tensor FP8).
  CHECK(weight_matrix_bytes(1536, 7168, weight_format(WeightDtype::fp8_tensor)) == Bytes{1536LL * 7168 + 4});
  CHECK(bytes_per_element(WeightDtype::fp8_tensor) == 1);
  CHECK(parse_weight_dtype("FP8_TENSOR") == WeightDtype::fp8_tensor);
  // mxfp4: half a byte per value and one e8m0 byte per 32 input values of each row.
  CHECK(weight_matrix_bytes(1536, 7168, weight_format(WeightDtype::mxfp4)) == Bytes{1536LL * 7168 / 2 + 1536LL * 224});
  CHECK(weight_matrix_bytes(3, 5, weight_format(WeightDtype::mxfp4)) == Bytes{8 + 3});  // ⌈15/2⌉ values, one scale per row
  CHECK(weight_matrix_bytes(100, 7, weight_format(WeightDtype::bf16)) == Bytes{1400});
  CHECK(bytes_per_element(WeightDtype::fp8) == 1 + 4.0 / 16384);
  CHECK(bytes_per_element(WeightDtype::mxfp4) == 0.53125);
  CHECK(bytes_per_element(WeightDtype::bf16) == 2);
  CHECK(bytes_per_element(WeightDtype::fp32) == 4);
  CHECK(bytes_per_element(DType::fp8) == 1);
  CHECK(bytes_per_element(DType::fp4) == 0.5);
  // The exact size of a large matrix is the amortised one (the two come from one format), but for
  // a format's one scale per matrix, which no element carries.
  for (WeightDtype d : all_weight_dtypes()) {
    INFO(to_string(d));
    const WeightFormat f = weight_format(d);
    const double per_matrix = f.block_rows <= 0 && f.block_cols <= 0 ? f.scale_bytes : 0;
    const double exact = static_cast<double>(weight_matrix_bytes(128 * 64, 128 * 64, f).value);
    CHECK((exact - per_matrix) / (128.0 * 64 * 128 * 64) == Approx(bytes_per_element(d)).epsilon(1e-12));
  }
}

TEST_CASE("Op ids: unique stable names, a kind each, and every op the engine emits has one", "[units][ops]") {
  std::set<std::string_view> names;
  for (int i = 0; i < kOpIdCount; ++i) {
    const OpId id = static_cast<OpId>(i);
    CHECK(to_string(id) != "?");
    CHECK(names.insert(to_string(id)).second);
    CHECK(to_string(kind_of(id)) != "?");
  }
  CHECK(to_string(OpId::latent_attention_mqa) == "latent_attention_mqa");  // the JSON contract
  CHECK(to_string(OpId::attention_mha) == "attention_mha");
  // Every id is emitted by some plan of some bundled model (no dead ids), and every emitted op's id
  // names its own op: the enum and the engine agree.
  const HardwareSpec h = load_gpu("h200");
  const Roofline rf = roofline_for(h, DType::bf16, Efficiency{});
  std::set<OpId> emitted;
  for (const ModelSpec& m : test::all_models()) {
    for (bool projections : {false, true})
      for (std::int64_t splits : {1, 4}) {
        Workload w;
        w.groups = {SequenceGroup{2, 3, 500}};
        w.projections = projections;
        w.kv_splits = splits;
        w.chunk = 128;
        for (const PathResult& p : cost_study(m, w, rf).paths)
          for (const OpRow& r : p.ops) emitted.insert(r.op.id);
      }
    // The rest of the model comes from a serving step (MTP on where the model has it).
    StepRequest req;
    req.w.groups = {SequenceGroup{2, 2, 500}};
    req.mtp_draft = 1;
    req.mtp_accept = 0.5;
    for (const StepRow& r : step_time(m, h, rf, req).rows) emitted.insert(r.ops.begin(), r.ops.end());
    // A GQA model's RoPE and cache write in one kernel, as TensorRT-LLM runs them (the default request
    // has no engine, so none).
    req.overheads.gqa_rope_kernels_decode = 1;
    for (const StepRow& r : step_time(m, h, rf, req).rows) emitted.insert(r.ops.begin(), r.ops.end());
    // An expert-parallel prefill (normal-mode all-to-all) scatters tokens to expert rows and back.
    if (m.moe) {
      StepRequest ep;
      ep.phase = Phase::prefill;
      ep.w.par = Parallelism{1, 8, 8};
      ep.w.groups = {SequenceGroup{16, 64, 0}};
      ep.gpus_per_node = 8;
      set_step_weights(ep, m, std::nullopt);  // DeepSeek's fp8 checkpoints quantize activations before their GEMMs
      for (const StepRow& r : step_time(m, h, rf, ep).rows) emitted.insert(r.ops.begin(), r.ops.end());
    }
  }
  CHECK(static_cast<int>(emitted.size()) == kOpIdCount);
}

TEST_CASE("Split-KV decode writes fp32 partials that a merge op reads", "[units][ops]") {
  const ModelSpec m = test::model("deepseek-v3");
  Workload w;
  w.groups = {SequenceGroup{4, 1, 8191}};
  const PathPlan one = mla_path(m, w, PathKind::absorb);
  CHECK(one.find(OpId::split_kv_merge) == nullptr);
  w.kv_splits = 8;
  const PathPlan eight = mla_path(m, w, PathKind::absorb);
  const Op* merge = eight.find(OpId::split_kv_merge);
  REQUIRE(merge != nullptr);
  const double rows = 4.0 * 128;  // tokens × heads
  CHECK(eight.find(OpId::latent_attention_mqa)->bytes_written == BytesF{8 * rows * (512 * 4 + 4)});
  CHECK(merge->bytes_read == BytesF{8 * rows * (512 * 4 + 4)});
  CHECK(merge->bytes_written == BytesF{rows * 512 * 2});
  CHECK(eight.find(OpId::latent_attention_mqa)->flops == one.find(OpId::latent_attention_mqa)->flops);
}
