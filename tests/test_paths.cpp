// The MLA path engine: the seeds' derived figures as exact tests, then laws over every model.
#include <catch2/catch.hpp>

#include <cmath>

#include "helpers.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

using namespace mlaplan;
using test::all_models;
using test::model;

namespace {

Workload step(double query, double prefix, std::int64_t tp = 1, KvDtype kv = KvDtype::bf16) {
  Workload w;
  w.groups = {SequenceGroup{1, query, prefix}};
  w.par.tp = tp;
  w.kv = kv;
  return w;
}

double gflop(const ModelSpec& m, const Workload& w, PathKind k) { return mla_path(m, w, k).flops().value / 1e9; }

Op op_of(const PathPlan& p, OpId id) {
  const Op* op = p.find(id);
  if (!op) FAIL("no op " << to_string(id));
  return *op;
}

}  // namespace

TEST_CASE("DeepSeek-V3 TP=1: expanding a token and the cost of a pair", "[paths][example]") {
  const MlaGeometry g = mla_geometry(model("deepseek-v3"), step(1, 0));
  CHECK(expand_flops_per_token(g) == Flops{33554432.0});
  CHECK(expand_flops_per_pair(g) == Flops{81920.0});
  CHECK(absorb_flops_per_pair(g) == Flops{278528.0});
  CHECK(absorb_flops_per_pair(g) / expand_flops_per_pair(g) == Approx(3.4));
}

TEST_CASE("DeepSeek-V3 per-layer attention core FLOPs: the seeds' four workloads", "[paths][example]") {
  const ModelSpec m = model("deepseek-v3");
  // Decode at 8K context: one query after 8,191 cached tokens (S = 8,192 keys).
  CHECK(mla_path(m, step(1, 8191), PathKind::expand).flops() == Flops{33554432.0 * 8192 + 81920.0 * 8192});
  CHECK(gflop(m, step(1, 8191), PathKind::expand) == Approx(275.5).margin(0.05));
  CHECK(gflop(m, step(1, 8191), PathKind::absorb) == Approx(2.3).margin(0.05));
  // Prefill 8K: causal, 8,192·8,193/2 pairs.
  CHECK(gflop(m, step(8192, 0), PathKind::expand) == Approx(3024.0).margin(0.05));
  CHECK(gflop(m, step(8192, 0), PathKind::absorb) == Approx(9621.9).margin(0.05));
  // Multi-token blocks after a 32K prefix.
  CHECK(gflop(m, step(64, 32768), PathKind::expand) == Approx(1273.6).margin(0.05));
  CHECK(gflop(m, step(64, 32768), PathKind::absorb) == Approx(586.8).margin(0.05));
  CHECK(gflop(m, step(512, 32768), PathKind::expand) == Approx(2501.8).margin(0.05));
  CHECK(gflop(m, step(512, 32768), PathKind::absorb) == Approx(4726.7).margin(0.05));
  // The folds cost exactly what expanding one token costs: 2·h·r·(d_n + d_v) per query.
  const PathPlan a = mla_path(m, step(1, 8191), PathKind::absorb);
  CHECK(op_of(a, OpId::q_absorb_w_uk).flops + op_of(a, OpId::out_absorb_w_uv).flops == Flops{33554432.0});
}

TEST_CASE("The asymptotic FLOP crossover of DeepSeek-V3 is 170.7 and TP-invariant", "[paths][crossover][example]") {
  const ModelSpec m = model("deepseek-v3");
  for (std::int64_t tp : {1, 2, 4, 8, 16}) {
    const MlaGeometry g = mla_geometry(m, step(1, 0, tp));
    CHECK(asymptotic_flop_crossover_query(g) == Approx(512.0 * 256 / 768));
    CHECK(asymptotic_flop_crossover_query(g) == Approx(170.67).margin(0.01));
    CHECK(flop_crossover_query(g, 1e12, true) == Approx(170.67).margin(0.01));
    CHECK(flop_crossover_query(g, 32768, true) == Approx(flop_crossover_query(mla_geometry(m, step(1, 0)), 32768, true)));
  }
  // No prefix: expanding always costs fewer FLOPs.
  CHECK(flop_crossover_query(mla_geometry(m, step(1, 0)), 0, true) == 0);
}

