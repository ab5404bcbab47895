#include "train/ckpt/cluster_tier.h"

#include <fmt/format.h>

#include <chrono>
#include <set>
#include <thread>

#include "common/error_codes.h"
#include "common/log.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {

ClusterTier::ClusterTier(Options options)
    : options_(std::move(options)), client_(options_.config.token, options_.timeout_seconds) {}

std::vector<std::string> ClusterTier::holders(int rank) const {
  const std::string& own = options_.rank_nodes.at(static_cast<size_t>(rank));
  std::vector<std::string> out = {own};
  for (auto& peer : replica_nodes(options_.config.nodes, own, options_.replicas)) out.push_back(peer);
  return out;
}

std::vector<Candidate> ClusterTier::candidates(int rank) const {
  auto h = holders(rank);
  return restore_order(h.front(), std::vector<std::string>(h.begin() + 1, h.end()), "", "");
}

Result<std::vector<std::string>> ClusterTier::save(int64_t step, const void* shard, size_t size,
                                                   const std::string& descriptor) {
  auto h = holders(options_.rank);
  // Every copy at once: the replicas' network transfers overlap each other and the own copy.
  std::vector<Status> done(h.size());
  std::vector<std::thread> sending;
  for (size_t i = 0; i < h.size(); ++i)
    sending.emplace_back([&, i] {
      done[i] = client_.put(store(h[i]), options_.run, step, shard_name(options_.rank), shard, size);
      if (done[i])
        done[i] = client_.put(store(h[i]), options_.run, step, descriptor_name(options_.rank),
                              descriptor.data(), descriptor.size());
    });
  for (auto& t : sending) t.join();
  std::vector<std::string> held;
  std::string why;
  for (size_t i = 0; i < h.size(); ++i) {
    if (done[i]) held.push_back(h[i]);
    else why += (why.empty() ? "" : "; ") + done[i].error().message;
  }
  // A copy refused (a full store, one that is down) keeps every step from being held in
  // memory until it is taken again: said when it starts and when it ends, not every step.
  if (!why.empty() && !refusing_)
    log::warn("checkpoint step {}: cluster memory tier: rank {}'s copy refused, so no step is held in memory "
              "(the disk tiers hold them) until every store takes it again: {}",
              step, options_.rank, why);
  if (why.empty() && refusing_)
    log::info("checkpoint step {}: cluster memory tier: every store takes rank {}'s copies again", step,
              options_.rank);
  refusing_ = !why.empty();
  if (held.empty())
    return make_error("NoCopy", fmt::format("memory tier step {} rank {}: no store took the shard: {}", step,
                                            options_.rank, why));
  return held;
}

std::map<std::string, std::map<int64_t, std::set<std::string>>> ClusterTier::listings() {
  std::map<std::string, std::map<int64_t, std::set<std::string>>> out;
  for (const auto& [node, at] : options_.config.stores) {
    auto listed = client_.steps(at, options_.run);
    if (!listed) continue;
    auto& steps = out[node];
    for (const auto& s : (*listed)["Steps"])
      for (const auto& o : s["Objects"]) steps[s.value("Step", int64_t{-1})].insert(o.value("Name", ""));
  }
  return out;
}

std::optional<int> ClusterTier::first_missing(
    int64_t step, const std::map<std::string, std::map<int64_t, std::set<std::string>>>& at) {
  for (int r = 0; r < options_.world; ++r)
    for (const auto& node : holders(r)) {
      auto store = at.find(node);
      if (store == at.end()) return r;
      auto objects = store->second.find(step);
      if (objects == store->second.end() || !objects->second.count(descriptor_name(r))) return r;
    }
  return std::nullopt;
}

Result<std::vector<std::string>> ClusterTier::write_manifest(int64_t step, const ManifestOf& make_manifest) {
  std::vector<std::string> descriptors;
  for (int r = 0; r < options_.world; ++r) {
    Result<std::string> text = make_error("NoCopy", "");
    for (const auto& node : holders(r))
      if ((text = client_.get(store(node), options_.run, step, descriptor_name(r)))) break;
    if (!text) return text.error();
    descriptors.push_back(std::move(*text));
  }
  auto manifest = make_manifest(descriptors);
  if (!manifest) return manifest.error();
  std::vector<std::string> written;
  for (const auto& [node, at] : options_.config.stores)
    if (client_.put(at, options_.run, step, kManifestName, manifest->data(), manifest->size()))
      written.push_back(node);
  if (written.empty())
    return make_error("NoCopy", fmt::format("memory tier step {}: no store took the manifest", step));
  return written;
}

