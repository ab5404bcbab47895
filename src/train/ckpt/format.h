// The on-disk format of a checkpoint (see include/endure/checkpoint.h): names, the shard
// header, chunk checksums and the manifest, with the checks a reader applies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::ckpt {

inline constexpr char kShardMagic[8] = {'E', 'N', 'D', 'C', 'K', 'P', 'T', '\0'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kShardHeaderBytes = 16;
inline constexpr const char* kManifestName = "MANIFEST.json";

std::filesystem::path step_dir(const std::filesystem::path& dir, int64_t step);
std::string shard_name(int rank);
std::string descriptor_name(int rank);
// The step of a folder named step-<digits>, or -1.
int64_t parse_step_dir(const std::string& name);

// The 16-byte shard header: magic, version, rank (little-endian).
std::string shard_header(int rank);

// XXH3-64 of each chunk of data, as 16 hex digits.
std::vector<std::string> chunk_checksums(const uint8_t* data, size_t size, size_t chunk_bytes);
std::string checksum_hex(const void* data, size_t size);
// A digest as checksums are written: 16 hex digits.
std::string digest_hex(uint64_t digest);

// A manifest: {magic, version, step, world, user, shards[{rank, file, size, chunk_bytes,
// chunks[], buffers[{name, offset, size}]}], checksum} where checksum covers the dump of
// everything else. seal() adds the checksum, unseal() checks and strips it.
json seal(json manifest);
Result<json> unseal(const std::string& text, const std::string& what);

}  // namespace endure::ckpt
