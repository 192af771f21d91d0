// libFuzzer: range, list and mixed-batch arguments (--prefix 0:131072:x2, --tp 1,2,4, --mix 64x1@8192).
#include <cstddef>
#include <cstdint>
#include <string>

#include "flags.hpp"
#include "mlaplan/io/lists.hpp"
#include "mlaplan/io/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  using namespace mlaplan::cli;
  try {
    (void)mlaplan::parse_number_list("--prefix", s, 0, 100'000);
  } catch (const mlaplan::InputError&) {
  }
  try {
    (void)mlaplan::parse_int_list("--tp", s);
  } catch (const mlaplan::InputError&) {
  }
  try {
    (void)parse_mix(s);
  } catch (const mlaplan::InputError&) {
  }
  return 0;
}
