#include "train/ckpt/format.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>

#include <fmt/format.h>

namespace endure::ckpt {

std::filesystem::path step_dir(const std::filesystem::path& dir, int64_t step) {
  return dir / fmt::format("step-{:012d}", step);
}

std::string shard_name(int rank) { return fmt::format("rank-{:05d}.shard", rank); }
std::string descriptor_name(int rank) { return fmt::format("rank-{:05d}.json", rank); }

int64_t parse_step_dir(const std::string& name) {
  const std::string prefix = "step-";
  if (name.rfind(prefix, 0) != 0 || name.size() != prefix.size() + 12) return -1;
  int64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string shard_header(int rank) {
  std::string h(kShardHeaderBytes, '\0');
  std::memcpy(h.data(), kShardMagic, 8);
  uint32_t v = kFormatVersion, r = static_cast<uint32_t>(rank);
  std::memcpy(h.data() + 8, &v, 4);
  std::memcpy(h.data() + 12, &r, 4);
  return h;
}

std::string checksum_hex(const void* data, size_t size) {
  return fmt::format("{:016x}", XXH3_64bits(data, size));
}

std::vector<std::string> chunk_checksums(const uint8_t* data, size_t size, size_t chunk_bytes) {
  std::vector<std::string> out;
  for (size_t off = 0; off < size || (size == 0 && out.empty()); off += chunk_bytes) {
    out.push_back(checksum_hex(data + off, std::min(chunk_bytes, size - off)));
    if (size == 0) break;
  }
  return out;
}

json seal(json manifest) {
  manifest.erase("checksum");
  std::string body = manifest.dump();
  manifest["checksum"] = checksum_hex(body.data(), body.size());
  return manifest;
}

Result<json> unseal(const std::string& text, const std::string& what) {
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("checksum") || !j["checksum"].is_string()) {
    return make_error("CorruptCheckpoint", what + ": not a sealed JSON object");
  }
  std::string sum = j["checksum"];
  j.erase("checksum");
  std::string body = j.dump();
  if (checksum_hex(body.data(), body.size()) != sum) {
    return make_error("CorruptCheckpoint", what + ": checksum mismatch");
  }
  if (j.value("magic", "") != "endure-ckpt" || j.value("version", 0) != static_cast<int>(kFormatVersion)) {
    return make_error("CorruptCheckpoint", what + ": unknown magic or version");
  }
  return j;
}

}  // namespace endure::ckpt
