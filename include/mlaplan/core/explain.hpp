#pragma once
// --explain: each quantity of a study with its formula, the values substituted and the result, in
// the order of the derivation, so that a reader can check every number by hand. The steps are built
// from the same functions the study uses, and the tests hold their results to the study's.
#include <cstdint>
#include <string>
#include <vector>

#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/parallelism.hpp"

namespace mlaplan {

struct ExplainStep {
  std::string quantity;     // "cache bytes per token per layer"
  std::string formula;      // "(kv_lora_rank + qk_rope_head_dim) · 2 B"
  std::string substituted;  // "(512 + 64) · 2 B"
  std::string result;       // "1,152 B"
  std::int64_t value = 0;   // the result as a number (bytes, tokens, heads)
};

// `kv`: bytes per token per layer, the indexer's, per token, per rank, and for `sequences` of
// `tokens` (0: none) in pages of `block_size`.
std::vector<ExplainStep> explain_kv(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences,
                                    std::int64_t block_size);

// 1234567 -> "1,234,567".
std::string grouped(std::int64_t v);

}  // namespace mlaplan
