// libFuzzer: any bytes as a serving-measurement CSV. A table that parses is reproduced when it is
// small (a few rows on a few GPUs): every prediction must be finite and positive.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/serving_measurements.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlaplan;
  try {
    const std::vector<ServingMeasurement> rows = parse_serving_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
    if (rows.size() > 4) return 0;
    for (const ServingMeasurement& r : rows)
      if (r.par.ranks() > 16 || r.batch > 4096) return 0;
    for (const ServingCheck& c : check_serving(rows))
      if (!std::isfinite(c.predicted) || c.predicted <= 0) __builtin_trap();
  } catch (const InputError&) {
  }
  return 0;
}
