#pragma once
// Whether a configuration can be evaluated, and why not: a status with a reason, as a result rather
// than an error (Timeloop's EvalStatus). Every subcommand and the report ask the same functions, so a
// layout is judged the same way everywhere and nothing falls back silently.
#include <string>

#include "mlaplan/core/model.hpp"
#include "mlaplan/core/parallelism.hpp"

namespace mlaplan {

struct Verdict {
  bool feasible = true;
  std::string reason;  // why not, for people; empty when feasible
  bool ok() const { return feasible; }
  static Verdict yes() { return {}; }
  static Verdict no(std::string why) { return Verdict{false, std::move(why)}; }
};

// What is wrong with a layout for a model (the CLI names the config key or flag from this).
enum class LayoutIssue {
  none,
  heads_not_divisible,      // query heads % TP != 0
  kv_heads_not_splittable,  // GQA/MHA KV heads can be neither split across nor replicated over TP
  ep_without_experts,       // EP > 1 for a model without routed experts
  ep_not_dividing_ranks,    // TP·DP ranks not a multiple of EP
  ep_exceeds_experts,       // more EP ranks than routed experts
};

struct LayoutVerdict {
  LayoutIssue issue = LayoutIssue::none;
  Verdict verdict;
  bool ok() const { return issue == LayoutIssue::none; }
};

// Can `m` run under `p`? Query heads must divide by TP; KV heads (GQA/MHA) must split evenly across TP
// ranks or be replicated evenly (TP a multiple of h_kv); EP needs routed experts, must divide the
// TP·DP ranks and may not exceed the number of experts.
LayoutVerdict check_layout(const ModelSpec& m, const Parallelism& p);

}  // namespace mlaplan
