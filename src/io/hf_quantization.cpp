// quantization_config: how a checkpoint stores its weights, byte for byte.
//
// Each byte rule below names the code that writes (or allocates) the tensors it counts. Shapes are
// [rows, cols] = [output features, input features] of a linear weight, g the group size.
#include "hf_quantization.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"

namespace mlaplan {

using nlohmann::json;

std::int64_t config_integer(const json* v, std::string_view source, std::string_view key, std::int64_t lo, std::int64_t hi) {
  const std::string shown = v ? show_json(*v) : "(absent)";
  if (!v || v->is_null()) fail_key(source, key, shown, "required field is missing");
  double d = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      fail_key(source, key, shown, fmt::format("must be at most {}", hi));
    d = static_cast<double>(v->get<std::int64_t>());
  } else if (v->is_number_float()) {
    d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) fail_key(source, key, shown, "expected an integer");
  } else {
    fail_key(source, key, shown, "expected an integer");
  }
  if (d < static_cast<double>(lo)) fail_key(source, key, shown, lo == 1 ? "must be a positive integer" : fmt::format("must be at least {}", lo));
  if (d > static_cast<double>(hi)) fail_key(source, key, shown, fmt::format("must be at most {}", hi));
  return static_cast<std::int64_t>(d);
}

namespace {

constexpr const char* kCountedAsBf16 = "weights counted as bf16 unless --weight-dtype says otherwise";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool ends_with(std::string_view s, std::string_view tail) { return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail; }

// One object inside quantization_config; its keys are named by their dotted path in every message.
class Node {
 public:
  Node(const json& obj, const std::string& source, std::string path, std::string pattern)
      : obj_(obj), source_(source), path_(std::move(path)), pattern_(std::move(pattern)) {}

  const std::string& source() const { return source_; }
  const json& object() const { return obj_; }
  std::string key(std::string_view k) const { return fmt::format("{}.{}", path_, k); }
  std::string pattern(std::string_view k) const { return fmt::format("{}.{}", pattern_, k); }

  // The value, or nullptr when it is absent or null. Every key read is one kReadKeys lists.
  const json* get(const char* k) const {
    const json* v = raw(k);
    return v && v->is_null() ? nullptr : v;
  }
  // The value even when null (a required key shows "null" in its refusal), nullptr when absent.
  const json* raw(const char* k) const {
    if (!reads_config_key(pattern(k))) throw std::logic_error(fmt::format("hf_config reads '{}' but kReadKeys does not list it", pattern(k)));
    const auto it = obj_.find(k);
    return it == obj_.end() ? nullptr : &*it;
  }
  std::string shown(const char* k) const { return obj_.contains(k) ? show_json(obj_.at(k)) : "(absent)"; }
  [[noreturn]] void bad(const char* k, std::string_view problem) const { fail_key(source_, key(k), shown(k), problem); }
  std::string message(const char* k, std::string_view problem) const { return key_message(source_, key(k), shown(k), problem); }

  std::optional<std::int64_t> integer(const char* k, std::int64_t lo, std::int64_t hi) const {
    const json* v = get(k);
    if (!v) return std::nullopt;
    return config_integer(v, source_, key(k), lo, hi);
  }
  std::optional<bool> boolean(const char* k) const {
    const json* v = get(k);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) bad(k, "expected true or false");
    return v->get<bool>();
  }
  std::optional<std::string> string(const char* k) const {
    const json* v = get(k);
    if (!v) return std::nullopt;
    if (!v->is_string()) bad(k, "expected a string");
    return v->get<std::string>();
  }

 private:
  const json& obj_;
  const std::string& source_;
  std::string path_, pattern_;
};

// Keys a method's config carries that do not change how the weights are stored (calibration
// settings, kernel choices at load time) or that are read elsewhere; any other key is named in a
// warning, never silently passed over.
constexpr std::string_view kAwqKeys[] = {"quant_method", "bits", "group_size", "zero_point", "version", "backend",
                                         "modules_to_not_convert", "do_fuse", "fuse_max_seq_len", "modules_to_fuse",
                                         "exllama_config"};
