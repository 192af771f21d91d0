// KV-cache formulas: worked examples with exact numbers, then laws over every bundled model.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "mlaplan/core/kv.hpp"

using namespace mlaplan;
using test::all_models;
using test::model;

TEST_CASE("DeepSeek-V3 bf16 latent: 1,152 B per token per layer, 70,272 B per token", "[kv][example]") {
  const ModelSpec m = model("deepseek-v3");
  CHECK(m.attention == AttentionKind::mla);
  CHECK(m.num_layers() == 61);
  CHECK(kv_bytes_per_token_per_layer(m, KvDtype::bf16).total() == Bytes{1152});
  CHECK(kv_bytes_per_token(m, KvDtype::bf16).total() == Bytes{70272});
  CHECK(indexer_bytes_per_token(m) == Bytes{0});
}

TEST_CASE("FlashMLA fp8 layout: 656 B per layer, 40,016 B per token, plain fp8 576 B", "[kv][example]") {
  const ModelSpec m = model("deepseek-v3");
  const KvBytes flash = kv_bytes_per_token_per_layer(m, KvDtype::fp8_flashmla);
  CHECK(flash.total() == Bytes{656});
  CHECK(flash.data == Bytes{512 + 64 * 2});  // e4m3 latent + bf16 RoPE key
  CHECK(flash.scales == Bytes{16});          // 4 fp32 scales, one per 128 latent values
  CHECK(kv_bytes_per_token(m, KvDtype::fp8_flashmla).total() == Bytes{40016});
  CHECK(kv_bytes_per_token_per_layer(m, KvDtype::fp8).total() == Bytes{576});
}

TEST_CASE("fp4 (MXFP4) latent: half a byte per value plus one scale byte per 32", "[kv][example]") {
  const ModelSpec m = model("deepseek-v3");
  const KvBytes b = kv_bytes_per_token_per_layer(m, KvDtype::fp4);
  CHECK(b.data == Bytes{288});
  CHECK(b.scales == Bytes{18});
}

TEST_CASE("DeepSeek-V3.2 indexer cache: 132 B per layer, 8,052 B per token", "[kv][example]") {
  const ModelSpec m = model("deepseek-v3.2-exp");
  REQUIRE(m.indexer);
  CHECK(m.indexer->n_heads == 64);
  CHECK(m.indexer->head_dim == 128);
  CHECK(m.indexer->topk == 2048);
  CHECK(indexer_bytes_per_token_per_layer(*m.indexer) == Bytes{132});
  CHECK(indexer_bytes_per_token(m) == Bytes{8052});
  // The main cache is unchanged from V3.
  CHECK(kv_bytes_per_token(m, KvDtype::fp8_flashmla).total() == Bytes{40016});
}

TEST_CASE("MHA equivalent of DeepSeek-V3 is 71.1x its latent, GQA with the same cache has 2.25 groups", "[kv][example]") {
  const ModelSpec m = model("deepseek-v3");
  const Bytes mha = mha_equivalent_bytes_per_token_per_layer(m, KvDtype::bf16);
  CHECK(mha == Bytes{128 * (128 + 64 + 128) * 2});
  CHECK(mha == Bytes{81920});
  const double ratio = static_cast<double>(mha.value) / 1152.0;
  CHECK(ratio == Approx(71.111).epsilon(1e-4));
  CHECK(gqa_equivalent_groups(*m.mla) == 2.25);
  // The seed's 85.3x counts values 192 wide too (2·h·192 per layer); keys are d_n + d_r = 192
  // wide but values only d_v = 128, so the same-model MHA cache is 81,920 B, not 98,304 B.
  CHECK(mha != Bytes{2 * 128 * 192 * 2});
}

TEST_CASE("Llama-3.1 GQA caches: 70B 327,680 B and 8B 131,072 B per token", "[kv][example]") {
  CHECK(kv_bytes_per_token(model("llama-3.1-70b"), KvDtype::bf16).total() == Bytes{327680});
  CHECK(kv_bytes_per_token(model("llama-3.1-8b"), KvDtype::bf16).total() == Bytes{131072});
  CHECK(kv_bytes_per_token(model("mixtral-8x7b"), KvDtype::bf16).total() == Bytes{131072});
  CHECK(kv_bytes_per_token(model("deepseek-v2"), KvDtype::bf16).total() == Bytes{69120});
  CHECK(kv_bytes_per_token(model("deepseek-v2-lite"), KvDtype::bf16).total() == Bytes{31104});
}

TEST_CASE("Mistral-7B at 32K tokens holds only its 4,096-token window per layer", "[kv][example]") {
  const ModelSpec m = model("mistral-7b");
  for (const auto& l : m.layers) {
    CHECK(l.sliding);
    CHECK(tokens_held(l, 32768) == 4096);
  }
  CHECK(sequence_kv_bytes(m, KvDtype::bf16, 1, 32768) == Bytes{4096LL * 131072});
  CHECK(sequence_kv_bytes(m, KvDtype::bf16, 1, 1000) == Bytes{1000LL * 131072});
}

