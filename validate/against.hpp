#pragma once
// Predicting kernel timings measured by others (validate/published/<gpu>/): the absorbed decode
// attention and the expanded prefill attention of MLA, on GPUs we do not have.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/model.hpp"

namespace mlaplan::validate {

// The GPU efficiency model, one set per kernel family, a function of shape:
//   time = t_fixed + batch·t_seq + max(F / (peak·η_c·w), B / (bandwidth·η_m·w), F_cta / (peak / SMs · η_c))
// t_fixed: launch and tail (the measured floor at tiny shapes); t_seq: the work each sequence adds
// whatever its length (scheduling metadata, per-request prologue and epilogue); η_c, η_m: the fractions of peak
// the kernel's inner loop reaches (clock throttling included); w: wave efficiency,
// units / (⌈units / SMs⌉ · SMs), with units = the CTAs the kernel launches: for decode,
// batch × ⌈heads / 64⌉ × split-KV chunks of 256 keys; for prefill, batch × ⌈S / 128⌉ × heads. A
// causal prefill also cannot finish before its longest CTA (128 queries against all S keys on one
// SM: F_cta). Decode computes whole tiles of 64 heads. The peak is the fp8 one for an fp8 prefill kernel. Parameters are dimensionless
// fractions and seconds, so a fit on some GPUs transfers to another through its own datasheet peak,
// bandwidth and SM count.
// The fit is the family's KernelEfficiency (what a profile ships; rows: the rows it was fitted on),
// its fp8 efficiencies fitted apart where the rows run at more than one peak or scaling.
struct GpuKernelFit {
  std::string kernel;
  KernelEfficiency eff;
};

struct AgainstRun {
  std::vector<std::pair<std::string, std::string>> files;
  std::string summary;
  // --transfer: the profiles a default ships (per GPU, per architecture, over all), and why they may
  // not be written (a table whose source and licence its folder's sources.csv does not give).
  std::vector<EfficiencyProfile> profiles;
  std::string profile_problem;
};

// Every *.csv in DIR, any names, rows of columns kernel (absorbed_decode | expanded_prefill),
// batch, kv_len (decode: keys per sequence, the new tokens included) or seq_len (prefill: tokens per
// sequence, no prefix), latency_us, and optionally heads (query heads per GPU; default the model's),
// query (decode: new tokens per sequence, default 1) and kv_dtype (bf16 | fp8; default bf16); other
// columns are named in the report as not read. Every row is predicted on `gpu` with the model's MLA
// dimensions at speed of light (what `cost` gives today) and with the efficiency model refitted on the
// folder's even rows, judged on its odd rows.
AgainstRun validate_against(const std::filesystem::path& dir, const HardwareSpec& gpu, const ModelSpec& m);

// Leave one GPU out: ROOT holds one folder per GPU, named as --gpu names it (h800, h100-sxm, ...),
// each in the format above. For every GPU, the model fitted on the other GPUs' rows (never on H20 or
// H200 rows: those GPUs are judged, never fitted) predicts its rows, beside speed of light, the
// nearest measured row of another GPU scaled by the two rows' speed-of-light ratio (lookup), and the
// in-table refit. Also the fit on every GPU that may be fitted: the profile a default would ship.
AgainstRun validate_transfer(const std::filesystem::path& root, const ModelSpec& m);

}  // namespace mlaplan::validate
