#include "mlaplan/io/hf_config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <fstream>
#include <memory>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/lists.hpp"
#include "hf_quantization.hpp"

namespace mlaplan {

using nlohmann::json;

namespace {

// Largest width accepted for any dimension (16,777,216; real models stay below 300,000), and for
// counts of layers, heads and experts (65,536): beyond them a config is not a real model, and
// the products of such numbers would leave exact 64-bit arithmetic.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::int64_t kMaxCount = std::int64_t{1} << 16;
// Interpreted models must stay below these: 1e15 parameters (1,000x the largest models) and
// 1e10 bytes of KV cache per token.
constexpr double kMaxParams = 1e15;
constexpr double kMaxBytesPerToken = 1e10;

std::string show(const json& v) { return show_json(v); }

// Every key the reader understands, relative to the language-model part of a config (nested keys
// dotted): `--set` accepts these and the keys a config already has. Reader refuses to read a key
// missing here, so the list cannot fall behind the reader.
constexpr std::string_view kReadKeys[] = {
    "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers", "vocab_size",
    "intermediate_size", "max_position_embeddings", "tie_word_embeddings", "attention_bias", "model_type",
    "torch_dtype", "dtype", "text_config",
    // MLA and DeepSeek Sparse Attention
    "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank", "index_n_heads",
    "index_head_dim", "index_topk", "num_nextn_predict_layers",
    // sliding windows
    "sliding_window", "layer_types", "use_sliding_window", "max_window_layers", "sliding_window_pattern",
    // mixtures of experts
    "n_routed_experts", "num_local_experts", "num_experts", "num_experts_per_tok", "experts_per_token",
    "moe_intermediate_size", "n_shared_experts", "topk_method", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "mlp_only_layers",
    // quantization
    "quantization_config", "quantization_config.quant_method", "quantization_config.weight_block_size",
    "quantization_config.modules_to_not_convert", "quantization_config.bits", "quantization_config.group_size",
    "quantization_config.zero_point", "quantization_config.version", "quantization_config.backend",
    "quantization_config.desc_act", "quantization_config.sym", "quantization_config.checkpoint_format",
    "quantization_config.lm_head", "quantization_config.modules_in_block_to_quantize", "quantization_config.dynamic",
    "quantization_config.format", "quantization_config.config_groups", "quantization_config.ignore",
    "quantization_config.kv_cache_scheme", "quantization_config.sparsity_config", "quantization_config.transform_config",
    "quantization_config.config_groups.*.targets", "quantization_config.config_groups.*.weights",
    "quantization_config.config_groups.*.input_activations", "quantization_config.config_groups.*.output_activations",
    "quantization_config.config_groups.*.format", "quantization_config.config_groups.*.weights.num_bits",
    "quantization_config.config_groups.*.weights.type", "quantization_config.config_groups.*.weights.symmetric",
    "quantization_config.config_groups.*.weights.strategy", "quantization_config.config_groups.*.weights.group_size",
    "quantization_config.config_groups.*.weights.block_structure", "quantization_config.config_groups.*.weights.actorder",
    "quantization_config.config_groups.*.weights.dynamic",
    // hybrid decoders, read to refuse them
    "layers_block_type", "attn_layer_period", "attn_layer_offset", "hybrid_override_pattern", "attn_type_list"};

bool reads_key(std::string_view key) { return reads_config_key(key); }

// Model types whose configs the reader has been checked against (the bundled ones and those it
// special-cases); another one is read from its fields with a note.
constexpr std::string_view kKnownModelTypes[] = {
    "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "llama", "mistral", "mixtral", "qwen2", "qwen2_moe",
    "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt_oss"};

class Reader {
 public:
  Reader(const json& cfg, std::string source) : cfg_(cfg), source_(std::move(source)) {}

  bool has(const char* key) const {
    if (!reads_key(key)) throw std::logic_error(fmt::format("hf_config reads '{}' but kReadKeys does not list it", key));
    return cfg_.contains(key) && !cfg_.at(key).is_null();
  }
  const json& at(const char* key) const { return cfg_.at(key); }
  const std::string& source() const { return source_; }

