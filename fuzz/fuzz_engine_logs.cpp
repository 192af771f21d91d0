// libFuzzer: any bytes as an engine-log CSV table.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mlaplan/io/engine_logs.hpp"
#include "mlaplan/io/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)mlaplan::parse_engine_log_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const mlaplan::InputError&) {
  }
  return 0;
}