TEST_CASE("The closed-form FLOP crossover equalises the two paths' FLOPs", "[paths][crossover]") {
  const ModelSpec m = model("deepseek-v3");
  for (bool causal : {true, false}) {
    for (double p : {1.0, 100.0, 4096.0, 32768.0, 131072.0}) {
      Workload w = step(1, p);
      w.causal = causal;
      const double q = flop_crossover_query(mla_geometry(m, w), p, causal);
      w.groups[0].query = q;
      const Flops fe = mla_path(m, w, PathKind::expand).flops(), fa = mla_path(m, w, PathKind::absorb).flops();
      INFO("P=" << p << " causal=" << causal << " Q*=" << q);
      CHECK(fe.value == Approx(fa.value).epsilon(1e-9));
      w.groups[0].query = q * 0.9;
      CHECK(mla_path(m, w, PathKind::absorb).flops() < mla_path(m, w, PathKind::expand).flops());
      w.groups[0].query = q * 1.1;
      CHECK(mla_path(m, w, PathKind::absorb).flops() > mla_path(m, w, PathKind::expand).flops());
    }
  }
}

TEST_CASE("Absorbed decode intensity: 242 FLOP/B in bf16, 30 at TP=8, 484 with an fp8 cache", "[paths][example]") {
  const ModelSpec m = model("deepseek-v3");
  auto intensity = [&](std::int64_t tp, KvDtype kv) {
    const Op att = op_of(mla_path(m, step(1, 131071, tp, kv), PathKind::absorb), OpId::latent_attention_mqa);
    return att.flops / att.cache_bytes_read;
  };
  CHECK(intensity(1, KvDtype::bf16) == Approx(278528.0 / 1152));
  CHECK(std::round(intensity(1, KvDtype::bf16)) == 242);
  CHECK(std::round(intensity(8, KvDtype::bf16)) == 30);
  CHECK(std::round(intensity(1, KvDtype::fp8)) == 484);
  // GQA with 64 query heads over 8 KV heads: 8 FLOP/B.
  const ModelSpec l = model("llama-3.1-70b");
  Workload w = step(1, 8191);
  const Op att = op_of(standard_path(l, w), OpId::attention);
  CHECK(att.flops / att.cache_bytes_read == 8.0);
}

