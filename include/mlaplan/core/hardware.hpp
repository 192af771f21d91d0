#pragma once
// HardwareSpec: one accelerator as its datasheet describes it, in SI base units.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/dtype.hpp"
#include "mlaplan/core/units.hpp"

namespace mlaplan {

// Fractions of peak an implementation reaches; 1 is speed of light.
struct Efficiency {
  double compute = 1.0;
  double memory = 1.0;
  std::string source = "speed of light (no efficiency applied)";
};

struct HardwareSpec {
  std::string name;
  std::string vendor;
  // The GPU generation (ampere, ada, hopper, blackwell, cdna3, cdna4): kernel efficiencies carry
  // between GPUs of one architecture; empty when the file does not say.
  std::string architecture;
  std::string source;                          // file it came from
  std::vector<std::string> aliases;
  Bytes memory_capacity{0};                    // the datasheet's figure, in exact bytes
  // What the software sees. torch.cuda.mem_get_info()'s total (vLLM's and TensorRT-LLM's budgets
  // start from it) and nvidia-smi's memory.total (SGLang's default-fraction rule reads it); both
  // are below the datasheet figure (ECC, driver reservations). 0 = not known for this GPU.
  Bytes memory_torch_total{0};
  Bytes memory_smi_total{0};
  BytesPerSecond memory_bandwidth{0};
  std::map<DType, FlopsPerSecond> dense_peak;  // dense (not 2:4-sparse) peaks
  std::int64_t sm_count = 0;                   // SMs (NVIDIA) or CUs (AMD)
  // The SMs' (CUs') highest boost clock, in Hz (0: not known): a GQA decode kernel's cost per thread
  // block is SM time, cycles that take sm_count·clock less on a GPU of more or faster SMs
  // (KernelEfficiency::per_sequence, calibrated_time), and TensorRT-LLM's MMHA kernel computes at a
  // rate per SM cycle (KernelEfficiency::mmha_flops_per_sm_cycle).
  double sm_clock_hz = 0;
  Bytes l2_cache{0};
  BytesPerSecond scale_up_bandwidth_per_direction{0};   // NVLink (or Infinity Fabric) per GPU
  BytesPerSecond scale_out_bandwidth_per_direction{0};  // the network between nodes, per GPU
  std::int64_t scale_up_domain_gpus = 0;                // GPUs one scale-up domain joins (0: not known)
  Efficiency efficiency;
  std::map<std::string, std::string> sources;  // field -> where the number came from
  std::vector<std::string> unconfirmed;        // fields whose numbers are not confirmed

  std::optional<FlopsPerSecond> peak_flops(DType d) const {
    auto it = dense_peak.find(d);
    if (it == dense_peak.end()) return std::nullopt;
    return it->second;
  }
  // Ridge point: peak / bandwidth, in FLOP per byte.
  std::optional<double> ridge_flop_per_byte(DType d) const {
    auto p = peak_flops(d);
    if (!p || memory_bandwidth.value <= 0) return std::nullopt;
    return *p / memory_bandwidth;
  }
};

}  // namespace mlaplan