  [[noreturn]] void bad(const char* key, std::string_view problem) const {
    fail_key(source_, key, has(key) || cfg_.contains(key) ? show(cfg_.at(key)) : "(absent)", problem);
  }

  // An integer (a JSON integer, or a float with an integral value) within [lo, hi].
  std::int64_t integer(const char* key, std::int64_t lo = 1, std::int64_t hi = kMaxDim) const {
    (void)has(key);  // listed in kReadKeys
    return config_integer(cfg_.contains(key) ? &cfg_.at(key) : nullptr, source_, key, lo, hi);
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback, std::int64_t lo = 1, std::int64_t hi = kMaxDim) const {
    return has(key) ? integer(key, lo, hi) : fallback;
  }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!cfg_.at(key).is_boolean()) bad(key, "expected true or false");
    return cfg_.at(key).get<bool>();
  }
  std::string string_or(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    if (!cfg_.at(key).is_string()) bad(key, "expected a string");
    return cfg_.at(key).get<std::string>();
  }

 private:
  const json& cfg_;
  std::string source_;
};

// The language-model part of a config: multimodal configs nest it under text_config.
const json& language_config(const json& cfg) {
  if (cfg.contains("text_config") && cfg["text_config"].is_object() && !cfg.contains("num_hidden_layers"))
    return cfg["text_config"];
  return cfg;
}

void read_attention(const Reader& r, ModelSpec& m) {
  m.hidden = r.integer("hidden_size");
  m.heads = r.integer("num_attention_heads", 1, kMaxCount);
  m.kv_heads = r.integer_or("num_key_value_heads", m.heads, 1, kMaxCount);
  if (m.kv_heads > m.heads) r.bad("num_key_value_heads", fmt::format("more KV heads than query heads ({})", m.heads));
  if (m.heads % m.kv_heads != 0)
    r.bad("num_key_value_heads", fmt::format("does not divide num_attention_heads {}", m.heads));

  const char* mla_keys[] = {"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"};
  int present = 0;
  for (const char* k : mla_keys) present += r.has(k) ? 1 : 0;
  if (r.has("kv_lora_rank")) {
    for (const char* k : mla_keys)
      if (!r.has(k)) r.bad(k, "MLA field missing: kv_lora_rank is set, so all of kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim are required");
    MlaDims a;
    a.kv_lora_rank = r.integer("kv_lora_rank");
    a.qk_rope_head_dim = r.integer("qk_rope_head_dim");
    a.qk_nope_head_dim = r.integer("qk_nope_head_dim");
    a.v_head_dim = r.integer("v_head_dim");
    a.q_lora_rank = r.integer_or("q_lora_rank", 0, 0);  // null or 0: queries are not compressed
    if (a.q_lora_rank == 0) m.notes.push_back("q_lora_rank is null or 0: queries are projected directly from the hidden state");
    m.mla = a;
    m.attention = AttentionKind::mla;
    m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  } else {
    if (present > 0 && r.has("qk_nope_head_dim"))
      r.bad("kv_lora_rank", "MLA field missing: qk_nope_head_dim is set but kv_lora_rank is not");
    if (r.has("head_dim")) {
      m.head_dim = r.integer("head_dim");
    } else {
      if (m.hidden % m.heads != 0)
        r.bad("hidden_size", fmt::format("head_dim is absent and hidden_size is not divisible by num_attention_heads {}", m.heads));
      m.head_dim = m.hidden / m.heads;
      m.head_dim_derived = true;
      m.notes.push_back(fmt::format("head_dim absent: derived as hidden_size / num_attention_heads = {}", m.head_dim));
    }
    m.attention = m.kv_heads == m.heads ? AttentionKind::mha
                  : m.kv_heads == 1     ? AttentionKind::mqa
                                        : AttentionKind::gqa;
  }

  const bool any_index = r.has("index_n_heads") || r.has("index_head_dim") || r.has("index_topk");
  if (any_index) {
    for (const char* k : {"index_n_heads", "index_head_dim", "index_topk"})
      if (!r.has(k)) r.bad(k, "indexer field missing: index_n_heads, index_head_dim and index_topk go together");
    if (!m.mla) r.bad("index_n_heads", "a DSA indexer needs an MLA model (kv_lora_rank)");
    m.indexer = IndexerDims{r.integer("index_n_heads", 1, kMaxCount), r.integer("index_head_dim"), r.integer("index_topk", 1, std::int64_t{1} << 40)};
  }
}