Error ClusterTier::not_whole(int64_t step, int rank) const {
  return make_error("CommitTimeout", fmt::format("memory tier step {}: rank {} is not in every store it goes to "
                                                 "(one refused it, or is down)",
                                                 step, rank));
}

Result<std::vector<std::string>> ClusterTier::commit(int64_t step, const ManifestOf& make_manifest,
                                                     double timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    auto missing = first_missing(step, listings());
    if (!missing) return write_manifest(step, make_manifest);
    if (std::chrono::steady_clock::now() > deadline) return not_whole(step, *missing);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ClusterTier::commit_later(int64_t step, ManifestOf make_manifest, double timeout_seconds) {
  std::lock_guard lock(mu_);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_seconds));
  waiting_[step] = {std::move(make_manifest), deadline};
  if (!committer_.joinable()) committer_ = std::thread([this] { commit_loop(); });
  cv_.notify_all();
}

void ClusterTier::wait_commits() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return waiting_.empty() && !committing_; });
}

ClusterTier::~ClusterTier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (committer_.joinable()) committer_.join();
}

void ClusterTier::commit_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !waiting_.empty() || stop_; });
    if (waiting_.empty()) return;  // stopping, with nothing left to commit
    committing_ = true;
    std::map<int64_t, Waiting> steps = waiting_;
    lock.unlock();
    auto at = listings();
    std::optional<int64_t> whole;
    for (auto it = steps.rbegin(); it != steps.rend() && !whole; ++it)
      if (!first_missing(it->first, at)) whole = it->first;
    if (whole) {
      auto written = write_manifest(*whole, steps[*whole].make_manifest);
      if (!written) log::warn("checkpoint step {}: cluster memory tier: {}", *whole, written.error().message);
      else late_said_ = false;
    }
    const auto now = std::chrono::steady_clock::now();
    lock.lock();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      const bool moot = whole && it->first <= *whole;
      const bool late = now > it->second.deadline;
      // Every step is late while a store refuses a copy: the first says so for them all.
      if (late && !moot && !late_said_) {
        auto missing = first_missing(it->first, at);
        log::warn("checkpoint step {}: cluster memory tier: {}; the steps after it are dropped alike until one "
                  "is whole", it->first, not_whole(it->first, missing.value_or(0)).message);
        late_said_ = true;
      }
      it = moot || late || stop_ ? waiting_.erase(it) : std::next(it);
    }
    committing_ = false;
    cv_.notify_all();
    if (!waiting_.empty()) cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stop_; });
  }
}

std::optional<std::pair<int64_t, std::string>> ClusterTier::newest_committed() {
  auto steps = committed_steps();
  if (steps.empty()) return std::nullopt;
  auto text = manifest(steps.front());
  if (!text) return std::nullopt;
  return std::make_pair(steps.front(), std::move(*text));
}

std::vector<int64_t> ClusterTier::committed_steps() {
  std::set<int64_t, std::greater<>> steps;
  for (const auto& [node, at] : options_.config.stores) {
    auto listed = client_.steps(at, options_.run);
    if (!listed) continue;
    for (const auto& s : (*listed)["Steps"])
      if (s.value("Complete", false)) steps.insert(s.value("Step", int64_t{-1}));
  }
  return {steps.begin(), steps.end()};
}

Result<std::string> ClusterTier::manifest(int64_t step) {
  Error last = make_error(errors::kResourceNotFound, fmt::format("memory tier step {}: no manifest", step));
  for (const auto& [node, at] : options_.config.stores) {
    auto text = client_.get(at, options_.run, step, kManifestName);
    if (text) return text;
    last = text.error();
  }
  return last;
}

Result<FirstGood<std::string>> ClusterTier::read_descriptor(
    int64_t step, int rank, const std::function<Status(const std::string&)>& check) {
  std::function<Result<std::string>(const Candidate&)> read = [&](const Candidate& c) -> Result<std::string> {
    auto text = client_.get(store(c.where), options_.run, step, descriptor_name(rank));
    if (!text) return text.error();
    if (auto ok = check(*text); !ok) return ok.error();
    return text;
  };
  return restore_first(candidates(rank), read);
}

Result<FirstGood<bool>> ClusterTier::read_shard(int64_t step, int rank, void* dest, size_t size,
                                                const std::function<Status(const void*, size_t)>& verify) {
  std::function<Result<bool>(const Candidate&)> read = [&](const Candidate& c) -> Result<bool> {
    if (auto got = client_.get_into(store(c.where), options_.run, step, shard_name(rank), dest, size); !got)
      return got.error();
    if (auto ok = verify(dest, size); !ok) return ok.error();
    return true;
  };
  return restore_first(candidates(rank), read);
}

}  // namespace endure::ckpt
