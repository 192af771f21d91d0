// Capacity: the pool, tokens and sequences per rank, infeasibility as a result.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "mlaplan/core/capacity.hpp"

using namespace mlaplan;
using test::all_models;
using test::model;

namespace {
CapacityRequest request(const ModelSpec& m, Parallelism par, std::int64_t context = 32768) {
  CapacityRequest r;
  r.weights = default_weight_plan(m);
  r.par = par;
  r.context = context;
  r.reserve = Bytes{2 * kGiB};
  return r;
}
}  // namespace

TEST_CASE("DeepSeek-V3 does not fit one H200, on eight it does", "[capacity][example]") {
  const ModelSpec m = model("deepseek-v3");
  const HardwareSpec h = load_gpu("h200");
  const CapacityResult one = plan_capacity(m, h, request(m, {1, 1, 1}));
  CHECK_FALSE(one.fits());
  CHECK(one.verdict.reason == "weights and reserve exceed the usable memory per rank");
  CHECK(one.max_tokens_per_rank == 0);
  CHECK(one.kv_pool_bytes_per_rank == Bytes{0});

  const CapacityResult eight = plan_capacity(m, h, request(m, {8, 1, 1}));
  CHECK(eight.fits());
  CHECK(eight.usable_per_rank == Bytes{static_cast<std::int64_t>(141 * kGiB * 0.9)});
  CHECK(eight.kv_pool_bytes_per_rank == eight.usable_per_rank - eight.weight_bytes_per_rank - Bytes{2 * kGiB});
  CHECK(eight.kv_bytes_per_token_per_rank == Bytes{70272});
  CHECK(eight.max_tokens_per_rank == eight.kv_pool_bytes_per_rank.value / 70272);
  CHECK(eight.sequences_per_rank == eight.kv_pool_bytes_per_rank.value / (70272LL * 32768));
  CHECK(eight.max_tokens_cluster == eight.max_tokens_per_rank);  // TP ranks share tokens

  // Data-parallel attention with expert parallelism: each GPU holds its own sequences.
  const CapacityResult dp = plan_capacity(m, h, request(m, {1, 8, 8}));
  CHECK(dp.fits());
  CHECK(dp.max_tokens_cluster == dp.max_tokens_per_rank * 8);
  CHECK(dp.max_tokens_cluster > eight.max_tokens_cluster);
  CHECK(dp.max_sequences > eight.max_sequences);
}

TEST_CASE("Llama-3.1-70B on 4 x H100: KV heads split across ranks", "[capacity][example]") {
  const ModelSpec m = model("llama-3.1-70b");
  const CapacityResult r = plan_capacity(m, load_gpu("h100"), request(m, {4, 1, 1}, 8192));
  CHECK(r.fits());
  CHECK(r.kv_bytes_per_token_per_rank == Bytes{327680 / 4});
  CHECK(r.max_tokens_per_rank == r.kv_pool_bytes_per_rank.value / (327680 / 4));
}

TEST_CASE("A context that no pool can hold is a result with a reason", "[capacity][example]") {
  const ModelSpec m = model("llama-3.1-8b");
  CapacityRequest q = request(m, {1, 1, 1}, std::int64_t{1} << 30);
  const CapacityResult r = plan_capacity(m, load_gpu("h100"), q);
  CHECK_FALSE(r.fits());
  CHECK(r.verdict.reason == "the KV pool per rank cannot hold one sequence of the requested context");
  CHECK(r.max_tokens_per_rank > 0);
}

TEST_CASE("Tokens and sequences fill the pool without overflowing it, for every model", "[capacity][property]") {
  const HardwareSpec h = load_gpu("b200");
  for (const ModelSpec& m : all_models()) {
    for (std::int64_t block : {1, 16, 64}) {
      INFO(m.name << " block " << block);
      CapacityRequest q = request(m, {8, 1, 1}, 4096);
      if (m.heads % 8 != 0) q.par.tp = 4;
      q.block_size = block;
      const CapacityResult r = plan_capacity(m, h, q);
      const std::int64_t per = r.kv_bytes_per_token_per_rank.value;
      if (m.uniform_layers()) {  // with windows, tokens follow the sequences (the next test)
        CHECK(r.max_tokens_per_rank % block == 0);
        CHECK(r.max_tokens_per_rank * per <= r.kv_pool_bytes_per_rank.value);
        CHECK((r.max_tokens_per_rank + block) * per > r.kv_pool_bytes_per_rank.value);
      }
      CHECK(r.sequences_per_rank * r.sequence_bytes_per_rank.value <= r.kv_pool_bytes_per_rank.value);
      CHECK((r.sequences_per_rank + 1) * r.sequence_bytes_per_rank.value > r.kv_pool_bytes_per_rank.value);
    }
  }
}

TEST_CASE("With sliding windows tokens and sequences x context agree", "[capacity][property]") {
  for (const ModelSpec& m : mlaplan::test::all_models()) {
    if (!m.has_sliding_layers()) continue;
    for (std::int64_t ctx : {1024, 8192, 32768, 131072}) {
      CapacityRequest q;
      q.weights = default_weight_plan(m);
      q.context = ctx;
      q.block_size = 16;
      const CapacityResult r = plan_capacity(m, load_gpu("h100-sxm"), q);
      INFO(m.name << " context " << ctx);
      if (!r.fits()) continue;
      CHECK(r.max_tokens_per_rank >= r.sequences_per_rank * ctx);
      CHECK(r.max_tokens_per_rank < (r.sequences_per_rank + 1) * ctx);
      // The partial sequence fits in what the whole ones leave, one more token would not.
      const std::int64_t part = r.max_tokens_per_rank - r.sequences_per_rank * ctx;
      const Bytes rest = r.kv_pool_bytes_per_rank - r.sequence_bytes_per_rank * r.sequences_per_rank;
      CHECK(sequence_kv_bytes(m, q.kv_dtype, 1, part, 16) <= rest);
      if (part + 1 < ctx) CHECK(sequence_kv_bytes(m, q.kv_dtype, 1, part + 1, 16) > rest);
    }
  }
}