std::vector<LayerSpec> read_layers(const Reader& r, ModelSpec& m, const std::string& model_type) {
  const std::int64_t n = r.integer("num_hidden_layers", 1, kMaxCount);
  std::vector<LayerSpec> layers(static_cast<std::size_t>(n));
  const std::int64_t window = r.has("sliding_window") ? r.integer("sliding_window", 1, std::int64_t{1} << 40) : 0;
  auto slide = [&](std::size_t i) {
    layers[i].sliding = true;
    layers[i].window = window;
  };

  if (r.has("layer_types")) {
    const json& types = r.at("layer_types");
    if (!types.is_array()) r.bad("layer_types", "expected an array of layer type names");
    if (static_cast<std::int64_t>(types.size()) != n)
      r.bad("layer_types", fmt::format("has {} entries but num_hidden_layers is {}", types.size(), n));
    for (std::size_t i = 0; i < types.size(); ++i) {
      const std::string t = types[i].is_string() ? types[i].get<std::string>() : std::string{};
      if (t == "sliding_attention") {
        if (window <= 0) r.bad("sliding_window", "layer_types has sliding_attention layers but no sliding_window");
        slide(i);
      } else if (t == "linear_attention" || t == "mamba" || t == "conv" || t == "recurrent") {
        r.bad("layer_types", fmt::format("entry {} = {}: a layer that keeps a recurrent state, not a KV cache: mlaplan models decoders whose every layer is attention", i, show(types[i])));
      } else if (t != "full_attention") {
        r.bad("layer_types", fmt::format("entry {} = {}: expected \"full_attention\" or \"sliding_attention\"", i, show(types[i])));
      }
    }
    return layers;
  }
  if (window <= 0) return layers;
  if (r.has("use_sliding_window") && !r.boolean_or("use_sliding_window", true)) {
    m.notes.push_back(fmt::format("sliding_window {} ignored: use_sliding_window is false", window));
    return layers;
  }
  if (r.has("use_sliding_window") && r.has("max_window_layers")) {
    // Qwen2: layers at or beyond max_window_layers use the window.
    const std::int64_t first = r.integer("max_window_layers", 0);
    for (std::int64_t i = first; i < n; ++i) slide(static_cast<std::size_t>(i));
    return layers;
  }
  if (r.has("sliding_window_pattern")) {
    // Gemma-3: every pattern-th layer is global, the rest slide.
    const std::int64_t p = r.integer("sliding_window_pattern");
    for (std::int64_t i = 0; i < n; ++i)
      if ((i + 1) % p != 0) slide(static_cast<std::size_t>(i));
    return layers;
  }
  if (model_type == "gemma2") {
    // Gemma-2 alternates local and global attention, even layers local (no layer_types in its config).
    for (std::int64_t i = 0; i < n; i += 2) slide(static_cast<std::size_t>(i));
    m.notes.push_back("gemma2: even layers use the sliding window, odd layers are global");
    return layers;
  }
  for (std::size_t i = 0; i < layers.size(); ++i) slide(i);
  return layers;
}

