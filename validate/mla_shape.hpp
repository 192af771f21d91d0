#pragma once
// The shape of one validation step, shared by every backend and the cost model's view of it.
namespace mlaplan::validate {

struct MlaShape {
  int heads = 16, r = 512, d_r = 64, d_n = 128, d_v = 128;  // heads per rank and MLA dims
  int batch = 1, query = 1, prefix = 1024;
  int chunk = 1024;  // chunked expand: keys per chunk
  bool causal = true;
  int keys() const { return prefix + query; }
  int tokens() const { return batch * query; }
};

}  // namespace mlaplan::validate
