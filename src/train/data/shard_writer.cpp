#include "train/data/shard_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"
#include "train/data/shard_format.h"

namespace endure::data {

ShardWriter::ShardWriter(std::filesystem::path dir, std::string split, int token_bytes,
                         int vocab_size, uint64_t shard_tokens)
    : dir_(std::move(dir)),
      split_(std::move(split)),
      token_bytes_(token_bytes),
      vocab_size_(vocab_size),
      shard_tokens_(shard_tokens),
      hash_(XXH3_createState()) {}

ShardWriter::~ShardWriter() {
  if (file_ != nullptr) std::fclose(file_);
  XXH3_freeState(hash_);
}

Status ShardWriter::open_shard() {
  path_ = dir_ / shard_name(split_, shards_.size());
  file_ = std::fopen(path_.c_str(), "wbx");
  if (file_ == nullptr) return fs::io_error("create", path_);
  // The header's token count is known at the end; a placeholder keeps the offsets.
  std::string header = encode_shard_header({});
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size()) {
    return fs::io_error("write", path_);
  }
  in_shard_ = 0;
  XXH3_64bits_reset(hash_);
  return {};
}

Status ShardWriter::close_shard() {
  ShardHeader h{static_cast<uint32_t>(token_bytes_), in_shard_, static_cast<uint32_t>(vocab_size_)};
  std::string header = encode_shard_header(h);
  if (std::fseek(file_, 0, SEEK_SET) != 0 ||
      std::fwrite(header.data(), 1, header.size(), file_) != header.size() ||
      std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0) {
    return fs::io_error("write", path_);
  }
  std::fclose(file_);
  file_ = nullptr;
  shards_.push_back({{"file", path_.filename().string()},
                     {"tokens", in_shard_},
                     {"bytes", kShardHeaderBytes + in_shard_ * token_bytes_},
                     {"checksum", fmt::format("{:016x}", XXH3_64bits_digest(hash_))}});
  return {};
}

Status ShardWriter::append(const std::vector<int>& ids) {
  size_t i = 0;
  while (i < ids.size()) {
    if (file_ == nullptr) {
      if (auto s = open_shard(); !s.ok()) return s;
    }
    size_t n = std::min<uint64_t>(ids.size() - i, shard_tokens_ - in_shard_);
    bytes_.resize(n * token_bytes_);
    for (size_t k = 0; k < n; ++k) {
      uint32_t id = static_cast<uint32_t>(ids[i + k]);
      if (token_bytes_ == 2) {
        uint16_t v = static_cast<uint16_t>(id);
        std::memcpy(bytes_.data() + 2 * k, &v, 2);
      } else {
        std::memcpy(bytes_.data() + 4 * k, &id, 4);
      }
    }
    if (std::fwrite(bytes_.data(), 1, bytes_.size(), file_) != bytes_.size()) {
      return fs::io_error("write", path_);
    }
    XXH3_64bits_update(hash_, bytes_.data(), bytes_.size());
    in_shard_ += n;
    total_ += n;
    i += n;
    if (in_shard_ == shard_tokens_) {
      if (auto s = close_shard(); !s.ok()) return s;
    }
  }
  return {};
}

Result<json> ShardWriter::finish() {
  if (file_ != nullptr) {
    if (auto s = close_shard(); !s.ok()) return s.error();
  }
  return shards_;
}

}  // namespace endure::data