void read_mlp(const Reader& r, ModelSpec& m, const std::string& model_type) {
  std::int64_t experts = 0;
  const char* experts_key = nullptr;
  for (const char* k : {"n_routed_experts", "num_local_experts", "num_experts"})
    if (r.has(k)) {
      experts = r.integer(k, 0, kMaxCount);
      experts_key = k;
      break;
    }
  const bool has_moe = experts > 0;
  if (!has_moe || r.has("intermediate_size")) m.intermediate = r.integer("intermediate_size");
  if (!has_moe) return;

  MoeSpec e;
  e.routed_experts = experts;
  e.experts_per_token = r.has("num_experts_per_tok") ? r.integer("num_experts_per_tok", 1, kMaxCount) : r.integer("experts_per_token", 1, kMaxCount);
  if (e.experts_per_token > experts)
    r.bad("num_experts_per_tok", fmt::format("more experts per token than {} {}", experts_key, experts));
  e.expert_intermediate = r.has("moe_intermediate_size") ? r.integer("moe_intermediate_size") : r.integer("intermediate_size");
  e.shared_experts = r.integer_or("n_shared_experts", 0, 0, kMaxCount);
  e.router_bias = r.string_or("topk_method", "") == "noaux_tc" || model_type == "gpt_oss";
  e.expert_bias = model_type == "gpt_oss";
  m.moe = e;

  const std::int64_t first_dense = r.integer_or("first_k_dense_replace", 0, 0, kMaxCount);
  const std::int64_t freq = r.integer_or("moe_layer_freq", 1, 1, kMaxCount);
  const std::int64_t step = r.integer_or("decoder_sparse_step", 1, 1, kMaxCount);
  std::set<std::int64_t> mlp_only;
  if (r.has("mlp_only_layers")) {
    if (!r.at("mlp_only_layers").is_array()) r.bad("mlp_only_layers", "expected an array of layer indices");
    for (const json& v : r.at("mlp_only_layers"))
      if (v.is_number_integer()) mlp_only.insert(v.get<std::int64_t>());
  }
  if (first_dense > m.num_layers())
    r.bad("first_k_dense_replace", fmt::format("exceeds num_hidden_layers {}", m.num_layers()));
  for (std::int64_t i = 0; i < m.num_layers(); ++i) {
    const bool sparse = i >= first_dense && i % freq == 0 && (i + 1) % step == 0 && !mlp_only.count(i);
    m.layers[static_cast<std::size_t>(i)].moe = sparse;
  }
  const bool any_dense = std::any_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return !l.moe; });
  if (any_dense && m.intermediate == 0) r.bad("intermediate_size", "required for the dense MLP layers");
}

// Decoders that interleave attention with state-space (Mamba) or linear-attention layers: only
// their attention layers hold a KV cache, and the others keep a recurrent state per sequence that
// no formula here counts. Costing every layer as attention would overstate the cache (Jamba: 8x),
// so such configs are refused, naming the field that shows it.
void refuse_hybrid(const Reader& r, const json& cfg, const std::string& model_type) {
  const char* why = "mlaplan models decoders whose every layer is attention, and would cost the other layers as attention";
  if (r.has("layers_block_type")) r.bad("layers_block_type", fmt::format("layers of other kinds than attention: {}", why));
  if (r.has("attn_layer_period"))
    r.bad("attn_layer_period", fmt::format("attention on only some layers, state-space (Mamba) layers between: {}", why));
  if (r.has("hybrid_override_pattern")) r.bad("hybrid_override_pattern", fmt::format("a hybrid of attention and state-space layers: {}", why));
  if (r.has("attn_type_list")) r.bad("attn_type_list", fmt::format("a hybrid of linear and softmax attention: {}", why));
  for (const auto& item : cfg.items()) {
    const std::string& k = item.key();
    if (k.rfind("mamba_", 0) == 0 || k.rfind("ssm_", 0) == 0 || k.rfind("linear_", 0) == 0)
      fail_key(r.source(), k, show(item.value()), fmt::format("a state-space or linear-attention field: {}", why));
  }
  for (std::string_view hybrid : {"jamba", "zamba", "zamba2", "bamba", "falcon_h1", "nemotron_h", "granitemoehybrid", "qwen3_next", "minimax"})
    if (model_type == hybrid) r.bad("model_type", fmt::format("a hybrid decoder: {}", why));
}

void read_quantization(const Reader& r, ModelSpec& m) {
  if (!r.has("quantization_config")) return;
  const json& q = r.at("quantization_config");
  if (!q.is_object()) r.bad("quantization_config", "expected an object");
  read_quantization_config(q, r.source(), m);
}

