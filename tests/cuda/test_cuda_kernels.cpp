// The CUDA kernels of validate/cuda/mla_kernels.cuh, run on the host shim (one host thread per CUDA
// thread, a real barrier, WMMA with its rules checked) against float64 references: no GPU and no
// nvcc needed. cuBLAS's part of each path (the folds and the up-projection) is stood in for by
// Eigen with bf16-rounded results, as cuBLAS writes them.
//
// The checks are sharp: queries scaled ×8 so that scores spread and the softmax is peaked; a
// shuffled block table with pages no sequence uses and finite garbage past each sequence's end; 128
// heads; exactly one split; non-causal rows; every output poisoned (NaN) first. The bound is 1e-2 of
// the reference's largest magnitude; a mutant with an off-by-one in the causal mask must exceed it.
// Every random seed is printed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "host_kernels.hpp"
#include "kernels_cpu.hpp"

namespace mlaplan::validate {
namespace {

using host_gpu::KernelSet;

// The bound of every path check: max |kernel − float64| / max |float64|.
constexpr double kTolerance = 1e-2;
// Queries scaled up: score spread ≈ 0.8 instead of 0.1, so one key more or less shows.
constexpr float kQueryScale = 8;

// Host buffers aligned like cudaMalloc's (256 bytes).
template <class T>
struct DeviceAllocator {
  using value_type = T;
  DeviceAllocator() = default;
  template <class U>
  explicit DeviceAllocator(const DeviceAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{256})); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{256}); }
  friend bool operator==(const DeviceAllocator&, const DeviceAllocator&) { return true; }
};
template <class T>
using Buffer = std::vector<T, DeviceAllocator<T>>;
using Bf16 = Buffer<std::uint16_t>;
constexpr std::uint16_t kBf16NaN = 0xFFFF;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Bf16 to_bf16(const MatF& m) {
  Bf16 v(static_cast<std::size_t>(m.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = host_gpu::to_bf16(m.data()[i]);
  return v;
}
MatF from_bf16(const std::uint16_t* p, Eigen::Index rows, Eigen::Index cols) {
  MatF m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = host_gpu::from_bf16(p[i]);
  return m;
}
void round_bf16(MatF& m) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = host_gpu::from_bf16(host_gpu::to_bf16(m.data()[i]));
}

// max |got − want| / max |want|; infinite when an output was left unwritten (NaN).
double rel_error(const MatF& got, const MatD& want) {
  if (got.array().isNaN().any()) return std::numeric_limits<double>::infinity();
  return (got.cast<double>() - want).cwiseAbs().maxCoeff() / std::max(1e-30, want.cwiseAbs().maxCoeff());
}

std::string describe(const MlaShape& s) {
  return fmt::format("h{} B{} Q{} P{}{}", s.heads, s.batch, s.query, s.prefix, s.causal ? "" : " non-causal");
}

void report(const std::string& what, double error) {
  std::printf("[cuda shim] %-78s max rel. error %.3e (bound %.0e)\n", what.c_str(), error, kTolerance);
  std::fflush(stdout);
}

// One check's inputs, bf16-rounded (the reference sees what the kernels see), and the float64 output.
struct Case {
  MlaBuffers b;
  MatD ref;
  std::uint64_t seed = 0;
  std::string name;
};

Case make_case(const MlaShape& s, std::uint64_t seed) {
  std::printf("[cuda shim] inputs %s: seed %llu\n", describe(s).c_str(), static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  Case c{.b = make_buffers(s, rng), .ref = MatD{}, .seed = seed, .name = fmt::format("{} seed {}", describe(s), seed)};
  MlaBuffers& b = c.b;
  b.q_nope *= kQueryScale;
  b.q_rope *= kQueryScale;
  round_bf16(b.cache), round_bf16(b.q_nope), round_bf16(b.q_rope), round_bf16(b.w_ukv);
  for (MatF& w : b.w_uk) round_bf16(w);
  for (MatF& w : b.w_uv) round_bf16(w);
  c.ref = reference_out(b);
  return c;
}

float softmax_scale(const MlaShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.d_n + s.d_r)); }

