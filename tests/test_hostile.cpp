// Hostile inputs: every one ends with exit code 2 and one line naming the file (or flag), the key
// and the value; nothing is printed on stdout, no output folder is left behind, nothing crashes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"

namespace fs = std::filesystem;

namespace {

using mlaplan::test::Run;
using mlaplan::test::run;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string file(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("mlaplan_hostile_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// A valid Llama-like config with one field replaced (JSON text of the value).
std::string config_with(const std::string& key, const std::string& value) {
  std::string c = R"({"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
                      "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": false})";
  const auto at = c.find("\"" + key + "\"");
  if (at == std::string::npos) return c.substr(0, c.size() - 1) + ", \"" + key + "\": " + value + "}";
  const auto colon = c.find(':', at), end = c.find_first_of(",}", colon);
  return c.substr(0, colon + 1) + " " + value + c.substr(end);
}

void expect(const std::string& args, const std::string& message) { mlaplan::test::expect_refusal(args, message); }

}  // namespace

TEST_CASE("Broken files: empty, truncated, binary, enormous, folders, arrays", "[hostile]") {
  const std::string empty = file("empty.json", "");
  expect("kv -m " + empty, empty + ": not valid JSON (byte 1)");
  const std::string trunc = file("trunc.json", R"({"hidden_size": 40)");
  expect("kv -m " + trunc, trunc + ": not valid JSON (byte 19)");
  std::string bin(4096, '\0');
  for (std::size_t i = 0; i < bin.size(); ++i) bin[i] = static_cast<char>((i * 131 + 7) & 0xFF);
  const std::string binary = file("binary.json", bin);
  const Run rb = run("kv -m " + binary);
  CHECK(rb.code == 2);
  CHECK(rb.err.rfind("mlaplan: " + binary + ": not valid JSON (byte ", 0) == 0);
  // A 100 MB file is refused by its size before it is read (sparse, so the test writes nothing).
  const std::string big = file("big.json", "");
  fs::resize_file(big, 100u << 20);
  expect("kv -m " + big, big + ": is 104857600 bytes; JSON inputs are limited to 67108864 (64 MiB)");
  expect("capacity -g " + big, big + ": is 104857600 bytes; JSON inputs are limited to 67108864 (64 MiB)");
  const fs::path dir = fs::temp_directory_path() / ("mlaplan_hostile_dir_" + std::to_string(getpid()));
  fs::create_directories(dir);
  expect("capacity -g " + dir.string(), dir.string() + ": is a directory, expected a JSON file");
  expect("report --spec " + dir.string(), dir.string() + ": is a directory, expected a JSON file");
  // As root no permission bit makes a file unreadable; /proc/self/mem opens but fails every read.
  expect("kv -m /proc/self/mem", "/proc/self/mem: cannot be read: Input/output error");
  // A file that reports no size but never ends is cut off at the limit while it is read.
  expect("kv -m /dev/zero", "/dev/zero: is over 67108864 bytes; JSON inputs are limited to 64 MiB");
  const std::string arr = file("array.json", "[1, 2, 3]");
  expect("kv -m " + arr, arr + ": expected a JSON object at the top level");
  expect("report --spec " + arr, arr + ": expected a JSON object at the top level");
  const std::string huge_number = file("huge.json", config_with("hidden_size", "1e309"));
  expect("kv -m " + huge_number, huge_number + ": not valid JSON (a number beyond the range of a double)");
  fs::remove_all(dir);
}

TEST_CASE("Wrong types, missing keys, zero, negative, fractional and absurd sizes", "[hostile]") {
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"hidden_size", "\"4096\"", "key 'hidden_size' = \"4096\": expected an integer"},
      {"hidden_size", "null", "key 'hidden_size' = null: required field is missing"},
      {"hidden_size", "0", "key 'hidden_size' = 0: must be a positive integer"},
      {"hidden_size", "-4096", "key 'hidden_size' = -4096: must be a positive integer"},
      {"hidden_size", "4096.5", "key 'hidden_size' = 4096.5: expected an integer"},
      {"hidden_size", "1e18", "key 'hidden_size' = 1e+18: must be at most 16777216"},
      {"hidden_size", "[4096]", "key 'hidden_size' = [4096]: expected an integer"},
      {"num_hidden_layers", "100000", "key 'num_hidden_layers' = 100000: must be at most 65536"},
      {"num_attention_heads", "true", "key 'num_attention_heads' = true: expected an integer"},
      {"num_key_value_heads", "64", "key 'num_key_value_heads' = 64: more KV heads than query heads (32)"},
      {"vocab_size", "{}", "key 'vocab_size' = {}: expected an integer"},
      {"tie_word_embeddings", "\"no\"", "key 'tie_word_embeddings' = \"no\": expected true or false"},
      {"kv_lora_rank", "512", "key 'qk_rope_head_dim' = (absent): MLA field missing: kv_lora_rank is set, so all of kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim are required"},
      {"layer_types", "\"sliding\"", "key 'layer_types' = \"sliding\": expected an array of layer type names"},
      {"sliding_window", "-1", "key 'sliding_window' = -1: must be a positive integer"},
      {"quantization_config", "7", "key 'quantization_config' = 7: expected an object"},
  };
  for (const Case& c : cases) {
    const std::string f = file(std::string("case_") + c.key + ".json", config_with(c.key, c.value));
    expect("kv -m " + f, f + ": " + c.message);
  }
  // Dimensions each within bounds whose products are not a real model.
  const std::string gf = file("giant2.json", config_with("intermediate_size", "16777216"));
  expect("kv -m " + gf + " --set num_hidden_layers=65536 --set hidden_size=1048576",
         gf + ": key 'num_hidden_layers' = 65536: the model would have 3.64e+18 parameters; mlaplan accepts at most 1e+15");
}

