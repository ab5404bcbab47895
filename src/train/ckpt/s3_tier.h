// The S3 tier's uploads: a committed step's shard goes from a disk tier's folder to the
// store on a thread of its own, after the faster tiers are done with it, so training never
// waits for the object store. At most one upload runs and one waits: a step due while
// another uploads replaces the one waiting (logged), so a slow store makes the S3 tier
// fall behind by whole steps instead of queueing without bound.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/json.h"
#include "common/result.h"
#include "endure/checkpoint.h"
#include "train/ckpt/s3_store.h"

namespace endure::ckpt {

class S3Tier {
 public:
  S3Tier(const Options& options, std::shared_ptr<S3Store> store);
  // Finishes the upload running and the one waiting.
  ~S3Tier();
  S3Tier(const S3Tier&) = delete;
  S3Tier& operator=(const S3Tier&) = delete;

  // Uploads this rank's shard of `step` from a disk tier (the local disk's copy, else the
  // shared folder's, whose shard and descriptor are written), then, on rank 0, commits the
  // step in the store once every rank's shard object is whole, and applies retention there.
  // A step whose disk copies retention removed before its upload began is skipped (logged).
  void submit(int64_t step, const json& user);

  // Blocks until no upload runs or waits; the failure of the last upload, if it failed
  // (the newest step whole in the store supersedes an older one's failure).
  Status drain();

  const S3Store& store() const { return *store_; }

 private:
  struct Upload {
    int64_t step = -1;
    json user;
  };
  Status run(const Upload& upload);

  Options options_;
  std::shared_ptr<S3Store> store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Upload> waiting_;
  bool uploading_ = false;
  bool stop_ = false;
  Status status_;
  std::thread worker_;
};

}  // namespace endure::ckpt
