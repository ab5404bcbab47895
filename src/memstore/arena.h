// A node's memory store's objects: each step's shards, descriptors and manifest, kept as
// files in a tmpfs folder (memory that outlives the store's process, so a restarted store
// still serves what it held) and counted against the share of the node's memory the cluster
// gives it. A write lands in a hidden part file and is renamed into place only once every
// byte is there: a reader, or a store restarted after a SIGKILL, never sees half an object
// (a restart deletes the part files). Layout: ROOT/<run>/step-<12 digits>/<object>.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "memstore/eviction.h"

namespace endure::memstore {

// The names a store accepts: a run is [A-Za-z0-9._-]{1,128} not starting with a dot; an
// object is rank-<5 digits>.shard, rank-<5 digits>.json or MANIFEST.json. Errors name the
// part and the rule.
Status check_run(const std::string& run);
Status check_object(const std::string& object);

// What a store has done since it started, and holds now (its /v1/stats and the agent's
// gauges).
struct ArenaStats {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;  // objects held, writes under way and pool_bytes
  uint64_t pool_bytes = 0;  // pages of dropped objects kept for the next ones
  uint64_t objects = 0;
  uint64_t puts = 0, put_bytes = 0;
  uint64_t gets = 0, get_bytes = 0;
  uint64_t shard_gets = 0;    // gets of shards (restores), not of descriptors or manifests
  uint64_t refused_puts = 0;  // that would not fit even after eviction
  uint64_t evicted_steps = 0;
  // How long the save being replicated has waited for its manifest: over runs, the most
  // for a run whose newest step with objects has none (0: none waits). From the step's
  // first object, or from the store's start for a step it found held.
  double replication_lag_seconds = 0;
  // The last step completed here: its first object to its manifest.
  double last_commit_seconds = 0;
};

class Arena;

// One object being written. Not thread-safe; abandoned (deleted, its room given back)
// unless commit() is called with every byte written.
class Put {
 public:
  ~Put();
  Put(const Put&) = delete;
  Put& operator=(const Put&) = delete;
  Status write(const void* data, size_t size);
  // Or, to receive straight into the object: where the next bytes go and how many may
  // (to the announced size), then how many were put there.
  char* next(size_t* room);
  void wrote(size_t size);
  // Makes the object visible, replacing one of the same name. REQUIRES: exactly the size
  // announced was written.
  Status commit();

 private:
  friend class Arena;
  Put(Arena* arena, std::string run, int64_t step, std::string object, std::filesystem::path part,
      std::filesystem::path final, uint64_t size, int fd);
  Status map();
  Arena* arena_;
  std::string run_;
  int64_t step_;
  std::string object_;
  std::filesystem::path part_, final_;
  uint64_t size_ = 0, written_ = 0;
  int fd_ = -1;
  char* map_ = nullptr;
  bool done_ = false;
};

class Arena {
 public:
  // Opens (creating) ROOT, deletes every part file a killed store left, and counts what is
  // held. Holding more than capacity (a smaller share than before) evicts down to it.
  static Result<std::unique_ptr<Arena>> open(const std::filesystem::path& root, uint64_t capacity);

  // Reserves room for an object of `size` bytes, evicting old steps (eviction.h) when
  // needed, in the pages of a dropped object when one is big enough: "InsufficientStorage"
  // when it cannot fit, ValidationException on bad names.
  Result<std::unique_ptr<Put>> begin_put(const std::string& run, int64_t step,
                                         const std::string& object, uint64_t size);

  // An object opened for reading: its descriptor and size. While one is open the file is
  // never recycled for another object (an eviction unlinks it instead, which leaves the
  // reader's bytes as they were).
  class Reading {
   public:
    ~Reading();
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;
    int fd() const { return fd_; }
    uint64_t size() const { return size_; }

   private:
    friend class Arena;
    Reading(Arena* arena, std::string path, int fd, uint64_t size)
        : arena_(arena), path_(std::move(path)), fd_(fd), size_(size) {}
    Arena* arena_;
    std::string path_;
    int fd_;
    uint64_t size_;
  };
  // ResourceNotFound when the object is not held.
  Result<std::unique_ptr<Reading>> open_object(const std::string& run, int64_t step,
                                               const std::string& object);
  // A whole object served: `object` is its name (shards are counted apart).
  void count_get(const std::string& object, uint64_t bytes);

  // A run's steps, oldest first, and the objects of each.
  struct StepObjects {
    HeldStep step;
    std::vector<std::pair<std::string, uint64_t>> objects;  // name, bytes
  };
  std::vector<StepObjects> list(const std::string& run);

  // Drops a run (a finished job's flush), or one step of it.
  Status remove(const std::string& run, std::optional<int64_t> step = std::nullopt);

  ArenaStats stats();
  const std::filesystem::path& root() const { return root_; }

 private:
  friend class Put;
  Arena(std::filesystem::path root, uint64_t capacity) : root_(std::move(root)) {
    stats_.capacity_bytes = capacity;
  }
  std::filesystem::path step_dir(const std::string& run, int64_t step) const;
  // The steps held, their whole objects' bytes, and the stats' counts brought up to date.
  std::vector<HeldStep> held_locked();
  void drop_locked(const HeldStep& s, bool evicted);
  // A dropped object's file kept for a later object's bytes (pool_), or unlinked.
  void recycle_locked(const std::filesystem::path& file, uint64_t size);
  // Unlinks pooled files, largest first, until `incoming` more bytes fit in the room given.
  void trim_pool_locked(uint64_t incoming);
  // Takes a pooled file of at least `size` bytes as `part` (false: none).
  bool reuse_locked(const std::filesystem::path& part, uint64_t size);
  void finish_put(const Put& put, bool committed);

  std::filesystem::path root_;
  std::mutex mu_;
  ArenaStats stats_;
  uint64_t reserved_ = 0;  // room taken by writes under way
  // Files of dropped objects, by size, whose pages the next objects are written into: a
  // fresh tmpfs page costs the kernel a clear (two thirds of a put's time), a reused one
  // nothing. Counted in the room used until reused or unlinked.
  std::multimap<uint64_t, std::filesystem::path> pool_;
  uint64_t pool_bytes_ = 0;
  uint64_t pool_names_ = 0;
  std::map<std::string, int> readers_;  // open Readings by path
  // Steps holding objects, by run and step: when the first came (steady: the lag must not
  // jump with the wall clock) and whether the manifest has. Dropped with the step.
  struct Arrivals {
    std::chrono::steady_clock::time_point first;
    bool complete = false;
  };
  std::map<std::pair<std::string, int64_t>, Arrivals> arrivals_;
};

}  // namespace endure::memstore