constexpr std::string_view kGptqKeys[] = {
    "quant_method", "bits", "group_size", "desc_act", "sym", "checkpoint_format", "lm_head", "modules_to_not_convert",
    "modules_in_block_to_quantize", "dynamic", "damp_percent", "damp_auto_increment", "true_sequential", "static_groups",
    "model_name_or_path", "model_file_base_name", "dataset", "tokenizer", "use_exllama", "disable_exllama",
    "exllama_config", "max_input_length", "cache_block_outputs", "batch_size", "pad_token_id", "use_cuda_fp16",
    "module_name_preceding_first_block", "block_name_to_quantize", "meta", "backend", "mse", "pack_dtype", "format"};
constexpr std::string_view kCompressedTensorsKeys[] = {
    "quant_method", "format", "config_groups", "ignore", "kv_cache_scheme", "sparsity_config", "transform_config",
    "quantization_status", "global_compression_ratio", "version", "provider"};

template <std::size_t N>
void warn_unknown_keys(const Node& n, ModelSpec& m, const std::string_view (&known)[N], std::string_view method) {
  for (const auto& item : n.object().items())
    if (std::find(std::begin(known), std::end(known), item.key()) == std::end(known))
      m.warnings.push_back(key_message(n.source(), n.key(item.key()), show_json(item.value()),
                                       fmt::format("not one of the {} settings mlaplan reads: ignored", method)));
}

// A quantization mlaplan cannot count exactly: warn, and count the weights as bf16.
bool unmodelled(ModelSpec& m, const Node& n, const char* k, std::string_view why) {
  m.warnings.push_back(n.message(k, fmt::format("{}: {}", why, kCountedAsBf16)));
  return false;
}

// The dtype a checkpoint keeps its unquantized tensors in (and, for GPTQ and compressed-tensors,
// its scales): its torch_dtype.
WeightDtype dense_dtype(const std::string& torch_dtype) {
  if (torch_dtype == "float32") return WeightDtype::fp32;
  if (torch_dtype == "float16") return WeightDtype::fp16;
  return WeightDtype::bf16;
}
int dense_bytes(const ModelSpec& m) { return m.quant_dense == WeightDtype::fp32 ? 4 : 2; }

// AWQ's and GPTQ's group_size: input elements per scale, -1 for one group spanning a whole row
// (AutoAWQ and AutoGPTQ: `group_size if group_size != -1 else in_features`); block_cols 0 says that.
std::int64_t group_cols(const Node& n, std::int64_t fallback) {
  const json* v = n.get("group_size");
  if (!v) return fallback;
  const std::int64_t g = config_integer(v, n.source(), n.key("group_size"), -1, std::int64_t{1} << 24);
  if (g == 0) n.bad("group_size", "expected a positive group size, or -1 for one group per row");
  return g == -1 ? 0 : g;
}

// The integer bit width of AWQ and GPTQ: 4 and 8 are modelled.
std::optional<int> integer_bits(const Node& n, ModelSpec& m, std::optional<std::int64_t> bits) {
  if (!bits) n.bad("bits", "required field is missing");
  if (*bits != 4 && *bits != 8) {
    unmodelled(m, n, "bits", "mlaplan models 4- and 8-bit integer weights");
    return std::nullopt;
  }
  return static_cast<int>(*bits);
}