// A model whose parameters or cache would not fit exact 64-bit arithmetic is not a real one.
void check_magnitude(const Reader& r, const ModelSpec& m) {
  const double params = static_cast<double>(count_params(m).total.value);
  if (params >= kMaxParams)
    r.bad("num_hidden_layers", fmt::format("the model would have {:.3g} parameters; mlaplan accepts at most {:.0e}", params, kMaxParams));
  const double bytes = static_cast<double>((kv_bytes_per_token(m, KvDtype::fp32).total() + indexer_bytes_per_token(m)).value);
  if (bytes >= kMaxBytesPerToken)
    r.bad("num_hidden_layers", fmt::format("the model would cache {:.3g} bytes per token; mlaplan accepts at most {:.0e}", bytes, kMaxBytesPerToken));
}

}  // namespace

bool reads_config_key(std::string_view key) {
  return std::find(std::begin(kReadKeys), std::end(kReadKeys), key) != std::end(kReadKeys);
}

std::string show_json(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

json load_json_file(const std::filesystem::path& path, const std::string& shown) {
  const std::string where = shown.empty() ? path.string() : shown;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(where, "is a directory, expected a JSON file");
  // Config, hardware and spec files are small; a larger one is refused before it is read.
  constexpr std::uintmax_t kMaxFileBytes = 64u << 20;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxFileBytes) fail(where, fmt::format("is {} bytes; JSON inputs are limited to {} (64 MiB)", size, kMaxFileBytes));
  // C stdio, because a stream cannot tell a read error (EIO) from an empty file.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) fail(where, fmt::format("cannot be read: {}", std::strerror(errno)));
  std::string text;
  char chunk[65536];
  std::size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f.get())) > 0) {
    text.append(chunk, n);
    if (text.size() > kMaxFileBytes) fail(where, fmt::format("is over {} bytes; JSON inputs are limited to 64 MiB", kMaxFileBytes));
  }
  if (std::ferror(f.get())) fail(where, fmt::format("cannot be read: {}", std::strerror(errno)));
  try {
    json v = json::parse(text);
    if (!v.is_object()) fail(where, "expected a JSON object at the top level");
    return v;
  } catch (const json::parse_error& e) {
    fail(where, fmt::format("not valid JSON (byte {})", e.byte));
  } catch (const json::exception&) {
    fail(where, "not valid JSON (a number beyond the range of a double)");
  }
}

void apply_override(json& config, const std::string& assignment, const std::string& where) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) fail_flag("--set", assignment, "expected key=value");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const json::exception&) {  // not JSON (or a number no double holds): keep the text
    value = text;
  }
  json* node = &config;
  if (config.contains("text_config") && config["text_config"].is_object() && !config.contains("num_hidden_layers"))
    node = &config["text_config"];
  const std::vector<std::string> parts = split(key, '.');
  if (std::find(parts.begin(), parts.end(), "") != parts.end()) fail_flag("--set", assignment, "empty key segment");
  std::string path;  // the dotted key up to the current segment
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::string parent = path;
    path += (path.empty() ? "" : ".") + part;
    // A key the config has or the reader understands; anything else is a typo, not a what-if.
    if (!node->contains(part) && !reads_key(path)) {
      std::vector<std::string> names(std::begin(kReadKeys), std::end(kReadKeys));
      for (const auto& item : node->items()) names.push_back(parent.empty() ? item.key() : fmt::format("{}.{}", parent, item.key()));
      fail_flag("--set", assignment,
                fmt::format("'{}' is neither a key of {} nor one mlaplan reads{}", path, where, did_you_mean(path, names)));
    }
    if (i + 1 == parts.size()) break;
    json& next = (*node)[part];
    if (next.is_null()) next = json::object();
    if (!next.is_object()) fail_flag("--set", assignment, fmt::format("'{}' is not an object", part));
    node = &next;
  }
  (*node)[parts.back()] = value;
}

