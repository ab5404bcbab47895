// The on-disk format of a prepared data folder (see include/endure/data.h): shard names and
// headers, and the sealed index, with the checks a reader applies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure::data {

inline constexpr char kShardMagic[8] = {'E', 'N', 'D', 'T', 'O', 'K', 'S', '\0'};
inline constexpr uint32_t kShardVersion = 1;
inline constexpr size_t kShardHeaderBytes = 32;
inline constexpr const char* kIndexName = "index.json";
inline constexpr const char* kTokenizerName = "tokenizer.model";
inline constexpr const char* kIndexMagic = "endure-data";
inline constexpr int kIndexVersion = 1;

// The 32-byte header, little-endian: magic[8], version u32, token_bytes u32, tokens u64,
// vocab_size u32, reserved u32 (0).
struct ShardHeader {
  uint32_t token_bytes = 0;  // 2 (uint16 ids) or 4 (uint32 ids)
  uint64_t tokens = 0;
  uint32_t vocab_size = 0;
};

std::string encode_shard_header(const ShardHeader& header);
// Fails with "CorruptData" naming what when the bytes are not a version-1 header.
Result<ShardHeader> decode_shard_header(const void* data, size_t size, const std::string& what);

// "train-00000.bin"
std::string shard_name(const std::string& split, uint64_t n);

// 2 when every id of the vocabulary fits in a uint16, else 4.
int token_bytes_for(int vocab_size);

// The index sealed with a checksum of the rest (the checkpoint manifest's scheme), and
// read back: checksum, magic and version checked.
json seal_index(json index);
Result<json> unseal_index(const std::string& text, const std::string& what);

}  // namespace endure::data
