// The loader: windows of seq_len+1 tokens from a split's shards, in a seeded order per epoch.
#include <algorithm>
#include <cstring>
#include <limits>

#include "common/fs.h"
#include "common/mapped_file.h"
#include "endure/data.h"
#include "train/ckpt/format.h"
#include "train/data/mix.h"
#include "train/data/shard_format.h"
#include "train/data/window_order.h"

namespace endure::data {
namespace {

Error corrupt(const std::string& message) { return make_error("CorruptData", message); }

Result<uint64_t> get_u64(const json& j, const char* field, const std::string& what) {
  if (!j.is_object() || !j.contains(field) || !j[field].is_number_unsigned()) {
    return invalid(what + ": field \"" + field + "\" must be a non-negative integer");
  }
  return j[field].get<uint64_t>();
}

// A count the index holds at j[field]: an integer in [lo, hi]. get<>() would convert a
// number of another kind (a fraction, a negative, one beyond the type) without a word.
Result<uint64_t> index_count(const json& j, const char* field, uint64_t lo, uint64_t hi,
                             const std::string& what) {
  const json& v = j.at(field);
  if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi) {
    return corrupt(what + ": \"" + field + "\" must be an integer from " + std::to_string(lo) +
                   " to " + std::to_string(hi));
  }
  return v.get<uint64_t>();
}

}  // namespace

json LoaderPosition::to_json() const {
  return {{"epoch", epoch},
          {"cursor", cursor},
          {"seed", seed},
          {"seq_len", seq_len},
          {"tokens", tokens}};
}

Result<LoaderPosition> LoaderPosition::from_json(const json& j) {
  LoaderPosition p;
  const std::string what = "loader position";
  for (auto [field, out] : {std::pair{"epoch", &p.epoch},
                            {"cursor", &p.cursor},
                            {"seed", &p.seed},
                            {"seq_len", &p.seq_len},
                            {"tokens", &p.tokens}}) {
    auto v = get_u64(j, field, what);
    if (!v.ok()) return v.error();
    *out = *v;
  }
  return p;
}

struct TokenLoader::Impl {
  LoaderOptions options;
  int vocab_size = 0;
  int token_bytes = 0;
  std::vector<std::unique_ptr<fs::MappedFile>> shards;
  std::vector<uint64_t> starts;  // the first token of each shard in the split's stream
  uint64_t tokens = 0;
  uint64_t windows = 0;
  uint64_t epoch = 0, cursor = 0, seed = 0;
  std::vector<int32_t> window;  // seq_len + 1 tokens

  // Copies count tokens from the split's stream, starting at token first, into out.
  void read(uint64_t first, uint64_t count, int32_t* out) const {
    size_t s = std::upper_bound(starts.begin(), starts.end(), first) - starts.begin() - 1;
    while (count > 0) {
      const fs::MappedFile& shard = *shards[s];
      uint64_t in_shard = (shard.size() - kShardHeaderBytes) / token_bytes;
      uint64_t off = first - starts[s];
      uint64_t n = std::min(count, in_shard - off);
      const unsigned char* p = shard.data() + kShardHeaderBytes + off * token_bytes;
      if (token_bytes == 2) {
        for (uint64_t i = 0; i < n; ++i) {
          uint16_t v;
          std::memcpy(&v, p + 2 * i, 2);
          out[i] = v;
        }
      } else {
        for (uint64_t i = 0; i < n; ++i) {
          uint32_t v;
          std::memcpy(&v, p + 4 * i, 4);
          out[i] = static_cast<int32_t>(v);
        }
      }
      out += n;
      first += n;
      count -= n;
      ++s;
    }
  }

  // The window epoch e visits i-th.
  uint64_t window_at(uint64_t e, uint64_t i) const {
    return WindowOrder(windows, mix64(seed, e))(i);
  }
};

TokenLoader::TokenLoader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TokenLoader::~TokenLoader() = default;

Result<std::unique_ptr<TokenLoader>> TokenLoader::open(const std::filesystem::path& dir,
                                                       const std::string& split, int batch,
                                                       int seq_len, uint64_t seed) {
  LoaderOptions o;
  o.dir = dir;
  o.split = split;
  o.batch = batch;
  o.seq_len = seq_len;
  o.seed = seed;
  return open(o);
}

