#include "train/ckpt/format.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>

#include <cstring>

#include <fmt/format.h>

#include "common/fs.h"

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

std::string digest_hex(uint64_t digest) { return fmt::format("{:016x}", digest); }

std::string checksum_hex(const void* data, size_t size) {
  return digest_hex(XXH3_64bits(data, size));
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

namespace {

using Check = bool (*)(const json&);
bool is_string(const json& v) { return v.is_string(); }
bool is_integer(const json& v) { return v.is_number_integer(); }
bool is_count(const json& v) { return v.is_number_unsigned(); }  // JSON's non-negative integers
bool is_array(const json& v) { return v.is_array(); }
bool is_strings(const json& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
}

// The first of `fields` that o holds with another type, named; empty when none.
std::string wrong_field(const json& o, std::initializer_list<std::pair<const char*, Check>> fields) {
  for (const auto& [key, ok] : fields) {
    if (auto it = o.find(key); it != o.end() && !ok(*it)) return std::string("\"") + key + "\" has the wrong type";
  }
  return "";
}

// A shard's description (a descriptor, or an entry of a manifest's "shards").
std::string wrong_shard_field(const json& s) {
  if (!s.is_object()) return "a shard's description is not an object";
  auto e = wrong_field(s, {{"rank", is_integer}, {"file", is_string}, {"size", is_count},
                           {"chunk_bytes", is_count}, {"chunks", is_strings}, {"buffers", is_array}});
  if (e.empty() && s.contains("file") && !fs::is_plain_file_name(s["file"].get<std::string>())) {
    e = "\"file\" must name a file in the step's folder (no '/', not . or ..)";
  }
  if (!e.empty() || !s.contains("buffers")) return e;
  for (const auto& b : s["buffers"]) {
    if (!b.is_object()) return "a buffer's description is not an object";
    e = wrong_field(b, {{"name", is_string}, {"offset", is_count}, {"size", is_count}});
    if (!e.empty()) return e;
  }
  return "";
}

// Every field a manifest or descriptor may hold, of the type its readers take it as: a file
// that seals but holds another type (another tool's, a crafted one) is refused here rather
// than thrown on wherever the field is read.
std::string wrong_type(const json& j) {
  auto e = wrong_field(j, {{"magic", is_string}, {"version", is_integer}, {"step", is_integer},
                           {"world", is_integer}, {"of", is_string}, {"shards", is_array}});
  if (e.empty()) e = wrong_shard_field(j);
  for (size_t i = 0; e.empty() && j.contains("shards") && i < j["shards"].size(); ++i) {
    e = wrong_shard_field(j["shards"][i]);
  }
  return e;
}

}  // namespace

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
  if (auto e = wrong_type(j); !e.empty()) return make_error("CorruptCheckpoint", what + ": " + e);
  if (j.value("magic", "") != "endure-ckpt" || j.value("version", 0) != static_cast<int>(kFormatVersion)) {
    return make_error("CorruptCheckpoint", what + ": unknown magic or version");
  }
  return j;
}

}  // namespace endure::ckpt