// Modules a checkpoint keeps unquantized (modules_to_not_convert, compressed-tensors' ignore).
// lm_head, embeddings, norms and routers are never quantized here; vision towers are not part of
// the language model; attention (self_attn) is kept dense as a group. Anything else, and any
// single layer's module, mlaplan counts quantized and says so.
void read_unquantized(const Node& n, const char* k, ModelSpec& m) {
  const json* v = n.get(k);
  if (!v) return;
  if (!v->is_array()) n.bad(k, "expected an array of module names");
  std::vector<std::string> single_layer, other;
  for (const json& e : *v) {
    if (!e.is_string()) n.bad(k, fmt::format("entry {} is not a module name", show_json(e)));
    const std::string s = e.get<std::string>();
    const auto at = s.find("layers.");
    if (at != std::string::npos && at + 7 < s.size() && std::isdigit(static_cast<unsigned char>(s[at + 7]))) {
      single_layer.push_back(s);
      continue;
    }
    bool dense = false;
    for (std::string_view part : {"lm_head", "embed", "norm", "router", "shared_expert_gate", "visual", "vision", "multi_modal_projector",
                                  "mm_projector", "audio"})
      dense = dense || contains(s, part);
    if (dense || ends_with(s, "mlp.gate") || ends_with(s, "mlp.gate$")) continue;
    if (contains(s, "self_attn") || contains(s, "attention") || contains(s, ".attn")) {
      m.quant_skips_attention = true;
      continue;
    }
    other.push_back(s);
  }
  if (!single_layer.empty())
    m.warnings.push_back(n.message(k, fmt::format("{} entries name one layer's module (first '{}'): mlaplan quantizes every layer alike and counts them quantized",
                                                  single_layer.size(), single_layer.front())));
  for (const std::string& s : other)
    m.warnings.push_back(n.message(k, fmt::format("keeps '{}' unquantized: mlaplan counts it quantized", s)));
}

// DeepSeek-V3's block fp8: e4m3 values, one fp32 scale per weight_block_size block.
bool read_fp8(const Node& n, ModelSpec& m) {
  m.quant = WeightQuant::fp8_block;
  m.quant_format = fp8_block_format(128, 128);
  if (const json* b = n.get("weight_block_size")) {
    if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() || !(*b)[1].is_number_integer() ||
        (*b)[0].get<std::int64_t>() <= 0 || (*b)[1].get<std::int64_t>() <= 0)
      n.bad("weight_block_size", "expected two positive integers");
    m.quant_format = fp8_block_format((*b)[0].get<std::int64_t>(), (*b)[1].get<std::int64_t>());
  }
  return true;
}

// AWQ (AutoAWQ's GEMM layout, which vLLM's AWQ loader reads). Source: casper-hansen/AutoAWQ
// awq/modules/linear/gemm.py, WQLinear_GEMM.__init__, which registers every buffer whatever
// zero_point says:
//   qweight int32 [in, out/(32/bits)]   -> rows·cols·bits/8 B
//   qzeros  int32 [in/g, out/(32/bits)] -> ⌈cols/g⌉·⌈rows·bits/32⌉·4 B (bits-wide zeros packed along the output)
//   scales  fp16  [in/g, out]           -> ⌈cols/g⌉·rows·2 B (`scales.clone().half()`: fp16 whatever torch_dtype says)
// Defaults are transformers' AwqConfig: bits 4, group_size 128, version gemm.
bool read_awq(const Node& n, ModelSpec& m) {
  warn_unknown_keys(n, m, kAwqKeys, "AWQ");
  const std::optional<int> bits = integer_bits(n, m, n.integer("bits", 1, 64).value_or(4));
  const std::int64_t group = group_cols(n, 128);
  (void)n.boolean("zero_point");  // qzeros are stored either way
  const std::string version = lower(n.string("version").value_or("gemm"));
  const std::string backend = lower(n.string("backend").value_or("autoawq"));
  if (!bits) return false;
  // exllama and ipex load the GEMM checkpoint as it is; GEMV pads group counts to multiples of 8
  // and Marlin repacks.
  if (version != "gemm" && version != "exllama" && version != "ipex")
    m.warnings.push_back(n.message("version", "a layout mlaplan does not model: weights counted in AutoAWQ's GEMM layout"));
  if (backend != "autoawq")
    m.warnings.push_back(n.message("backend", "a layout mlaplan does not model: weights counted in AutoAWQ's GEMM layout"));
  m.quant = *bits == 4 ? WeightQuant::int4 : WeightQuant::int8;
  m.quant_format = {.value_bits = *bits, .scale_bytes = 2, .block_rows = 1, .block_cols = group, .zero_bits = *bits, .zeros_packed = true};
  read_unquantized(n, "modules_to_not_convert", m);
  return true;
}

