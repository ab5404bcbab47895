#include "train/ckpt/tiers.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/fs.h"
#include "common/log.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {

Result<json> read_sealed(const std::filesystem::path& path) {
  auto text = fs::read_file(path);
  if (!text) return make_error("CorruptCheckpoint", path.string() + ": missing");
  return unseal(*text, path.string());
}

std::filesystem::path slot_dir(const std::filesystem::path& memory_dir, int slot) {
  return memory_dir / fmt::format("slot-{}", slot);
}

// Cheap checks of a committed step: the manifest seals, every shard has its size. The
// manifest read for it is handed back through `manifest` when asked for.
CheckpointInfo inspect(const std::filesystem::path& dir, int64_t step, json* manifest) {
  CheckpointInfo info;
  info.step = step;
  info.path = dir;
  info.committed = std::filesystem::exists(dir / kManifestName);
  if (!info.committed) {
    info.reason = "not committed (no manifest)";
    return info;
  }
  auto m = read_sealed(dir / kManifestName);
  if (!m) {
    info.reason = m.error().message;
    return info;
  }
  info.world = m->value("world", 0);
  info.user = m->value("user", json::object());
  if ((step >= 0 && m->value("step", -1LL) != step) || !m->contains("shards") ||
      !(*m)["shards"].is_array() || static_cast<int>((*m)["shards"].size()) != info.world) {
    info.reason = "manifest does not describe this step's shards";
    return info;
  }
  info.step = m->value("step", -1LL);
  for (const auto& s : (*m)["shards"]) {
    std::error_code ec;
    auto size = std::filesystem::file_size(dir / s.value("file", ""), ec);
    if (ec || size != s.value("size", 0ULL)) {
      info.reason = s.value("file", "?") + ": missing or not the size the manifest says";
      return info;
    }
    info.bytes += size;
  }
  info.valid = true;
  if (manifest) *manifest = std::move(*m);
  return info;
}

Result<json> step_manifest(const std::string& text, int64_t step, const std::string& what,
                           CheckpointInfo& info) {
  auto m = unseal(text, what);
  if (!m) return m.error();
  info.world = m->value("world", 0);
  info.user = m->value("user", json::object());
  if (m->value("step", -1LL) != step || !m->contains("shards") || !(*m)["shards"].is_array() ||
      static_cast<int>((*m)["shards"].size()) != info.world) {
    return make_error("CorruptCheckpoint", "manifest does not describe this step's shards");
  }
  return m;
}

std::vector<int64_t> steps_in(const std::filesystem::path& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (dir.empty()) return steps;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    int64_t s = parse_step_dir(e.path().filename().string());
    if (s >= 0 && e.is_directory()) steps.push_back(s);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

// The shared folder a node-local tier's copies belong to, as their manifests record it: a
// tier folder reused by another job (or another run's folder) is then never restored from.
std::string owner_of(const Options& o) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(o.dir), ec);
  return (ec ? std::filesystem::absolute(o.dir) : p).string();
}

// A node-local tier's manifest in dir when it belongs to `owner`, or nothing.
std::optional<json> own_manifest(const std::string& owner, const std::filesystem::path& dir) {
  auto m = read_sealed(dir / kManifestName);
  if (!m) return std::nullopt;
  if (m->value("of", "") != owner) {
    log::warn("checkpoint: {} belongs to {}, not {}: not used", dir.string(), m->value("of", "?"), owner);
    return std::nullopt;
  }
  return std::move(*m);
}

// The copies of every step (or of `only_step`) in every tier, newest step first, fastest
// tier first. A listing (`uncommitted` given) keeps only committed shared copies and names
// the shared folders without a manifest there; a restore, which stops at the first copy
// that verifies, gets every shared folder unchecked rather than a cold lookup of each.
std::map<int64_t, std::vector<Copy>, std::greater<>> copies_of(const Options& o, std::vector<int64_t>* uncommitted,
                                                               int64_t only_step) {
  std::map<int64_t, std::vector<Copy>, std::greater<>> out;
  auto steps = [&](const std::filesystem::path& dir) {
    return only_step >= 0 ? std::vector<int64_t>{only_step} : steps_in(dir);
  };
  const std::string owner = o.memory_dir.empty() && o.local_dir.empty() ? "" : owner_of(o);
  if (!o.memory_dir.empty()) {
    for (int slot = 0; slot < kSlots; ++slot) {
      auto dir = slot_dir(o.memory_dir, slot);
      if (auto m = own_manifest(owner, dir)) out[m->value("step", -1LL)].push_back({"memory", dir});
    }
  }
  if (!o.local_dir.empty()) {
    for (int64_t s : steps(o.local_dir)) {
      auto dir = step_dir(o.local_dir, s);
      if (auto m = own_manifest(owner, dir); m && m->value("step", -1LL) == s) {
        out[s].push_back({"local", dir});
      }
    }
  }
  for (int64_t s : steps(o.dir)) {
    auto dir = step_dir(o.dir, s);
    if (!uncommitted || std::filesystem::exists(dir / kManifestName)) {
      out[s].push_back({"shared", dir});
    } else {
      uncommitted->push_back(s);
    }
  }
  out.erase(-1);
  if (only_step >= 0) std::erase_if(out, [&](const auto& entry) { return entry.first != only_step; });
  return out;
}

