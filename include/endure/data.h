// endure's training data: RedPajama JSONL -> a SentencePiece BPE tokenizer -> token shards,
// and the loader that feeds a trainer from them.
//
// Input is RedPajama format: one document a line, {"text": "...", "meta": {...}}, plain or
// zstd-compressed (known by the zstd magic number or a .zst suffix). prepare() writes a
// folder that holds the whole result:
//
//   DIR/tokenizer.model      the SentencePiece model (trained here, or copied in)
//   DIR/train-00000.bin ...  token shards: a 32-byte header (magic "ENDTOKS\0", version,
//   DIR/val-00000.bin ...    bytes per token, token count, vocab size), then the token ids
//                            little-endian, 2 bytes each when the vocabulary fits, else 4
//   DIR/index.json           the shards of each split with their token counts and XXH3-64
//                            checksums; sealed by a checksum of its own
//
// Every document is tokenized as BOS + pieces (as Llama 2 does), and the documents of a
// split are concatenated. The split is by document: a document goes to "val" when a hash
// of its text and the seed falls under val_fraction, so the split does not depend on the
// order of inputs and duplicate documents never straddle it.
//
// Bad input (a malformed line, an empty corpus, a vocabulary the data cannot fill) fails
// with code "ValidationException" and a message naming the file and line or the flag, and
// leaves nothing behind: outputs are written to a temporary folder or file beside the
// target, fsynced, and renamed into place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::data {

// ---------------------------------------------------------------------------------------
// Reading RedPajama JSONL.

struct Document {
  std::string text;
  json meta;  // as found (RedPajama slices hold objects or strings); null if absent
  std::filesystem::path file;
  uint64_t line = 0;  // 1-based line number in the (decompressed) file
};

class JsonlReader {
 public:
  // Opens path; zstd when the file starts with the zstd magic number, and a file named
  // *.zst must. Fails with "NotFound" or "IOError" or "ValidationException".
  static Result<std::unique_ptr<JsonlReader>> open(const std::filesystem::path& path);
  virtual ~JsonlReader() = default;

  // Reads the next document into *doc: true when one was read, false at the end of the file.
  // Blank lines are skipped. A line that is not a JSON object with a string "text" field,
  // a line longer than 64 MiB, or a truncated zstd stream, fails with "ValidationException"
  // naming file:line.
  virtual Result<bool> next(Document* doc) = 0;
};

// The input files named by --input: files as given, folders searched (recursively, in
// sorted order) for *.jsonl, *.jsonl.zst, *.json.zst. Fails on a name that does not exist
// or a folder with no such file.
Result<std::vector<std::filesystem::path>> expand_inputs(
    const std::vector<std::filesystem::path>& inputs);

// ---------------------------------------------------------------------------------------
// The tokenizer: SentencePiece BPE with Llama 2's settings (byte fallback, split digits,
// identity normalization, unk=0 bos=1 eos=2, no pad).

struct TokenizerOptions {
  int vocab_size = 32000;  // Llama 2's; must be within [kMinVocabSize, kMaxVocabSize]
  uint64_t seed = 0;       // SentencePiece's sampling of sentences
  // At most this many lines of text are sampled for training (bounds memory on big slices:
  // the sample is held twice, here and in SentencePiece).
  uint64_t max_sentences = 2'000'000;
  int num_threads = 2;
};

inline constexpr int kMinVocabSize = 260;  // 256 byte pieces + unk, bos, eos + one more
inline constexpr int kMaxVocabSize = 1 << 20;

// Trains a tokenizer on the documents of the given JSONL files and returns the serialized
// model. Deterministic for (inputs, options). Fails with "ValidationException" naming
// --vocab-size when the data cannot fill the vocabulary (or the vocabulary cannot hold the
// data's characters), and on an empty corpus or malformed input.
// REQUIRES: no other thread is training a tokenizer (SentencePiece's seed is global).
Result<std::string> train_tokenizer(const std::vector<std::filesystem::path>& inputs,
                                    const TokenizerOptions& options);

class Tokenizer {
 public:
  // Loads a SentencePiece model file, or one serialized in memory.
  static Result<std::unique_ptr<Tokenizer>> load(const std::filesystem::path& model);
  static Result<std::unique_ptr<Tokenizer>> from_serialized(const std::string& model);
  ~Tokenizer();

  // The ids of text, with BOS first when bos is true.
  std::vector<int> encode(const std::string& text, bool bos) const;
  std::string decode(const std::vector<int>& ids) const;
  int vocab_size() const;
  int bos_id() const;
  int eos_id() const;
  std::string id_to_piece(int id) const;
  float score(int id) const;
  const std::string& serialized() const { return serialized_; }

 private:
  struct Impl;
  Tokenizer(std::unique_ptr<Impl> impl, std::string serialized);
  std::unique_ptr<Impl> impl_;
  std::string serialized_;
};

// ---------------------------------------------------------------------------------------
// prepare: inputs -> DIR (see the top of this file).