TEST_CASE("GQA attention's grid packs a KV head's query heads into one tile and names its kernel: decode or prefill", "[paths][efficiency]") {
  // Llama-3.1-70B at TP4: 16 query heads over 2 KV heads, a group of 8.
  const ModelSpec l = model("llama-3.1-70b");
  Workload w = step(1, 4095, 4);
  w.groups = {SequenceGroup{4, 1, 4095}};
  const Op dec = op_of(standard_path(l, w), OpId::attention);
  CHECK(dec.tiling.decode_kernel);
  CHECK(family_of(dec) == KernelFamily::attention_decode);
  CHECK(dec.tiling.ctas == 4 * 2);                    // 4 sequences x 2 KV heads, 8 query rows each
  CHECK(dec.tiling.split_k == 16);                    // XQA: 4,096 / 128 = 32 blocks, at most round(sqrt(8 x 32)) = 16
  CHECK(dec.tiling.sequences == 4 * 2);               // its per-sequence cost is per (sequence, KV head) block
  CHECK(dec.tiling.xqa_group);                        // a group of 8 has an XQA kernel
  CHECK(dec.tiling.xqa_gain_blocks == 4 * 2 * 32);    // 4 sequences x 2 KV heads x 4,096 / 128
  CHECK(dec.tiling.mmha_ctas == 4 * 16);              // MMHA: a block per query head and sequence
  CHECK(dec.tiling.mmha_key_tiles == 32);             // ⌈4,096 / 128⌉
  // Sequences of different lengths: XQA's test takes every block at the longest one's count.
  w.groups = {SequenceGroup{1, 1, 3967}, SequenceGroup{1, 1, 1}};
  const Op mixed = op_of(standard_path(l, w), OpId::attention);
  CHECK(mixed.tiling.xqa_gain_blocks == 2 * 2 * 31);  // 2 sequences x 2 KV heads x ⌊3,968 / 128⌋
  CHECK(mixed.tiling.split_k == 16);                  // 31 cut to round(sqrt(248)) = 16
  CHECK(mixed.tiling.sequences == 2 * 2);
  CHECK(mixed.tiling.mmha_key_tiles == 31);
  CHECK(dec.tiling.longest_cta_flops == 8.0 * 4096 * 2 * (128 + 128));
  CHECK_FALSE(dec.tiling.xqa_fp8_cache);  // a bf16 cache
  {
    Workload f = w;
    f.kv = KvDtype::fp8;
    f.groups = {SequenceGroup{4, 1, 4095}};
    CHECK(op_of(standard_path(l, f), OpId::attention).tiling.xqa_fp8_cache);
  }
  // A speculative step's 3 tokens still run the decode kernel; a prompt the prefill one.
  w.spec_tokens = 2;
  w.groups = {SequenceGroup{4, 3, 4093}};
  const Op spec = op_of(standard_path(l, w), OpId::attention);
  CHECK(spec.tiling.decode_kernel);
  // ... on XQA's speculative kernels: any head group, never MMHA, one block per sequence and KV head.
  CHECK(spec.tiling.xqa_group);
  CHECK(spec.tiling.mmha_ctas == 0);
  CHECK(spec.tiling.split_k == 1);
  CHECK(spec.tiling.sequences == 4 * 2);
  w.groups = {SequenceGroup{2, 1024, 0}};
  const Op pre = op_of(standard_path(l, w), OpId::attention);
  CHECK_FALSE(pre.tiling.decode_kernel);
  CHECK(pre.tiling.split_k == 4);                     // a prefill kernel splits keys in slices of 256
  CHECK(pre.tiling.mmha_ctas == 0);
  // A one-token prompt in a context phase runs the prefill kernel.
  w.groups = {SequenceGroup{2, 1, 0}};
  CHECK(op_of(standard_path(l, w), OpId::attention).tiling.decode_kernel);
  w.context_phase = true;
  CHECK_FALSE(op_of(standard_path(l, w), OpId::attention).tiling.decode_kernel);
  CHECK(family_of(pre) == KernelFamily::attention);
  CHECK(pre.tiling.ctas == 2 * (1024 * 8 / 128) * 2);  // 64 tiles of 128 packed rows per KV head
  CHECK(pre.tiling.longest_cta_flops == 128.0 * 1024 * 2 * (128 + 128));
}

TEST_CASE("4,096 tokens over 61 layers on H100: 69.6 GFLOP and 287.8 MB, 70 us and 86 us", "[paths][roofline][example]") {
  const ModelSpec m = model("deepseek-v3");
  const Op att = op_of(mla_path(m, step(1, 4095), PathKind::absorb), OpId::latent_attention_mqa);
  const double flops = att.flops.value * 61, cache = att.cache_bytes_read.value * 61;
  CHECK(flops / 1e9 == Approx(69.6).margin(0.05));
  CHECK(cache / 1e6 == Approx(287.8).margin(0.05));
  const HardwareSpec h100 = load_gpu("h100");
  const Roofline rf = roofline_for(h100, DType::bf16, Efficiency{});
  CHECK(rf.peak == FlopsPerSecond{989.4e12});
  CHECK(flops / rf.peak.value * 1e6 == Approx(70).margin(0.5));
  CHECK(cache / rf.bandwidth.value * 1e6 == Approx(86).margin(0.5));
  // The op as a whole also reads the query and writes the output, so it is a little slower.
  CHECK(op_time(att, rf).memory.value * 61 > cache / rf.bandwidth.value);
  CHECK(rf.ridge() == Approx(295.3).epsilon(1e-3));
}