// cuBLAS's q_absorb_w_uk: q_full [T·h, 576], per head bf16(q_nope · W_UK), then the RoPE query.
Bf16 folded_queries(const MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int T = s.tokens(), h = s.heads;
  MatF q(T * h, gpu::kLatentRow);
  for (int head = 0; head < h; ++head) {
    const MatF f = b.q_nope.middleCols(head * s.d_n, s.d_n) * b.w_uk[static_cast<std::size_t>(head)];
    for (int t = 0; t < T; ++t) {
      q.block(t * h + head, 0, 1, s.r) = f.row(t);
      q.block(t * h + head, s.r, 1, s.d_r) = b.q_rope.block(t, head * s.d_r, 1, s.d_r);
    }
  }
  round_bf16(q);
  return to_bf16(q);
}

// cuBLAS's out_absorb_w_uv: out [T, h·128], per head bf16(o_lat · W_UV).
MatF unfolded_output(const Bf16& o_lat, const MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int T = s.tokens(), h = s.heads;
  const MatF lat = from_bf16(o_lat.data(), T * h, s.r);
  MatF out(T, h * s.d_v);
  for (int head = 0; head < h; ++head)
    for (int t = 0; t < T; ++t) out.block(t, head * s.d_v, 1, s.d_v) = lat.row(t * h + head) * b.w_uv[static_cast<std::size_t>(head)];
  round_bf16(out);
  return out;
}

// Large finite values where no kernel may look: a key read there unmasked shows.
MatF garbage(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-64.0f, 64.0f);
  MatF m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

// The absorb path: folded queries, absorbed decode over a shuffled paged cache with `splits`
// splits (merged when more than one), the output fold. Error against float64.
double absorb_path(const KernelSet& k, const Case& c, int splits) {
  const MlaShape& s = c.b.s;
  const int S = s.keys(), T = s.tokens(), h = s.heads, pages = (S + gpu::kPage - 1) / gpu::kPage;
  const int physical = s.batch * pages + 3;  // three pages no sequence uses
  std::vector<int> perm(static_cast<std::size_t>(physical));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(c.seed ^ 0x7AB1E);
  std::shuffle(perm.begin(), perm.end(), rng);
  const std::vector<int> table(perm.begin(), perm.begin() + s.batch * pages);
  MatF cache = garbage(static_cast<Eigen::Index>(physical) * gpu::kPage, gpu::kLatentRow, c.seed + 1);
  for (int bi = 0; bi < s.batch; ++bi)
    for (int key = 0; key < S; ++key)
      cache.row(static_cast<Eigen::Index>(table[static_cast<std::size_t>(bi * pages + key / gpu::kPage)]) * gpu::kPage + key % gpu::kPage) =
          c.b.cache.row(static_cast<Eigen::Index>(bi) * S + key);
  const Bf16 paged = to_bf16(cache), q = folded_queries(c.b);
  Bf16 o_lat(static_cast<std::size_t>(T) * h * s.r, kBf16NaN);
  Buffer<float> part_o, part_lse;
  if (splits > 1) {
    part_o.assign(static_cast<std::size_t>(s.batch) * splits * s.query * h * s.r, kNaN);
    part_lse.assign(static_cast<std::size_t>(s.batch) * splits * s.query * h, kNaN);
  }
  const gpu::DecodeArgs a{.q = q.data(),
                          .cache = paged.data(),
                          .block_table = table.data(),
                          .batch = s.batch,
                          .query = s.query,
                          .prefix = s.prefix,
                          .heads = h,
                          .max_pages = pages,
                          .splits = splits,
                          .scale = softmax_scale(s),
                          .causal = s.causal,
                          .part_o = splits > 1 ? part_o.data() : nullptr,
                          .part_lse = splits > 1 ? part_lse.data() : nullptr,
                          .out = splits > 1 ? nullptr : o_lat.data()};
  k.absorbed_decode(a);
  if (splits > 1) k.split_kv_merge(part_o.data(), part_lse.data(), s.batch, splits, s.query * h, o_lat.data());
  return rel_error(unfolded_output(o_lat, c.b), c.ref);
}