// GPTQ (AutoGPTQ's layout, also GPTQModel's and vLLM's GPTQ loader). Source: AutoGPTQ/AutoGPTQ
// auto_gptq/nn_modules/qlinear/qlinear_cuda.py, QuantLinear.__init__ and pack():
//   qweight int32 [in/32·bits, out]        -> rows·cols·bits/8 B
//   qzeros  int32 [⌈in/g⌉, out/32·bits]    -> ⌈cols/g⌉·⌈rows·bits/32⌉·4 B, stored even when sym is true
//   scales  [⌈in/g⌉, out] in the model's dtype (pack(): `scales.to(dtype=linear.weight.dtype)`)
//                                          -> ⌈cols/g⌉·rows·2 B for fp16/bf16 checkpoints
//   g_idx   int32 [in]                     -> cols·4 B, stored whatever desc_act says
bool read_gptq(const Node& n, ModelSpec& m) {
  warn_unknown_keys(n, m, kGptqKeys, "GPTQ");
  const std::optional<int> bits = integer_bits(n, m, n.integer("bits", 1, 64));
  const std::int64_t group = group_cols(n, 128);
  const bool desc_act = n.boolean("desc_act").value_or(false);
  (void)n.boolean("sym");  // qzeros are stored either way
  const std::string format = lower(n.string("checkpoint_format").value_or("gptq"));
  const bool lm_head = n.boolean("lm_head").value_or(false);
  if (!bits) return false;
  if (desc_act)
    m.warnings.push_back(n.message("desc_act", "act-order: kernels gather each group's scales through g_idx, a cost mlaplan does not model (the bytes are exact)"));
  if (format != "gptq" && format != "gptq_v2")
    m.warnings.push_back(n.message("checkpoint_format", "a layout mlaplan does not model: weights counted in AutoGPTQ's layout"));
  if (lm_head)
    m.warnings.push_back(n.message("lm_head", fmt::format("a quantized lm_head: mlaplan counts lm_head in {}", to_string(m.quant_dense))));
  for (const char* k : {"modules_in_block_to_quantize", "dynamic"})
    if (n.get(k)) m.warnings.push_back(n.message(k, "per-module choices mlaplan does not model: every linear weight counted quantized"));
  m.quant = *bits == 4 ? WeightQuant::int4 : WeightQuant::int8;
  m.quant_format = {.value_bits = *bits, .scale_bytes = dense_bytes(m), .block_rows = 1, .block_cols = group, .zero_bits = *bits,
                    .zeros_packed = true, .index_bytes_per_col = 4};
  read_unquantized(n, "modules_to_not_convert", m);
  return true;
}

// One config group's weight scheme as stored by a compressed-tensors format, or nothing (with a
// warning) when mlaplan cannot count it. Sources, in neuralmagic/compressed-tensors:
//  - quantization/lifecycle/initialize.py, _initialize_scale_zero_point: weight_scale in the
//    module's dtype (torch_dtype), shape [rows, 1] per channel, [rows, max(cols/g, 1)] per group,
//    one value per tensor; weight_zero_point of the same shape in the quantized type (int8 or
//    fp8: 1 B) only when asymmetric; weight_g_idx int32 [cols] only for actorder "group".
//  - compressors/quantized_compressors/pack_quantized.py: weight_packed int32 [rows, ⌈cols/(32/bits)⌉],
//    weight_shape `torch.tensor(weight.shape)` (two int64, 16 B), and an asymmetric group or
//    channel zero point packed into int32 along the rows [⌈rows/(32/bits)⌉, groups].
//  - compressors/quantized_compressors/naive_quantized.py: naive-, int- and float-quantized store
//    `weight` in quantization_args.pytorch_dtype(): int8 for integers of up to 8 bits (a 4-bit
//    value takes a whole byte), float8_e4m3fn for fp8.
struct Scheme {
  WeightQuant quant = WeightQuant::none;
  WeightFormat format;
};

