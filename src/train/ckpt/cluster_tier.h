// The cluster memory tier for one rank of a job: each step's shard kept in the memory
// stores of its own node and of K peers (cluster_placement.h), the step committed once
// every rank's copies are whole, and a shard read back from the nearest copy that verifies
// (restore_order.h). The bytes and descriptors are the checkpoint format's own
// (endure/checkpoint.h): a store holds a step as a checkpoint folder holds it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "train/ckpt/cluster_store.h"
#include "train/ckpt/cluster_tier_config.h"
#include "train/ckpt/restore_order.h"

namespace endure::ckpt {

class ClusterTier {
 public:
  struct Options {
    ClusterTierConfig config;
    std::string run;  // the run's name in the stores (check_run's rule)
    int rank = 0;
    int world = 1;
    std::vector<std::string> rank_nodes;  // the node of every rank, by rank
    int replicas = 1;                     // K
    double timeout_seconds = 30;          // one store's request
  };
  // REQUIRES: rank_nodes has world entries, each a node of config.stores.
  explicit ClusterTier(Options options);

  // Where rank r's copies go and are looked for: its own node, then its replicas' nodes.
  std::vector<std::string> holders(int rank) const;

  // This rank's shard of `step` into every holder's store at once, then its descriptor
  // into each store that took the shard (a descriptor says its shard is whole). The
  // holders that took both, own node first; an error when none did (each one's reason).
  Result<std::vector<std::string>> save(int64_t step, const void* shard, size_t size,
                                        const std::string& descriptor);

  // Rank 0's commit: waits (up to timeout_seconds, polling) until every holder of every
  // rank has its descriptor of `step` (a step is held in memory only with every copy
  // whole), then writes the manifest into every store of the job that answers. The stores
  // it went to; an error when a copy never came (a store refused it or is down).
  // make_manifest gets every rank's descriptor text, by rank, as a holder keeps it.
  using ManifestOf = std::function<Result<std::string>(const std::vector<std::string>& descriptors)>;
  Result<std::vector<std::string>> commit(int64_t step, const ManifestOf& make_manifest,
                                          double timeout_seconds);

  // commit() on a thread of the tier's own, so that rank 0's next save waits for no other
  // rank's copies: steps wait in order, the newest whole one is committed, and the older
  // ones still waiting are dropped (a newer step held in memory makes them moot); a step
  // not whole within timeout_seconds is dropped with a logged warning.
  void commit_later(int64_t step, ManifestOf make_manifest, double timeout_seconds);
  // Until no step waits for its commit.
  void wait_commits();
  ~ClusterTier();

  // The newest step whose manifest any store of the job holds, and that manifest; nothing
  // when none does. Stores that do not answer are passed over.
  std::optional<std::pair<int64_t, std::string>> newest_committed();
  // Every step whose manifest any store of the job holds, newest first.
  std::vector<int64_t> committed_steps();
  // A step's manifest from the first store that has it.
  Result<std::string> manifest(int64_t step);

  // Rank r's descriptor of `step` from the nearest holder that has one which `check`
  // accepts (check: the caller's verification; an error passes the copy over).
  Result<FirstGood<std::string>> read_descriptor(
      int64_t step, int rank, const std::function<Status(const std::string&)>& check);

  // Rank r's shard of `step`, `size` bytes, into dest from the nearest holder whose copy
  // `verify` accepts once read (the caller's checksums). On an error dest may hold part of
  // a copy.
  Result<FirstGood<bool>> read_shard(int64_t step, int rank, void* dest, size_t size,
                                     const std::function<Status(const void*, size_t)>& verify);

  ClusterStoreClient& client() { return client_; }

 private:
  const StoreAddress& store(const std::string& node) const { return options_.config.stores.at(node); }
  std::vector<Candidate> candidates(int rank) const;
  // Per store of the job that answers, the objects it holds of each step.
  std::map<std::string, std::map<int64_t, std::set<std::string>>> listings();
  // Whether every holder of every rank has its descriptor of `step`, and if not the first
  // rank that lacks one.
  std::optional<int> first_missing(int64_t step,
                                   const std::map<std::string, std::map<int64_t, std::set<std::string>>>& at);
  Error not_whole(int64_t step, int rank) const;
  Result<std::vector<std::string>> write_manifest(int64_t step, const ManifestOf& make_manifest);
  void commit_loop();

  Options options_;
  ClusterStoreClient client_;

  struct Waiting {
    ManifestOf make_manifest;
    std::chrono::steady_clock::time_point deadline;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Waiting> waiting_;  // steps for the committer, by step
  bool committing_ = false, stop_ = false;
  bool late_said_ = false;  // a late step was logged, and none committed since
  std::thread committer_;
  // save()'s own (it runs on the persist thread alone): the last save had a copy refused.
  bool refusing_ = false;
};

}  // namespace endure::ckpt
