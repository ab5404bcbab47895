// The tokenizer: training a SentencePiece BPE model with Llama 2's settings, and using one.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cinttypes>
#include <regex>
#include <unordered_map>

#include "common/fs.h"
#include "endure/data.h"
#include "train/data/mix.h"

// Exported by libsentencepiece but not in its public headers; the trainer logs every step
// to stderr otherwise.
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}

namespace endure::data {
namespace {

// SentencePiece skips longer lines; Llama 2's setting. Longer lines are cut, not lost.
constexpr size_t kMaxSentenceBytes = 4192;

// The training lines: up to max lines, sampled uniformly (reservoir sampling with our own
// generator, so the sample depends on the seed alone, not on SentencePiece's thread-local one).
class SentenceSample {
 public:
  SentenceSample(uint64_t max, uint64_t seed) : max_(max), rng_(seed) {}

  void add(std::string line) {
    ++seen_;
    if (lines_.size() < max_) {
      lines_.push_back(std::move(line));
      return;
    }
    uint64_t r = rng_.below(seen_);
    if (r < max_) lines_[r] = std::move(line);
  }

  // Splits a document into lines, each cut at a space (or a UTF-8 boundary) to fit.
  void add_document(const std::string& text) {
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      add_line(text, start, end);
      start = end + 1;
    }
  }

  std::vector<std::string>& lines() { return lines_; }
  uint64_t seen() const { return seen_; }

 private:
  void add_line(const std::string& text, size_t start, size_t end) {
    while (end > start && (text[end - 1] == '\r' || text[end - 1] == ' ')) --end;
    while (start < end) {
      size_t cut = end;
      if (cut - start > kMaxSentenceBytes) {
        cut = start + kMaxSentenceBytes;
        size_t space = text.rfind(' ', cut);
        if (space != std::string::npos && space > start + kMaxSentenceBytes / 2) {
          cut = space;
        } else {
          while (cut > start && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        }
      }
      std::string line = text.substr(start, cut - start);
      if (line.find_first_not_of(" \t") != std::string::npos) add(std::move(line));
      start = cut;
    }
  }

  uint64_t max_;
  SplitMix64 rng_;
  uint64_t seen_ = 0;
  std::vector<std::string> lines_;
};

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& lines) : lines_(lines) {}
  bool done() const override { return i_ >= lines_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& lines_;
  size_t i_ = 0;
};

// SentencePiece's vocabulary complaints, said in terms of our flag.
Error vocab_error(const std::string& message, int vocab_size) {
  std::smatch m;
  static const std::regex too_high(
      R"(Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+))");
  static const std::regex too_small(R"(smaller than required_chars\. (\d+) vs (\d+))");
  std::string n = std::to_string(vocab_size);
  if (std::regex_search(message, m, too_high)) {
    return make_error("ValidationException", "--vocab-size " + n +
                                                 " is larger than the data supports: this corpus " +
                                                 "gives at most " + m[2].str() +
                                                 " pieces (lower --vocab-size or add text)");
  }
  if (std::regex_search(message, m, too_small)) {
    return make_error("ValidationException",
                      "--vocab-size " + n + " is too small: this corpus needs at least " +
                          m[2].str() + " pieces (256 byte pieces, unk/bos/eos and its characters)");
  }
  return make_error("TokenizerError", "SentencePiece training failed: " + message);
}

}  // namespace

Result<std::string> train_tokenizer(const std::vector<std::filesystem::path>& inputs,
                                    const TokenizerOptions& options) {
  if (options.vocab_size < kMinVocabSize || options.vocab_size > kMaxVocabSize) {
    return make_error("ValidationException", "--vocab-size " + std::to_string(options.vocab_size) +
                                                 " must be in [" + std::to_string(kMinVocabSize) +
                                                 ", " + std::to_string(kMaxVocabSize) + "]");
  }
  if (options.max_sentences == 0) {
    return make_error("ValidationException", "max_sentences must be positive");
  }
  if (inputs.empty()) return make_error("ValidationException", "no --input given");

  SentenceSample sample(options.max_sentences, mix64(options.seed, 0x746f6b656e697a65));
  for (const auto& path : inputs) {
    auto reader = JsonlReader::open(path);
    if (!reader.ok()) return reader.error();
    Document doc;
    while (true) {
      auto got = (*reader)->next(&doc);
      if (!got.ok()) return got.error();
      if (!*got) break;
      if (!doc.text.empty()) sample.add_document(doc.text);
    }
  }
  if (sample.seen() == 0) {
    std::string names;
    for (const auto& p : inputs) names += (names.empty() ? "" : ", ") + p.string();
    return make_error("ValidationException",
                      "the corpus is empty: --input (" + names + ") holds no document with text");
  }

  std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(options.vocab_size)},
      // Llama 2's tokenizer settings.
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"character_coverage", "0.99995"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"hard_vocab_limit", "true"},
      // The sample above is already the training set: no sampling of SentencePiece's own.
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"num_threads", std::to_string(std::max(1, options.num_threads))},
  };
  sentencepiece::logging::SetMinLogLevel(2);  // errors only; they come back as a status too
  sentencepiece::SetRandomGeneratorSeed(
      static_cast<unsigned int>(mix64(options.seed, 1) & 0x7fffffffu));
  VectorIterator it(sample.lines());
  std::string model;
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &model);
  if (!status.ok()) return vocab_error(status.message(), options.vocab_size);

  auto tokenizer = Tokenizer::from_serialized(model);
  if (!tokenizer.ok()) return tokenizer.error();
  if ((*tokenizer)->vocab_size() != options.vocab_size) {
    return make_error("ValidationException",
                      "--vocab-size " + std::to_string(options.vocab_size) +
                          " is larger than the data supports: training gave " +
                          std::to_string((*tokenizer)->vocab_size()) + " pieces");
  }
  return model;
}

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl, std::string serialized)
    : impl_(std::move(impl)), serialized_(std::move(serialized)) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_serialized(const std::string& model) {
  auto impl = std::make_unique<Impl>();
  auto status = impl->sp.LoadFromSerializedProto(model);
  if (!status.ok()) {
    // SentencePiece's message is the protobuf call that failed; ours says what it means.
    return make_error("ValidationException",
                      "not a SentencePiece model (it does not parse as one)");
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl), model));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::filesystem::path& model) {
  auto bytes = fs::read_file(model);
  if (!bytes.ok()) return bytes.error();
  auto t = from_serialized(*bytes);
  if (!t.ok()) return make_error(t.error().code, model.string() + ": " + t.error().message);
  return t;
}

std::vector<int> Tokenizer::encode(const std::string& text, bool bos) const {
  std::vector<int> ids;
  impl_->sp.Encode(text, &ids);
  if (bos && impl_->sp.bos_id() >= 0) ids.insert(ids.begin(), impl_->sp.bos_id());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string text;
  impl_->sp.Decode(ids, &text);
  return text;
}

int Tokenizer::vocab_size() const { return impl_->sp.GetPieceSize(); }
int Tokenizer::bos_id() const { return impl_->sp.bos_id(); }
int Tokenizer::eos_id() const { return impl_->sp.eos_id(); }
std::string Tokenizer::id_to_piece(int id) const { return impl_->sp.IdToPiece(id); }
float Tokenizer::score(int id) const { return impl_->sp.GetScore(id); }

}  // namespace endure::data