std::optional<Scheme> read_scheme(const Node& w, const std::string& storage, const Node& top, ModelSpec& m) {
  const std::int64_t bits = config_integer(w.raw("num_bits"), w.source(), w.key("num_bits"), 1, 64);
  const std::optional<std::string> type = w.string("type");
  if (!type) w.bad("type", "required field is missing");
  const bool symmetric = w.boolean("symmetric").value_or(true);
  const std::string strategy = lower(w.string("strategy").value_or("tensor"));
  if (w.boolean("dynamic").value_or(false))
    m.warnings.push_back(w.message("dynamic", "weights quantized at run time: mlaplan counts them stored quantized"));
  Scheme s;
  WeightFormat& f = s.format;
  f.scale_bytes = dense_bytes(m);
  if (strategy == "tensor") {
    f.block_rows = f.block_cols = 0;
  } else if (strategy == "channel") {
    f.block_rows = 1;
    f.block_cols = 0;
  } else if (strategy == "group") {
    f.block_rows = 1;
    f.block_cols = config_integer(w.raw("group_size"), w.source(), w.key("group_size"), 1, std::int64_t{1} << 24);
  } else if (strategy == "block") {
    const json* b = w.get("block_structure");
    if (!b || !b->is_array() || b->size() != 2) w.bad("block_structure", "expected two positive integers");
    f.block_rows = config_integer(&(*b)[0], w.source(), w.key("block_structure"), 1, std::int64_t{1} << 24);
    f.block_cols = config_integer(&(*b)[1], w.source(), w.key("block_structure"), 1, std::int64_t{1} << 24);
  } else {
    unmodelled(m, w, "strategy", "a weight strategy mlaplan does not model");
    return std::nullopt;
  }
  const json* order = w.get("actorder");
  if (order && order->is_string() && lower(order->get<std::string>()) == "group") f.index_bytes_per_col = 4;
  else if (order && !(order->is_boolean() && !order->get<bool>()) && !(order->is_string() && (lower(order->get<std::string>()) == "static" || lower(order->get<std::string>()) == "weight")))
    m.warnings.push_back(w.message("actorder", "an activation ordering mlaplan does not model: no g_idx counted"));

  const std::string t = lower(*type);
  if (t == "int" && (bits == 4 || bits == 8)) {
    s.quant = bits == 4 ? WeightQuant::int4 : WeightQuant::int8;
    if (storage == "pack-quantized") {
      f.value_bits = static_cast<int>(bits);
      f.bytes_per_matrix = 16;
      if (!symmetric) {
        const bool packed = strategy == "group" || strategy == "channel";
        f.zero_bits = packed ? static_cast<int>(bits) : 8;
        f.zeros_packed = packed;
      }
      return s;
    }
    if (storage == "int-quantized" || storage == "naive-quantized") {
      f.value_bits = 8;
      f.zero_bits = symmetric ? 0 : 8;
      return s;
    }
  } else if (t == "float" && bits == 8) {
    s.quant = WeightQuant::fp8_block;
    if (storage == "float-quantized" || storage == "naive-quantized") {
      f.value_bits = 8;
      f.zero_bits = symmetric ? 0 : 8;
      return s;
    }
  } else {
    unmodelled(m, w, "num_bits", fmt::format("{} weights of {} bits: mlaplan models int4, int8 and fp8", *type, bits));
    return std::nullopt;
  }
  unmodelled(m, top, "format", fmt::format("does not store {} {}-bit weights", *type, bits));
  return std::nullopt;
}

