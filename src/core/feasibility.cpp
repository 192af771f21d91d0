#include "mlaplan/core/feasibility.hpp"

namespace mlaplan {

namespace {
LayoutVerdict issue(LayoutIssue i, std::string why) { return LayoutVerdict{i, Verdict::no(std::move(why))}; }
std::string n(std::int64_t v) { return std::to_string(v); }
}  // namespace

std::string to_string(const Parallelism& p) {
  return "TP" + std::to_string(p.tp) + " DP" + std::to_string(p.dp) + " EP" + std::to_string(p.ep);
}

LayoutVerdict check_layout(const ModelSpec& m, const Parallelism& p) {
  if (p.tp < 1 || m.heads % p.tp != 0)
    return issue(LayoutIssue::heads_not_divisible, n(m.heads) + " query heads are not divisible by TP " + n(p.tp));
  if (!m.is_mla() && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0)
    return issue(LayoutIssue::kv_heads_not_splittable, n(m.kv_heads) + " KV heads can be neither split across nor replicated over TP " + n(p.tp));
  if (p.ep > 1) {
    if (!m.moe) return issue(LayoutIssue::ep_without_experts, "expert parallelism needs routed experts; " + m.name + " has none");
    if (p.ranks() % p.ep != 0)
      return issue(LayoutIssue::ep_not_dividing_ranks,
                   "EP " + n(p.ep) + " does not divide the " + n(p.ranks()) + " ranks of TP " + n(p.tp) + " x DP " + n(p.dp));
    if (p.ep > m.moe->routed_experts)
      return issue(LayoutIssue::ep_exceeds_experts, "EP " + n(p.ep) + " exceeds the " + n(m.moe->routed_experts) + " routed experts");
  }
  return {};
}

}  // namespace mlaplan
