// prepare: JSONL inputs -> tokenizer + token shards + index, published as one folder.
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/fs.h"
#include "common/ids.h"
#include "endure/data.h"
#include "train/data/shard_format.h"
#include "train/data/shard_writer.h"

namespace endure::data {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A document goes to val when a hash of (text, seed) falls under the fraction: independent
// of input order, and copies of one text always land together.
bool in_val(const std::string& text, uint64_t seed, double val_fraction) {
  uint64_t h = XXH3_64bits_withSeed(text.data(), text.size(), seed);
  return static_cast<double>(h >> 11) * 0x1.0p-53 < val_fraction;
}

// Removes the temporary folder unless it was published.
struct TempDir {
  std::filesystem::path path;
  bool keep = false;
  ~TempDir() {
    if (!keep && !path.empty()) (void)fs::remove_tree(path);
  }
};

// Documents read but not yet tokenized: a batch is encoded in parallel, then written in order.
struct Pending {
  std::string text;
  bool val = false;
  std::vector<int> ids;
};
constexpr size_t kBatchBytes = 16u << 20;

void encode_batch(const Tokenizer& tokenizer, std::vector<Pending>* batch, int threads) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < batch->size(); i = next++) {
      (*batch)[i].ids = tokenizer.encode((*batch)[i].text, /*bos=*/true);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(batch->size())); ++t) {
    pool.emplace_back(work);
  }
  work();
  for (auto& t : pool) t.join();
}

Status check_options(const PrepareOptions& o) {
  if (o.inputs.empty()) return invalid("no --input given");
  if (!(o.val_fraction >= 0 && o.val_fraction <= 0.5)) {
    return invalid("--val-fraction " + std::to_string(o.val_fraction) + " must be in [0, 0.5]");
  }
  if (o.shard_tokens == 0) return invalid("--shard-tokens must be positive");
  if (o.out.empty()) return invalid("--out is required");
  std::error_code ec;
  if (std::filesystem::exists(o.out, ec)) {
    if (!std::filesystem::is_directory(o.out, ec) || !std::filesystem::is_empty(o.out, ec)) {
      return invalid("--out " + o.out.string() +
                     " already exists and is not an empty folder (prepare never overwrites)");
    }
  }
  return {};
}

}  // namespace