// The expand path: cuBLAS's up-projection of the padded cache rows, the RoPE broadcast, flash
// attention over all keys.
double expand_path(const KernelSet& k, const Case& c) {
  const MlaShape& s = c.b.s;
  const int S = s.keys(), T = s.tokens(), h = s.heads, s_pad = (S + gpu::kPage - 1) / gpu::kPage * gpu::kPage;
  MatF rows = garbage(static_cast<Eigen::Index>(s.batch) * s_pad, gpu::kLatentRow, c.seed + 2);
  for (int bi = 0; bi < s.batch; ++bi) rows.middleRows(static_cast<Eigen::Index>(bi) * s_pad, S) = c.b.cache.middleRows(static_cast<Eigen::Index>(bi) * S, S);
  round_bf16(rows);
  MatF kv_f = rows.leftCols(s.r) * c.b.w_ukv;
  round_bf16(kv_f);
  const Bf16 cache = to_bf16(rows), kv = to_bf16(kv_f), q_nope = to_bf16(c.b.q_nope), q_rope = to_bf16(c.b.q_rope);
  Bf16 rope(static_cast<std::size_t>(s.batch) * s_pad * h * s.d_r, kBf16NaN);
  k.rope_broadcast(cache.data(), s.batch * s_pad, h, rope.data());
  Bf16 out(static_cast<std::size_t>(T) * h * s.d_v, kBf16NaN);
  const gpu::MhaArgs a{.q_nope = q_nope.data(),
                       .q_rope = q_rope.data(),
                       .kv = kv.data(),
                       .rope = rope.data(),
                       .batch = s.batch,
                       .query = s.query,
                       .prefix = s.prefix,
                       .heads = h,
                       .kv_rows = s_pad,
                       .key_begin = 0,
                       .key_count = S,
                       .scale = softmax_scale(s),
                       .causal = s.causal,
                       .out = out.data(),
                       .lse = nullptr};
  k.flash_mha(a);
  return rel_error(from_bf16(out.data(), T, h * s.d_v), c.ref);
}

// Chunked expand (batch 1): per chunk of s.chunk keys, the up-projection and RoPE broadcast into
// the chunk's workspace and flash attention writing a partial output and its log-sum-exp; then
// the LSE merge.
double chunked_path(const KernelSet& k, const Case& c) {
  const MlaShape& s = c.b.s;
  const int S = s.keys(), T = s.tokens(), h = s.heads, C = s.chunk, chunks = (S + C - 1) / C, rows = T * h;
  const Bf16 cache = to_bf16(c.b.cache), q_nope = to_bf16(c.b.q_nope), q_rope = to_bf16(c.b.q_rope);
  Bf16 kv(static_cast<std::size_t>(C) * h * (s.d_n + s.d_v)), rope(static_cast<std::size_t>(C) * h * s.d_r);
  Bf16 part_o(static_cast<std::size_t>(chunks) * rows * s.d_v, kBf16NaN);
  Buffer<float> part_lse(static_cast<std::size_t>(chunks) * rows, kNaN);
  for (int ci = 0; ci < chunks; ++ci) {
    const int begin = ci * C, n = std::min(C, S - begin);
    std::fill(kv.begin(), kv.end(), kBf16NaN);  // a chunk may read its own rows only
    std::fill(rope.begin(), rope.end(), kBf16NaN);
    MatF kv_f = c.b.cache.block(begin, 0, n, s.r) * c.b.w_ukv;
    round_bf16(kv_f);
    const Bf16 kv_rows = to_bf16(kv_f);
    std::copy(kv_rows.begin(), kv_rows.end(), kv.begin());
    k.rope_broadcast(cache.data() + static_cast<std::size_t>(begin) * gpu::kLatentRow, n, h, rope.data());
    const gpu::MhaArgs a{.q_nope = q_nope.data(),
                         .q_rope = q_rope.data(),
                         .kv = kv.data(),
                         .rope = rope.data(),
                         .batch = 1,
                         .query = s.query,
                         .prefix = s.prefix,
                         .heads = h,
                         .kv_rows = C,
                         .key_begin = begin,
                         .key_count = n,
                         .scale = softmax_scale(s),
                         .causal = s.causal,
                         .out = part_o.data() + static_cast<std::size_t>(ci) * rows * s.d_v,
                         .lse = part_lse.data() + static_cast<std::size_t>(ci) * rows};
    k.flash_mha(a);
  }
  Bf16 out(static_cast<std::size_t>(rows) * s.d_v, kBf16NaN);
  k.chunk_lse_merge(part_o.data(), part_lse.data(), chunks, rows, out.data());
  return rel_error(from_bf16(out.data(), T, h * s.d_v), c.ref);
}