// The shard description of `rank` in a manifest, or null.
const json* shard_of(const json& manifest, int rank) {
  for (const auto& x : manifest["shards"]) {
    if (x.value("rank", -1) == rank) return &x;
  }
  return nullptr;
}

// Rank r's descriptor of `step` in dir as the manifest lists it (without the descriptor's
// own magic, version and step), or nothing while it is not there.
std::optional<json> shard_entry(const std::filesystem::path& dir, int rank, int64_t step) {
  auto d = read_sealed(dir / descriptor_name(rank));
  if (!d) return std::nullopt;
  return entry_of(std::move(*d), step);
}

std::optional<json> entry_of(json descriptor, int64_t step) {
  if (descriptor.value("step", -1LL) != step) return std::nullopt;
  descriptor.erase("magic");
  descriptor.erase("version");
  descriptor.erase("step");
  return descriptor;
}

// Writes the manifest that makes `step` exist in dir. A node-local tier's names the shared
// folder it belongs to (`owner`); the shared folder's own names none.
Status write_manifest(const std::filesystem::path& dir, int64_t step, int world, const json& user,
                      json shards, const std::string& owner) {
  return fs::atomic_write_file(dir / kManifestName,
                               manifest_text(step, world, user, std::move(shards), owner));
}

std::string manifest_text(int64_t step, int world, const json& user, json shards,
                          const std::string& owner) {
  json manifest = {{"magic", "endure-ckpt"}, {"version", kFormatVersion}, {"step", step}, {"world", world}};
  if (!owner.empty()) manifest["of"] = owner;
  manifest["user"] = user;
  manifest["shards"] = std::move(shards);
  return seal(manifest).dump();
}

Status commit_shared(const Options& o, const std::filesystem::path& dir, int64_t step,
                     const json& user) {
  json shards = json::array();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(o.commit_timeout_seconds * 1000));
  for (int r = 0; r < o.world; ++r) {
    std::optional<json> entry;
    while (!(entry = shard_entry(dir, r, step))) {
      if (std::chrono::steady_clock::now() > deadline) {
        return make_error(
            "CommitTimeout",
            fmt::format("rank {} did not make its shard of step {} durable in time", r, step));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    shards.push_back(std::move(*entry));
  }
  return write_manifest(dir, step, o.world, user, std::move(shards));
}

// Commits a node-local tier's step once every rank's descriptor of it is there (all ranks on
// this node). Any rank may complete it; the manifest is the same whoever writes it.
Status commit_if_complete(const std::filesystem::path& dir, int64_t step, int world, const json& user,
                          const std::string& owner) {
  json shards = json::array();
  for (int r = 0; r < world; ++r) {
    auto entry = shard_entry(dir, r, step);
    if (!entry) return {};
    shards.push_back(std::move(*entry));
  }
  return write_manifest(dir, step, world, user, std::move(shards), owner);
}

std::vector<int64_t> steps_to_prune(const std::vector<std::pair<int64_t, bool>>& steps,
                                    int keep_last, int keep_every) {
  std::vector<int64_t> out;
  int64_t newest_committed = -1;
  int kept = 0;
  for (const auto& [s, committed] : steps) {
    bool keep;
    if (!committed) {
      keep = newest_committed < 0 || s > newest_committed;
    } else {
      if (newest_committed < 0) newest_committed = s;
      keep = keep_last == 0 || kept < keep_last || (keep_every > 0 && s % keep_every == 0);
      ++kept;
    }
    if (!keep) out.push_back(s);
  }
  return out;
}

// Removes this rank's files of all but its newest `keep` steps in a node-local tier, with
// each such step's manifest (it no longer holds every shard) and the folder once empty.
void prune_rank(const std::filesystem::path& dir, int rank, int keep) {
  int kept = 0;
  for (int64_t s : steps_in(dir)) {
    auto step = step_dir(dir, s);
    if (!std::filesystem::exists(step / descriptor_name(rank))) continue;
    if (kept++ < keep) continue;
    std::error_code ec;
    std::filesystem::remove(step / kManifestName, ec);
    std::filesystem::remove(step / descriptor_name(rank), ec);
    std::filesystem::remove(step / shard_name(rank), ec);
    std::filesystem::remove(step, ec);  // fails while other ranks' files remain: fine
  }
}

}  // namespace endure::ckpt
