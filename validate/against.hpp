#pragma once
// Predicting kernel timings measured by others (shared/reference/measured): the absorbed decode
// attention and the expanded prefill attention of DeepSeek-V3 shapes on a GPU we do not have.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/core/hardware.hpp"

namespace mlaplan::validate {

// The GPU efficiency model, one set per kernel, a function of shape:
//   time = t_fixed + max(F / (peak·η_c·w), B / (bandwidth·η_m·w))
// t_fixed: launch and tail (the measured floor at tiny shapes); η_c, η_m: the fractions of peak
// the kernel's inner loop reaches (clock throttling included); w: wave efficiency,
// units / (⌈units / SMs⌉ · SMs), with units = the CTAs the kernel launches: for decode,
// batch × ⌈heads / 64⌉ × split-KV chunks of 256 keys; for prefill, ⌈S / 128⌉ × heads. A causal
// prefill also cannot finish before its longest CTA (128 queries against all S keys on one SM).
struct GpuKernelFit {
  std::string kernel;
  double t_fixed_s = 0, eta_compute = 1, eta_memory = 1;
  int train_rows = 0;
};

struct AgainstRun {
  std::vector<std::pair<std::string, std::string>> files;
  std::string summary;
};

// Reads DIR/h800-mla-absorbed-decode.csv and DIR/h800-mla-expanded-prefill-attention.csv, predicts
// every row on `gpu` at speed of light and with the fitted model, fitting on the even rows.
AgainstRun validate_against(const std::filesystem::path& dir, const HardwareSpec& gpu);

}  // namespace mlaplan::validate