// The causal shapes of the path checks (Q ≥ 2, so that a mask off by one has a key to add), each
// with its seed; the mutant test runs the same ones.
struct CausalCase {
  MlaShape shape;
  std::uint64_t seed;
};
const std::vector<CausalCase>& causal_cases() {
  static const std::vector<CausalCase> cases{
      {MlaShape{.heads = 16, .batch = 2, .query = 3, .prefix = 100, .chunk = 48}, 1001},
      {MlaShape{.heads = 128, .batch = 1, .query = 2, .prefix = 90, .chunk = 64}, 1002},
      {MlaShape{.heads = 4, .batch = 1, .query = 20, .prefix = 10, .chunk = 16}, 1003},  // rows that see nothing of a chunk
  };
  return cases;
}

}  // namespace

TEST_CASE("absorbed decode against float64 with one split and with split-KV and its merge", "[cuda_shim]") {
  const KernelSet& k = host_gpu::kernels();
  std::vector<std::pair<MlaShape, std::uint64_t>> shapes;
  for (const CausalCase& cc : causal_cases()) shapes.push_back({cc.shape, cc.seed});
  shapes.push_back({MlaShape{.heads = 16, .batch = 2, .query = 3, .prefix = 100, .causal = false}, 1011});
  shapes.push_back({MlaShape{.heads = 8, .batch = 3, .query = 1, .prefix = 700}, 1012});  // decode, 11 pages
  for (const auto& [shape, seed] : shapes) {
    const Case c = make_case(shape, seed);
    INFO(c.name);
    // One split: no partial buffers (a write to one would crash) and no merge. Four splits of two
    // pages: two splits see no key; of 11 pages: 3 + 3 + 3 + 2.
    for (int splits : {1, 2, 4}) {
      INFO("splits " << splits);
      const double e = absorb_path(k, c, splits);
      report(splits == 1 ? fmt::format("absorb, 1 split, no merge [{}]", c.name) : fmt::format("absorb, {} splits + split_kv_merge [{}]", splits, c.name), e);
      CHECK(e <= kTolerance);
    }
  }
}

TEST_CASE("flash MHA of the expand path against float64", "[cuda_shim]") {
  const KernelSet& k = host_gpu::kernels();
  std::vector<std::pair<MlaShape, std::uint64_t>> shapes;
  for (const CausalCase& cc : causal_cases()) shapes.push_back({cc.shape, cc.seed});
  shapes.push_back({MlaShape{.heads = 16, .batch = 2, .query = 3, .prefix = 100, .causal = false}, 1011});
  shapes.push_back({MlaShape{.heads = 4, .batch = 2, .query = 18, .prefix = 50, .causal = false}, 1013});
  for (const auto& [shape, seed] : shapes) {
    const Case c = make_case(shape, seed);
    INFO(c.name);
    const double e = expand_path(k, c);
    report(fmt::format("expand: rope_broadcast + flash_mha [{}]", c.name), e);
    CHECK(e <= kTolerance);
  }
}