TEST_CASE("Chunked expand: same FLOPs as expand plus the merge, workspace bounded by the chunk", "[paths]") {
  const ModelSpec m = model("deepseek-v3");
  Workload w = step(1024, 65536);
  w.chunk = 8192;
  const PathPlan e = mla_path(m, w, PathKind::expand), c = mla_path(m, w, PathKind::chunked);
  const double chunks = std::ceil((65536.0 + 1024) / 8192);
  const Op merge = op_of(c, OpId::lse_merge);
  CHECK(merge.flops == Flops{(chunks - 1) * 1024 * 128 * (2 * 128 + 4)});
  CHECK(c.flops().value == Approx((e.flops() + merge.flops).value));
  CHECK(c.workspace_bytes() == BytesF{8192.0 * 128 * (128 + 64 + 128) * 2});
  CHECK(e.workspace_bytes() == BytesF{(65536.0 + 1024) * 128 * (128 + 64 + 128) * 2});
  w.chunk = 1e9;  // one chunk: no merge work
  CHECK(mla_path(m, w, PathKind::chunked).flops() == mla_path(m, w, PathKind::expand).flops());
}

TEST_CASE("DSA: indexer over the whole prefix, absorbed attention over the top 2,048", "[paths][example]") {
  const ModelSpec m = model("deepseek-v3.2-exp");
  const PathPlan s = mla_path(m, step(1, 32767), PathKind::sparse);
  const Op ix = op_of(s, OpId::indexer_scores);
  CHECK(ix.flops == Flops{32768.0 * 2 * 64 * 129});
  CHECK(ix.cache_bytes_read == BytesF{32768.0 * 132});
  const Op att = op_of(s, OpId::sparse_latent_attention);
  CHECK(att.flops == Flops{2048.0 * 278528});
  CHECK(att.cache_bytes_read == BytesF{2048.0 * 1152});
  // A prefix shorter than top-k: sparse attention is the dense one.
  const PathPlan shortp = mla_path(m, step(4, 100), PathKind::sparse);
  CHECK(op_of(shortp, OpId::sparse_latent_attention).flops ==
        op_of(mla_path(m, step(4, 100), PathKind::absorb), OpId::latent_attention_mqa).flops);
}

TEST_CASE("Layer scope adds the projections, the same on both paths", "[paths]") {
  const ModelSpec m = model("deepseek-v3");
  Workload w = step(16, 4096);
  const double core_diff = (mla_path(m, w, PathKind::expand).flops() - mla_path(m, w, PathKind::absorb).flops()).value;
  w.projections = true;
  const double layer_diff = (mla_path(m, w, PathKind::expand).flops() - mla_path(m, w, PathKind::absorb).flops()).value;
  CHECK(layer_diff == Approx(core_diff));
  const PathPlan p = mla_path(m, w, PathKind::absorb);
  CHECK(op_of(p, OpId::q_a_proj).flops == Flops{2.0 * 16 * 7168 * 1536});
  CHECK(op_of(p, OpId::o_proj).flops == Flops{2.0 * 16 * 128 * 128 * 7168});
}

TEST_CASE("Data-parallel attention splits the batch, TP splits the heads", "[paths]") {
  const ModelSpec m = model("deepseek-v3");
  Workload w = step(1, 8191);
  w.groups[0].count = 64;
  const double full = mla_path(m, w, PathKind::absorb).flops().value;
  w.par.dp = 8;
  CHECK(mla_path(m, w, PathKind::absorb).flops().value == Approx(full / 8));
  w.par.dp = 1;
  w.par.tp = 8;
  CHECK(mla_path(m, w, PathKind::absorb).flops().value == Approx(full / 8));
  // Under TP the cache is still read whole: bytes do not fall by 8.
  CHECK(op_of(mla_path(m, w, PathKind::absorb), OpId::latent_attention_mqa).cache_bytes_read == BytesF{64.0 * 8192 * 1152});
}

