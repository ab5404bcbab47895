// endure-data: the sample generator, tokenizer training and data preparation for the
// Llama trainer (see docs/data.md). Exit status: 0 ok, 1 failed, 2 bad input (one line).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "common/command_line.h"
#include "common/fs.h"
#include "endure/data.h"

namespace data = endure::data;

namespace {

int fail(const endure::Error& e) {
  std::fprintf(stderr, "endure-data: %s\n", e.message.c_str());
  return e.code == "ValidationException" ? 2 : 1;
}

std::string human(double n) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (n >= 1000 && u < 4) n /= 1000, ++u;
  return u == 0 ? fmt::format("{:.0f}", n) : fmt::format("{:.2f}{}", n, units[u]);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

endure::Result<std::vector<std::filesystem::path>> inputs_of(const std::vector<std::string>& in) {
  std::vector<std::filesystem::path> paths(in.begin(), in.end());
  return data::expand_inputs(paths);
}

int run_sample(const data::SampleOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto s = data::write_sample(o);
  if (!s.ok()) return fail(s.error());
  std::printf("wrote %s: %llu documents, %sB of JSONL (of %sB available) in %.1f s\n",
              o.out.c_str(), static_cast<unsigned long long>(s->documents),
              human(static_cast<double>(s->bytes)).c_str(),
              human(static_cast<double>(s->available)).c_str(), seconds_since(t0));
  return 0;
}

int run_tokenizer(const std::vector<std::string>& in, const data::TokenizerOptions& o,
                  std::string prefix) {
  auto inputs = inputs_of(in);
  if (!inputs.ok()) return fail(inputs.error());
  if (prefix.size() > 6 && prefix.ends_with(".model")) prefix.resize(prefix.size() - 6);
  auto t0 = std::chrono::steady_clock::now();
  auto model = data::train_tokenizer(*inputs, o);
  if (!model.ok()) return fail(model.error());
  auto tok = data::Tokenizer::from_serialized(*model);
  if (!tok.ok()) return fail(tok.error());
  // The .vocab listing as spm_train writes it: piece TAB score, one a line.
  std::string vocab;
  for (int i = 0; i < (*tok)->vocab_size(); ++i) {
    vocab += fmt::format("{}\t{}\n", (*tok)->id_to_piece(i), (*tok)->score(i));
  }
  if (auto s = endure::fs::atomic_write_file(prefix + ".model", *model); !s.ok())
    return fail(s.error());
  if (auto s = endure::fs::atomic_write_file(prefix + ".vocab", vocab); !s.ok())
    return fail(s.error());
  std::printf("wrote %s.model and %s.vocab: %d pieces in %.1f s\n", prefix.c_str(), prefix.c_str(),
              (*tok)->vocab_size(), seconds_since(t0));
  return 0;
}

int run_prepare(const std::vector<std::string>& in, data::PrepareOptions o) {
  auto inputs = inputs_of(in);
  if (!inputs.ok()) return fail(inputs.error());
  o.inputs = *inputs;
  auto s = data::prepare(o);
  if (!s.ok()) return fail(s.error());
  std::printf(
      "prepared %s: vocab %d (%d-byte ids), %s documents, %sB of text\n"
      "  train: %s tokens in %llu shard(s) (%s documents)\n"
      "  val:   %s tokens in %llu shard(s) (%s documents)\n"
      "  tokenizer training %.1f s, tokenizing %.1f s\n",
      o.out.c_str(), s->vocab_size, s->token_bytes,
      human(static_cast<double>(s->documents)).c_str(),
      human(static_cast<double>(s->text_bytes)).c_str(),
      human(static_cast<double>(s->train.tokens)).c_str(),
      static_cast<unsigned long long>(s->train.shards),
      human(static_cast<double>(s->train.documents)).c_str(),
      human(static_cast<double>(s->val.tokens)).c_str(),
      static_cast<unsigned long long>(s->val.shards),
      human(static_cast<double>(s->val.documents)).c_str(), s->tokenizer_seconds,
      s->tokenize_seconds);
  return 0;
}

// Verifies every shard of both splits and shows the start of the train split decoded.
int run_inspect(const std::string& dir, int show) {
  auto tok = data::Tokenizer::load(std::filesystem::path(dir) / "tokenizer.model");
  if (!tok.ok()) return fail(tok.error());
  for (const char* split : {"train", "val"}) {
    auto loader = data::TokenLoader::open(dir, split, 1, 1, 0);
    if (!loader.ok()) {
      std::printf("%s: %s\n", split, loader.error().message.c_str());
      continue;
    }
    std::printf("%s: %llu tokens, checksums verified\n", split,
                static_cast<unsigned long long>((*loader)->tokens()));
  }
  if (show > 0) {
    auto loader = data::TokenLoader::open(dir, "train", 1, show, 0);
    if (!loader.ok()) return fail(loader.error());
    // The first window a loader with seed 0 hands out.
    std::vector<int32_t> in(show), tgt(show);
    (*loader)->next(in.data(), tgt.data());
    std::printf("a window of %d tokens:\n%s\n", show,
                (*tok)->decode(std::vector<int>(in.begin(), in.end())).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"endure-data: RedPajama JSONL -> SentencePiece BPE tokenizer -> token shards"};
  app.name("endure-data");
  app.require_subcommand(1);

  data::SampleOptions sample;
  std::string sample_out;
  auto* s =
      app.add_subcommand("sample", "write a RedPajama-format sample from text on this machine");
  s->add_option("--out", sample_out, "output file, *.jsonl or *.jsonl.zst")->required();
  s->add_option("--bytes", sample.bytes,
                "about this many bytes of JSONL, uncompressed (k/M suffixes)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  s->add_option("--seed", sample.seed, "seed that picks the documents and their order")
      ->capture_default_str();

  std::vector<std::string> tok_inputs;
  data::TokenizerOptions tok;
  std::string tok_out;
  auto* t = app.add_subcommand("tokenizer", "train a SentencePiece BPE tokenizer");
  t->add_option("--input", tok_inputs,
                "JSONL files (plain or zstd) or folders of them, one or more")
      ->required();
  t->add_option(
       "--vocab-size", tok.vocab_size,
       fmt::format("pieces in the vocabulary, {} to {}", data::kMinVocabSize, data::kMaxVocabSize))
      ->required();
  t->add_option("--out", tok_out, "output prefix: writes PREFIX.model and PREFIX.vocab")
      ->required();
  t->add_option("--seed", tok.seed, "seed of SentencePiece's sampling of the sentences")
      ->capture_default_str();
  t->add_option("--max-sentences", tok.max_sentences, "lines sampled for training at most")
      ->capture_default_str();
  t->add_option("--threads", tok.num_threads, "threads that train the tokenizer")
      ->capture_default_str();

  std::vector<std::string> prep_inputs;
  data::PrepareOptions prep;
  std::string prep_out, prep_tok;
  auto* p = app.add_subcommand("prepare", "tokenize JSONL into token shards with an index");
  p->add_option("--input", prep_inputs, "JSONL files (plain or zstd) or folders of them")
      ->required();
  auto* tok_opt = p->add_option("--tokenizer", prep_tok,
                                "a SentencePiece model file to tokenize with (or --vocab-size)");
  auto* vocab_opt = p->add_option("--vocab-size", prep.tokenizer_options.vocab_size,
                                  "train a tokenizer of this many pieces first (or --tokenizer)");
  tok_opt->excludes(vocab_opt);
  p->add_option("--out", prep_out, "output folder (must not exist, or be empty)")->required();
  p->add_option("--val-fraction", prep.val_fraction,
                "share of the documents held out for validation, 0 to 0.5")
      ->capture_default_str();
  p->add_option("--seed", prep.seed, "seed of the split and of the tokenizer's training")
      ->capture_default_str();
  p->add_option("--shard-tokens", prep.shard_tokens, "tokens per shard file at most")
      ->capture_default_str();
  p->add_option("--max-sentences", prep.tokenizer_options.max_sentences,
                "lines sampled for tokenizer training at most")
      ->capture_default_str();
  p->add_option("--threads", prep.threads, "threads for training and tokenizing (0: one per core)")
      ->capture_default_str();

  std::string inspect_dir;
  int show = 0;
  auto* i = app.add_subcommand("inspect", "verify a prepared folder and show some of it");
  i->add_option("dir", inspect_dir, "an `endure-data prepare` output")->required();
  i->add_option("--show", show, "decode and print a window of this many tokens (0: none)")
      ->capture_default_str();

  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;

  if (*s) {
    sample.out = sample_out;
    return run_sample(sample);
  }
  if (*t) return run_tokenizer(tok_inputs, tok, tok_out);
  if (*p) {
    if (tok_opt->count() == 0 && vocab_opt->count() == 0) {
      return fail(
          endure::make_error("ValidationException", "give --tokenizer MODEL or --vocab-size N"));
    }
    prep.out = prep_out;
    if (prep.threads > 0) prep.tokenizer_options.num_threads = prep.threads;
    prep.tokenizer = prep_tok;
    return run_prepare(prep_inputs, prep);
  }
  return run_inspect(inspect_dir, show);
}
