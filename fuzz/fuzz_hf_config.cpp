// libFuzzer: any bytes as a Hugging Face config, interpreted and pushed through every formula.
#include <cstddef>
#include <cstdint>

#include "exercise.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return 0;
  try {
    mlaplan::fuzz::exercise(mlaplan::parse_hf_config(j, "fuzz.json", "fuzz"));
  } catch (const mlaplan::InputError&) {
  }
  return 0;
}
