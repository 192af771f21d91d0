// libFuzzer: any bytes as an all-to-all timing CSV. A table that parses is predicted when it is
// small (a few rows): every prediction must be finite and positive.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "all_to_all.hpp"
#include "mlaplan/io/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlaplan;
  try {
    const std::vector<validate::AllToAllMeasurement> rows =
        validate::parse_all_to_all_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
    if (rows.size() > 8) return 0;
    for (const validate::AllToAllCheck& c : validate::check_all_to_all(rows))
      if (!std::isfinite(c.predicted_s) || c.predicted_s <= 0 || !std::isfinite(c.error)) __builtin_trap();
  } catch (const InputError&) {
  }
  return 0;
}
