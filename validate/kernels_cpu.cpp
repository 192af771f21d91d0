#include "kernels_cpu.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace mlaplan::validate {

namespace {

constexpr float kMasked = -1e30f;
constexpr int kKeyBlock = 256;

MatF random_matrix(int rows, int cols, double scale, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, static_cast<float>(scale));
  MatF m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

float softmax_scale(const MlaShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.d_n + s.d_r)); }

// Online-softmax state of a block of query rows.
struct Online {
  VecF m, l;
  MatF acc;
  Online(Eigen::Index rows, Eigen::Index width) : m(VecF::Constant(rows, kMasked)), l(VecF::Zero(rows)), acc(MatF::Zero(rows, width)) {}

  // Folds in one key block: scores [rows, kb] (masked entries at kMasked) and values [kb, width].
  template <class Values>
  void add(MatF& scores, const Values& values) {
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
      const float block_max = scores.row(i).maxCoeff();
      const float m_new = std::max(m(i), block_max);
      const float correction = std::exp(m(i) - m_new);
      scores.row(i) = (scores.row(i).array() - m_new).exp();
      l(i) = l(i) * correction + scores.row(i).sum();
      acc.row(i) *= correction;
      m(i) = m_new;
    }
    acc.noalias() += scores * values;
  }
  void finish(MatF& out) const { out = acc.array().colwise() / l.array(); }
};

// Masks keys a causal query cannot see: query token `token_of(row)` sits at position prefix + i.
template <class TokenOf>
void mask(MatF& scores, const MlaShape& s, int key0, TokenOf token_of) {
  if (!s.causal) return;
  for (Eigen::Index row = 0; row < scores.rows(); ++row) {
    const int last = s.prefix + token_of(static_cast<int>(row));  // last visible key
    for (Eigen::Index j = std::max<Eigen::Index>(0, last + 1 - key0); j < scores.cols(); ++j) scores(row, j) = kMasked;
  }
}

}  // namespace

MlaBuffers make_buffers(const MlaShape& s, std::mt19937_64& rng) {
  MlaBuffers b;
  b.s = s;
  const int S = s.keys(), T = s.tokens(), h = s.heads;
  b.cache = random_matrix(s.batch * S, s.r + s.d_r, 1.0, rng);
  b.w_ukv.resize(s.r, h * (s.d_n + s.d_v));
  for (int head = 0; head < h; ++head) {
    b.w_uk.push_back(random_matrix(s.d_n, s.r, 1.0 / std::sqrt(s.r), rng));
    b.w_uv.push_back(random_matrix(s.r, s.d_v, 1.0 / std::sqrt(s.r), rng));
    b.w_ukv.block(0, head * (s.d_n + s.d_v), s.r, s.d_n) = b.w_uk.back().transpose();
    b.w_ukv.block(0, head * (s.d_n + s.d_v) + s.d_n, s.r, s.d_v) = b.w_uv.back();
  }
  b.q_nope = random_matrix(T, h * s.d_n, 1.0 / std::sqrt(s.d_n), rng);
  b.q_rope = random_matrix(T, h * s.d_r, 1.0 / std::sqrt(s.d_r), rng);
  b.q_full = MatF::Zero(T * h, s.r + s.d_r);
  for (int t = 0; t < T; ++t)
    for (int head = 0; head < h; ++head) b.q_full.block(t * h + head, s.r, 1, s.d_r) = b.q_rope.block(t, head * s.d_r, 1, s.d_r);
  b.o_lat = MatF::Zero(T * h, s.r);
  b.kv = MatF::Zero(s.batch * S, h * (s.d_n + s.d_v));
  b.rope = MatF::Zero(s.batch * S, h * s.d_r);
  b.out = MatF::Zero(T, h * s.d_v);
  const int chunks = chunk_count(s);
  b.part_o.assign(static_cast<std::size_t>(chunks), MatF::Zero(T * h, s.d_v));
  b.part_lse.assign(static_cast<std::size_t>(chunks), VecF::Zero(T * h));
  b.kv_chunk = MatF::Zero(std::min(s.chunk, S), h * (s.d_n + s.d_v));
  b.rope_chunk = MatF::Zero(std::min(s.chunk, S), h * s.d_r);
  return b;
}