struct PrepareOptions {
  std::vector<std::filesystem::path> inputs;  // after expand_inputs
  std::filesystem::path out;                  // must not exist, or be an empty folder
  std::filesystem::path tokenizer;            // a model to use; empty: train one
  TokenizerOptions tokenizer_options;         // when training
  double val_fraction = 0.05;                 // in [0, 0.5]
  uint64_t seed = 0;                          // the split (and the tokenizer's training)
  uint64_t shard_tokens = 100'000'000;        // tokens per shard file at most
  int threads = 0;                            // tokenizing; 0: one per core
};

struct SplitSummary {
  uint64_t documents = 0;
  uint64_t tokens = 0;
  uint64_t shards = 0;
};

struct PrepareSummary {
  int vocab_size = 0;
  int token_bytes = 0;
  uint64_t documents = 0;
  uint64_t text_bytes = 0;
  SplitSummary train, val;
  double tokenizer_seconds = 0;  // 0 when a tokenizer was given
  double tokenize_seconds = 0;
};

// REQUIRES: options.inputs non-empty. A document with empty text is skipped. Fails with
// "ValidationException" on bad options or input (out is then left as it was).
Result<PrepareSummary> prepare(const PrepareOptions& options);

// ---------------------------------------------------------------------------------------
// The sample generator: a RedPajama-format corpus from text installed on every Debian
// machine this project runs on: the license texts of base-files (/usr/share/common-licenses)
// and the docstrings of the Python standard library (/usr/lib/python3.*, from
// libpython3.*-minimal and libpython3.*-stdlib), prose first; the standard library's source
// files are taken after them when more bytes are asked for (RedPajama's "github" part).

struct SampleOptions {
  std::filesystem::path out;  // *.jsonl, or *.zst for zstd
  uint64_t bytes = 4u << 20;  // about this many bytes of JSONL (uncompressed)
  uint64_t seed = 0;          // which documents and in which order
  // Where to look (tests point these elsewhere); empty: the system's folders.
  std::filesystem::path licenses_dir;
  std::filesystem::path python_dir;
};

struct SampleSummary {
  uint64_t documents = 0;
  uint64_t bytes = 0;      // JSONL bytes, uncompressed
  uint64_t available = 0;  // JSONL bytes the machine's text could give
};

// Deterministic for (options, the files found). Fails with "ValidationException" when
// bytes exceeds what the machine's text gives, "NotFound" when no text is found.
Result<SampleSummary> write_sample(const SampleOptions& options);

// ---------------------------------------------------------------------------------------
// The loader.

// Where a loader is in its stream of windows; saved in the trainer's checkpoint.
struct LoaderPosition {
  uint64_t epoch = 0;
  uint64_t cursor = 0;  // windows of this epoch already handed out (over all ranks)
  uint64_t seed = 0;
  uint64_t seq_len = 0;  // windows are seq_len + 1 tokens; restore() requires the same
  uint64_t tokens = 0;   // the split's token count; restore() requires the same data
  json to_json() const;
  static Result<LoaderPosition> from_json(const json& j);
};

struct LoaderOptions {
  std::filesystem::path dir;  // an `endure-data prepare` output
  std::string split = "train";
  int batch = 1;
  int seq_len = 1;
  uint64_t seed = 0;
  // Data parallel: each of `world` ranks gets its own `batch` windows of each global step.
  int rank = 0;
  int world = 1;
  bool verify_checksums = true;
};

// The token stream of a split is cut into windows of seq_len+1 tokens (window w starts at
// token w*seq_len, so consecutive windows share one token). Each epoch visits every window
// once, in an order that is a bijective permutation keyed by (seed, epoch); one step takes
// the next batch*world windows and rank r gets the r-th batch of them. Shards are mapped
// read-only, not copied.
class TokenLoader {
 public:
  // dir: an `endure-data prepare` output; split: "train" or "val". Verifies the index and
  // the shards' headers and checksums. Fails with "ValidationException" on bad arguments
  // or a split shorter than one window, "CorruptData" when a file does not check out.
  static Result<std::unique_ptr<TokenLoader>> open(const std::filesystem::path& dir,
                                                   const std::string& split, int batch, int seq_len,
                                                   uint64_t seed);
  static Result<std::unique_ptr<TokenLoader>> open(const LoaderOptions& options);
  ~TokenLoader();

  // Fills inputs and targets (each batch*seq_len int32, row-major (B,T); targets are the
  // inputs shifted by one token) with the next batch. Deterministic for (seed, position);
  // wraps to a new epoch with a new order.
  void next(int32_t* inputs, int32_t* targets);

  LoaderPosition position() const;
  // Continues from a saved position (its seed included). Fails with "ValidationException"
  // when it was saved for another seq_len or another split's data.
  Status restore(const LoaderPosition& position);

  uint64_t tokens() const;   // tokens in the split
  uint64_t windows() const;  // windows per epoch
  int vocab_size() const;

 private:
  struct Impl;
  explicit TokenLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace endure::data