TEST_CASE("Gemma-2 and gpt-oss: half the layers slide", "[kv][example]") {
  const ModelSpec g = model("gemma-2-9b");
  // 21 global layers hold 8,192 tokens, 21 local ones 4,096: 4,096 B per token per layer.
  CHECK(sequence_kv_bytes(g, KvDtype::bf16, 1, 8192) == Bytes{(21LL * 8192 + 21LL * 4096) * 2 * 8 * 256 * 2});
  const ModelSpec o = model("gpt-oss-20b");
  CHECK(sequence_kv_bytes(o, KvDtype::bf16, 1, 131072) == Bytes{(12LL * 131072 + 12LL * 128) * 2 * 8 * 64 * 2});
}

TEST_CASE("Page blocks round every layer's tokens up to whole blocks", "[kv][example]") {
  const ModelSpec m = model("deepseek-v3");
  CHECK(sequence_kv_bytes(m, KvDtype::bf16, 1, 100, 64) == Bytes{128LL * 70272});
  CHECK(sequence_kv_bytes(m, KvDtype::bf16, 1, 128, 64) == Bytes{128LL * 70272});
  CHECK(sequence_kv_bytes(m, KvDtype::bf16, 1, 129, 16) == Bytes{144LL * 70272});
}

TEST_CASE("TP: the MLA latent is replicated, GQA splits KV heads and replicates below h_kv", "[kv][example]") {
  const ModelSpec ds = model("deepseek-v3");
  for (std::int64_t tp : {1, 2, 4, 8, 16})
    CHECK(kv_bytes_per_token(ds, KvDtype::bf16, tp).total() == Bytes{70272});
  const ModelSpec l = model("llama-3.1-70b");
  CHECK(kv_bytes_per_token(l, KvDtype::bf16, 2).total() == Bytes{327680 / 2});
  CHECK(kv_bytes_per_token(l, KvDtype::bf16, 8).total() == Bytes{327680 / 8});
  CHECK(kv_bytes_per_token(l, KvDtype::bf16, 16).total() == Bytes{327680 / 8});  // 8 KV heads, replicated
}

// ---- laws over every bundled model ----

TEST_CASE("KV bytes are linear in tokens (below every window) and in layers", "[kv][property]") {
  for (const ModelSpec& m : all_models()) {
    INFO(m.name);
    for (KvDtype d : {KvDtype::bf16, KvDtype::fp8, KvDtype::fp4}) {
      const Bytes one = sequence_kv_bytes(m, d, 1, 1);
      CHECK(one == kv_bytes_per_token(m, d).total() + indexer_bytes_per_token(m));
      for (std::int64_t n : {2, 7, 100}) CHECK(sequence_kv_bytes(m, d, 1, n) == one * n);
      // Doubling the layers doubles the bytes.
      ModelSpec twice = m;
      twice.layers.insert(twice.layers.end(), m.layers.begin(), m.layers.end());
      CHECK(kv_bytes_per_token(twice, d).total() == kv_bytes_per_token(m, d).total() * 2);
      CHECK(sequence_kv_bytes(twice, d, 1, 5000) == sequence_kv_bytes(m, d, 1, 5000) * 2);
    }
    // Beyond every window, each extra token costs only the full-attention layers.
    std::int64_t full = 0, max_window = 0;
    for (const auto& l : m.layers) {
      full += l.sliding ? 0 : 1;
      max_window = std::max(max_window, l.window);
    }
    const std::int64_t n = max_window + 10;
    const Bytes per_layer = kv_bytes_per_token_per_layer(m, KvDtype::bf16).total() +
                            (m.indexer ? indexer_bytes_per_token_per_layer(*m.indexer) : Bytes{0});
    CHECK(sequence_kv_bytes(m, KvDtype::bf16, 1, n + 1) - sequence_kv_bytes(m, KvDtype::bf16, 1, n) == per_layer * full);
  }
}

TEST_CASE("Halving the dtype width halves the data bytes", "[kv][property]") {
  for (const ModelSpec& m : all_models()) {
    INFO(m.name);
    const KvBytes b32 = kv_bytes_per_token(m, KvDtype::fp32);
    const KvBytes b16 = kv_bytes_per_token(m, KvDtype::bf16);
    CHECK(b16.data * 2 == b32.data);
    const KvBytes b8 = kv_bytes_per_token(m, KvDtype::fp8);
    const KvBytes b4 = kv_bytes_per_token(m, KvDtype::fp4);
    CHECK(b16 == kv_bytes_per_token(m, KvDtype::fp16));
    CHECK(b8.data * 2 == b16.data);
    CHECK(b4.data * 2 == b8.data);
    CHECK(b16.scales == Bytes{0});
    CHECK(b8.scales == Bytes{0});
    CHECK(b4.scales.value > 0);
  }
}

TEST_CASE("Per-rank bytes under data-parallel attention never exceed TP's", "[kv][property]") {
  for (const ModelSpec& m : all_models()) {
    for (std::int64_t ranks : {2, 4, 8}) {
      if (m.heads % ranks != 0) continue;
      INFO(m.name << " on " << ranks << " ranks");
      const std::int64_t seqs = 64, tokens = 3000;
      // All TP: every rank holds (its share of) every sequence.
      const Bytes tp = sequence_kv_bytes(m, KvDtype::bf16, ranks, tokens) * seqs;
      // All DP: every rank holds all heads of its own sequences.
      const Bytes dp = sequence_kv_bytes(m, KvDtype::bf16, 1, tokens) * ceil_div(seqs, ranks);
      CHECK(dp <= tp);
      if (m.is_mla()) CHECK(dp * ranks == tp);  // the latent is replicated under TP
    }
  }
}
