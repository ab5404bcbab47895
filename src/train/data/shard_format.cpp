#include "train/data/shard_format.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "train/ckpt/format.h"

namespace endure::data {

static_assert(std::endian::native == std::endian::little,
              "shards are little-endian and written from memory as they are");

namespace {

template <class T>
void put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
T get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::string encode_shard_header(const ShardHeader& h) {
  std::string out(kShardMagic, sizeof kShardMagic);
  put<uint32_t>(&out, kShardVersion);
  put<uint32_t>(&out, h.token_bytes);
  put<uint64_t>(&out, h.tokens);
  put<uint32_t>(&out, h.vocab_size);
  put<uint32_t>(&out, 0);
  return out;
}

Result<ShardHeader> decode_shard_header(const void* data, size_t size, const std::string& what) {
  auto p = static_cast<const unsigned char*>(data);
  if (size < kShardHeaderBytes || std::memcmp(p, kShardMagic, sizeof kShardMagic) != 0) {
    return make_error("CorruptData", what + ": not a token shard (no ENDTOKS header)");
  }
  uint32_t version = get<uint32_t>(p + 8);
  if (version != kShardVersion) {
    return make_error("CorruptData", what + ": shard format version " + std::to_string(version) +
                                         ", this build reads version " +
                                         std::to_string(kShardVersion));
  }
  ShardHeader h;
  h.token_bytes = get<uint32_t>(p + 12);
  h.tokens = get<uint64_t>(p + 16);
  h.vocab_size = get<uint32_t>(p + 24);
  if (h.token_bytes != 2 && h.token_bytes != 4) {
    return make_error("CorruptData", what + ": token width " + std::to_string(h.token_bytes) +
                                         " bytes, must be 2 or 4");
  }
  return h;
}

std::string shard_name(const std::string& split, uint64_t n) {
  return fmt::format("{}-{:05d}.bin", split, n);
}

int token_bytes_for(int vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

json seal_index(json index) { return ckpt::seal(std::move(index)); }

Result<json> unseal_index(const std::string& text, const std::string& what) {
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("checksum") || !j["checksum"].is_string()) {
    return make_error("CorruptData", what + ": not a sealed JSON index");
  }
  if (ckpt::seal(j)["checksum"] != j["checksum"]) {
    return make_error("CorruptData", what + ": checksum mismatch (the index was changed or torn)");
  }
  // Compared as JSON: a magic or version of another type is another file, not an error
  // thrown out of here.
  if (j.value("magic", json()) != kIndexMagic || j.value("version", json()) != kIndexVersion) {
    return make_error("CorruptData", what + ": not an endure-data index of version " +
                                         std::to_string(kIndexVersion));
  }
  j.erase("checksum");
  return j;
}

}  // namespace endure::data
