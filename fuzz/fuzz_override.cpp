// libFuzzer: lines of --set key=value overrides applied to DeepSeek-V3's config, then interpreted.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "exercise.hpp"

#ifndef MLAPLAN_SOURCE_DIR
#define MLAPLAN_SOURCE_DIR "."
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::json base = [] {
    std::ifstream in(MLAPLAN_SOURCE_DIR "/models/deepseek-ai--DeepSeek-V3.json");
    return nlohmann::json::parse(in);
  }();
  nlohmann::json cfg = base;
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  try {
    for (std::string line; std::getline(lines, line);) mlaplan::apply_override(cfg, line);
    mlaplan::fuzz::exercise(mlaplan::parse_hf_config(cfg, "fuzz.json", "fuzz"));
  } catch (const mlaplan::InputError&) {
  }
  return 0;
}