Result<PrepareSummary> prepare(const PrepareOptions& o) {
  if (auto s = check_options(o); !s.ok()) return s.error();
  PrepareSummary summary;

  // The tokenizer first: its failures (vocabulary, empty corpus, a malformed line) come
  // before anything is written.
  std::unique_ptr<Tokenizer> tokenizer;
  auto t0 = std::chrono::steady_clock::now();
  if (!o.tokenizer.empty()) {
    auto t = Tokenizer::load(o.tokenizer);
    if (!t.ok()) return make_error(t.error().code, "--tokenizer " + t.error().message);
    tokenizer = std::move(*t);
    if (tokenizer->bos_id() < 0) {
      return invalid("--tokenizer " + o.tokenizer.string() +
                     ": the model has no BOS piece (every document starts with one)");
    }
  } else {
    TokenizerOptions topts = o.tokenizer_options;
    topts.seed = o.seed;
    auto model = train_tokenizer(o.inputs, topts);
    if (!model.ok()) return model.error();
    auto t = Tokenizer::from_serialized(*model);
    if (!t.ok()) return t.error();
    tokenizer = std::move(*t);
    summary.tokenizer_seconds = seconds_since(t0);
  }
  summary.vocab_size = tokenizer->vocab_size();
  summary.token_bytes = token_bytes_for(summary.vocab_size);

  std::filesystem::path out = std::filesystem::absolute(o.out).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();
  std::error_code ec;
  if (!std::filesystem::create_directories(out.parent_path(), ec) && ec) {
    return make_error("IOError", "create " + out.parent_path().string() + ": " + ec.message());
  }
  TempDir tmp{out.parent_path() / ("." + out.filename().string() + ".tmp-" + ids::random_hex(8))};
  if (auto s = fs::make_dirs(tmp.path); !s.ok()) return s.error();

  auto t1 = std::chrono::steady_clock::now();
  ShardWriter train(tmp.path, "train", summary.token_bytes, summary.vocab_size, o.shard_tokens);
  ShardWriter val(tmp.path, "val", summary.token_bytes, summary.vocab_size, o.shard_tokens);
  const int threads = o.threads > 0
                          ? o.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Pending> batch;
  size_t batch_bytes = 0;
  auto flush = [&]() -> Status {
    encode_batch(*tokenizer, &batch, threads);
    for (auto& p : batch) {
      if (auto s = (p.val ? val : train).append(p.ids); !s.ok()) return s;
    }
    batch.clear();
    batch_bytes = 0;
    return {};
  };
  json inputs = json::array();
  for (const auto& path : o.inputs) {
    auto reader = JsonlReader::open(path);
    if (!reader.ok()) return reader.error();
    uint64_t documents = 0, skipped = 0;
    Document doc;
    while (true) {
      auto got = (*reader)->next(&doc);
      if (!got.ok()) return got.error();
      if (!*got) break;
      if (doc.text.empty()) {
        ++skipped;
        continue;
      }
      ++documents;
      summary.text_bytes += doc.text.size();
      bool v = in_val(doc.text, o.seed, o.val_fraction);
      (v ? summary.val : summary.train).documents++;
      batch_bytes += doc.text.size();
      batch.push_back({std::move(doc.text), v, {}});
      if (batch_bytes >= kBatchBytes) {
        if (auto s = flush(); !s.ok()) return s.error();
      }
    }
    summary.documents += documents;
    inputs.push_back({{"path", path.string()}, {"documents", documents}, {"empty", skipped}});
  }
  if (auto s = flush(); !s.ok()) return s.error();
  if (summary.documents == 0) {
    return invalid("the corpus is empty: --input holds no document with text");
  }
  if (train.tokens() == 0) {
    return invalid("no document landed in the train split (" + std::to_string(summary.documents) +
                   " documents, --val-fraction " + std::to_string(o.val_fraction) + "): add text");
  }
  auto train_shards = train.finish();
  if (!train_shards.ok()) return train_shards.error();
  auto val_shards = val.finish();
  if (!val_shards.ok()) return val_shards.error();
  summary.train.tokens = train.tokens();
  summary.val.tokens = val.tokens();
  summary.train.shards = train_shards->size();
  summary.val.shards = val_shards->size();
  summary.tokenize_seconds = seconds_since(t1);

  const std::string& model = tokenizer->serialized();
  json index = {
      {"magic", kIndexMagic},
      {"version", kIndexVersion},
      {"tokenizer",
       {{"file", kTokenizerName},
        {"vocab_size", summary.vocab_size},
        {"bos_id", tokenizer->bos_id()},
        {"eos_id", tokenizer->eos_id()},
        {"checksum", fmt::format("{:016x}", XXH3_64bits(model.data(), model.size()))},
        {"trained", o.tokenizer.empty()}}},
      {"token_bytes", summary.token_bytes},
      {"seed", o.seed},
      {"val_fraction", o.val_fraction},
      {"inputs", inputs},
      {"splits",
       {{"train",
         {{"documents", summary.train.documents},
          {"tokens", summary.train.tokens},
          {"shards", *train_shards}}},
        {"val",
         {{"documents", summary.val.documents},
          {"tokens", summary.val.tokens},
          {"shards", *val_shards}}}}},
  };
  if (auto s = fs::atomic_write_file(tmp.path / kTokenizerName, model); !s.ok()) return s.error();
  if (auto s = fs::atomic_write_file(tmp.path / kIndexName, seal_index(index).dump(1) + "\n");
      !s.ok()) {
    return s.error();
  }
  if (auto s = fs::sync_dir(tmp.path); !s.ok()) return s.error();
  // rename(2) replaces an empty folder; check_options refused a non-empty one.
  std::filesystem::rename(tmp.path, out, ec);
  if (ec)
    return make_error("IOError",
                      "rename " + tmp.path.string() + " to " + out.string() + ": " + ec.message());
  tmp.keep = true;
  if (auto s = fs::sync_dir(out.parent_path()); !s.ok()) return s.error();
  return summary;
}

}  // namespace endure::data