Result<std::unique_ptr<TokenLoader>> TokenLoader::open(const LoaderOptions& o) {
  if (o.split != "train" && o.split != "val") {
    return invalid("split \"" + o.split + "\" must be \"train\" or \"val\"");
  }
  if (o.batch < 1) return invalid("batch " + std::to_string(o.batch) + " must be at least 1");
  if (o.seq_len < 1) {
    return invalid("seq_len " + std::to_string(o.seq_len) + " must be at least 1");
  }
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world) {
    return invalid("rank " + std::to_string(o.rank) + " must be in [0, world " +
                   std::to_string(o.world) + ")");
  }
  std::filesystem::path index_path = o.dir / kIndexName;
  auto text = fs::read_file(index_path);
  if (!text.ok()) {
    if (text.error().code == "NotFound") {
      return make_error("NotFound", index_path.string() +
                                        " does not exist (is it an `endure-data prepare` output?)");
    }
    return text.error();
  }
  auto index = unseal_index(*text, index_path.string());
  if (!index.ok()) return index.error();

  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->seed = o.seed;
  try {
    auto vocab_size = index_count(index->at("tokenizer"), "vocab_size", 1, kMaxVocabSize,
                                  index_path.string() + ": tokenizer");
    if (!vocab_size.ok()) return vocab_size.error();
    auto token_bytes = index_count(*index, "token_bytes", 2, 4, index_path.string());
    if (!token_bytes.ok()) return token_bytes.error();
    impl->vocab_size = static_cast<int>(*vocab_size);
    impl->token_bytes = static_cast<int>(*token_bytes);
    const json& shards = index->at("splits").at(o.split).at("shards");
    for (const auto& entry : shards) {
      std::string file = entry.at("file").get<std::string>();
      if (!fs::is_plain_file_name(file)) {
        return make_error("CorruptData",
                          index_path.string() + ": shard \"" + file +
                              "\": must name a file in the data folder (no '/', not . or ..)");
      }
      auto counted = index_count(entry, "tokens", 0, std::numeric_limits<uint64_t>::max(),
                                 index_path.string() + ": " + file);
      if (!counted.ok()) return counted.error();
      const uint64_t tokens = *counted;
      std::filesystem::path path = o.dir / file;
      auto mapped = fs::MappedFile::open(path);
      if (!mapped.ok()) return mapped.error();
      const fs::MappedFile& m = **mapped;
      auto header = decode_shard_header(m.data(), m.size(), path.string());
      if (!header.ok()) return header.error();
      // Counted in tokens, not bytes: a count near 2^64 would wrap its byte size round to
      // the file's, and the loader would read far past the mapping.
      const uint64_t data_bytes = m.size() - kShardHeaderBytes;
      if (header->tokens != tokens || header->token_bytes != uint32_t(impl->token_bytes) ||
          header->vocab_size != uint32_t(impl->vocab_size) || data_bytes % impl->token_bytes != 0 ||
          data_bytes / impl->token_bytes != tokens) {
        return corrupt(path.string() + ": header or size does not match the index (" +
                       std::to_string(tokens) + " tokens of " + std::to_string(impl->token_bytes) +
                       " bytes)");
      }
      if (o.verify_checksums) {
        std::string sum =
            ckpt::checksum_hex(m.data() + kShardHeaderBytes, m.size() - kShardHeaderBytes);
        if (sum != entry.at("checksum").get<std::string>()) {
          return corrupt(path.string() + ": checksum mismatch (the shard is damaged)");
        }
      }
      if (tokens == 0) continue;
      impl->starts.push_back(impl->tokens);
      impl->tokens += tokens;
      impl->shards.push_back(std::move(*mapped));
    }
  } catch (const json::exception& e) {
    return corrupt(index_path.string() + ": missing or mistyped field (" + e.what() + ")");
  }
  uint64_t need = static_cast<uint64_t>(o.seq_len) + 1;
  if (impl->tokens < need) {
    return invalid("split \"" + o.split + "\" of " + o.dir.string() + " has " +
                   std::to_string(impl->tokens) +
                   " tokens, fewer than one window of seq_len+1 = " + std::to_string(need));
  }
  impl->windows = (impl->tokens - 1) / o.seq_len;
  impl->window.resize(need);
  return std::unique_ptr<TokenLoader>(new TokenLoader(std::move(impl)));
}

void TokenLoader::next(int32_t* inputs, int32_t* targets) {
  Impl& m = *impl_;
  const uint64_t T = m.options.seq_len, B = m.options.batch;
  const uint64_t step = B * m.options.world;
  for (uint64_t b = 0; b < B; ++b) {
    // This rank's b-th window of the step, counted from the start of the current epoch.
    uint64_t at = m.cursor + m.options.rank * B + b;
    uint64_t w = m.window_at(m.epoch + at / m.windows, at % m.windows);
    m.read(w * T, T + 1, m.window.data());
    std::memcpy(inputs + b * T, m.window.data(), T * sizeof(int32_t));
    std::memcpy(targets + b * T, m.window.data() + 1, T * sizeof(int32_t));
  }
  uint64_t at = m.cursor + step;
  m.epoch += at / m.windows;
  m.cursor = at % m.windows;
}

LoaderPosition TokenLoader::position() const {
  return {impl_->epoch, impl_->cursor, impl_->seed, static_cast<uint64_t>(impl_->options.seq_len),
          impl_->tokens};
}

Status TokenLoader::restore(const LoaderPosition& p) {
  const Impl& m = *impl_;
  if (p.seq_len != static_cast<uint64_t>(m.options.seq_len)) {
    return invalid("loader position was saved for seq_len " + std::to_string(p.seq_len) +
                   ", this loader has seq_len " + std::to_string(m.options.seq_len));
  }
  if (p.tokens != m.tokens) {
    return invalid("loader position was saved for a split of " + std::to_string(p.tokens) +
                   " tokens, this one has " + std::to_string(m.tokens) + " (other data)");
  }
  if (p.cursor >= m.windows) {
    return invalid("loader position cursor " + std::to_string(p.cursor) + " is past the epoch's " +
                   std::to_string(m.windows) + " windows");
  }
  impl_->epoch = p.epoch;
  impl_->cursor = p.cursor;
  impl_->seed = p.seed;
  return {};
}

uint64_t TokenLoader::tokens() const { return impl_->tokens; }
uint64_t TokenLoader::windows() const { return impl_->windows; }
int TokenLoader::vocab_size() const { return impl_->vocab_size; }

}  // namespace endure::data
