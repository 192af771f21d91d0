// Expert-parallel all-to-all: the link model's time of one call by hand, laws over every bundled
// MoE model, the published DeepEP timings (validate/published/all-to-all) and hostile tables.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "all_to_all.hpp"
#include "fit.hpp"
#include "helpers.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/csv_records.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"
#include "validate_cli.hpp"

namespace mlaplan::validate {
namespace {

LinkSpec sglang_links(const std::string& gpu) { return links_for(load_gpu(gpu), step_overheads(load_engine("sglang"))); }

TEST_CASE("Worked example: one low-latency dispatch on 8 H100 nodes, by hand", "[serving][all_to_all]") {
  // 128 tokens per rank, each to 8 of 256 experts over 64 ranks (8 per node): of a rank's
  // 128 x 8 = 1,024 messages, 56/64 go to other nodes and 7/64 to the node's other ranks, each 7,168
  // fp8 values and 56 fp32 scales = 7,392 B.
  const AllToAll a{.low_latency = true, .tokens = 128, .ep = 64, .gpus_per_node = 8, .hidden = 7168, .topk = 8, .experts = 256,
                   .value_bytes = 1 + 4.0 / 128, .imbalance = 1};
  const LinkSpec l = sglang_links("h100-sxm");
  const AllToAllTime t = all_to_all_time(a, l);
  CHECK(t.scale_out_bytes == Approx(896 * 7392.0));
  CHECK(t.scale_up_bytes == Approx(112 * 7392.0));
  // SGLang's profile: 95% of the 50 GB/s network, 52.5% of the 450 GB/s NVLink, 27 µs across nodes.
  CHECK(l.low_latency.eta_scale_out == 0.95);
  CHECK(l.low_latency.eta_scale_up == 0.525);
  CHECK(l.low_latency.latency_internode.value == Approx(27e-6));
  CHECK(l.low_latency.latency_intranode.value == Approx(14e-6));
  // max(827,904 B / 236.25 GB/s = 3.50 µs, 6,623,232 B / 47.5 GB/s = 139.44 µs) + 27 µs = 166.44 µs;
  // aiconfigurator measured 166.77 µs (ll-n8-e256-t128-dispatch).
  CHECK(t.time.value == Approx(6623232 / 47.5e9 + 27e-6).epsilon(1e-12));
  CHECK(t.time.value == Approx(166.44e-6).epsilon(1e-4));
  CHECK(t.bound.value == Approx(6623232 / 50e9));
  // Within one node nothing crosses the network and the call costs the intranode latency.
  const AllToAll one{.low_latency = true, .tokens = 128, .ep = 8, .gpus_per_node = 8, .hidden = 7168, .topk = 8, .experts = 256,
                     .value_bytes = 2, .imbalance = 1};
  const AllToAllTime u = all_to_all_time(one, l);
  CHECK(u.scale_out_bytes == 0);
  CHECK(u.scale_up_bytes == Approx(128 * 8 * 7.0 / 8 * 7168 * 2));
  CHECK(u.time.value == Approx(u.scale_up_bytes / (450e9 * 0.525) + 14e-6));
  // Normal mode: a token crosses the network once per other node holding one of its experts (1 − C(224, 8)/C(256, 8)
  // each), then NVLink once per other rank of that node holding one; 85% of the network, 121 µs per call across nodes.
  AllToAll n = a;
  n.low_latency = false;
  n.tokens = 8192;
  const AllToAllTime v = all_to_all_time(n, l);
  const double node_hit = 1 - (224.0 * 223 * 222 * 221 * 220 * 219 * 218 * 217) / (256.0 * 255 * 254 * 253 * 252 * 251 * 250 * 249);
  CHECK(v.scale_out_bytes == Approx(8192 * 7 * node_hit * 7392));
  CHECK(l.normal.eta_scale_out == 0.85);
  CHECK(l.normal.latency_internode.value == Approx(121e-6));
  CHECK(v.time.value == Approx(8192 * 7 * node_hit * 7392 / (50e9 * 0.85) + 121e-6));
}

TEST_CASE("Every bundled MoE model: an all-to-all costs at least its latency and more tokens cost more", "[serving][all_to_all][property]") {
  const LinkSpec l = sglang_links("h100-sxm");
  for (const ModelSpec& m : test::all_models()) {
    if (!m.moe) continue;
    INFO(m.name);
    const auto& e = *m.moe;
    for (const bool ll : {true, false})
      for (const double ep : {8.0, 16.0, 64.0}) {
        double last = 0;
        for (const double tokens : {1.0, 16.0, 256.0, 4096.0}) {
          const AllToAll a{.low_latency = ll, .tokens = tokens, .ep = ep, .gpus_per_node = 8, .hidden = static_cast<double>(m.hidden),
                           .topk = static_cast<double>(e.experts_per_token), .experts = static_cast<double>(e.routed_experts), .value_bytes = 2,
                           .imbalance = 1};
          const AllToAllTime t = all_to_all_time(a, l);
          const AllToAllLink& kind = ll ? l.low_latency : l.normal;
          const Seconds floor = ep > 8 ? kind.latency_internode : kind.latency_intranode;
          CHECK(t.time.value > floor.value);
          CHECK(t.time.value > last);
          CHECK(t.bound.value <= t.time.value);
          CHECK((ep > 8) == (t.scale_out_bytes > 0));
          // Low latency sends one message per (token, expert) pair off the rank; normal at most one
          // copy per node over the network and one per rank over NVLink.
          if (ll) CHECK(t.scale_out_bytes + t.scale_up_bytes == Approx(tokens * a.topk * (ep - 1) / ep * a.hidden * 2));
          else CHECK(t.scale_out_bytes <= tokens * (ep / 8 - 1) * a.hidden * 2 + 1e-9);
          last = t.time.value;
        }
      }
  }
}

const std::string kDir = std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/published/all-to-all";

TEST_CASE("Published DeepEP timings: the low-latency fit holds and the committed results are current", "[serving][all_to_all][validate]") {
  const std::vector<AllToAllCheck> checks = check_all_to_all(read_all_to_all_measurements(kDir));
  REQUIRE(checks.size() >= 300);
  std::vector<double> ll;
  for (const AllToAllCheck& c : checks)
    if (c.row.mode == "low_latency") ll.push_back(std::abs(c.error));
  const ErrorStats s = ape_stats(ll);
  REQUIRE(s.n >= 190);
  // What scripts/fit-deepep-ll.py found and the README quotes.
  CHECK(s.median <= 0.035);
  CHECK(s.p90 <= 0.17);
  // The TP all-reduce rows (NCCL 2.27.3 under trtllm@0.5.0, TensorRT-LLM 1.3.0rc20's op under
  // trtllm@1.0.0, vLLM 0.14.0's custom all-reduce under vllm@0.9.0): what scripts/fit-allreduce.py found.
  for (const std::string engine : {"trtllm@0.5.0", "trtllm@1.0.0", "vllm@0.9.0"}) {
    std::vector<double> reduce;
    for (const AllToAllCheck& c : checks)
      if (c.row.mode == "allreduce" && c.row.engine == engine) reduce.push_back(std::abs(c.error));
    const ErrorStats r = ape_stats(reduce);
    INFO(engine);
    CHECK(r.n >= 45);
    CHECK(r.median <= 0.045);
    CHECK(r.p90 <= 0.09);
  }
  // The committed results are what the current model predicts.
  std::ostringstream out, err;
  REQUIRE(run_validate_cli({"--all-to-all", kDir, "--format", "csv"}, out, err, false) == 0);
  CHECK(out.str() == read_text(std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/results/all-to-all/all-to-all.csv"));
}

std::string error_of(const std::string& text) {
  try {
    (void)check_all_to_all(parse_all_to_all_csv(text, "a.csv"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST_CASE("All-to-all timing CSVs: hostile input is refused naming the row and column", "[serving][all_to_all][hostile]") {
  const std::string header = "id,gpu,engine,mode,op,nodes,gpus_per_node,tokens,hidden,topk,experts,dtype,measured_us,source\n";
  const std::string good = "a,h100-sxm,sglang,low_latency,dispatch,2,8,16,7168,8,256,fp8,30,src\n";
  CHECK(error_of(header + good) == "(accepted)");
  // `base` with `from` replaced by `to`, parsed and predicted.
  auto with = [&](const std::string& from, const std::string& to, const std::string& base = "") {
    std::string row = base.empty() ? good : base;
    row.replace(row.find(from), from.size(), to);
    return error_of(header + row);
  };
  CHECK(error_of("") == "a.csv: empty file: expected a header row and data rows");
  CHECK(error_of(header) == "a.csv: no data rows under the header");
  CHECK(error_of("id,gpu\n") == "a.csv: key 'header' = engine: missing column");
  CHECK(with("low_latency", "fast") == "a.csv, row 2: key 'mode' = fast: expected one of low_latency, normal, allreduce");
  CHECK(with("dispatch", "dispatched") == "a.csv, row 2: key 'op' = dispatched: expected one of dispatch, combine, allreduce; did you mean 'dispatch'?");
  CHECK(with("dispatch", "allreduce") == "a.csv, row 2: key 'op' = allreduce: allreduce is the op of an allreduce row");
  CHECK(with("low_latency,dispatch", "allreduce,dispatch") == "a.csv, row 2: key 'op' = dispatch: an allreduce row's op is allreduce");
  // An all-reduce row: tokens x hidden values, nothing routed.
  const std::string reduce = "r,h100-sxm,trtllm@1.0.0,allreduce,allreduce,1,4,1024,7168,1,1,bf16,30,src\n";
  CHECK(error_of(header + reduce) == "(accepted)");
  auto reduce_with = [&](const std::string& from, const std::string& to) { return with(from, to, reduce); };
  CHECK(reduce_with(",1,1,bf16", ",8,1,bf16") == "a.csv, row 2: key 'topk' = 8: more than the 1 experts");
  CHECK(reduce_with(",1,1,bf16", ",8,256,bf16") == "a.csv, row 2: key 'topk' = 8: an all-reduce routes nothing: expected 1");
  CHECK(reduce_with(",1,1,bf16", ",1,256,bf16") == "a.csv, row 2: key 'experts' = 256: an all-reduce routes nothing: expected 1");
  CHECK(reduce_with(",1,4,1024", ",1,1,1024") == "a.csv, row 2: key 'nodes' = 1: an all-reduce needs at least two ranks (nodes x gpus_per_node)");
  CHECK(reduce_with(",1,4,1024", ",1,16,1024") == "a.csv (row 'r'): key 'gpus_per_node' = 16: more than H100 SXM5 80GB's scale-up domain of 8");
  CHECK(with(",fp8,", ",fp4,") == "a.csv, row 2: key 'dtype' = fp4: expected one of fp8, bf16; did you mean 'fp8'?");
  CHECK(with(",2,8,16,", ",1,1,16,") == "a.csv, row 2: key 'nodes' = 1: an all-to-all needs at least two ranks (nodes x gpus_per_node)");
  CHECK(with(",2,8,16,", ",2,8,0,") == "a.csv, row 2: key 'tokens' = 0: expected a number from 1 to 1000000000000");
  CHECK(with(",2,8,16,", ",2,8,1.5,") == "a.csv, row 2: key 'tokens' = 1.5: expected a whole number");
  CHECK(with(",8,256,", ",300,256,") == "a.csv, row 2: key 'topk' = 300: more than the 256 experts");
  CHECK(with(",30,", ",0,") == "a.csv, row 2: key 'measured_us' = 0: expected a positive number");
  CHECK(with(",30,", ",,") == "a.csv, row 2: key 'measured_us' = (empty): expected a positive number");
  CHECK(with(",30,", ",nan,") == "a.csv, row 2: key 'measured_us' = nan: expected a number");
  CHECK(with(",src", ",") == "a.csv, row 2: key 'source' = (empty): required");
  CHECK(with(",2,8,", ",2,,") == "a.csv, row 2: key 'gpus_per_node' = (empty): required");
  // Rows that parse but name what does not exist, or what the GPU cannot be, are refused when predicted.
  CHECK(with("h100-sxm", "h900") == "a.csv (row 'a') gpu: value 'h900': no bundled gpu or file by that name; did you mean 'h100'?");
  CHECK(with(",sglang,", ",sglang@0.1,").rfind("a.csv (row 'a') engine: ", 0) == 0);
  CHECK(with(",2,8,", ",2,16,") == "a.csv (row 'a'): key 'gpus_per_node' = 16: more than H100 SXM5 80GB's scale-up domain of 8");
}

LinkSpec engine_links(const std::string& engine, const std::string& gpu = "h100-sxm") {
  return links_for(load_gpu(gpu), step_overheads(load_engine(engine)));
}

TEST_CASE("Worked example: TensorRT-LLM's and vLLM's TP all-reduce on H100, by hand", "[serving][all_to_all][all_reduce]") {
  // 1.0.0 at 4 GPUs, 512 tokens x 8,192 bf16 values = 8,388,608 B per rank (Llama-2-70B's decode at
  // batch 512): one-shot 2.97 µs + 3 x S / (450 GB/s x 0.661) = 87.6 µs; NCCL's low-latency protocol
  // 10.4 µs + 1.5 x S / (450 GB/s x 0.431) = 75.3 µs; its bandwidth protocol 27 µs + 1.5 x S / (450 GB/s
  // x 0.779) = 62.9 µs, the fastest. aiconfigurator measured 63.8 µs (trtllm-g4-v4194304).
  const double s = 512.0 * 8192 * 2;
  const LinkSpec v1 = engine_links("trtllm@1.0.0");
  REQUIRE(v1.all_reduce.size() == 9);
  CHECK(all_reduce_time(s, 4, 8, v1).value == Approx(27e-6 + 1.5 * s / (450e9 * 0.779)).epsilon(1e-12));
  CHECK(all_reduce_time(s, 4, 8, v1).value == Approx(62.89e-6).epsilon(1e-3));
  // A small message takes the one-shot kernel: 16 KiB at 8 GPUs, 3.14 µs + 7 x 16,384 B / (450 GB/s x 0.594)
  // = 3.57 µs (measured 3.6). 0.5.0 runs NCCL alone: its low-latency protocol, 16.5 µs + 1.75 x 16,384 B /
  // (450 GB/s x 0.428) = 16.65 µs (measured 16.69 and 16.58).
  CHECK(all_reduce_time(16384, 8, 8, v1).value == Approx(3.14e-6 + 7 * 16384 / (450e9 * 0.594)).epsilon(1e-12));
  const LinkSpec v05 = engine_links("trtllm@0.5.0");
  CHECK(all_reduce_time(16384, 8, 8, v05).value == Approx(16.5e-6 + 1.75 * 16384 / (450e9 * 0.428)).epsilon(1e-12));
  // 0.8.0's custom kernels take a message up to their workspace, 16,000,000 B at 2 ranks: one-shot
  // 2.74 µs + 16e6 B / (450 GB/s x 0.563) = 65.9 µs; a byte more goes to NCCL, 19.9 µs + 16e6 B / (450 GB/s
  // x 0.661) = 73.7 µs.
  const LinkSpec v08 = engine_links("trtllm@0.8.0");
  CHECK(all_reduce_time(16e6, 2, 8, v08).value == Approx(2.74e-6 + 16e6 / (450e9 * 0.563)).epsilon(1e-12));
  CHECK(all_reduce_time(16e6 + 1, 2, 8, v08).value == Approx(19.9e-6 + (16e6 + 1) / (450e9 * 0.661)).epsilon(1e-12));
  CHECK(all_reduce_time(16e6 + 1, 2, 8, v1).value == Approx(2.74e-6 + (16e6 + 1) / (450e9 * 0.563)).epsilon(1e-12));
  // A group size without rows (3 GPUs) is a ring at comm_eta_scale_up plus comm_latency_us; across
  // nodes (16 ranks, 8 to a node) a ring over the network at comm_eta_scale_out.
  CHECK(all_reduce_time(s, 3, 8, v1).value == Approx(10e-6 + 4.0 / 3 * s / (450e9 * 0.8)).epsilon(1e-12));
  const double net = load_gpu("h100-sxm").scale_out_bandwidth_per_direction.value;
  REQUIRE(net > 0);
  CHECK(all_reduce_time(s, 16, 8, v1).value == Approx(10e-6 + 30.0 / 16 * s / (net * 0.8)).epsilon(1e-12));
  // vLLM at 4 GPUs: its one-shot kernel below 512 KiB, 4.59 µs + 3 x 262,144 B / (450 GB/s x 0.699) = 7.09 µs
  // (measured 7.10); its two-shot kernel up to 8 MiB, 8.13 µs + 1.5 x 1 MiB / (450 GB/s x 0.664) = 13.39
  // µs (measured 12.80); from 8 MiB NCCL, as TensorRT-LLM's.
  const LinkSpec vl = engine_links("vllm@0.9.0");
  CHECK(all_reduce_time(262144, 4, 8, vl).value == Approx(4.59e-6 + 3 * 262144 / (450e9 * 0.699)).epsilon(1e-12));
  CHECK(all_reduce_time(1048576, 4, 8, vl).value == Approx(8.13e-6 + 1.5 * 1048576 / (450e9 * 0.664)).epsilon(1e-12));
  CHECK(all_reduce_time(s, 4, 8, vl).value == Approx(all_reduce_time(s, 4, 8, v1).value).epsilon(1e-12));
  // Nothing to reduce.
  CHECK(all_reduce_time(s, 1, 8, v1).value == 0);
  CHECK(all_reduce_time(0, 4, 8, v1).value == 0);
}

TEST_CASE("TP all-reduce laws: every engine profile, group size and message", "[serving][all_to_all][all_reduce][property]") {
  for (const std::string engine : {"trtllm@0.5.0", "trtllm@0.8.0", "trtllm@0.19.0", "trtllm@1.0.0", "vllm", "sglang"})
    for (const std::string gpu : {"h100-sxm", "a100-80gb", "b200"}) {
      const LinkSpec l = engine_links(engine, gpu);
      for (const double ranks : {2.0, 3.0, 4.0, 8.0}) {
        double last = 0;
        for (double s = 256; s <= 1.1e9; s *= 2) {
          INFO(engine << " on " << gpu << ", " << ranks << " GPUs, " << s << " B");
          const double t = all_reduce_time(s, ranks, 8, l).value;
          // Never faster than the ring's bytes at the link's peak (one-shot moves more), never slower
          // as the message grows.
          CHECK(t >= 2 * (ranks - 1) / ranks * s / l.scale_up.value);
          CHECK(t >= last);
          last = t;
        }
      }
    }
}

TEST_CASE("A serving step's TP all-reduce is all_reduce_time per call", "[serving][all_to_all][all_reduce]") {
  // Llama-2-70B decoding 512 sequences at TP4 under 0.8.0: two all-reduces per layer of 512 x 8,192 bf16
  // values, 8,388,608 B, beyond the 8,000,000 B workspace: NCCL's bandwidth protocol, 62.9 µs each.
  const ModelSpec m = load_model("llama-2-70b-hf");
  const HardwareSpec hw = load_gpu("h100-sxm");
  const StepOverheads o = step_overheads(load_engine("trtllm@0.8.0"));
  StepRequest req;
  req.phase = Phase::decode;
  req.w.par.tp = 4;
  req.w.groups = {step_group(Phase::decode, 512, 1000, 0)};
  set_step_weights(req, m, std::nullopt);
  use_overheads(req, o);
  req.links = links_for(hw, o);
  const StepResult r = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
  const StepRow* ar = nullptr;
  for (const StepRow& row : r.rows)
    if (row.component == StepComponent::tp_allreduce) ar = &row;
  REQUIRE(ar != nullptr);
  const double call = all_reduce_time(512.0 * 8192 * 2, 4, 8, req.links).value;
  CHECK(call == Approx(27e-6 + 1.5 * 512.0 * 8192 * 2 / (450e9 * 0.779)).epsilon(1e-12));
  // Beside them the logits' all-gather, a collective at comm_eta_scale_up plus comm_latency_us: 3/4 of
  // 512 x 32,000 fp32 logits, 146.5 µs.
  const double gather = 0.75 * 512 * 32000 * 4 / (450e9 * 0.8) + 10e-6;
  CHECK(ar->time.value == Approx(160 * call + gather).epsilon(1e-9));
  // Each rank sends the ring's bytes, 1.5 x the message, and the gather's; at speed of light the ring's.
  CHECK(ar->link_bytes.value == Approx(160 * 1.5 * 512 * 8192 * 2 + 0.75 * 512 * 32000 * 4).epsilon(1e-9));
  // At 8 sequences a call is 131,072 B, within the custom kernels' workspace: the one-shot kernel,
  // 2.97 µs + 3 x 131,072 B / (450 GB/s x 0.661) = 4.29 µs, whose ranks each read their 3 peers' buffers.
  req.w.groups = {step_group(Phase::decode, 8, 1000, 0)};
  const StepResult small = step_time(m, hw, roofline_for(hw, DType::bf16, Efficiency{}), req);
  const StepRow* ar8 = nullptr;
  for (const StepRow& row : small.rows)
    if (row.component == StepComponent::tp_allreduce) ar8 = &row;
  REQUIRE(ar8 != nullptr);
  const double gather8 = 0.75 * 8 * 32000 * 4;
  CHECK(ar8->time.value == Approx(160 * (2.97e-6 + 3 * 131072 / (450e9 * 0.661)) + gather8 / (450e9 * 0.8) + 10e-6).epsilon(1e-9));
  CHECK(ar8->link_bytes.value == Approx(160 * 3 * 131072.0 + gather8).epsilon(1e-9));
  CHECK(ar8->bound.value == Approx((160 * 1.5 * 131072.0 + gather8) / 450e9).epsilon(1e-9));
}

TEST_CASE("mlaplan-validate --all-to-all: one table mode at a time, its flags only", "[serving][all_to_all][cli]") {
  std::ostringstream out, err;
  CHECK(run_validate_cli({"--all-to-all", kDir, "--gpu", "h800"}, out, err, false) == 2);
  CHECK(err.str() == "mlaplan validate: --gpu: value 'h800': does not apply with --all-to-all\n");
  std::ostringstream out2, err2;
  CHECK(run_validate_cli({"--all-to-all", kDir, "--serving", kDir}, out2, err2, false) == 2);
  CHECK(err2.str() == "mlaplan validate: --all-to-all: value '" + kDir + "': give one of --engine-logs, --serving and --all-to-all\n");
  CHECK(out.str().empty());
  CHECK(out2.str().empty());
  // --max-error: some normal-mode rows are far off (README), so a tight bound fails with exit 1.
  std::ostringstream out3, err3;
  CHECK(run_validate_cli({"--all-to-all", kDir, "--max-error", "0.5", "--format", "json"}, out3, err3, false) == 1);
  CHECK(err3.str().find("timing 'normal-n2-e256-t1-dispatch' is off by +107.3%, beyond --max-error 50.0%") != std::string::npos);
}

}  // namespace
}  // namespace mlaplan::validate
