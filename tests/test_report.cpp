// mlaplan report: SVGs are XML, CSVs match the spec, report.md numbers equal the CSVs', drift is
// caught and named, writes are atomic, bad specs are one-line errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "mlaplan/io/table.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

using mlaplan::test::Run;
using mlaplan::test::run;

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("mlaplan_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

// A small XML well-formedness check: one root, balanced tags, quoted attributes, known entities.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> stack;
  std::size_t i = 0, roots = 0;
  auto entity_ok = [&](std::size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (s.compare(at, std::strlen(e), e) == 0) return true;
    return s.compare(at, 2, "&#") == 0;
  };
  while (i < s.size()) {
    if (s[i] == '&' && !entity_ok(i)) return "bad entity at " + std::to_string(i);
    if (s[i] != '<') {
      if (s[i] == '>') return "stray > at " + std::to_string(i);
      ++i;
      continue;
    }
    if (s.compare(i, 4, "<!--") == 0) {
      const auto e = s.find("-->", i);
      if (e == std::string::npos) return "unclosed comment";
      i = e + 3;
      continue;
    }
    if (s.compare(i, 2, "<?") == 0) {
      const auto e = s.find("?>", i);
      if (e == std::string::npos) return "unclosed declaration";
      i = e + 2;
      continue;
    }
    const bool closing = s[i + 1] == '/';
    std::size_t j = i + (closing ? 2 : 1);
    std::string name;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':' || s[j] == '_')) name += s[j++];
    if (name.empty()) return "empty tag name at " + std::to_string(i);
    bool self = false;
    while (j < s.size() && s[j] != '>') {
      if (std::isspace(static_cast<unsigned char>(s[j]))) { ++j; continue; }
      if (s[j] == '/' && j + 1 < s.size() && s[j + 1] == '>') { self = true; ++j; continue; }
      std::string attr;
      while (j < s.size() && s[j] != '=' && !std::isspace(static_cast<unsigned char>(s[j])) && s[j] != '>') attr += s[j++];
      if (j >= s.size() || s[j] != '=' || attr.empty()) return "attribute without value in <" + name + ">";
      ++j;
      if (s[j] != '"' && s[j] != '\'') return "unquoted attribute " + attr;
      const char q = s[j++];
      while (j < s.size() && s[j] != q) {
        if (s[j] == '<') return "< inside attribute " + attr;
        if (s[j] == '&' && !entity_ok(j)) return "bad entity in attribute " + attr;
        ++j;
      }
      ++j;
    }
    if (j >= s.size()) return "unclosed tag <" + name;
    if (closing) {
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
    } else if (!self) {
      if (stack.empty()) ++roots;
      stack.push_back(name);
    } else if (stack.empty()) {
      ++roots;
    }
    i = j + 1;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "expected one root element";
  return "";
}

// A humanised cell back to a number: "70,272 B", "45.80 GiB", "71.1×", "47.3%", "1.31 PFLOP/s", "598.06 µs".
bool parse_human(std::string s, double& v, double& precision) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return false;
  const std::string num(s.c_str(), static_cast<std::size_t>(end - s.c_str()));
  const auto dot = num.find('.');
  precision = dot == std::string::npos ? 1 : std::pow(10.0, -static_cast<double>(num.size() - dot - 1));
  std::string unit = end;
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::map<std::string, double> scale{
      {"", 1}, {"B", 1}, {"KiB", 1024}, {"MiB", 1048576}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"×", 1},
      {"%", 0.01}, {"FLOP/B", 1}, {"ns", 1e-9}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
      {"GFLOP/s", 1e9}, {"FLOP", 1}, {"GFLOP", 1e9}, {"TFLOP", 1e12}, {"MFLOP", 1e6}, {"kFLOP", 1e3}};
  const auto it = scale.find(unit);
  if (it == scale.end()) return false;
  v *= it->second;
  precision *= it->second;
  return true;
}

}  // namespace