TEST_CASE("chunked flash MHA with the LSE merge against float64", "[cuda_shim]") {
  const KernelSet& k = host_gpu::kernels();
  std::vector<std::pair<MlaShape, std::uint64_t>> shapes;
  for (const CausalCase& cc : causal_cases())
    if (cc.shape.batch == 1) shapes.push_back({cc.shape, cc.seed});
  shapes.push_back({MlaShape{.heads = 16, .batch = 1, .query = 5, .prefix = 100, .chunk = 40, .causal = false}, 1014});
  for (const auto& [shape, seed] : shapes) {
    const Case c = make_case(shape, seed);
    INFO(c.name);
    const double e = chunked_path(k, c);
    report(fmt::format("chunked: {} chunks of {} + lse_merge [{}]", (shape.keys() + shape.chunk - 1) / shape.chunk, shape.chunk, c.name), e);
    CHECK(e <= kTolerance);
  }
}

TEST_CASE("the LSE merge alone against float64 with fp32 and bf16 partials", "[cuda_shim]") {
  const KernelSet& k = host_gpu::kernels();
  const std::uint64_t seed = 1021;
  std::printf("[cuda shim] lse merge: seed %llu\n", static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::uniform_real_distribution<float> lse(-12.0f, 12.0f);
  const float ninf = -std::numeric_limits<float>::infinity();
  for (const bool bf16_parts : {false, true}) {
    const int batch = bf16_parts ? 1 : 2, parts = 5, rows = 7, width = bf16_parts ? gpu::kValue : gpu::kLatent;
    Buffer<float> part_o(static_cast<std::size_t>(batch) * parts * rows * width), part_lse(static_cast<std::size_t>(batch) * parts * rows);
    for (float& x : part_o) x = bf16_parts ? host_gpu::from_bf16(host_gpu::to_bf16(value(rng))) : value(rng);
    for (float& x : part_lse) x = lse(rng);
    part_lse[2] = ninf;                                                                  // one part of row 2 saw no key
    for (int p = 0; p < parts; ++p) part_lse[static_cast<std::size_t>(p) * rows + 4] = ninf;  // row 4 saw none at all: 0
    MatD want(batch * rows, width);
    for (int b = 0; b < batch; ++b)
      for (int r = 0; r < rows; ++r) {
        double m = -INFINITY;
        for (int p = 0; p < parts; ++p) m = std::max(m, static_cast<double>(part_lse[static_cast<std::size_t>((b * parts + p) * rows + r)]));
        for (int col = 0; col < width; ++col) {
          double num = 0, den = 0;
          for (int p = 0; p < parts; ++p) {
            const std::size_t base = static_cast<std::size_t>((b * parts + p) * rows + r);
            const double w = std::isinf(m) ? 0 : std::exp(static_cast<double>(part_lse[base]) - m);
            num += w * part_o[base * static_cast<std::size_t>(width) + static_cast<std::size_t>(col)];
            den += w;
          }
          want(b * rows + r, col) = den > 0 ? num / den : 0;
        }
      }
    Bf16 out(static_cast<std::size_t>(batch) * rows * width, kBf16NaN);
    if (bf16_parts) {
      Bf16 parts_bf16(part_o.size());
      for (std::size_t i = 0; i < part_o.size(); ++i) parts_bf16[i] = host_gpu::to_bf16(part_o[i]);
      k.chunk_lse_merge(parts_bf16.data(), part_lse.data(), parts, rows, out.data());
    } else {
      k.split_kv_merge(part_o.data(), part_lse.data(), batch, parts, rows, out.data());
    }
    const MatF got = from_bf16(out.data(), batch * rows, width);
    const double e = rel_error(got, want);
    report(fmt::format("lse merge alone, {}", bf16_parts ? "bf16 partials (chunked)" : "fp32 partials (split-KV)"), e);
    CHECK(e <= 5e-3);  // bf16 output rounding: 2^-9
    CHECK(got.row(4).cwiseAbs().maxCoeff() == 0.0f);
  }
}

TEST_CASE("the RoPE broadcast alone copies the RoPE key to every head exactly", "[cuda_shim]") {
  const KernelSet& k = host_gpu::kernels();
  const std::uint64_t seed = 1031;
  std::printf("[cuda shim] rope broadcast: seed %llu\n", static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  const int rows = 70, heads = 128;
  const Bf16 cache = to_bf16(garbage(rows, gpu::kLatentRow, seed));
  Bf16 rope(static_cast<std::size_t>(rows) * heads * gpu::kRope, kBf16NaN);
  k.rope_broadcast(cache.data(), rows, heads, rope.data());
  std::size_t wrong = 0;
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h)
      for (int c = 0; c < gpu::kRope; ++c)
        wrong += rope[(static_cast<std::size_t>(r) * heads + h) * gpu::kRope + c] != cache[static_cast<std::size_t>(r) * gpu::kLatentRow + gpu::kLatent + c];
  CHECK(wrong == 0);
}

TEST_CASE("the random fill gives uniform bf16 values that depend on the seed only", "[cuda_shim]") {
  const KernelSet& k = host_gpu::kernels();
  const std::size_t n = 5000;
  Bf16 a(n, kBf16NaN), b(n, kBf16NaN), c(n, kBf16NaN);
  k.fill_uniform_bf16(a.data(), n, 41, 2.0f);
  k.fill_uniform_bf16(b.data(), n, 41, 2.0f);
  k.fill_uniform_bf16(c.data(), n, 42, 2.0f);
  CHECK(a == b);
  CHECK(a != c);
  double sum = 0, lo = 0, hi = 0;
  for (std::uint16_t x : a) {
    const double v = host_gpu::from_bf16(x);
    REQUIRE(std::isfinite(v));
    sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
  }
  CHECK(std::fabs(sum / n) < 0.05);
  CHECK(lo >= -2.0);
  CHECK(lo < -1.95);
  CHECK(hi <= 2.0);
  CHECK(hi > 1.95);
}

TEST_CASE("a causal mask off by one fails the checks", "[cuda_shim]") {
  // The causal shapes and seeds of the path checks above, which the kernels as written pass with
  // errors of about 4e-3: the mutant (every causal row sees one key too many) must exceed the bound.
  const KernelSet& bad = host_gpu::mutant_kernels();
  for (const CausalCase& cc : causal_cases()) {
    const Case c = make_case(cc.shape, cc.seed);
    INFO(c.name);
    struct Path {
      const char* name;
      double (*run)(const KernelSet&, const Case&);
    };
    std::vector<Path> paths{{"absorb, 1 split", [](const KernelSet& k, const Case& x) { return absorb_path(k, x, 1); }},
                            {"absorb, 2 splits", [](const KernelSet& k, const Case& x) { return absorb_path(k, x, 2); }},
                            {"expand", expand_path}};
    if (cc.shape.batch == 1) paths.push_back({"chunked", chunked_path});
    for (const Path& p : paths) {
      INFO(p.name);
      const double e = p.run(bad, c);
      std::printf("[cuda shim] mutant, %-16s [%s]: max rel. error %.3e (bound %.0e): %s\n", p.name, c.name.c_str(), e, kTolerance,
                  e > kTolerance ? "detected" : "NOT DETECTED");
      CHECK(e > kTolerance);
    }
  }
}

}  // namespace mlaplan::validate
