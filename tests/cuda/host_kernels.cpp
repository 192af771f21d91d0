// The kernels as written, on the host shim.
#include "host_kernels.hpp"

#define MLAPLAN_KERNELS_NS host_kernels
#define MLAPLAN_KERNEL_SET kernels
#define MLAPLAN_KERNEL_SET_NAME "kernels"
#include "host_kernels.inl"

namespace mlaplan::validate::host_gpu {

std::uint16_t to_bf16(float f) { return shim::__float2bfloat16(f).bits; }
float from_bf16(std::uint16_t h) { return shim::__bfloat162float(shim::__nv_bfloat16{h}); }

}  // namespace mlaplan::validate::host_gpu
