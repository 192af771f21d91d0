// One build of mla_kernels.cuh for the host shim, with launch wrappers mirroring mla_kernels.cu's.
// Included by host_kernels.cpp and host_kernels_mutant.cpp, which define MLAPLAN_KERNELS_NS (the
// kernels' namespace), MLAPLAN_KERNEL_SET (the accessor's name) and MLAPLAN_KERNEL_SET_NAME.
#include "cuda/mla_kernels.cuh"

namespace mlaplan::validate::host_gpu {

const KernelSet& MLAPLAN_KERNEL_SET() {
  namespace k = gpu::MLAPLAN_KERNELS_NS;
  static const KernelSet set{
      .name = MLAPLAN_KERNEL_SET_NAME,
      .absorbed_decode = [](const gpu::DecodeArgs& a) { shim::launch(k::absorbed_decode_kernel, k::decode_grid(a), k::kThreads, k::kDecodeSmem, a); },
      .split_kv_merge =
          [](const float* part_o, const float* part_lse, int batch, int splits, int rows, void* out) {
            shim::launch(k::lse_merge_kernel<float>, k::merge_grid(batch, rows), k::kMergeThreads, 0, part_o, part_lse, splits, rows, gpu::kLatent,
                         static_cast<k::bf16*>(out));
          },
      .chunk_lse_merge =
          [](const void* part_o, const float* part_lse, int chunks, int rows, void* out) {
            shim::launch(k::lse_merge_kernel<k::bf16>, k::merge_grid(1, rows), k::kMergeThreads, 0, static_cast<const k::bf16*>(part_o), part_lse,
                         chunks, rows, gpu::kValue, static_cast<k::bf16*>(out));
          },
      .rope_broadcast =
          [](const void* cache, int rows, int heads, void* rope) {
            shim::launch(k::rope_broadcast_kernel, k::rope_grid(rows, heads), k::kRopeThreads, 0, static_cast<const k::bf16*>(cache), rows, heads,
                         static_cast<k::bf16*>(rope));
          },
      .flash_mha = [](const gpu::MhaArgs& a) { shim::launch(k::flash_mha_kernel, k::mha_grid(a), k::kThreads, k::kMhaSmem, a); },
      .fill_uniform_bf16 =
          [](void* p, std::size_t n, std::uint64_t seed, float scale) {
            shim::launch(k::fill_uniform_kernel, k::fill_grid(n), k::kFillThreads, 0, static_cast<k::bf16*>(p), n, seed, scale);
          },
  };
  return set;
}

}  // namespace mlaplan::validate::host_gpu