TEST_CASE("The default report: five valid SVGs, CSVs that match the spec, md numbers equal to the CSVs'", "[report]") {
  const fs::path dir = scratch("default_report");
  const Run r = run("report --out " + dir.string());
  REQUIRE(r.code == 0);
  for (const char* f : {"report.md", "report.json", "spec.json", "kv.csv", "capacity.csv", "sequences.csv", "intensity.csv",
                        "crossover.csv", "roofline_ops.csv", "serving_step.csv", "serving_pareto.csv", "roofline.svg", "crossover.svg", "kv_bytes.svg",
                        "sequences.svg", "pareto.svg"})
    CHECK(fs::exists(dir / f));

  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".svg") continue;
    INFO(e.path().filename().string());
    const std::string svg = slurp(e.path());
    CHECK(xml_problem(svg) == "");
    CHECK(svg.find("<title>") != std::string::npos);
  }

  // Row counts follow from the spec: 1 model + 4 comparison models, 1 GPU, 3 layouts, 2 KV dtypes
  // (fp8_flashmla only for MLA), 3 contexts, 19 prefixes (0, 1, 2, ..., 131072), 4 TP sizes.
  const json spec = json::parse(slurp(dir / "spec.json"));
  const std::size_t kvs = spec["kv_dtypes"].size(), layouts = spec["layouts"].size(), contexts = spec["contexts"].size(),
                    tps = spec["crossover_tps"].size(), compare = spec["compare_models"].size();
  const std::map<std::string, std::pair<std::size_t, std::string>> expected{
      {"kv.csv", {kvs + compare, "model,attention,kv_dtype,bytes_per_token_per_layer,bytes_per_token,indexer_bytes_per_token,cache_bytes_per_token,mha_equivalent_bytes_per_token,mha_equivalent_ratio"}},
      {"capacity.csv", {layouts * kvs * contexts, "model,gpu,layout,kv_dtype,context_tokens,weight_bytes_per_rank,kv_pool_bytes_per_rank,kv_bytes_per_token_per_rank,max_tokens_per_rank,max_tokens_cluster,max_sequences,fits,reason"}},
      {"sequences.csv", {layouts * kvs * 9, "model,gpu,layout,kv_dtype,context_tokens,max_sequences"}},
      {"intensity.csv", {tps * kvs * 2, "model,gpu,tp,kv_dtype,path,intensity_flop_per_byte,ridge_flop_per_byte,bound,time_s_per_layer"}},
      {"crossover.csv", {tps * kvs * 19, ""}},
      {"roofline_ops.csv", {3 + 3 + 4, "model,gpu,path,op,flops_per_layer,bytes_per_layer,intensity_flop_per_byte,time_s_per_layer,attained_flops_per_s"}},
      // The serving step of DeepSeek-V3 at TP 8: 11 components (no EP: no dispatch or combine); the plan's Pareto rows vary.
      {"serving_step.csv", {11, "component,category,layers,flops,bytes,link_bytes,time_s,time_s_per_layer,sol_time_s,share,bound"}},
      {"serving_pareto.csv", {0, "layout,gpus,batch,tpot_s,ttft_s,prefill_batch_s,tokens_per_s_per_gpu,decode_tokens_per_s_per_gpu,requests_per_s,gpus_for_rate,max_sequences,memory_limited,meets,pareto,why"}},
  };
  std::map<std::string, std::vector<std::vector<std::string>>> csvs;
  for (const auto& [file, want] : expected) {
    INFO(file);
    csvs[file] = mlaplan::parse_csv(slurp(dir / file));
    const auto& rows = csvs[file];
    REQUIRE(!rows.empty());
    if (want.first > 0) CHECK(rows.size() - 1 == want.first);
    else CHECK(rows.size() > 3);
    if (!want.second.empty()) {
      std::string header;
      for (const auto& h : rows[0]) header += (header.empty() ? "" : ",") + h;
      CHECK(header == want.second);
    }
    for (const auto& row : rows) CHECK(row.size() == rows[0].size());
  }

  // Every table in report.md is a view of a CSV: find each md row's CSV row by its keys and
  // compare every shown number to the precision it is printed with.
  const std::string md = slurp(dir / "report.md");
  std::size_t tables = 0, cells = 0, pos = 0;
  while ((pos = md.find("<!-- csv: ", pos)) != std::string::npos) {
    const std::size_t end = md.find(" -->", pos);
    std::istringstream marker(md.substr(pos + 10, end - pos - 10));
    std::string file, kw1, keys, kw2, cols;
    marker >> file >> kw1 >> keys >> kw2 >> cols;
    REQUIRE(csvs.count(file));
    auto split = [](const std::string& s) {
      std::vector<std::string> v;
      std::stringstream ss(s);
      for (std::string x; std::getline(ss, x, ',');) v.push_back(x);
      return v;
    };
    const auto key_cols = split(keys), shown = split(cols);
    const auto& rows = csvs[file];
    auto index = [&](const std::string& k) { return static_cast<std::size_t>(std::find(rows[0].begin(), rows[0].end(), k) - rows[0].begin()); };
    std::istringstream lines(md.substr(end + 4));
    std::string line;
    std::getline(lines, line);  // rest of the marker line
    std::getline(lines, line);  // header
    std::getline(lines, line);  // separator
    ++tables;
    while (std::getline(lines, line) && !line.empty() && line[0] == '|') {
      std::vector<std::string> md_cells;
      std::stringstream ls(line.substr(1));
      for (std::string c; std::getline(ls, c, '|');) {
        while (!c.empty() && c.front() == ' ') c.erase(0, 1);
        while (!c.empty() && c.back() == ' ') c.pop_back();
        md_cells.push_back(c);
      }
      REQUIRE(md_cells.size() >= shown.size());
      const std::vector<std::string>* match = nullptr;
      for (std::size_t row = 1; row < rows.size() && !match; ++row) {
        bool all = true;
        for (const auto& k : key_cols) {
          const std::size_t mi = static_cast<std::size_t>(std::find(shown.begin(), shown.end(), k) - shown.begin());
          if (mi >= shown.size()) continue;
          double v = 0, p = 0;
          const std::string& csv = rows[row][index(k)];
          all = all && (md_cells[mi] == csv || (parse_human(md_cells[mi], v, p) && std::fabs(v - std::strtod(csv.c_str(), nullptr)) < 0.5));
        }
        if (all) match = &rows[row];
      }
      INFO(file << ": " << line);
      REQUIRE(match);
      for (std::size_t c = 0; c < shown.size(); ++c) {
        const std::string& csv = (*match)[index(shown[c])];
        double v = 0, p = 0;
        char* e = nullptr;
        const double raw = std::strtod(csv.c_str(), &e);
        if (csv.empty() || e != csv.c_str() + csv.size()) continue;  // text columns were matched as keys
        INFO(shown[c] << ": md '" << md_cells[c] << "' csv '" << csv << "'");
        REQUIRE(parse_human(md_cells[c], v, p));
        CHECK(std::fabs(v - raw) <= 0.51 * p + 1e-9 * std::fabs(raw));
        ++cells;
      }
    }
    pos = end;
  }
  CHECK(tables == 6);  // kv, capacity, intensity, crossover, serving_step, serving_pareto
  CHECK(cells > 300);
  fs::remove_all(dir);
}

