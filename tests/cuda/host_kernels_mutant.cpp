// The mutant: mla_kernels.cuh compiled a second time with an off-by-one in the causal mask (every
// causal row sees one key too many). The tests require the checks to fail it.
#include "host_kernels.hpp"

#define MLAPLAN_INJECT_MASK_BUG 1
#define MLAPLAN_KERNELS_NS host_kernels_mutant
#define MLAPLAN_KERNEL_SET mutant_kernels
#define MLAPLAN_KERNEL_SET_NAME "mutant (causal mask off by one)"
#include "host_kernels.inl"
