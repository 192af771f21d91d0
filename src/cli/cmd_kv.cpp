// mlaplan kv: KV-cache bytes per token per layer, per token, per rank and for N tokens.
#include <memory>

#include "flags.hpp"
#include "mlaplan/core/study.hpp"

namespace mlaplan::cli {

namespace {

struct KvFlags {
  ModelFlags model;
  LayoutFlags layout;
  std::string kv_dtype = "bf16";
  std::int64_t tokens = 0;
  bool tokens_given = false;
  std::int64_t sequences = 1;
  std::int64_t block_size = 1;
  bool explain = false;
  std::string format = "table";
};

Document kv(const KvFlags& f, Context& ctx) {
  const ModelSpec m = f.model.load(ctx);
  const Parallelism par = f.layout.resolve(m);
  const KvDtype d = resolve_kv_dtype(ctx, f.kv_dtype, m);
  const std::int64_t tokens = f.tokens_given ? positive("--tokens", f.tokens, std::int64_t{1} << 40) : 0;
  warn_context(ctx, m, "--tokens", std::to_string(tokens), static_cast<double>(tokens));
  const std::int64_t seqs = positive("--sequences", f.sequences, std::int64_t{1} << 30);
  const std::int64_t block = positive("--block-size", f.block_size, 1 << 20);
  Document doc = kv_document(m, kv_study(m, d, par, tokens, seqs, block));
  if (f.explain) add_explain_table(doc, explain_kv(m, d, par, tokens, seqs, block));
  return doc;
}

}  // namespace

void register_kv_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<KvFlags>();
  CLI::App* c = app.add_subcommand("kv", "KV-cache bytes per token, per layer, per rank and for N tokens");
  add_model_flags(c, f->model);
  add_layout_flags(c, f->layout, false);
  c->add_option("--kv-dtype", f->kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  c->add_option("--tokens,-n", f->tokens, "tokens per sequence (sliding layers keep at most their window)");
  c->add_option("--sequences", f->sequences, "sequences of --tokens each")->capture_default_str();
  c->add_option("--block-size", f->block_size, "page size in tokens: vLLM 16, FlashMLA 64 (1 = unpaged)")->capture_default_str();
  c->add_flag("--explain", f->explain, "each number with its formula and the values substituted");
  add_format_flag(c, f->format);
  c->callback([f, c, &ctx] {
    f->tokens_given = c->get_option("--tokens")->count() > 0;
    emit(ctx, kv(*f, ctx), f->format);
  });
}

}  // namespace mlaplan::cli