ModelSpec parse_hf_config(const json& root, const std::string& source, const std::string& name) {
  const json& cfg = language_config(root);
  Reader r(cfg, source);
  ModelSpec m;
  m.name = name;
  m.source = source;
  m.model_type = r.string_or("model_type", root.contains("model_type") && root["model_type"].is_string() ? root["model_type"].get<std::string>() : std::string{});
  refuse_hybrid(r, cfg, m.model_type);
  read_attention(r, m);
  if (!m.model_type.empty() && std::find(std::begin(kKnownModelTypes), std::end(kKnownModelTypes), m.model_type) == std::end(kKnownModelTypes))
    m.warnings.push_back(key_message(source, "model_type", show(json(m.model_type)),
                                     fmt::format("not a model type mlaplan knows: read as {} from its fields", to_string(m.attention))));
  m.layers = read_layers(r, m, m.model_type);
  read_mlp(r, m, m.model_type);
  m.vocab = r.integer("vocab_size");
  m.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, 0, 1024);
  m.tie_word_embeddings = r.boolean_or("tie_word_embeddings", true);  // HF PretrainedConfig default
  m.max_position_embeddings = r.integer_or("max_position_embeddings", 0, 0, std::int64_t{1} << 40);
  m.torch_dtype = r.string_or("torch_dtype", r.string_or("dtype", "bfloat16"));

  // Biases and norms that configs do not spell out but the architectures carry.
  const bool attention_bias = r.boolean_or("attention_bias", false);
  m.qkv_bias = attention_bias || (m.model_type == "qwen2" && !r.has("attention_bias")) || m.model_type == "qwen2_moe";
  m.o_bias = attention_bias;
  m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe" || m.model_type == "gemma3" || m.model_type == "gemma3_text";
  m.attention_sinks = m.model_type == "gpt_oss";
  m.norms_per_layer = (m.model_type.rfind("gemma2", 0) == 0 || m.model_type.rfind("gemma3", 0) == 0) ? 4 : 2;
  read_quantization(r, m);
  check_magnitude(r, m);
  return m;
}

ModelSpec load_model_file(const std::filesystem::path& path, const std::string& name,
                          const std::vector<std::string>& overrides, const std::string& shown) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = path / "config.json";
    if (!std::filesystem::exists(file, ec)) fail(path.string(), "folder holds no config.json");
  }
  const std::string where = shown.empty() ? file.string() : shown;
  json cfg = load_json_file(file, where);
  for (const auto& o : overrides) apply_override(cfg, o, where);
  ModelSpec m = parse_hf_config(cfg, where, name);
  if (!overrides.empty()) {
    std::string joined;
    for (const auto& o : overrides) joined += (joined.empty() ? "" : ", ") + o;
    m.notes.push_back("overrides applied: " + joined);
  }
  return m;
}

void fail_layout(const ModelSpec& m, const Parallelism& p, const LayoutVerdict& v) {
  const std::string ep = std::to_string(p.ep);
  switch (v.issue) {
    case LayoutIssue::heads_not_divisible:
      fail_key(m.source, "num_attention_heads", std::to_string(m.heads), fmt::format("not divisible by --tp {}", p.tp));
    case LayoutIssue::kv_heads_not_splittable:
      fail_key(m.source, "num_key_value_heads", std::to_string(m.kv_heads), fmt::format("cannot be split or replicated evenly across --tp {}", p.tp));
    case LayoutIssue::ep_without_experts: fail_flag("--ep", ep, fmt::format("{} has no routed experts", m.name));
    case LayoutIssue::ep_not_dividing_ranks:
      fail_flag("--ep", ep, fmt::format("does not divide the {} ranks of --tp {} x --dp {}", p.ranks(), p.tp, p.dp));
    case LayoutIssue::ep_exceeds_experts: fail_flag("--ep", ep, fmt::format("exceeds the {} routed experts", m.moe ? m.moe->routed_experts : 0));
    case LayoutIssue::none: break;
  }
  fail("layout", v.verdict.reason);
}

}  // namespace mlaplan
