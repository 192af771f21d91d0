// Breaks one rule of the host shim on purpose; CTest expects the shim's message naming the rule
// (tests/cuda/CMakeLists.txt). `valid` breaks none and exits 0.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/host_shim.hpp"

namespace {

using namespace mlaplan::validate::shim;
using namespace nvcuda;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// One warp: c [16 x 16] = a [16 x 16] · bᵀ, with a's pointer offset by `skew` elements and a's
// leading dimension `lda`; a thread other than 0 may pass one barrier more (`diverge`).
__global__ void probe(const __nv_bfloat16* a, int skew, unsigned lda, const __nv_bfloat16* b, float* c, bool diverge) {
  FragA fa;
  FragB fb;
  FragC acc;
  wmma::fill_fragment(acc, 0.f);
  wmma::load_matrix_sync(fa, a + skew, lda);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
  __syncthreads();
  if (diverge && threadIdx.x == 0) __syncthreads();
}

}  // namespace

// The shim aborts on a broken rule; the probe exits with code 3 instead, so that CTest reads an exit
// code (and matches the message) rather than a crash.
extern "C" void exit_on_abort(int) { std::_Exit(3); }

int main(int argc, char** argv) {
  std::signal(SIGABRT, exit_on_abort);
  const std::string mode = argc > 1 ? argv[1] : "";
  alignas(32) static __nv_bfloat16 a[16 * 32], b[16 * 16];
  alignas(32) static float c[16 * 16];
  for (auto& x : a) x = __float2bfloat16(1.0f);
  for (auto& x : b) x = __float2bfloat16(0.5f);
  const int skew = mode == "misaligned" ? 1 : 0;
  const unsigned lda = mode == "ldm" ? 20u : 16u;
  const unsigned threads = mode == "partial-warp" ? 16u : 32u;
  const bool diverge = mode == "divergent-sync";
  if (mode != "valid" && !skew && lda == 16 && threads == 32 && !diverge) {
    std::fprintf(stderr, "usage: %s valid|misaligned|ldm|partial-warp|divergent-sync\n", argv[0]);
    return 2;
  }
  launch(probe, dim3(1), dim3(threads), 0, a, skew, lda, b, c, diverge);
  for (float x : c)
    if (x != 8.0f) {
      std::fprintf(stderr, "wrong product %g\n", static_cast<double>(x));
      return 1;
    }
  std::printf("valid: c = 8 everywhere\n");
  return 0;
}