// ---- laws over every bundled model ----

TEST_CASE("Roofline: every op's time is the larger of its two bounds", "[paths][roofline][property]") {
  const HardwareSpec h = load_gpu("h200");
  for (const ModelSpec& m : all_models()) {
    for (double launch : {0.0, 3e-6}) {
      const Roofline rf = roofline_for(h, DType::bf16, Efficiency{0.7, 0.85, "test"}, Seconds{launch});
      for (double q : {1.0, 64.0, 2048.0}) {
        Workload w = step(q, 8192);
        w.projections = true;
        for (PathKind k : paths_for(m)) {
          const PathPlan p = k == PathKind::standard ? standard_path(m, w) : mla_path(m, w, k);
          double sum = 0;
          for (const Op& op : p) {
            const OpTime t = op_time(op, rf);
            INFO(m.name << " " << op.name());
            // The DSA indexer runs at the fp8 peak whatever the step's dtype.
            const double peak = h.peak_flops(op.fp8 ? DType::fp8 : DType::bf16)->value;
            CHECK(op.fp8 == (op.id == OpId::indexer_scores));
            CHECK(t.time.value == std::max(op.flops.value / (peak * 0.7), op.bytes().value / (h.memory_bandwidth.value * 0.85)) + launch);
            sum += t.time.value;
          }
          // path_cost divides once per path, op_time once per op: the two must agree.
          CHECK(path_cost(p, rf).time.value == Approx(sum));
        }
      }
    }
  }
}

TEST_CASE("The roofline crossover solves T_expand = T_absorb, FLOP-only ignores TP, roofline does not", "[paths][crossover][property]") {
  const HardwareSpec h = load_gpu("h200");
  const Roofline rf = roofline_for(h, DType::bf16, Efficiency{});
  for (const ModelSpec& m : all_models()) {
    if (!m.is_mla()) continue;
    std::vector<double> by_tp;
    for (std::int64_t tp : {1, 8}) {
      if (m.heads % tp != 0) continue;
      Workload w = step(1, 0, tp);
      const double flop_q = flop_crossover_query(mla_geometry(m, w), 16384, true);
      CHECK(flop_q == Approx(flop_crossover_query(mla_geometry(m, step(1, 0, 1)), 16384, true)));
      const double q = roofline_crossover_query(m, w, 16384, 32, rf);
      INFO(m.name << " TP" << tp << " Q*=" << q);
      REQUIRE(std::isfinite(q));
      REQUIRE(q > 0);
      w.groups = {SequenceGroup{32, q, 16384}};
      const double te = path_cost(mla_path(m, w, PathKind::expand), rf).time.value;
      const double ta = path_cost(mla_path(m, w, PathKind::absorb), rf).time.value;
      CHECK(te == Approx(ta).epsilon(1e-9));
      by_tp.push_back(q);
    }
    // It moves, if only a little for DeepSeek shapes: at Q* ≈ 190 the absorbed attention is
    // compute-bound at TP 1 and 8 alike; only the unsplit cache reads and weight reads differ.
    if (by_tp.size() == 2) CHECK(std::fabs(by_tp[0] - by_tp[1]) > 1e-6 * by_tp[0]);
  }
}