TEST_CASE("Hostile flags: absurd contexts, unknown dtypes and GPUs, bad layouts", "[hostile]") {
  expect("kv --tokens 1000000000000000000", "--tokens: value '1000000000000000000': must be at most 1099511627776");
  expect("capacity --context 1000000000000000000", "--context: value '1000000000000000000': must be at most 1099511627776");
  const Run r = run("kv --tokens 1e18");
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  expect("cost --prefix 1e18", "--prefix: value '1e+18': expected a number of tokens in [0, 1e12]");
  expect("cost --prefix nan", "--prefix: value 'nan': expected a whole number of tokens (e.g. 4096, 32k, 1M)");
  expect("cost --batch 100000000", "--batch: value '100000000': must be at most 10000000");
  expect("crossover --prefix 0:1e15:+1", "--prefix: value '0:1e15:+1': more than 10000000 points");
  expect("kv --kv-dtype int3", "--kv-dtype: value 'int3': expected one of fp32, bf16, fp16, fp8, fp8_flashmla, fp4");
  expect("cost --dtype int3", "--dtype: value 'int3': expected one of fp32, tf32, bf16, fp16, fp8, fp4");
  expect("capacity --weight-dtype int3", "--weight-dtype: value 'int3': expected one of fp32, bf16, fp16, fp8, fp8_tensor, mxfp4, int4, int8");
  expect("capacity -g tpu-v9", "--gpu: value 'tpu-v9': no bundled gpu or file by that name; run 'mlaplan gpus' to list them");
  expect("kv -m llama-3.1-70b --tp 32 --set num_key_value_heads=6 --set num_attention_heads=48 --set head_dim=128",
         "models/meta-llama--Llama-3.1-70B.json: key 'num_attention_heads' = 48: not divisible by --tp 32");
  expect("kv -m llama-3.1-70b --tp 4 --set num_key_value_heads=6 --set num_attention_heads=48 --set head_dim=128",
         "models/meta-llama--Llama-3.1-70B.json: key 'num_key_value_heads' = 6: cannot be split or replicated evenly across --tp 4");
  expect("kv -m llama-3.1-70b --tp 3", "models/meta-llama--Llama-3.1-70B.json: key 'num_attention_heads' = 64: not divisible by --tp 3");
  expect("capacity -m deepseek-v3 --tp 8 --ep 3", "--ep: value '3': does not divide the 8 ranks of --tp 8 x --dp 1");
  expect("kv --set =5", "--set: value '=5': expected key=value");
  expect("kv --set a..b=5", "--set: value 'a..b=5': empty key segment");
  expect("kv --set hidden_size=1e309", "models/deepseek-ai--DeepSeek-V3.json: key 'hidden_size' = \"1e309\": expected an integer");
  expect("report --layouts 8x1 --out /tmp/mlaplan-never-written", "--layouts: value '8x1': '8x1' is not TPxDPxEP");
  CHECK_FALSE(fs::exists("/tmp/mlaplan-never-written"));
}

TEST_CASE("Fuzzer findings stay fixed", "[hostile][fuzz]") {
  // fuzz_override: a --set value holding invalid UTF-8 made the error message's JSON dump throw
  // (std::terminate). It is now a one-line error showing the bytes replaced.
  nlohmann::json cfg = nlohmann::json::parse(slurp(fs::path(MLAPLAN_TEST_SOURCE_DIR) / "models" / "deepseek-ai--DeepSeek-V3.json"));
  mlaplan::apply_override(cfg, std::string("kv_lora_rank=256z\xff\xff\xff\xff\xff\xff\xff\xff\0\0\0=null", 33));
  try {
    mlaplan::parse_hf_config(cfg, "fuzz.json", "fuzz");
    FAIL("expected an InputError");
  } catch (const mlaplan::InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("fuzz.json: key 'kv_lora_rank' = \"256z", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  // Control characters in user input never break the one-line message.
  const std::string spec = file("ctl_spec.json", "{\"a\\nb\": 1}");
  expect("report --spec " + spec + " --out /tmp/mlaplan-never-written", spec + ": key 'a\\x0ab' = 1: unknown report spec key");
}