int chunk_count(const MlaShape& s) { return (s.keys() + s.chunk - 1) / s.chunk; }

void q_absorb_w_uk(MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int T = s.tokens(), h = s.heads;
  MatF tmp(T, s.r);
  for (int head = 0; head < h; ++head) {
    tmp.noalias() = b.q_nope.middleCols(head * s.d_n, s.d_n) * b.w_uk[static_cast<std::size_t>(head)];
    for (int t = 0; t < T; ++t) b.q_full.block(t * h + head, 0, 1, s.r) = tmp.row(t);
  }
}

void latent_attention_mqa(MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int S = s.keys(), h = s.heads, rows = s.query * h, w = s.r + s.d_r;
  const float scale = softmax_scale(s);
  MatF scores;
  MatF o;
  for (int bi = 0; bi < s.batch; ++bi) {
    const auto q = b.q_full.middleRows(bi * rows, rows);
    Online st(rows, s.r);
    for (int k0 = 0; k0 < S; k0 += kKeyBlock) {
      const int kb = std::min(kKeyBlock, S - k0);
      const auto keys = b.cache.block(bi * S + k0, 0, kb, w);
      scores.noalias() = scale * (q * keys.transpose());
      mask(scores, s, k0, [h](int row) { return row / h; });
      st.add(scores, b.cache.block(bi * S + k0, 0, kb, s.r));
    }
    st.finish(o);
    b.o_lat.middleRows(bi * rows, rows) = o;
  }
}

void out_absorb_w_uv(MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int T = s.tokens(), h = s.heads;
  MatF lat(T, s.r);
  for (int head = 0; head < h; ++head) {
    for (int t = 0; t < T; ++t) lat.row(t) = b.o_lat.row(t * h + head);
    b.out.middleCols(head * s.d_v, s.d_v).noalias() = lat * b.w_uv[static_cast<std::size_t>(head)];
  }
}

void kv_up_proj(MlaBuffers& b) { b.kv.noalias() = b.cache.leftCols(b.s.r) * b.w_ukv; }

namespace {
// Copies the shared RoPE key of `rows` cache rows from `first` into every head's slot of `dst`, one
// destination row after another: the output is written as one contiguous stream (a loop over heads
// outside, writing a column block of every row, strides by a power-of-two row width and thrashes the
// cache sets at 16 or more heads).
void broadcast_rope_rows(const MlaBuffers& b, MatF& dst, int first, int rows) {
  const MlaShape& s = b.s;
  const std::size_t bytes = static_cast<std::size_t>(s.d_r) * sizeof(float);
  for (int t = 0; t < rows; ++t) {
    const float* src = b.cache.data() + static_cast<Eigen::Index>(first + t) * b.cache.cols() + s.r;
    float* out = dst.data() + static_cast<Eigen::Index>(t) * dst.cols();
    for (int head = 0; head < s.heads; ++head) std::memcpy(out + static_cast<std::ptrdiff_t>(head) * s.d_r, src, bytes);
  }
}
}  // namespace

void rope_k_broadcast(MlaBuffers& b) { broadcast_rope_rows(b, b.rope, 0, static_cast<int>(b.rope.rows())); }

