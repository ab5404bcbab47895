// The read side of the checkpoint engine: listing the steps of every tier, and restoring a
// rank's shard from the fastest tier whose copy verifies.
#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "common/log.h"
#include "endure/checkpoint.h"
#include "train/ckpt/checkpointer_impl.h"
#include "train/ckpt/format.h"
#include "train/ckpt/s3_store.h"
#include "train/ckpt/shard_io.h"
#include "train/ckpt/tiers.h"

namespace endure::ckpt {

namespace {

using Copies = std::map<int64_t, std::vector<Copy>, std::greater<>>;

// The S3 tier's committed steps (or `only_step`) as the slowest copies: a step without its
// manifest there does not exist. An unreachable store costs that tier, not the others.
void add_s3_copies(Copies& copies, const S3Store* store, int64_t only_step = -1) {
  if (!store) return;
  auto steps = store->steps();
  if (!steps) {
    log::warn("checkpoint: s3 tier not read: {}", steps.error().message);
    return;
  }
  for (const auto& [s, committed] : *steps) {
    if (committed && (only_step < 0 || s == only_step)) {
      copies[s].push_back({"s3", store->step_path(s)});
    }
  }
}

// The cluster memory tier's committed steps (or `only_step`), after this node's own memory
// tier and before the disk tiers. Stores that do not answer are passed over.
void add_cluster_copies(Copies& copies, ClusterTier* cluster, int64_t only_step = -1) {
  if (!cluster) return;
  for (int64_t s : cluster->committed_steps()) {
    if (only_step >= 0 && s != only_step) continue;
    auto& list = copies[s];
    auto after_memory = std::find_if(list.begin(), list.end(), [](const Copy& c) { return c.tier != "memory"; });
    list.insert(after_memory, {"cluster", "cluster"});
  }
}

// A step as the cluster memory tier's manifest describes it.
CheckpointInfo inspect_cluster(ClusterTier& cluster, int64_t step, json* manifest) {
  CheckpointInfo info;
  info.step = step;
  info.path = "cluster";
  auto text = cluster.manifest(step);
  if (!text) {
    info.reason = text.error().message;
    return info;
  }
  info.committed = true;
  auto m = step_manifest(*text, step, fmt::format("the cluster memory tier's manifest of step {}", step), info);
  if (!m) {
    info.reason = m.error().message;
    return info;
  }
  for (const auto& sh : (*m)["shards"]) info.bytes += sh.value("size", uint64_t{0});
  info.valid = true;
  if (manifest) *manifest = std::move(*m);
  return info;
}

CheckpointInfo inspect_copy(const Copy& copy, int64_t step, const S3Store* store, ClusterTier* cluster,
                            json* manifest = nullptr) {
  if (copy.tier == "cluster") return inspect_cluster(*cluster, step, manifest);
  return copy.tier == "s3" ? store->inspect(step, manifest) : inspect(copy.dir, step, manifest);
}

}  // namespace

std::vector<CheckpointInfo> Checkpointer::list() const {
  std::vector<int64_t> uncommitted;
  auto all = copies_of(options_, &uncommitted);
  add_cluster_copies(all, impl_->cluster.get());
  add_s3_copies(all, impl_->s3_store.get());
  std::set<int64_t, std::greater<>> steps(uncommitted.begin(), uncommitted.end());
  for (const auto& [s, _] : all) steps.insert(s);
  std::vector<CheckpointInfo> out;
  for (int64_t s : steps) {
    auto it = all.find(s);
    if (it == all.end()) {
      out.push_back(inspect(step_dir(options_.dir, s), s));
      continue;
    }
    CheckpointInfo best;
    for (const Copy& copy : it->second) {
      auto info = inspect_copy(copy, s, impl_->s3_store.get(), impl_->cluster.get());
      if (info.valid && !best.valid) best = info;
      if (!best.valid && best.reason.empty()) best = info;
      if (info.valid) {
        best.tiers.push_back(copy.tier);
        best.tier_paths.push_back(copy.dir);
      }
    }
    out.push_back(std::move(best));
  }
  return out;
}

std::optional<CheckpointInfo> Checkpointer::latest() const {
  for (auto& info : list()) {
    if (info.valid) return info;
  }
  return std::nullopt;
}

namespace {

// Whether a shard's description is whole and its buffers lie back to back from the header
// to the shard's end: checked before any memory is allocated or written for them.
Status check_layout(const std::filesystem::path& dir, const json& shard) {
  auto path = dir / shard.value("file", "");
  if (!shard.contains("chunks") || !shard["chunks"].is_array() || !shard.contains("buffers") ||
      !shard["buffers"].is_array()) {
    return make_error("CorruptCheckpoint", path.string() + ": shard description incomplete");
  }
  const uint64_t total = shard.value("size", uint64_t{0});
  uint64_t next = kShardHeaderBytes;
  for (const auto& b : shard["buffers"]) {
    const uint64_t n = b.value("size", uint64_t{0});
    if (next > total || b.value("offset", uint64_t{0}) != next || n > total - next) {
      return make_error("CorruptCheckpoint", path.string() + ": buffers do not lie within the shard");
    }
    next += n;
  }
  if (next != total) return make_error("CorruptCheckpoint", path.string() + ": sizes disagree");
  return {};
}

// Where a shard's bytes go: `header`, then each of the shard's buffers into the caller's
// buffer of that name, which must be of its size. REQUIRES: check_layout(shard).
Result<std::vector<Segment>> shard_segments(const json& shard, const std::vector<MutableBuffer>& buffers,
                                            uint8_t* header) {
  std::vector<Segment> segments = {{header, kShardHeaderBytes}};
  for (const auto& b : shard["buffers"]) {
    std::string name = b.value("name", "");
    size_t n = b.value("size", size_t{0});
    auto it = std::find_if(buffers.begin(), buffers.end(), [&](auto& m) { return m.name == name; });
    if (it == buffers.end() || it->size != n) {
      return make_error("ValidationException",
                        "buffers: \"" + name + "\" of " + std::to_string(n) + " bytes must be given with that size");
    }
    segments.push_back({static_cast<uint8_t*>(it->data), n});
  }
  return segments;
}

// Reads a shard of `step` straight into the caller's buffers, every chunk verified on the
// way, from a folder or (`store` given) the S3 tier. REQUIRES: check_layout(dir, shard).
Status read_shard(const std::filesystem::path& dir, int64_t step, const json& shard,
                  const std::vector<MutableBuffer>& buffers, const S3Store* store = nullptr) {
  auto path = dir / shard.value("file", "");
  uint8_t header[kShardHeaderBytes];
  auto segments = shard_segments(shard, buffers, header);
  if (!segments) return segments.error();
  Status s = store ? store->read_verified(step, shard, *segments)
                   : read_verified(path, shard.value("size", 0ULL), shard.value("chunk_bytes", size_t{0}),
                                   shard["chunks"], *segments);
  if (s && std::memcmp(header, kShardMagic, 8) != 0) {
    s = make_error("CorruptCheckpoint", path.string() + ": not a shard (magic)");
  }
  return s;
}

// Reads rank's shard of `step` from the cluster memory tier's nearest copy that verifies
// (every chunk against the manifest's checksums) into the caller's buffers. The copy it
// came from, for the log and the report. REQUIRES: check_layout(shard).
Result<Candidate> read_cluster_shard(ClusterTier& cluster, int64_t step, int rank, const json& shard,
                                     const std::vector<MutableBuffer>& buffers) {
  const std::string what = fmt::format("the cluster memory tier's rank {} of step {}", rank, step);
  const size_t size = shard.value("size", size_t{0});
  const size_t chunk_bytes = shard.value("chunk_bytes", size_t{0});
  uint8_t header[kShardHeaderBytes];
  auto segments = shard_segments(shard, buffers, header);
  if (!segments) return segments.error();
  if (auto counted = chunk_count(what, size, chunk_bytes, shard["chunks"]); !counted) return counted.error();
  std::vector<uint8_t> bytes(size);
  auto got = cluster.read_shard(step, rank, bytes.data(), size, [&](const void* data, size_t n) -> Status {
    auto sums = chunk_checksums(static_cast<const uint8_t*>(data), n, chunk_bytes);
    for (size_t i = 0; i < sums.size(); ++i)
      if (sums[i] != shard["chunks"][i]) return chunk_fails(what, i, chunk_bytes);
    if (std::memcmp(data, kShardMagic, 8) != 0) return make_error("CorruptCheckpoint", what + ": not a shard (magic)");
    return {};
  });
  if (!got) return got.error();
  for (const auto& m : got->missed)
    log::warn("checkpoint step {}: rank {}'s copy on {} {} passed over: {}", step, rank, name(m.from.source),
              m.from.where, m.error.message);
  SegmentMap(*segments).scatter(0, bytes.data(), size);
  return got->from;
}

// Where each buffer of a step's shard goes (or why it cannot be restored).
using Destinations =
    std::function<Result<std::vector<MutableBuffer>>(int64_t step, const json& shard)>;

// Restores this rank's shard of `step` (the newest that verifies when step < 0) into the
// memory `destinations` names, from the fastest tier whose copy verifies: the one
// read-and-verify path of load() and load_into().
Result<CheckpointInfo> restore(const Options& o, const S3Store* store, ClusterTier* cluster, int64_t step,
                               const Destinations& destinations) {
  Error last = make_error("NotFound", step < 0 ? o.dir.string() + ": no complete, valid checkpoint"
                                               : fmt::format("{}: step {} is not committed in any tier",
                                                             o.dir.string(), step));
  auto all = copies_of(o, nullptr, step);
  add_cluster_copies(all, cluster, step);
  add_s3_copies(all, store, step);
  for (const auto& [s, copies] : all) {
    for (const Copy& copy : copies) {
      json manifest;
      auto info = inspect_copy(copy, s, store, cluster, &manifest);
      if (!info.committed) continue;  // a save that never finished, or no such step
      Status st;
      if (!info.valid) st = make_error("CorruptCheckpoint", info.path.string() + ": " + info.reason);
      const json* shard = st ? shard_of(manifest, o.rank) : nullptr;
      if (st && !shard) {
        st = make_error("WorldMismatch", fmt::format("{}: no shard for rank {} (saved by a world of {})",
                                                     info.path.string(), o.rank, info.world));
      }
      if (st) st = check_layout(copy.dir, *shard);
      std::string tier = copy.tier;
      if (st) {
        auto buffers = destinations(s, *shard);
        if (!buffers) {
          st = buffers.error();
        } else if (copy.tier == "cluster") {
          auto from = read_cluster_shard(*cluster, s, o.rank, *shard, *buffers);
          if (from) tier = fmt::format("cluster {} {}", name(from->source), from->where);
          else st = from.error();
        } else {
          st = read_shard(copy.dir, s, *shard, *buffers, copy.tier == "s3" ? store : nullptr);
        }
      }
      if (st) {
        info.tiers = {tier};
        info.tier_paths = {copy.dir};
        info.bytes_read = shard->value("size", uint64_t{0});
        return info;
      }
      if (st.error().code == "ValidationException") return st.error();
      log::warn("checkpoint step {} ({} tier) skipped: {}", s, copy.tier, st.error().message);
      last = st.error();
    }
  }
  return last;
}

// Memory for every buffer a shard holds, in `storage`, by name. REQUIRES: check_layout(),
// so that no more is allocated than the shard holds.
std::vector<MutableBuffer> allocate(const json& shard, std::map<std::string, std::vector<uint8_t>>& storage) {
  std::vector<MutableBuffer> out;
  for (const auto& b : shard["buffers"]) {
    auto& v = storage[b.value("name", "")];
    v.assign(b.value("size", size_t{0}), 0);
    out.push_back({b.value("name", ""), v.data(), v.size()});
  }
  return out;
}

}  // namespace

Result<Loaded> Checkpointer::load(int64_t step) const { return load_rank(step, options_.rank); }

Result<Loaded> Checkpointer::load_rank(int64_t step, int rank) const {
  Options o = options_;
  o.rank = rank;
  Loaded out;
  auto info = restore(o, impl_->s3_store.get(), impl_->cluster.get(), step,
                      [&](int64_t, const json& shard) -> Result<std::vector<MutableBuffer>> {
                        out.buffers.clear();
                        return allocate(shard, out.buffers);
                      });
  if (!info) return info.error();
  out.step = info->step;
  out.world = info->world;
  out.user = info->user;
  return out;
}

Result<CheckpointInfo> Checkpointer::load_into(int64_t step, const std::vector<MutableBuffer>& buffers) const {
  return restore(
      options_, impl_->s3_store.get(), impl_->cluster.get(), step,
      [&](int64_t, const json&) -> Result<std::vector<MutableBuffer>> { return buffers; });
}

Result<CheckpointInfo> Checkpointer::load_into(int64_t step, const TargetsFor& targets) const {
  return restore(options_, impl_->s3_store.get(), impl_->cluster.get(), step,
                 [&](int64_t s, const json& shard) -> Result<std::vector<MutableBuffer>> {
                   return targets(s, shard.value("user", json::object()));
                 });
}

Status verify_checkpoint(const std::filesystem::path& dir) {
  const int64_t step = parse_step_dir(dir.filename().string());
  std::shared_ptr<S3Store> store;
  if (is_s3(dir)) {
    auto opened = S3Store::open(dir.parent_path().string(), "DIR");
    if (!opened) return opened.error();
    store = *opened;
  }
  json manifest;
  auto info = store ? store->inspect(step, &manifest) : inspect(dir, step, &manifest);
  if (!info.valid) return make_error("CorruptCheckpoint", dir.string() + ": " + info.reason);
  for (const auto& shard : manifest["shards"]) {
    if (auto s = check_layout(dir, shard); !s) return s;
    std::map<std::string, std::vector<uint8_t>> storage;
    if (auto s = read_shard(dir, step, shard, allocate(shard, storage), store.get()); !s) return s;
  }
  return {};
}

}  // namespace endure::ckpt
