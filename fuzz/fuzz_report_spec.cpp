// libFuzzer: any bytes as a report spec file.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/report_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const mlaplan::ReportSpec s = mlaplan::parse_report_spec(j, "fuzz.json");
    (void)mlaplan::to_json(s).dump();
  } catch (const mlaplan::InputError&) {
  }
  return 0;
}
