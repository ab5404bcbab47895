// Writes one split's token stream as shard files of at most shard_tokens tokens each.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::data {

class ShardWriter {
 public:
  // REQUIRES: token_bytes 2 or 4, every id < vocab_size, shard_tokens > 0.
  ShardWriter(std::filesystem::path dir, std::string split, int token_bytes, int vocab_size,
              uint64_t shard_tokens);
  ~ShardWriter();

  Status append(const std::vector<int>& ids);

  // Closes the last shard, each fsynced; returns the index's list of shards:
  // [{file, tokens, bytes, checksum}] where checksum is XXH3-64 of the tokens (after the
  // header) as 16 hex digits.
  Result<json> finish();

  uint64_t tokens() const { return total_; }

 private:
  Status open_shard();
  Status close_shard();

  std::filesystem::path dir_;
  std::string split_;
  int token_bytes_;
  int vocab_size_;
  uint64_t shard_tokens_;
  std::FILE* file_ = nullptr;
  std::filesystem::path path_;
  uint64_t in_shard_ = 0;
  uint64_t total_ = 0;
  XXH3_state_t* hash_;
  std::vector<char> bytes_;
  json shards_ = json::array();
};

}  // namespace endure::data
