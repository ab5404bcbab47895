// The save side's shared state: what checkpointer.cpp (saves that copy the caller's
// buffers) and in_place.cpp (saves of a state the checkpointer holds) both work on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "endure/checkpoint.h"
#include "train/ckpt/cluster_tier.h"
#include "train/ckpt/s3_store.h"
#include "train/ckpt/s3_tier.h"
#include "train/ckpt/snapshot.h"
#include "train/ckpt/staging.h"
#include "train/ckpt/streaming_checksums.h"
#include "train/ckpt/tiers.h"

namespace endure::ckpt {

// Saves that copy take turns on the first two slots; a state kept in place uses all three.
inline constexpr int kCopySlots = 2;

struct Checkpointer::Impl {
  struct Job {
    int64_t step = -1;  // -1: only size the slot to `bytes`, touching its pages
    int slot = 0;
    json user;
    json layout;
    std::vector<std::string> checksums;  // empty: the persist takes them
    bool memory = false;  // the memory tier's descriptor and commit are still to write
    bool disk = false;    // the local disk and shared tiers are to be written
    size_t bytes = 0;
    bool cluster = false;  // the cluster memory tier is to be written
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  bool writing = false;  // the worker holds a job
  bool stop = false;
  int64_t last_step = -1;
  bool slot_busy[kSlots] = {};
  int next_slot = 0;     // saves that copy: the slot the next one takes
  int newest_slot = -1;  // the slot of the newest save (or, at open, the newest memory copy)
  int disk_pending = 0;  // saves whose disk tiers are not yet written
  int disk_slot = -1;    // the slot of the last save to every tier
  // Until when the disk tiers rest after their last write (Options::disk_duty).
  std::chrono::steady_clock::time_point disk_rest_until{};
  // The save each slot holds (step -1: none), for flush() to write a memory-only one to
  // the disk tiers.
  Job held[kSlots];
  std::vector<StagingSlot> slots;
  Status status;  // the first failure since the last wait()
  std::thread worker;
  // save_overlapped()'s copy and the thread running it, until the next save or wait().
  std::thread copier;
  std::shared_ptr<Snapshot> copying;
  // Saves copy the caller's buffers, or the checkpointer holds the state: never both.
  enum class Mode { unset, copy, in_place } mode = Mode::unset;
  // A state kept in place: the slot holding it (-1: none yet) and each slot's layout.
  int state_slot = -1;
  json state_layout[kSlots];
  StreamingChecksums state_checksums;  // of the slot handed out last
  // The S3 tier (Options::s3), when there is one: its store, read by list() and restores,
  // and its uploads.
  std::shared_ptr<S3Store> s3_store;
  std::unique_ptr<S3Tier> s3;
  // The cluster memory tier (Options::cluster_node), when there is one.
  std::unique_ptr<ClusterTier> cluster;

  // A state kept in place: the slot the next state goes to. REQUIRES: mu held.
  int free_slot() const;

  // Has the worker size `slot` to `bytes` (its pages touched) unless it is in use or
  // already that size. REQUIRES: mu held.
  void queue_prepare(int slot, size_t bytes) {
    if (slot_busy[slot] || slots[slot].size() == bytes) return;
    slot_busy[slot] = true;
    queue.push_back({-1, slot, {}, {}, {}, false, false, bytes});
  }
};

// A save's buffers, or a state's shapes (`field`): at least one, each named, no name twice.
template <class Named>
Status check_names(const std::vector<Named>& named, const std::string& field) {
  if (named.empty()) return make_error("ValidationException", field + ": at least one");
  std::set<std::string> names;
  for (const auto& b : named) {
    if (b.name.empty()) return make_error("ValidationException", field + ": a name is empty");
    if (!names.insert(b.name).second) {
      return make_error("ValidationException", field + ": name \"" + b.name + "\" given twice");
    }
  }
  return {};
}

// The memory tier's part of a save: the slot is already its shard, so only the descriptor
// is written, and the step committed once every rank of the node has written its own.
void persist_memory(const Options& o, int64_t step, const json& user, const json& layout,
                    const StagingSlot& slot, const std::vector<std::string>& chunks);

// A rank's sealed description of its shard of a step, with the user metadata of this rank's
// save: the manifest keeps only the committing rank's, and a rank's own may differ.
std::string descriptor(const Options& o, int64_t step, size_t size, const std::vector<std::string>& chunks,
                       const json& layout, const json& user);

// The cluster memory tier's part: the shard and its descriptor into this rank's stores, and
// on rank 0 the commit handed to the tier's committer (ClusterTier::commit_later), which
// makes it once every rank's copies are whole. A failure is logged: the disk tiers hold
// the step then.
void persist_cluster(const Options& o, ClusterTier& tier, int64_t step, const json& user,
                     const json& layout, const StagingSlot& slot, const std::vector<std::string>& chunks);

// The cluster memory tier of a checkpointer's options, or nothing when they name none.
Result<std::unique_ptr<ClusterTier>> open_cluster_tier(const Options& o);

}  // namespace endure::ckpt