TEST_CASE("The folds tile their outputs 128 x 128 per head, and W_UV splits its 512-long reduction to fill the SMs", "[paths][example]") {
  // DeepSeek-V3, one token at TP 1: W_UK [128 heads, 1, 128] x [128, 128, 512], W_UV [128, 1, 512] x [128, 512, 128].
  const PathPlan p = mla_path(model("deepseek-v3"), step(1, 8191), PathKind::absorb);
  const Op uk = op_of(p, OpId::q_absorb_w_uk), uv = op_of(p, OpId::out_absorb_w_uv);
  CHECK(uk.tiling.ctas == 128 * 1 * 4);  // 512 output columns: four tiles a head
  CHECK(uk.tiling.split_k == 1);         // K = 128: one slice
  CHECK(uv.tiling.ctas == 128 * 1 * 1);
  CHECK(uv.tiling.split_k == 4);         // K = 512: four slices of 128
  // On H100's 132 SMs W_UV's 128 tiles split in two (⌈132 / 128⌉), W_UK's 512 not at all; at 64
  // sequences (still one token tile a head) the same.
  CHECK(launched_ctas(uv.tiling, 132) == 256);
  CHECK(launched_ctas(uk.tiling, 132) == 512);
  // 32 heads (TP 4) on 132 SMs: ⌈132 / 32⌉ = 5, cut to the four slices.
  const Op uv4 = op_of(mla_path(model("deepseek-v3"), step(1, 8191, 4), PathKind::absorb), OpId::out_absorb_w_uv);
  CHECK(launched_ctas(uv4.tiling, 132) == 32 * 4);
}

TEST_CASE("fp8 weight reads carry their block scales, at the model's own block shape", "[paths][example]") {
  Workload w = step(1, 8191);
  w.weights = WeightDtype::fp8;
  const double tokens_in = 1.0 * 128 * 128 * 2;  // the query's nope part, bf16
  const Op fold = op_of(mla_path(model("deepseek-v3"), w, PathKind::absorb), OpId::q_absorb_w_uk);
  // 128 heads x 128 x 512 fp8 values + one fp32 scale per 128x128 block.
  CHECK(fold.bytes_read.value == Approx(128.0 * 128 * 512 * (1 + 4.0 / 16384) + tokens_in).epsilon(1e-15));
  const ModelSpec small_blocks = model("deepseek-v3", {"quantization_config.weight_block_size=[64,64]"});
  REQUIRE(small_blocks.quant_format.block_rows == 64);
  const Op fold64 = op_of(mla_path(small_blocks, w, PathKind::absorb), OpId::q_absorb_w_uk);
  CHECK(fold64.bytes_read.value == Approx(128.0 * 128 * 512 * (1 + 4.0 / 4096) + tokens_in).epsilon(1e-15));
}

TEST_CASE("Linear layers run at the attention weights' precision: fp8 GEMMs at the fp8 peak, the folds never", "[paths][property]") {
  // Every bundled model, every path: the projections (and MLA's kv_b_proj, expanded or chunked), the
  // attention's GEMMs but DSA's indexer projection, take the weights' precision; the W_UK/W_UV folds,
  // the attention kernels and the DSA indexer keep theirs.
  auto linear = [](const Op& op) { return op.kind() == OpKind::gemm && op.id != OpId::indexer_proj; };
  for (const ModelSpec& m : all_models()) {
    for (const WeightDtype d : {WeightDtype::bf16, WeightDtype::fp8, WeightDtype::fp8_tensor, WeightDtype::int4}) {
      Workload w = step(2, 8190);
      w.groups.push_back(SequenceGroup{1, 4096, 0});
      w.weights = d;
      w.projections = true;
      std::vector<PathPlan> plans;
      if (m.is_mla()) {
        for (const PathKind k : paths_for(m)) plans.push_back(mla_path(m, w, k));
      } else {
        plans.push_back(standard_path(m, w));
      }
      int linears = 0;
      for (const PathPlan& p : plans) {
        for (const Op& op : p) {
          INFO(m.name << " " << to_string(d) << " " << to_string(op.id));
          if (linear(op)) {
            ++linears;
            CHECK(op.fp8 == is_fp8(d));
            CHECK(op.fp8_per_tensor == (d == WeightDtype::fp8_tensor));
          } else if (op.id != OpId::indexer_proj && op.id != OpId::indexer_scores) {
            CHECK_FALSE(op.fp8);
          }
        }
      }
      CHECK(linears >= 2);
    }
  }
}