void attention_mha(MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int S = s.keys(), Q = s.query, hw = s.d_n + s.d_v;
  const float scale = softmax_scale(s);
  MatF scores, o;
  for (int bi = 0; bi < s.batch; ++bi) {
    for (int head = 0; head < s.heads; ++head) {
      const auto qn = b.q_nope.block(bi * Q, head * s.d_n, Q, s.d_n);
      const auto qr = b.q_rope.block(bi * Q, head * s.d_r, Q, s.d_r);
      Online st(Q, s.d_v);
      for (int k0 = 0; k0 < S; k0 += kKeyBlock) {
        const int kb = std::min(kKeyBlock, S - k0);
        scores.noalias() = qn * b.kv.block(bi * S + k0, head * hw, kb, s.d_n).transpose();
        scores.noalias() += qr * b.rope.block(bi * S + k0, head * s.d_r, kb, s.d_r).transpose();
        scores *= scale;
        mask(scores, s, k0, [](int row) { return row; });
        st.add(scores, b.kv.block(bi * S + k0, head * hw + s.d_n, kb, s.d_v));
      }
      st.finish(o);
      b.out.block(bi * Q, head * s.d_v, Q, s.d_v) = o;
    }
  }
}

void kv_up_proj_chunk(MlaBuffers& b, int c) {
  const MlaShape& s = b.s;
  const int k0 = c * s.chunk, kb = std::min(s.chunk, s.keys() - k0);
  b.kv_chunk.topRows(kb).noalias() = b.cache.block(k0, 0, kb, s.r) * b.w_ukv;
}

void rope_k_broadcast_chunk(MlaBuffers& b, int c) {
  const MlaShape& s = b.s;
  const int k0 = c * s.chunk, kb = std::min(s.chunk, s.keys() - k0);
  broadcast_rope_rows(b, b.rope_chunk, k0, kb);
}

void attention_mha_chunk(MlaBuffers& b, int c) {
  const MlaShape& s = b.s;
  const int Q = s.query, hw = s.d_n + s.d_v, h = s.heads;
  const int c0 = c * s.chunk, cn = std::min(s.chunk, s.keys() - c0);
  const float scale = softmax_scale(s);
  MatF scores, o;
  MatF& part = b.part_o[static_cast<std::size_t>(c)];
  VecF& lse = b.part_lse[static_cast<std::size_t>(c)];
  for (int head = 0; head < h; ++head) {
    const auto qn = b.q_nope.block(0, head * s.d_n, Q, s.d_n);
    const auto qr = b.q_rope.block(0, head * s.d_r, Q, s.d_r);
    Online st(Q, s.d_v);
    for (int k0 = 0; k0 < cn; k0 += kKeyBlock) {
      const int kb = std::min(kKeyBlock, cn - k0);
      scores.noalias() = qn * b.kv_chunk.block(k0, head * hw, kb, s.d_n).transpose();
      scores.noalias() += qr * b.rope_chunk.block(k0, head * s.d_r, kb, s.d_r).transpose();
      scores *= scale;
      mask(scores, s, c0 + k0, [](int row) { return row; });
      st.add(scores, b.kv_chunk.block(k0, head * hw + s.d_n, kb, s.d_v));
    }
    for (int i = 0; i < Q; ++i) {
      const bool seen = st.m(i) > kMasked / 2;  // a causal query may see no key of a late chunk
      part.row(i * h + head) = seen ? VecF(st.acc.row(i).transpose() / st.l(i)) : VecF::Zero(s.d_v);
      lse(i * h + head) = seen ? st.m(i) + std::log(st.l(i)) : -std::numeric_limits<float>::infinity();
    }
  }
}

void chunked_expand(MlaBuffers& b) {
  for (int c = 0; c < chunk_count(b.s); ++c) {
    kv_up_proj_chunk(b, c);
    rope_k_broadcast_chunk(b, c);
    attention_mha_chunk(b, c);
  }
}

void lse_merge(MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int h = s.heads, rows = s.tokens() * h, n = chunk_count(s);
  for (int row = 0; row < rows; ++row) {
    float m = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < n; ++c) m = std::max(m, b.part_lse[static_cast<std::size_t>(c)](row));
    float denom = 0;
    auto dst = b.out.block(row / h, (row % h) * s.d_v, 1, s.d_v);
    dst.setZero();
    for (int c = 0; c < n; ++c) {
      const float wgt = std::exp(b.part_lse[static_cast<std::size_t>(c)](row) - m);
      denom += wgt;
      dst += wgt * b.part_o[static_cast<std::size_t>(c)].row(row);
    }
    dst /= denom;
  }
}