bool read_compressed_tensors(const Node& n, ModelSpec& m) {
  warn_unknown_keys(n, m, kCompressedTensorsKeys, "compressed-tensors");
  const std::string format = lower(n.string("format").value_or(""));
  const json* groups = n.get("config_groups");
  if (!groups) n.bad("config_groups", "required field is missing");
  if (!groups->is_object()) n.bad("config_groups", "expected an object of quantization schemes");
  for (const char* k : {"kv_cache_scheme", "sparsity_config", "transform_config"}) {
    const json* v = n.get(k);
    if (!v) continue;
    if (std::string_view(k) == "kv_cache_scheme")
      m.warnings.push_back(n.message(k, "a quantized KV cache: mlaplan counts the cache at --kv-dtype (default bf16); give --kv-dtype fp8 to match"));
    else if (!(v->is_object() && v->value("format", std::string{}) == "dense"))
      m.warnings.push_back(n.message(k, "a transform of the weights mlaplan does not model: weights counted without it"));
  }
  auto known = [](const std::string& f) {
    return f == "pack-quantized" || f == "int-quantized" || f == "float-quantized" || f == "naive-quantized";
  };
  std::optional<Scheme> chosen;
  std::string chosen_name;
  for (const auto& item : groups->items()) {
    const std::string path = n.key("config_groups") + "." + item.key();
    if (!item.value().is_object()) fail_key(n.source(), path, show_json(item.value()), "expected an object with targets and weights");
    const Node g(item.value(), n.source(), path, n.pattern("config_groups.*"));
    if (const json* targets = g.get("targets")) {
      if (!targets->is_array()) g.bad("targets", "expected an array of module names or classes");
      if (std::find(targets->begin(), targets->end(), json("Linear")) == targets->end())
        m.warnings.push_back(g.message("targets", "mlaplan quantizes every linear weight, not only these targets"));
    }
    for (const char* k : {"input_activations", "output_activations"})
      if (g.get(k)) m.warnings.push_back(g.message(k, "activation quantization mlaplan does not model: activations counted at --dtype"));
    const json* weights = g.get("weights");
    if (!weights) continue;
    if (!weights->is_object()) g.bad("weights", "expected an object");
    const std::string storage = lower(g.string("format").value_or(format));
    if (!known(storage)) {
      if (storage != format) return unmodelled(m, g, "format", "a compressed-tensors format mlaplan does not model");
      return unmodelled(m, n, "format", "a compressed-tensors format mlaplan does not model");
    }
    const Node w(*weights, n.source(), path + ".weights", n.pattern("config_groups.*.weights"));
    const std::optional<Scheme> s = read_scheme(w, storage, n, m);
    if (!s) return false;
    if (!chosen) {
      chosen = s;
      chosen_name = item.key();
    } else if (!(s->quant == chosen->quant && s->format == chosen->format)) {
      m.warnings.push_back(g.message("weights", fmt::format("a second weight scheme mlaplan does not model: every linear weight counted as {}", chosen_name)));
    }
  }
  if (!chosen) return unmodelled(m, n, "config_groups", "no group quantizes weights");
  m.quant = chosen->quant;
  m.quant_format = chosen->format;
  read_unquantized(n, "ignore", m);
  return true;
}

}  // namespace

void read_quantization_config(const json& q, const std::string& source, ModelSpec& m) {
  const Node n(q, source, "quantization_config", "quantization_config");
  const json* method_value = n.get("quant_method");
  const std::string method = method_value && method_value->is_string() ? lower(method_value->get<std::string>()) : std::string{};
  m.quant_dense = dense_dtype(m.torch_dtype);
  bool modelled = false;
  if (method == "fp8") {
    modelled = read_fp8(n, m);
  } else if (method == "mxfp4") {
    m.quant = WeightQuant::mxfp4;
    m.quant_format = weight_format(WeightDtype::mxfp4);
    modelled = true;
  } else if (method == "awq") {
    modelled = read_awq(n, m);
  } else if (method == "gptq") {
    modelled = read_gptq(n, m);
  } else if (method == "compressed-tensors") {
    modelled = read_compressed_tensors(n, m);
  } else {
    m.warnings.push_back(key_message(source, "quantization_config.quant_method", method_value ? show_json(*method_value) : show_json(json()),
                                     fmt::format("a quantization mlaplan does not model: {}", kCountedAsBf16)));
  }
  if (!modelled) {
    m.quant = WeightQuant::none;
    m.quant_format = fp8_block_format(128, 128);
    m.quant_dense = WeightDtype::bf16;
    m.quant_skips_attention = false;
    return;
  }
  m.quant_method = method;
  if (method == "fp8" || method == "mxfp4") read_unquantized(n, "modules_to_not_convert", m);
}

}  // namespace mlaplan
