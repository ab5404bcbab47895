#include "train/ckpt/s3_store.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/fs.h"
#include "s3/parallel.h"
#include "s3/s3_config.h"
#include "s3/s3_error.h"
#include "train/ckpt/format.h"
#include "train/ckpt/tiers.h"

namespace endure::ckpt {

bool is_s3(const std::filesystem::path& path) { return path.string().rfind("s3://", 0) == 0; }

Result<std::shared_ptr<S3Store>> S3Store::open(const std::string& uri, const std::string& field) {
  auto parsed = s3::parse_s3_uri(uri, field);
  if (!parsed) return parsed.error();
  auto config = s3::config_from_environment(s3::current_environment());
  if (!config) return make_error(config.error().code, field + ": " + config.error().message);
  auto client = s3::S3Client::create(*config);
  if (!client) return make_error(client.error().code, field + ": " + client.error().message);
  return std::make_shared<S3Store>(std::move(*client), std::move(*parsed));
}

S3Store::S3Store(std::unique_ptr<s3::S3Client> client, s3::S3Uri uri)
    : client_(std::move(client)), uri_(std::move(uri)) {
  std::string prefix = uri_.key;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  uri_.key = prefix;
  base_ = prefix.empty() ? "" : prefix + "/";
}

std::string S3Store::step_prefix(int64_t step) const {
  return base_ + step_dir("", step).string() + "/";
}

std::string S3Store::key(int64_t step, const std::string& name) const {
  return step_prefix(step) + name;
}

std::filesystem::path S3Store::step_path(int64_t step) const {
  return "s3://" + uri_.bucket + "/" + step_prefix(step).substr(0, step_prefix(step).size() - 1);
}

Result<std::map<int64_t, bool, std::greater<>>> S3Store::steps() const {
  auto objects = client_->list_objects(uri_.bucket, base_ + "step-");
  if (!objects) return objects.error();
  std::map<int64_t, bool, std::greater<>> out;
  for (const auto& o : *objects) {
    std::string rest = o.key.substr(base_.size());
    auto slash = rest.find('/');
    if (slash == std::string::npos) continue;
    int64_t step = parse_step_dir(rest.substr(0, slash));
    if (step < 0) continue;
    out[step] = out[step] || rest.substr(slash + 1) == kManifestName;
  }
  return out;
}

CheckpointInfo S3Store::inspect(int64_t step, json* manifest) const {
  CheckpointInfo info;
  info.step = step;
  info.path = step_path(step);
  auto objects = client_->list_objects(uri_.bucket, step_prefix(step));
  if (!objects) {
    info.reason = objects.error().message;
    return info;
  }
  std::map<std::string, uint64_t> sizes;
  for (const auto& o : *objects) sizes[o.key.substr(step_prefix(step).size())] = o.size;
  info.committed = sizes.count(kManifestName) > 0;
  if (!info.committed) {
    info.reason = "not committed (no manifest)";
    return info;
  }
  auto text = client_->get_object(uri_.bucket, key(step, kManifestName));
  if (!text) {
    info.reason = text.error().message;
    return info;
  }
  auto m = step_manifest(*text, step, info.path.string() + "/" + kManifestName, info);
  if (!m) {
    info.reason = m.error().message;
    return info;
  }
  for (const auto& s : (*m)["shards"]) {
    auto it = sizes.find(s.value("file", ""));
    if (it == sizes.end() || it->second != s.value("size", 0ULL)) {
      info.reason = s.value("file", "?") + ": missing or not the size the manifest says";
      return info;
    }
    info.bytes += it->second;
  }
  info.valid = true;
  if (manifest) *manifest = std::move(*m);
  return info;
}

Status S3Store::read_verified(int64_t step, const json& shard,
                              const std::vector<Segment>& segments) const {
  const std::string k = key(step, shard.value("file", ""));
  const std::string what = "s3://" + uri_.bucket + "/" + k;
  const uint64_t size = shard.value("size", 0ULL);
  const size_t chunk_bytes = shard.value("chunk_bytes", size_t{0});
  const json& sums = shard["chunks"];
  auto counted = chunk_count(what, size, chunk_bytes, sums);
  if (!counted) return counted.error();
  const size_t chunks = *counted;
  const SegmentMap map(segments);
  if (map.size() != size) return make_error("CorruptCheckpoint", what + ": sizes disagree");
  if (size == 0) {
    return sums[0] == checksum_hex("", 0) ? Status() : Status(chunk_fails(what, 0, chunk_bytes));
  }
  return s3::parallel_for(chunks, client_->config().parallelism, [&](size_t i) -> Status {
    const uint64_t offset = static_cast<uint64_t>(i) * chunk_bytes;
    const uint64_t length = std::min<uint64_t>(chunk_bytes, size - offset);
    auto bytes = client_->get_object_range(uri_.bucket, k, offset, length);
    if (!bytes) return make_error("CorruptCheckpoint", bytes.error().message);
    if (bytes->size() != length) {
      return make_error("CorruptCheckpoint", what + ": shorter than the manifest says");
    }
    if (sums[i] != checksum_hex(bytes->data(), bytes->size())) {
      return chunk_fails(what, i, chunk_bytes);
    }
    map.scatter(offset, reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
    return {};
  });
}

Status S3Store::put_shard(int64_t step, int rank, const std::filesystem::path& from) const {
  auto descriptor = fs::read_file(from / descriptor_name(rank));
  if (!descriptor)
    return make_error("IOError", (from / descriptor_name(rank)).string() + ": cannot read");
  // The descriptor says the shard is whole, so it goes up only once the shard object is.
  if (auto s =
          client_->upload_file(uri_.bucket, key(step, shard_name(rank)), from / shard_name(rank));
      !s) {
    return s;
  }
  return client_->put_object(uri_.bucket, key(step, descriptor_name(rank)), *descriptor);
}

Status S3Store::commit(int64_t step, int world, const json& user, double timeout_seconds) const {
  json shards = json::array();
  int polls = 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  for (int r = 0; r < world; ++r) {
    for (;;) {
      auto text = client_->get_object(uri_.bucket, key(step, descriptor_name(r)));
      if (text) {
        auto d = unseal(*text, step_path(step).string() + "/" + descriptor_name(r));
        if (!d) return d.error();
        auto entry = entry_of(std::move(*d), step);
        if (!entry)
          return make_error("CorruptCheckpoint",
                            fmt::format("rank {}'s descriptor is of another step", r));
        shards.push_back(std::move(*entry));
        break;
      }
      if (!s3::is_not_found(text.error())) return text.error();
      // A rank whose tier skipped this step for a newer one never uploads it: looked for
      // once a second, so that rank 0 moves on rather than waiting out the timeout.
      if (++polls % 10 == 0 && newer_descriptor(r, step)) {
        return make_error("Superseded",
                          fmt::format("rank {} uploaded a newer step instead of step {}", r, step));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return make_error(
            "CommitTimeout",
            fmt::format("rank {} did not upload its shard of step {} in time", r, step));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return client_->put_object(uri_.bucket, key(step, kManifestName),
                             manifest_text(step, world, user, std::move(shards)));
}

bool S3Store::newer_descriptor(int rank, int64_t step) const {
  auto objects = client_->list_objects(uri_.bucket, base_ + "step-");
  if (!objects) return false;
  const std::string name = "/" + descriptor_name(rank);
  for (const auto& o : *objects) {
    const std::string rest = o.key.substr(base_.size());
    if (rest.size() > name.size() && rest.ends_with(name) &&
        parse_step_dir(rest.substr(0, rest.size() - name.size())) > step) {
      return true;
    }
  }
  return false;
}

Status S3Store::prune(int keep_last, int keep_every) const {
  auto all = steps();
  if (!all) return all.error();
  Status result;
  for (int64_t s : steps_to_prune({all->begin(), all->end()}, keep_last, keep_every)) {
    const bool committed = (*all)[s];
    // The manifest first: a step whose other objects outlive a failed delete is not whole.
    Status st = committed ? client_->delete_object(uri_.bucket, key(s, kManifestName)) : Status();
    if (st) {
      auto objects = client_->list_objects(uri_.bucket, step_prefix(s));
      if (!objects) st = objects.error();
      std::vector<std::string> keys;
      if (objects) {
        for (const auto& o : *objects) keys.push_back(o.key);
      }
      if (st && !keys.empty()) st = client_->delete_objects(uri_.bucket, keys);
    }
    if (!st && result) result = st;
  }
  return result;
}

Result<std::vector<CheckpointInfo>> list_s3(const S3Store& store) {
  auto steps = store.steps();
  if (!steps) return steps.error();
  std::vector<CheckpointInfo> out;
  for (const auto& [step, committed] : *steps) {
    if (committed) {
      out.push_back(store.inspect(step));
      if (out.back().valid) {
        out.back().tiers = {"s3"};
        out.back().tier_paths = {out.back().path};
      }
    } else {
      CheckpointInfo info;
      info.step = step;
      info.path = store.step_path(step);
      info.reason = "not committed (no manifest)";
      out.push_back(std::move(info));
    }
  }
  return out;
}

Result<std::vector<CheckpointInfo>> list_s3(const std::string& uri) {
  auto store = S3Store::open(uri, "DIR");
  if (!store) return store.error();
  return list_s3(**store);
}

}  // namespace endure::ckpt
