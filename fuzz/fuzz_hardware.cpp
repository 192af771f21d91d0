// libFuzzer: any bytes as a hardware spec.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hardware_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const mlaplan::HardwareSpec h = mlaplan::parse_hardware(j, "fuzz.json");
    for (mlaplan::DType d : mlaplan::all_dtypes()) (void)h.ridge_flop_per_byte(d);
    (void)mlaplan::roofline_for(h, mlaplan::DType::bf16, h.efficiency);
  } catch (const mlaplan::InputError&) {
  }
  return 0;
}
