#pragma once
// How a deployment lays a model out over GPUs: the one parallelism type of the core.
#include <cstdint>
#include <string>

namespace mlaplan {

struct Parallelism {
  std::int64_t tp = 1;  // tensor-parallel ranks (attention heads, MLP, vocab)
  std::int64_t dp = 1;  // data-parallel attention replicas (each holds its own sequences)
  std::int64_t ep = 1;  // expert-parallel ranks for routed experts (1 = experts split by TP)
  std::int64_t ranks() const { return tp * dp; }
  friend bool operator==(const Parallelism&, const Parallelism&) = default;
};

// "TP8 DP1 EP1"
std::string to_string(const Parallelism& p);

}  // namespace mlaplan
