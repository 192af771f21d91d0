// libFuzzer: any bytes as a kernel-timing CSV for `validate --against` (every kernel family's
// columns). A small table that parses is fitted and reported: nothing but a one-line InputError
// may come out of bad rows.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "against.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlaplan;
  if (size > 1024) return 0;  // a few rows: each parsed table is fitted
  static const HardwareSpec gpu = load_gpu("h100");
  static const ModelSpec model = load_model("deepseek-v3");
  static const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("mlaplan-fuzz-against-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "t.csv", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    (void)validate::validate_against(dir, gpu, model);
  } catch (const InputError&) {
  }
  return 0;
}
