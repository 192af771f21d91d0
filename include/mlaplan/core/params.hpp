#pragma once
// Parameter counts and weight bytes, as sums over the named weight tensors of a model.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/dtype.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/parallelism.hpp"
#include "mlaplan/core/units.hpp"

namespace mlaplan {

enum class WeightGroup { embedding, attention, indexer, dense_mlp, routed_experts, shared_experts, router, norms, lm_head, mtp };
std::string_view to_string(WeightGroup g);

// How a tensor is laid out across ranks.
enum class Shard {
  replicated,  // every rank holds all of it
  tensor,      // split across the TP ranks (column/row parallel, vocab parallel)
  kv_heads,    // split by KV heads across TP ranks, replicated when h_kv < TP
  expert,      // routed experts: split across EP ranks, or across TP ranks without EP
};

struct WeightTensor {
  std::string name;
  WeightGroup group = WeightGroup::attention;
  std::int64_t rows = 0;          // output features (or vector length)
  std::int64_t cols = 1;          // input features (1 for vectors)
  std::int64_t count = 1;         // copies in the model (layers × experts)
  std::int64_t active_count = 0;  // copies one token of the main model touches
  bool linear = false;            // a matrix that weight quantization applies to
  Shard shard = Shard::replicated;
  std::int64_t experts_per_layer = 1;  // for Shard::expert

  Params params() const { return Params{sat_mul(sat_mul(rows, cols), count)}; }
  Params active_params() const { return Params{sat_mul(sat_mul(rows, cols), active_count)}; }
};

// All weight tensors of the model, the MTP modules included (group mtp), embeddings shared
// between the main model and MTP counted once.
std::vector<WeightTensor> weight_tensors(const ModelSpec& m);

struct ParamCounts {
  Params total{0};   // main + MTP
  Params main{0};    // the model without MTP modules (DeepSeek-V3: 671B)
  Params mtp{0};
  Params active{0};  // touched per token by the main model (DeepSeek-V3: 37B)
  std::map<WeightGroup, Params> by_group;
};
ParamCounts count_params(const ModelSpec& m);

// How weights are stored.
struct WeightPlan {
  WeightDtype linear = WeightDtype::bf16;  // linear (matrix) weights
  WeightDtype dense = WeightDtype::bf16;   // embeddings, norms, routers, biases, skipped modules
  bool quantize_attention = true;          // false when the checkpoint keeps attention dense
  // The checkpoint's exact storage of `linear` (its block or group shape, scales, zero points);
  // none: the default format of `linear` (weight_format).
  std::optional<WeightFormat> format;
};
// The storage of a plan's linear weights: its checkpoint format, else the dtype's default.
WeightFormat linear_format(const WeightPlan& plan);

// The dtype of the checkpoint's quantized linear weights; bf16 when it has none.
WeightDtype checkpoint_weight_dtype(const ModelSpec& m);
// The checkpoint's own storage when d is its quantized dtype (its block or group shape, scale
// width and zero points), else d's default format.
WeightFormat weight_format_for(const ModelSpec& m, WeightDtype d);

// What the config's quantization_config says; bf16 when it says nothing. Modules a quantized
// checkpoint keeps unquantized are in its torch_dtype.
WeightPlan default_weight_plan(const ModelSpec& m);
// The plan for an explicit --weight-dtype.
WeightPlan weight_plan_for(const ModelSpec& m, WeightDtype d);

// The dtype attention projections (W_UK, W_UV, q/kv/o) are read in, from the config's quantization:
// fp8 for block-fp8 checkpoints, mxfp4 where the checkpoint quantizes attention, else bf16.
WeightDtype attention_weight_dtype(const ModelSpec& m);

// Bytes of all copies of one tensor, quantization scales included:
// fp8 block: rows·cols + ⌈rows/128⌉·⌈cols/128⌉·4; mxfp4: rows·cols/2 + rows·⌈cols/32⌉;
// int4 group g (AWQ): rows·cols/2 + rows·⌈cols/g⌉·2 + ⌈cols/g⌉·⌈rows/8⌉·4.
Bytes tensor_bytes(const WeightTensor& t, const WeightPlan& plan);


// Bytes of one tensor held by one rank under a layout.
Bytes tensor_bytes_per_rank(const ModelSpec& m, const WeightTensor& t, const WeightPlan& plan, const Parallelism& par);

// Sum over tensors of tensor_bytes_per_rank; the rank that holds the most.
Bytes weight_bytes_per_rank(const ModelSpec& m, const WeightPlan& plan, const Parallelism& par);

}  // namespace mlaplan