// ---- float64 references ----

namespace {

MatD d(const MatF& m) { return m.cast<double>(); }

double rel_error(const MatF& got, const MatD& want) {
  const double scale = std::max(1e-30, want.cwiseAbs().maxCoeff());
  return (got.cast<double>() - want).cwiseAbs().maxCoeff() / scale;
}

}  // namespace

MatD reference_out(const MlaBuffers& b) {
  const MlaShape& s = b.s;
  const int S = s.keys(), Q = s.query;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d_n + s.d_r));
  MatD out(s.tokens(), s.heads * s.d_v);
  for (int bi = 0; bi < s.batch; ++bi) {
    for (int head = 0; head < s.heads; ++head) {
      const MatD c = d(b.cache.block(bi * S, 0, S, s.r));
      const MatD k_nope = c * d(b.w_uk[static_cast<std::size_t>(head)]).transpose();  // [S, d_n]
      const MatD v = c * d(b.w_uv[static_cast<std::size_t>(head)]);                    // [S, d_v]
      const MatD rope = d(b.cache.block(bi * S, s.r, S, s.d_r));
      for (int i = 0; i < Q; ++i) {
        const int visible = s.causal ? s.prefix + i + 1 : S;
        Eigen::VectorXd score(visible);
        for (int j = 0; j < visible; ++j)
          score(j) = scale * (d(b.q_nope.block(bi * Q + i, head * s.d_n, 1, s.d_n)).row(0).dot(k_nope.row(j)) +
                              d(b.q_rope.block(bi * Q + i, head * s.d_r, 1, s.d_r)).row(0).dot(rope.row(j)));
        const Eigen::VectorXd p = (score.array() - score.maxCoeff()).exp();
        out.block(bi * Q + i, head * s.d_v, 1, s.d_v) = (p.transpose() * v.topRows(visible)) / p.sum();
      }
    }
  }
  return out;
}

namespace {

template <class M>
void poison(M& m) { m.setConstant(std::numeric_limits<float>::quiet_NaN()); }

bool has_nan(const MatF& m) { return m.array().isNaN().any(); }

double bound_for(int reduction) { return 2e-6 * std::sqrt(static_cast<double>(reduction)) + 2e-6; }

}  // namespace

