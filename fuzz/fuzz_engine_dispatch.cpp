// libFuzzer: any bytes as an engine dispatch profile, then its rules on mixed batches of a dense and
// a DSA model: a division per group, and a cost study whose engines are its policies in order.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "mlaplan/core/study.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlaplan;
  static const ModelSpec dense = load_model("deepseek-v2-lite");
  static const ModelSpec dsa = load_model("deepseek-v3.2-exp");
  static const Roofline rf = roofline_for(load_gpu("h100-sxm"), DType::bf16, Efficiency{});
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const DispatchProfile d = parse_dispatch_profile(j, "fuzz.json");
    if (d.policies.empty()) __builtin_trap();
    for (const ModelSpec* m : {&dense, &dsa}) {
      if (!dispatch_problem(d.policies, *m).empty()) continue;
      Workload w;
      w.groups = {SequenceGroup{8, 1, 4096}, SequenceGroup{2, 300, 1000}, SequenceGroup{1, 5000, 0}};
      w.spec_tokens = 2;
      for (const EnginePolicy& e : d.policies) {
        const EngineDispatch x = dispatch(e, *m, w);
        if (x.absorbed.size() != w.groups.size() || !x.absorbed[0]) __builtin_trap();  // decode always absorbs
      }
      const CostStudy st = cost_study(*m, w, rf, Bytes{std::int64_t{4} << 30}, d.policies);
      if (st.engines.size() != d.policies.size()) __builtin_trap();
      for (std::size_t i = 0; i < st.engines.size(); ++i)
        if (st.engines[i].key != d.policies[i].key || !(st.engines[i].penalty >= -1e-9)) __builtin_trap();
    }
  } catch (const InputError&) {
  }
  return 0;
}
