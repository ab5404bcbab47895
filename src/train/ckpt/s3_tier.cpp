#include "train/ckpt/s3_tier.h"

#include <pthread.h>

#include <utility>

#include "common/log.h"
#include "train/ckpt/format.h"
#include "train/ckpt/snapshot.h"

namespace endure::ckpt {

S3Tier::S3Tier(const Options& options, std::shared_ptr<S3Store> store)
    : options_(options), store_(std::move(store)) {
  worker_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "ckpt-s3");
    // Uploads wait on the network; the cycles they take (signing each part's SHA-256) come
    // from what training leaves, as the disk writes' do. The part threads inherit it.
    run_at_idle_priority();
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return waiting_ || stop_; });
      if (!waiting_) return;
      Upload upload = std::move(*waiting_);
      waiting_.reset();
      uploading_ = true;
      lock.unlock();
      Status s = run(upload);
      if (!s) log::warn("checkpoint step {}: s3 tier: {}", upload.step, s.error().message);
      lock.lock();
      status_ = s;
      uploading_ = false;
      cv_.notify_all();
    }
  });
}

S3Tier::~S3Tier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void S3Tier::submit(int64_t step, const json& user) {
  std::lock_guard lock(mu_);
  if (waiting_) {
    log::info(
        "checkpoint step {}: s3 tier skips it: step {} supersedes it while an earlier step uploads",
        waiting_->step, step);
  }
  waiting_ = Upload{step, user};
  cv_.notify_all();
}

Status S3Tier::drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !waiting_ && !uploading_; });
  return std::exchange(status_, Status());
}

Status S3Tier::run(const Upload& upload) {
  // The local disk's copy first (the fastest to read), then the shared folder's.
  Status put = make_error("IOError", "no disk copy");
  for (const auto& dir : {options_.local_dir, options_.dir}) {
    if (dir.empty()) continue;
    put = store_->put_shard(upload.step, options_.rank, step_dir(dir, upload.step));
    if (put || put.error().code != "IOError") break;
  }
  if (!put && put.error().code == "IOError") {
    log::info("checkpoint step {}: s3 tier skips it: its disk copies are gone ({})", upload.step,
              put.error().message);
    return {};
  }
  if (!put) return put;
  if (options_.rank != 0) return {};
  Status committed =
      store_->commit(upload.step, options_.world, upload.user, options_.commit_timeout_seconds);
  // Ranks skip steps each on its own (a slow upload here, not there): a step another rank
  // skipped is not one to report, the newer one is committed next.
  if (!committed && committed.error().code == "Superseded") {
    log::info("checkpoint step {}: s3 tier skips it: {}", upload.step, committed.error().message);
    return {};
  }
  if (!committed) return committed;
  // Retention after the commit: a step it fails to remove goes at a later upload's prune.
  if (auto s = store_->prune(options_.keep_last, options_.keep_every); !s) {
    log::warn("checkpoint: s3 tier retention: {}", s.error().message);
  }
  return {};
}

}  // namespace endure::ckpt
