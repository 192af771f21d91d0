// The fake CUDA device of fake_cuda.hpp: the CUDA runtime and cuBLAS functions the CUDA backend
// calls, and its kernel wrappers, on the host. The declarations come from the toolkit's own headers
// (so a signature that drifts does not compile); the definitions here replace libcudart and
// libcublas. Unsupported arguments fail loudly (an error status), never silently.
#include "fake_cuda.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include <Eigen/Dense>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda/mla_kernels.hpp"
#include "host_kernels.hpp"

// The runtime's opaque handles.
struct CUstream_st {};
struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};
struct cublasContext {};

namespace mlaplan::validate::fake_cuda {

namespace {
std::atomic<bool> mutant{false};
std::atomic<long> gemms{0};
const host_gpu::KernelSet& kernels() { return mutant ? host_gpu::mutant_kernels() : host_gpu::kernels(); }
}  // namespace

void use_mutant_kernels(bool on) { mutant = on; }
long gemm_calls() { return gemms; }

}  // namespace mlaplan::validate::fake_cuda

namespace fake = mlaplan::validate::fake_cuda;

// ---- CUDA runtime ----
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake CUDA error"; }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int) {
  *prop = cudaDeviceProp{};
  std::strcpy(prop->name, "fake CUDA device (host shim)");
  prop->multiProcessorCount = fake::kSms;
  prop->totalGlobalMem = std::size_t{4} << 30;
  prop->major = 9;
  prop->minor = 0;
  prop->l2CacheSize = fake::kL2Bytes;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  if (attr != cudaDevAttrL2CacheSize) return cudaErrorInvalidValue;
  *value = fake::kL2Bytes;
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  *free_bytes = std::size_t{2} << 30;
  *total_bytes = std::size_t{4} << 30;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  *p = ::operator new((bytes + 255) / 256 * 256, std::align_val_t{256});  // cudaMalloc's alignment
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  ::operator delete(p, std::align_val_t{256});
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, std::size_t bytes, cudaStream_t) { return cudaMemset(p, value, bytes); }
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }  // everything ran at its call
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::max(1e-6f, std::chrono::duration<float, std::milli>(b->t - a->t).count());
  return cudaSuccess;
}

// ---- cuBLAS: bf16 column-major GEMMs with fp32 accumulation, no transposes ----
cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasGetVersion(cublasHandle_t, int* v) {
  *v = 130000;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {

using ColF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// A column-major [rows x cols] bf16 matrix with leading dimension ld, as floats.
ColF load(const void* p, int rows, int cols, int ld) {
  const auto* h = static_cast<const std::uint16_t*>(p);
  ColF m(rows, cols);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) m(i, j) = mlaplan::validate::host_gpu::from_bf16(h[static_cast<std::size_t>(j) * ld + i]);
  return m;
}

cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, const void* A, cudaDataType at, int lda,
                    const void* B, cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute) {
  if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N || at != CUDA_R_16BF || bt != CUDA_R_16BF || ct != CUDA_R_16BF || compute != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m < 0 || n < 0 || k < 0 || lda < std::max(1, m) || ldb < std::max(1, k) || ldc < std::max(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  ++fake::gemms;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  ColF c = a * (load(A, m, k, lda) * load(B, k, n, ldb));
  if (b != 0) c += b * load(C, m, n, ldc);
  auto* out = static_cast<std::uint16_t*>(C);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) out[static_cast<std::size_t>(j) * ldc + i] = mlaplan::validate::host_gpu::to_bf16(c(i, j));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, const void* A,
                            cudaDataType at, int lda, const void* B, cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t) {
  return gemm(ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha,
                                          const void* A, cudaDataType at, int lda, long long stride_a, const void* B, cudaDataType bt, int ldb,
                                          long long stride_b, const void* beta, void* C, cudaDataType ct, int ldc, long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  for (int i = 0; i < batch; ++i) {
    const cublasStatus_t s = gemm(ta, tb, m, n, k, alpha, static_cast<const std::uint16_t*>(A) + i * stride_a, at, lda,
                                  static_cast<const std::uint16_t*>(B) + i * stride_b, bt, ldb, beta, static_cast<std::uint16_t*>(C) + i * stride_c,
                                  ct, ldc, compute);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// ---- the backend's kernel wrappers, on the host shim ----
namespace mlaplan::validate::gpu {

cudaError_t prepare_kernels() { return cudaSuccess; }
cudaError_t absorbed_decode(const DecodeArgs& a, cudaStream_t) {
  fake::kernels().absorbed_decode(a);
  return cudaSuccess;
}
cudaError_t split_kv_merge(const float* part_o, const float* part_lse, int batch, int splits, int rows, void* out, cudaStream_t) {
  fake::kernels().split_kv_merge(part_o, part_lse, batch, splits, rows, out);
  return cudaSuccess;
}
cudaError_t chunk_lse_merge(const void* part_o, const float* part_lse, int chunks, int rows, void* out, cudaStream_t) {
  fake::kernels().chunk_lse_merge(part_o, part_lse, chunks, rows, out);
  return cudaSuccess;
}
cudaError_t rope_broadcast(const void* cache, int rows, int heads, void* rope, cudaStream_t) {
  fake::kernels().rope_broadcast(cache, rows, heads, rope);
  return cudaSuccess;
}
cudaError_t flash_mha(const MhaArgs& a, cudaStream_t) {
  fake::kernels().flash_mha(a);
  return cudaSuccess;
}
// On the host directly (the shim's fill kernel is tested on its own; at the sizes the backend fills,
// one host thread per CUDA thread would be slow): uniform values, a function of (seed, index).
cudaError_t fill_uniform_bf16(void* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t) {
  auto* h = static_cast<std::uint16_t*>(p);
  std::uint64_t x = seed;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const float u = static_cast<float>(static_cast<std::uint32_t>(x >> 40)) * (1.0f / 16777216.0f);
    h[i] = host_gpu::to_bf16((2.0f * u - 1.0f) * scale);
  }
  return cudaSuccess;
}
cudaError_t hold_stream(double, cudaStream_t) { return cudaSuccess; }

}  // namespace mlaplan::validate::gpu