TEST_CASE("DeepSeek-V3 with fp8 weights: kv_b_proj's 137.4 GFLOP over 4,096 keys compute at the fp8 peak", "[paths][roofline][example]") {
  const ModelSpec m = model("deepseek-v3");
  Workload w = step(4096, 0);
  w.weights = WeightDtype::fp8;
  const Op up = op_of(mla_path(m, w, PathKind::expand), OpId::kv_up_proj);
  // 2 · 4,096 keys · 512 · 128 heads · (128 + 128) = 137.4 GFLOP.
  const double flops = 2.0 * 4096 * 512 * 128 * 256;
  CHECK(up.flops.value == Approx(flops).epsilon(1e-15));
  Roofline rf;
  rf.peak = FlopsPerSecond{989e12};
  rf.peak_fp8 = FlopsPerSecond{1979e12};
  rf.bandwidth = BytesPerSecond{3.35e12};
  const OpTime fp8 = op_time(up, rf);
  w.weights = WeightDtype::bf16;
  const OpTime bf16 = op_time(op_of(mla_path(m, w, PathKind::expand), OpId::kv_up_proj), rf);
  CHECK(fp8.compute.value == Approx(flops / 1979e12));  // 69.4 us
  CHECK(bf16.compute.value == Approx(flops / 989e12));  // 138.9 us
  // Writing 4,096 x 128 x 256 bf16 values (268 MB) then bounds the fp8 GEMM: memory, not compute.
  CHECK(bf16.compute_bound);
  CHECK_FALSE(fp8.compute_bound);
  CHECK(fp8.time < bf16.time);
}

TEST_CASE("DeepSeek-V3.2: a dense path runs the indexer once a query sees more than top-k keys", "[paths][dsa]") {
  const ModelSpec m = model("deepseek-v3.2-exp");
  REQUIRE(m.indexer);
  REQUIRE(m.indexer->topk == 2048);
  auto has_indexer = [&](PathKind k, double query, double prefix) {
    Workload w = step(query, prefix);
    const PathPlan p = mla_path(m, w, k);
    return p.find(OpId::indexer_scores) != nullptr;
  };
  for (PathKind k : {PathKind::absorb, PathKind::expand, PathKind::chunked}) {
    INFO(to_string(k));
    CHECK(!has_indexer(k, 1, 2047));   // 2,048 keys: dense equals DSA, no indexer needed
    CHECK(!has_indexer(k, 2048, 0));   // a 2,048-token prompt: its last query sees 2,048 keys
    CHECK(has_indexer(k, 1, 2048));    // 2,049 keys: the top-k mask needs the indexer
    CHECK(has_indexer(k, 4096, 0));
  }
  CHECK(has_indexer(PathKind::sparse, 1, 100));  // the sparse path always scores
  // With the projections in scope, a dense step below top-k still writes the indexer's keys to its
  // cache (wk: hidden 7,168 -> 128 per token; 132 B per token and layer: fp8 key and its fp32 scale).
  Workload lw = step(2048, 0);
  lw.projections = true;
  const PathPlan dense = mla_path(m, lw, PathKind::expand);
  const Op* keys = dense.find(OpId::indexer_proj);
  REQUIRE(keys);
  CHECK(dense.find(OpId::indexer_scores) == nullptr);
  CHECK(keys->flops.value == Approx(2.0 * 2048 * 7168 * 128));
  CHECK(keys->bytes_written.value == Approx(2048.0 * 128 * 2 + 2048.0 * 132));
  // The indexer's scores run at the fp8 peak: on an H200, half the time of the same FLOPs in bf16.
  const HardwareSpec h = load_gpu("h200");
  const Roofline rf = roofline_for(h, DType::bf16, Efficiency{});
  const PathPlan p = mla_path(m, step(4096, 0), PathKind::expand);
  const Op* ix = p.find(OpId::indexer_scores);
  REQUIRE(ix);
  CHECK(ix->fp8);
  const OpTime t = op_time(*ix, rf);
  CHECK(t.compute.value == Approx(ix->flops.value / h.peak_flops(DType::fp8)->value));
  CHECK(t.compute.value == Approx(0.5 * ix->flops.value / h.peak_flops(DType::bf16)->value));
}