TEST_CASE("report --check: a doctored golden fails naming the row, an untouched one passes", "[report]") {
  // The smallest golden (its report runs in 0.4 s under ASan, DeepSeek-V3 on H200's in 15 s, and
  // this test runs seven).
  const fs::path golden = fs::path(MLAPLAN_TEST_SOURCE_DIR) / "tests" / "golden" / "llama-3.1-70b-h100";
  REQUIRE(fs::exists(golden / "spec.json"));
  const fs::path dir = scratch("doctored");
  fs::copy(golden, dir, fs::copy_options::recursive);
  const Run same = run("report --check " + dir.string());
  CHECK(same.code == 0);
  CHECK(same.out.find(" 0 moved") != std::string::npos);

  std::string kv = slurp(dir / "kv.csv");
  const auto at = kv.find(",327680,");
  REQUIRE(at != std::string::npos);
  kv.replace(at, 8, ",327681,");
  std::ofstream(dir / "kv.csv") << kv;
  const Run drift = run("report --check " + dir.string());
  CHECK(drift.code == 1);
  CHECK(drift.out.find("kv.csv row 1 (model=llama-3.1-70b, attention=gqa, kv_dtype=bf16): bytes_per_token: 327681 -> 327680\n") != std::string::npos);
  CHECK(drift.out.find(", 1 moved\n") != std::string::npos);

  // report.md is compared too, line by line: a changed sentence is drift.
  std::ofstream(dir / "kv.csv") << slurp(golden / "kv.csv");
  std::string md = slurp(dir / "report.md");
  const auto sum = md.find("## Summary");
  REQUIRE(sum != std::string::npos);
  md.insert(sum + 10, " (edited)");
  std::ofstream(dir / "report.md") << md;
  const Run md_drift = run("report --check " + dir.string());
  CHECK(md_drift.code == 1);
  CHECK(md_drift.out.find("report.md line ") != std::string::npos);
  CHECK(md_drift.out.find(": ## Summary (edited) -> ## Summary\n") != std::string::npos);
  CHECK(md_drift.out.find(", 1 moved\n") != std::string::npos);
  std::ofstream(dir / "report.md") << slurp(golden / "report.md");

  // A golden table that is missing is drift, not a pass.
  fs::remove(dir / "intensity.csv");
  const Run missing = run("report --check " + dir.string());
  CHECK(missing.code == 1);
  CHECK(missing.out.find("intensity.csv: missing from " + dir.string() + "\n") != std::string::npos);
  CHECK(missing.out.find(", 1 moved\n") != std::string::npos);
  std::ofstream(dir / "intensity.csv") << slurp(golden / "intensity.csv");
  CHECK(run("report --check " + dir.string()).code == 0);

  // A changed formula constant, seen through the spec: a different block size moves capacity rows.
  json spec = json::parse(slurp(dir / "spec.json"));
  spec["block_size"] = 16;
  std::ofstream(dir / "spec.json") << spec.dump(2);
  const Run moved = run("report --check " + dir.string());
  CHECK(moved.code == 1);
  CHECK(moved.out.find("capacity.csv row 1 (model=llama-3.1-70b, gpu=H100 SXM5 80GB, layout=TP4 DP1 EP1, kv_dtype=bf16): max_tokens_per_rank:") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("report writes atomically and rejects bad specs in one line", "[report][errors]") {
  const fs::path dir = scratch("atomic");
  fs::create_directories(dir);
  std::ofstream(dir / "stale.txt") << "from an older run";
  REQUIRE(run("report --out " + dir.string() + " --model llama-3.1-8b --gpu h100 --tp 1").code == 0);
  CHECK_FALSE(fs::exists(dir / "stale.txt"));  // the folder was replaced whole
  CHECK(fs::exists(dir / "report.md"));

  const fs::path bad = scratch("bad_spec.json");
  std::ofstream(bad) << R"({"models": ["deepseek-v3"], "contexts": [4096, -1]})";
  const Run r = run("report --spec " + bad.string() + " --out " + dir.string());
  CHECK(r.code == 2);
  CHECK(r.err == "mlaplan: " + bad.string() + ": key 'contexts' = -1: expected an integer from 1 to 1099511627776\n");
  CHECK(fs::exists(dir / "report.md"));  // the earlier report is untouched

  std::ofstream(bad) << R"({"modles": ["deepseek-v3"]})";
  CHECK(run("report --spec " + bad.string() + " --out " + dir.string()).err ==
        "mlaplan: " + bad.string() + ": key 'modles' = [\"deepseek-v3\"]: unknown report spec key\n");
  const Run nowhere = run("report --out /nonexistent/dir/report");
  CHECK(nowhere.code == 2);
  CHECK(nowhere.err == "mlaplan: --out: value '/nonexistent/dir/report': its parent folder does not exist\n");
  CHECK(run("report --model nosuchmodel --out " + dir.string()).code == 2);
  // No temporary folders are left beside the output.
  for (const auto& e : fs::directory_iterator(dir.parent_path()))
    CHECK(e.path().filename().string().rfind(".mlaplan_" + std::to_string(getpid()), 0) != 0);
  fs::remove_all(dir);
  fs::remove(bad);
}

TEST_CASE("The report's engine columns follow the batch: SGLang's prefix sum and TensorRT-LLM's packed tokens", "[report][engines]") {
  // DeepSeek-V3 on H200: at batch 1 and prefix 1,024 SGLang never expands (1,024 < 8,192); at batch
  // 32 the extend batch's prefix sum is 32,768 and it expands from a 2-token query on.
  auto sglang_from = [](std::int64_t batch) {
    const std::string dir = (std::filesystem::temp_directory_path() / ("mlaplan_report_batch_" + std::to_string(::getpid()) + "_" + std::to_string(batch))).string();
    const auto r = mlaplan::test::run("report --prefix 1024 --tp 1 --layouts 8x1x1 --batch " + std::to_string(batch) + " --out " + dir);
    REQUIRE(r.code == 0);
    std::ifstream in(dir + "/crossover.csv");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto rows = mlaplan::parse_csv(text);
    std::filesystem::remove_all(dir);
    REQUIRE(rows.size() >= 2);
    const auto col = std::find(rows[0].begin(), rows[0].end(), "sglang_expands_from_query") - rows[0].begin();
    const auto prefix = std::find(rows[0].begin(), rows[0].end(), "prefix") - rows[0].begin();
    for (std::size_t i = 1; i < rows.size(); ++i)
      if (rows[i][static_cast<std::size_t>(prefix)] == "1024") return rows[i][static_cast<std::size_t>(col)];
    return std::string("(no row)");
  };
  CHECK(sglang_from(1) == "");
  CHECK(sglang_from(32) == "2");
}