std::vector<KernelCheck> check_kernels(const MlaShape& shape, std::mt19937_64& rng) {
  std::vector<KernelCheck> checks;
  MlaBuffers b = make_buffers(shape, rng);
  const MlaShape& s = b.s;
  const int T = s.tokens(), h = s.heads;

  // q_absorb: per head q_nope · W_UK into q_full[:, :r].
  poison(b.q_full);
  for (int t = 0; t < T; ++t)
    for (int head = 0; head < h; ++head) b.q_full.block(t * h + head, s.r, 1, s.d_r) = b.q_rope.block(t, head * s.d_r, 1, s.d_r);
  q_absorb_w_uk(b);
  MatD want(T * h, s.r);
  for (int t = 0; t < T; ++t)
    for (int head = 0; head < h; ++head)
      want.row(t * h + head) = d(b.q_nope.block(t, head * s.d_n, 1, s.d_n)) * d(b.w_uk[static_cast<std::size_t>(head)]);
  checks.push_back({.kernel = "q_absorb_w_uk", .max_rel_error = rel_error(b.q_full.leftCols(s.r), want), .bound = bound_for(s.d_n), .poisoned_left = has_nan(b.q_full)});

  // The rest of the absorbed path, end to end against the expanded float64 reference.
  const MatD ref = reference_out(b);
  poison(b.o_lat);
  latent_attention_mqa(b);
  const bool lat_nan = has_nan(b.o_lat);
  poison(b.out);
  out_absorb_w_uv(b);
  checks.push_back({.kernel = "latent_attention_mqa+out_absorb_w_uv", .max_rel_error = rel_error(b.out, ref), .bound = 5e-5, .poisoned_left = lat_nan || has_nan(b.out)});

  // kv_up_proj against its GEMM, rope broadcast exactly, attention_mha against the reference.
  poison(b.kv);
  kv_up_proj(b);
  checks.push_back({.kernel = "kv_up_proj", .max_rel_error = rel_error(b.kv, d(b.cache.leftCols(s.r)) * d(b.w_ukv)), .bound = bound_for(s.r), .poisoned_left = has_nan(b.kv)});
  poison(b.rope);
  rope_k_broadcast(b);
  MatD rope_want(b.rope.rows(), b.rope.cols());
  for (int head = 0; head < h; ++head) rope_want.middleCols(head * s.d_r, s.d_r) = d(b.cache.rightCols(s.d_r));
  checks.push_back({.kernel = "rope_k_broadcast", .max_rel_error = rel_error(b.rope, rope_want), .bound = 0.0, .poisoned_left = has_nan(b.rope)});
  poison(b.out);
  attention_mha(b);
  checks.push_back({.kernel = "attention_mha", .max_rel_error = rel_error(b.out, ref), .bound = 5e-5, .poisoned_left = has_nan(b.out)});

  if (s.batch == 1) {
    for (auto& p : b.part_o) poison(p);
    poison(b.out);
    chunked_expand(b);
    bool nan = false;
    for (const auto& p : b.part_o) nan = nan || has_nan(p);
    lse_merge(b);
    checks.push_back({.kernel = "chunked_expand+lse_merge", .max_rel_error = rel_error(b.out, ref), .bound = 5e-5, .poisoned_left = nan || has_nan(b.out)});
  }
  return checks;
}

// ---- calibration ----

namespace {
template <class F>
double median_seconds(F&& f, int reps) {
  std::vector<double> t;
  f();  // warm-up
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}  // namespace

StreamResult measure_stream(std::size_t bytes_per_array) {
  const Eigen::Index n = static_cast<Eigen::Index>(bytes_per_array / sizeof(float));
  VecF a = VecF::Constant(n, 1.0f), bb = VecF::Constant(n, 2.0f), c = VecF::Constant(n, 0.5f);
  volatile float sink = 0;
  const double bytes = static_cast<double>(n) * sizeof(float);
  StreamResult r;
  r.read_bytes_per_s = bytes / median_seconds([&] { sink = sink + a.sum(); }, 7);
  r.copy_bytes_per_s = 2 * bytes / median_seconds([&] { bb = a; }, 7);
  r.triad_bytes_per_s = 3 * bytes / median_seconds([&] { a = bb + 3.0f * c; }, 7);
  return r;
}

double measure_copy(std::size_t bytes) {
  const Eigen::Index n = static_cast<Eigen::Index>(bytes / 2 / sizeof(float));
  VecF a = VecF::Constant(n, 1.0f), b = VecF::Constant(n, 2.0f);
  // Enough copies per timing to last about a millisecond at 50 GB/s.
  const int reps = std::max(1, static_cast<int>(50e6 / static_cast<double>(bytes)));
  return static_cast<double>(reps) * 2.0 * static_cast<double>(n) * sizeof(float) / median_seconds([&] {
           for (int i = 0; i < reps; ++i) {
             b = a;
             a(i % n) += 1.0f;  // keeps the copies from folding into one
           }
         }, 9);
}

double measure_gemm(int m, int k, int n) {
  std::mt19937_64 rng(7);
  const MatF a = random_matrix(m, k, 1.0, rng), b = random_matrix(k, n, 1.0, rng);
  MatF c(m, n);
  const double t = median_seconds([&] { c.noalias() = a * b; }, 5);
  return 2.0 * m * k * n / t;
}

}  // namespace mlaplan::validate
