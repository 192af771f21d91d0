// A float64 reference of full MLA attention (several heads, decoupled RoPE, causal with a prefix,
// Q > 1), computed both ways. Expanded and absorbed outputs must agree to 1e-12 relative on fresh
// random inputs, and the multiply-adds each way actually performs must equal the engine's FLOPs.
#include <catch2/catch.hpp>

#include "helpers.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <vector>

#include "mlaplan/core/paths.hpp"

using namespace mlaplan;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

struct Shapes {
  int heads = 0, r = 0, d_n = 0, d_r = 0, d_v = 0, prefix = 0, query = 0;
  bool causal = true;
};

struct Inputs {
  std::vector<MatrixXd> w_uk;  // per head [d_n, r]: k_nope = W_UK · c
  std::vector<MatrixXd> w_uv;  // per head [d_v, r]: v = W_UV · c
  MatrixXd latent;             // [S, r]: the cached c_KV rows (prefix and new tokens)
  MatrixXd rope_k;             // [S, d_r]: the shared, rotated RoPE keys
  std::vector<MatrixXd> q_nope;  // per head [Q, d_n]
  std::vector<MatrixXd> q_rope;  // per head [Q, d_r]
};

Inputs random_inputs(const Shapes& s, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  auto rnd = [&](int rows, int cols) {
    MatrixXd m(rows, cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) m(i, j) = n(rng) / std::sqrt(static_cast<double>(cols));
    return m;
  };
  const int S = s.prefix + s.query;
  Inputs in;
  for (int h = 0; h < s.heads; ++h) {
    in.w_uk.push_back(rnd(s.d_n, s.r));
    in.w_uv.push_back(rnd(s.d_v, s.r));
    in.q_nope.push_back(rnd(s.query, s.d_n));
    in.q_rope.push_back(rnd(s.query, s.d_r));
  }
  in.latent = rnd(S, s.r);
  in.rope_k = rnd(S, s.d_r);
  return in;
}

// Keys query i (at position prefix + i) may attend.
int visible(const Shapes& s, int i) { return s.causal ? s.prefix + i + 1 : s.prefix + s.query; }

VectorXd softmax(const VectorXd& x) {
  const VectorXd e = (x.array() - x.maxCoeff()).exp();
  return e / e.sum();
}

// Expand: materialise per-head K_nope and V for every key, then ordinary attention.
std::vector<MatrixXd> expanded(const Shapes& s, const Inputs& in, double& macs) {
  const int S = s.prefix + s.query;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d_n + s.d_r));
  std::vector<MatrixXd> out;
  for (int h = 0; h < s.heads; ++h) {
    MatrixXd k_nope(S, s.d_n), v(S, s.d_v);
    for (int j = 0; j < S; ++j) {
      k_nope.row(j) = (in.w_uk[h] * in.latent.row(j).transpose()).transpose();
      v.row(j) = (in.w_uv[h] * in.latent.row(j).transpose()).transpose();
      macs += static_cast<double>(s.r) * (s.d_n + s.d_v);
    }
    MatrixXd o(s.query, s.d_v);
    for (int i = 0; i < s.query; ++i) {
      const int n = visible(s, i);
      VectorXd score(n);
      for (int j = 0; j < n; ++j) {
        score(j) = scale * (in.q_nope[h].row(i).dot(k_nope.row(j)) + in.q_rope[h].row(i).dot(in.rope_k.row(j)));
        macs += s.d_n + s.d_r;
      }
      const VectorXd p = softmax(score);
      VectorXd acc = VectorXd::Zero(s.d_v);
      for (int j = 0; j < n; ++j) {
        acc += p(j) * v.row(j).transpose();
        macs += s.d_v;
      }
      o.row(i) = acc.transpose();
    }
    out.push_back(o);
  }
  return out;
}

// Absorb: fold W_UK into the query, attend over the latent as MQA, fold W_UV into the output.
std::vector<MatrixXd> absorbed(const Shapes& s, const Inputs& in, double& macs) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d_n + s.d_r));
  std::vector<MatrixXd> out;
  for (int h = 0; h < s.heads; ++h) {
    MatrixXd o(s.query, s.d_v);
    for (int i = 0; i < s.query; ++i) {
      const VectorXd q_lat = in.w_uk[h].transpose() * in.q_nope[h].row(i).transpose();
      macs += static_cast<double>(s.d_n) * s.r;
      const int n = visible(s, i);
      VectorXd score(n);
      for (int j = 0; j < n; ++j) {
        score(j) = scale * (q_lat.dot(in.latent.row(j)) + in.q_rope[h].row(i).dot(in.rope_k.row(j)));
        macs += s.r + s.d_r;
      }
      const VectorXd p = softmax(score);
      VectorXd o_lat = VectorXd::Zero(s.r);
      for (int j = 0; j < n; ++j) {
        o_lat += p(j) * in.latent.row(j).transpose();
        macs += s.r;
      }
      o.row(i) = (in.w_uv[h] * o_lat).transpose();
      macs += static_cast<double>(s.r) * s.d_v;
    }
    out.push_back(o);
  }
  return out;
}

ModelSpec spec_for(const Shapes& s) {
  ModelSpec m;
  m.attention = AttentionKind::mla;
  m.hidden = 64;
  m.heads = s.heads;
  m.kv_heads = s.heads;
  m.mla = MlaDims{s.r, s.d_r, s.d_n, s.d_v, 0};
  m.layers.resize(1);
  return m;
}

}  // namespace

TEST_CASE("Expanded and absorbed MLA agree in float64 and count the engine's FLOPs", "[reference]") {
  const std::uint64_t seed = test::seed("mla reference");
  std::mt19937_64 rng(seed);
  const Shapes cases[] = {
      {.heads = 4, .r = 16, .d_n = 8, .d_r = 4, .d_v = 6, .prefix = 5, .query = 3, .causal = true},
      {.heads = 3, .r = 32, .d_n = 16, .d_r = 8, .d_v = 16, .prefix = 0, .query = 7, .causal = true},
      {.heads = 8, .r = 24, .d_n = 12, .d_r = 4, .d_v = 10, .prefix = 17, .query = 1, .causal = true},
      {.heads = 2, .r = 16, .d_n = 8, .d_r = 4, .d_v = 8, .prefix = 9, .query = 4, .causal = false},
      {.heads = 5, .r = 20, .d_n = 10, .d_r = 6, .d_v = 12, .prefix = 1, .query = 12, .causal = true},
  };
  for (const Shapes& s : cases) {
    INFO("seed " << seed << " heads " << s.heads << " r " << s.r << " P " << s.prefix << " Q " << s.query
                 << (s.causal ? " causal" : " non-causal"));
    const Inputs in = random_inputs(s, rng);
    double macs_e = 0, macs_a = 0;
    const auto e = expanded(s, in, macs_e);
    const auto a = absorbed(s, in, macs_a);
    double diff = 0, norm = 0;
    for (int h = 0; h < s.heads; ++h) {
      diff = std::max(diff, (e[h] - a[h]).cwiseAbs().maxCoeff());
      norm = std::max(norm, e[h].cwiseAbs().maxCoeff());
    }
    CHECK(diff <= 1e-12 * norm);

    Workload w;
    w.groups = {SequenceGroup{1, static_cast<double>(s.query), static_cast<double>(s.prefix)}};
    w.causal = s.causal;
    const ModelSpec m = spec_for(s);
    CHECK(mla_path(m, w, PathKind::expand).flops() == Flops{2 * macs_e});
    CHECK(mla_path(m, w, PathKind::absorb).flops() == Flops{2 * macs_a});
  }
}
