#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/fs.h"
#include "common/log.h"
#include "endure/checkpoint.h"
#include "train/ckpt/checkpointer_impl.h"
#include "train/ckpt/format.h"
#include "train/ckpt/promote.h"
#include "train/ckpt/s3_store.h"
#include "train/ckpt/s3_tier.h"
#include "train/ckpt/shard_io.h"
#include "train/ckpt/snapshot.h"
#include "train/ckpt/staging.h"
#include "train/ckpt/tiers.h"

namespace endure::ckpt {

namespace {

// A node-local tier failing (a full /dev/shm, a dead local disk) costs speed, not the
// checkpoint: it is logged and the shared tier is written all the same.
void warn_local(const char* tier, int64_t step, const Status& s) {
  if (!s) log::warn("checkpoint step {}: {} tier: {}", step, tier, s.error().message);
}

// Writes this rank's shard of a step into dir, a disk tier's step folder, then its
// descriptor, which says the shard is durable. Takes the checksums when `chunks` is empty.
Status write_shard(const Options& o, const std::filesystem::path& dir, int64_t step,
                   const json& layout, const json& user, const StagingSlot& slot,
                   std::vector<std::string>& chunks) {
  Status s = fs::make_dirs(dir);
  if (s) {
    s = write_durable(dir / shard_name(o.rank), slot.data(), slot.size(), o.chunk_bytes,
                      chunks.empty() ? &chunks : nullptr);
  }
  if (s)
    s = fs::atomic_write_file(dir / descriptor_name(o.rank),
                              descriptor(o, step, slot.size(), chunks, layout, user));
  return s;
}

// The disk tiers' part, fastest first: the local disk, then the shared folder (committed
// and pruned by rank 0).
Status persist_disk(const Options& o, int64_t step, const json& user, const json& layout, const StagingSlot& slot,
                    std::vector<std::string> chunks) {
  if (!o.local_dir.empty()) {
    auto dir = step_dir(o.local_dir, step);
    Status s = write_shard(o, dir, step, layout, user, slot, chunks);
    if (s) s = commit_if_complete(dir, step, o.world, user, owner_of(o));
    if (s) prune_rank(o.local_dir, o.rank, o.local_keep_last);
    warn_local("local", step, s);
  }
  auto dir = step_dir(o.dir, step);
  Status s = write_shard(o, dir, step, layout, user, slot, chunks);
  if (s && o.rank == 0) {
    s = commit_shared(o, dir, step, user);
    // Retention after the commit: a step it fails to remove goes at a later save's prune.
    if (s) (void)prune(o.dir, o.keep_last, o.keep_every);
  }
  return s;
}

}  // namespace

// A rank's sealed description of its shard of a step, with the user metadata of this rank's
// save: the manifest keeps only the committing rank's, and a rank's own may differ.
std::string descriptor(const Options& o, int64_t step, size_t size,
                       const std::vector<std::string>& chunks, const json& layout,
                       const json& user) {
  json d = {{"magic", "endure-ckpt"},
            {"version", kFormatVersion},
            {"step", step},
            {"rank", o.rank},
            {"file", shard_name(o.rank)},
            {"size", size},
            {"chunk_bytes", o.chunk_bytes},
            {"chunks", chunks},
            {"buffers", layout},
            {"user", user}};
  return seal(d).dump();
}

void persist_memory(const Options& o, int64_t step, const json& user, const json& layout,
                    const StagingSlot& slot, const std::vector<std::string>& chunks) {
  auto dir = slot.file().parent_path();
  Status s = fs::atomic_write_file(dir / descriptor_name(o.rank),
                                   descriptor(o, step, slot.size(), chunks, layout, user));
  if (s) s = commit_if_complete(dir, step, o.world, user, owner_of(o));
  warn_local("memory", step, s);
}

Checkpointer::Checkpointer(Options options) : options_(std::move(options)), impl_(new Impl) {}

Result<std::unique_ptr<Checkpointer>> Checkpointer::open(const Options& options) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world) {
    return make_error("ValidationException", "rank/world: need 0 <= rank < world");
  }
  if (options.chunk_bytes < 4096) return make_error("ValidationException", "chunk_bytes: at least 4096");
  if (options.keep_last < 0 || options.keep_every < 0) {
    return make_error("ValidationException", "keep_last/keep_every: must not be negative");
  }
  if (options.local_keep_last < 1) return make_error("ValidationException", "local_keep_last: at least 1");
  if (!(options.disk_duty > 0 && options.disk_duty <= 1)) {
    return make_error(
        "ValidationException",
        fmt::format("disk_duty: a share of the time in (0, 1], got {}", options.disk_duty));
  }
  if (is_s3(options.dir)) {
    return make_error("ValidationException",
                      "dir: an s3:// prefix is the S3 tier (s3) behind a folder, not the folder itself");
  }
  // The S3 tier's URI and configuration are checked before any folder is made, so that
  // they too are refused with nothing changed (opening it sends no request).
  std::shared_ptr<S3Store> s3_store;
  if (!options.s3.empty()) {
    auto store = S3Store::open(options.s3, "s3");
    if (!store) return store.error();
    s3_store = *store;
  }
  // The cluster memory tier's files are read, and checked, before anything is made too.
  std::unique_ptr<ClusterTier> cluster;
  if (!options.cluster_node.empty()) {
    auto opened = open_cluster_tier(options);
    if (!opened) return opened.error();
    cluster = std::move(*opened);
  }
  if (auto s = fs::make_dirs(options.dir); !s) return s.error();
  for (const auto& tier : {options.local_dir, options.memory_dir}) {
    if (tier.empty()) continue;
    if (auto s = fs::make_dirs(tier); !s) return s.error();
  }
  std::unique_ptr<Checkpointer> c(new Checkpointer(options));
  Impl& im = *c->impl_;
  if (s3_store) {
    im.s3_store = s3_store;
    im.s3 = std::make_unique<S3Tier>(options, s3_store);
  }
  im.cluster = std::move(cluster);
  int64_t newest = -1;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (options.memory_dir.empty()) {
      im.slots.emplace_back();
      continue;
    }
    auto dir = slot_dir(options.memory_dir, slot);
    im.slots.emplace_back(dir / shard_name(options.rank));
    // The first save goes to a slot that does not hold the newest in-memory step.
    if (auto m = read_sealed(dir / kManifestName); m && m->value("step", -1LL) > newest) {
      newest = m->value("step", -1LL);
      im.newest_slot = slot;
      im.next_slot = (slot + 1) % kCopySlots;
    }
  }
  Checkpointer* self = c.get();
  im.worker = std::thread([self] {
    pthread_setname_np(pthread_self(), "ckpt-persist");  // as ps and perf show it
    // Disk writes wait on the disk, not the cores: at idle priority their few cycles come
    // from what training leaves, and a save due while one is still written goes to the
    // memory tier alone (the disk falls behind, training does not wait).
    run_at_idle_priority();
    Impl& im = *self->impl_;
    for (;;) {
      std::unique_lock lock(im.mu);
      im.cv.wait(lock, [&] { return !im.queue.empty() || im.stop; });
      if (im.queue.empty()) return;
      Impl::Job job = std::move(im.queue.front());
      im.queue.pop_front();
      im.writing = true;
      lock.unlock();
      if (job.step < 0) {
        Status s = self->prepare_slot(job.slot, job.bytes);
        if (!s) log::warn("checkpoint staging: {}", s.error().message);
        lock.lock();
        im.writing = false;
        im.slot_busy[job.slot] = false;
        im.cv.notify_all();
        continue;
      }
      const Options& o = self->options_;
      const StagingSlot& slot = im.slots[job.slot];
      if ((job.memory || job.cluster) && job.checksums.empty())
        job.checksums = chunk_checksums(slot.data(), slot.size(), o.chunk_bytes);
      if (job.memory) persist_memory(o, job.step, job.user, job.layout, slot, job.checksums);
      if (job.cluster) persist_cluster(o, *im.cluster, job.step, job.user, job.layout, slot, job.checksums);
      const auto disk_start = std::chrono::steady_clock::now();
      Status s =
          job.disk ? persist_disk(o, job.step, job.user, job.layout, slot, std::move(job.checksums))
                   : Status();
      if (!s) log::warn("checkpoint step {}: {}", job.step, s.error().message);
      // The S3 tier uploads from a disk copy, on its own thread, once the disk tiers have it.
      if (s && job.disk && im.s3) im.s3->submit(job.step, job.user);
      lock.lock();
      if (!s && im.status) im.status = s;
      if (job.disk) {
        --im.disk_pending;
        const auto end = std::chrono::steady_clock::now();
        im.disk_rest_until = end + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       (end - disk_start) * (1 / o.disk_duty - 1));
      }
      im.writing = false;
      im.slot_busy[job.slot] = false;
      im.cv.notify_all();
    }
  });
  return c;
}

Checkpointer::~Checkpointer() {
  // The save in flight ends here; its outcome was the caller's to ask (wait()). A step
  // still waiting for its commit in the cluster memory tier is not waited for: a rank that
  // ends without wait() failed, and the copies of a peer that died would never come (rank
  // 0 sat out the commit timeout, 30 s, before its srun step could end).
  (void)wait_saved();
  if (impl_->s3) (void)impl_->s3->drain();
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

Status Checkpointer::save(int64_t step, const std::vector<Buffer>& buffers, const json& user,
                          Tiers tiers) {
  join_copier();
  auto slot = begin_save(step, buffers, tiers);
  if (!slot) return slot.error();
  // Copy only: the checksums are taken in the background, off the caller's stall.
  Snapshot copy(shard_header(options_.rank), buffers, impl_->slots[*slot].data(),
                options_.chunk_bytes, false);
  copy.finish();
  queue_save(step, *slot, user, copy.layout(), {}, !options_.memory_dir.empty(),
             tiers == Tiers::all, impl_->cluster != nullptr);
  return {};
}

Status Checkpointer::save_overlapped(int64_t step, const std::vector<Buffer>& buffers,
                                     const json& user, Tiers tiers) {
  join_copier();
  auto slot = begin_save(step, buffers, tiers);
  if (!slot) return slot.error();
  // The buffers' addresses are the caller's and stay valid: it writes none of them, nor
  // frees them, before wait_copied().
  auto copy = std::make_shared<Snapshot>(shard_header(options_.rank), buffers,
                                         impl_->slots[*slot].data(), options_.chunk_bytes, true);
  impl_->copying = copy;
  impl_->copier = std::thread([this, step, user, slot = *slot, tiers, copy] {
    pthread_setname_np(pthread_self(), "ckpt-copy");
    run_at_idle_priority();
    copy->finish();
    // The memory tier is written here, not behind a disk write the worker may be busy with.
    auto checksums = copy->checksums();
    if (!options_.memory_dir.empty()) {
      persist_memory(options_, step, user, copy->layout(), impl_->slots[slot], checksums);
    }
    queue_save(step, slot, user, copy->layout(), std::move(checksums), false, tiers == Tiers::all,
               impl_->cluster != nullptr);
  });
  return {};
}

void Checkpointer::wait_copied() {
  // Rather than wait for the copier, which runs only on cycles nothing else wants, this
  // thread copies what is left itself.
  if (impl_->copying) impl_->copying->finish();
}

void Checkpointer::join_copier() {
  if (impl_->copier.joinable()) impl_->copier.join();
  impl_->copying.reset();
}

bool Checkpointer::disk_busy() const {
  std::lock_guard lock(impl_->mu);
  return impl_->disk_pending > 0 || std::chrono::steady_clock::now() < impl_->disk_rest_until;
}

Status Checkpointer::check_tiers(Tiers tiers) const {
  if (tiers == Tiers::memory && options_.memory_dir.empty() && !impl_->cluster) {
    return make_error("ValidationException",
                      "tiers: a save to the memory tiers alone needs one (memory_dir or cluster_node)");
  }
  return {};
}

Result<int> Checkpointer::begin_save(int64_t step, const std::vector<Buffer>& buffers,
                                     Tiers tiers) {
  if (auto s = check_names(buffers, "buffers"); !s) return s.error();
  for (const auto& b : buffers) {
    if (b.size > 0 && b.data == nullptr) {
      return make_error("ValidationException", "buffers: \"" + b.name + "\" has no data");
    }
  }
  if (auto s = check_tiers(tiers); !s) return s.error();
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  if (im.mode == Impl::Mode::in_place) {
    return make_error("ValidationException",
                      "save: this checkpointer holds the state in place (next_state()); save it "
                      "with save_in_place()");
  }
  if (step < 0 || step <= im.last_step) {
    return make_error("ValidationException", "step: must be above the last saved step (" +
                                                 std::to_string(im.last_step) + ")");
  }
  // The same slot on every rank of a node (their copies of a step share its folder), so
  // chosen only from what they agree on: a save to every tier takes the slot not holding
  // the newest step; a save to the memory tier alone, the slot the last save to every tier
  // does not hold (its disk write may still be reading that one).
  const int slot =
      tiers == Tiers::memory && im.disk_slot >= 0 ? (im.disk_slot + 1) % kCopySlots : im.next_slot;
  im.cv.wait(lock, [&] { return !im.slot_busy[slot]; });
  im.slot_busy[slot] = true;
  lock.unlock();

  size_t total = kShardHeaderBytes;
  for (const auto& b : buffers) total += b.size;
  invalidate_memory_copy(slot);
  if (Status s = im.slots[slot].resize(total); !s) {
    lock.lock();
    im.slot_busy[slot] = false;
    im.cv.notify_all();
    return s.error();
  }
  lock.lock();
  // Claimed: a later save's step must be above this one's even while this one copies.
  im.last_step = step;
  im.mode = Impl::Mode::copy;
  im.next_slot = (slot + 1) % kCopySlots;
  im.newest_slot = slot;
  if (tiers == Tiers::all) {
    ++im.disk_pending;
    im.disk_slot = slot;
  }
  return slot;
}

void Checkpointer::queue_save(int64_t step, int slot, const json& user, const json& layout,
                              std::vector<std::string> checksums, bool memory, bool disk, bool cluster) {
  Impl& im = *impl_;
  const size_t total = im.slots[slot].size();
  std::lock_guard lock(im.mu);
  im.held[slot] = {step, slot, user, layout, checksums, false, disk};
  if (memory || disk || cluster) {
    im.queue.push_back({step, slot, user, layout, std::move(checksums), memory, disk, 0, cluster});
  } else {
    im.slot_busy[slot] = false;  // in the memory tier already, and nowhere else to go
  }
  // The next save's slot is sized (its pages touched) in the background, not in its stall.
  im.queue_prepare(im.next_slot, total);
  im.cv.notify_all();
}

void Checkpointer::reserve(size_t bytes) {
  const size_t total = kShardHeaderBytes + bytes;
  Impl& im = *impl_;
  std::lock_guard lock(im.mu);
  for (int slot = 0; slot < kCopySlots; ++slot) im.queue_prepare(slot, total);
  im.cv.notify_all();
}

void Checkpointer::invalidate_memory_copy(int slot) {
  if (options_.memory_dir.empty()) return;
  // The slot's old step stops existing in the memory tier before its bytes change.
  std::error_code ec;
  auto dir = impl_->slots[slot].file().parent_path();
  std::filesystem::remove(dir / kManifestName, ec);
  std::filesystem::remove(dir / descriptor_name(options_.rank), ec);
}

Status Checkpointer::prepare_slot(int slot, size_t bytes) {
  StagingSlot& staging = impl_->slots[slot];
  if (staging.data() && staging.size() == bytes) return {};
  // A memory-tier slot of another size no longer holds a whole step.
  if (!options_.memory_dir.empty() && std::filesystem::exists(staging.file())) {
    std::error_code ec;
    if (std::filesystem::file_size(staging.file(), ec) != bytes) invalidate_memory_copy(slot);
  }
  return staging.resize(bytes);
}

Status Checkpointer::flush() {
  join_copier();
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  const int slot = im.newest_slot;
  if (slot >= 0 && im.held[slot].step >= 0 && im.held[slot].step == im.last_step &&
      !im.held[slot].disk) {
    Impl::Job& held = im.held[slot];
    im.cv.wait(lock, [&] { return !im.slot_busy[slot]; });
    im.slot_busy[slot] = true;
    held.disk = true;
    ++im.disk_pending;
    im.disk_slot = slot;
    im.queue.push_back(held);
    im.cv.notify_all();
  }
  const bool saved_none = im.last_step < 0;
  lock.unlock();
  // A run that resumed from a step only node-local tiers hold and saved nothing since
  // would otherwise end with that step still only on this node.
  if (saved_none) {
    if (auto s = copy_newest_to_shared(options_, list(), impl_->s3.get()); !s) return s;
  }
  return wait();
}

Status Checkpointer::wait_saved() {
  join_copier();
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->queue.empty() && !impl_->writing; });
  return std::exchange(impl_->status, Status());
}

Status Checkpointer::wait() {
  Status s = wait_saved();
  if (impl_->cluster) impl_->cluster->wait_commits();
  if (impl_->s3) {
    Status uploaded = impl_->s3->drain();
    if (s) s = uploaded;
  }
  return s;
}

Status prune(const std::filesystem::path& dir, int keep_last, int keep_every) {
  if (is_s3(dir)) {
    auto store = S3Store::open(dir.string(), "DIR");
    if (!store) return store.error();
    return (*store)->prune(keep_last, keep_every);
  }
  std::vector<std::pair<int64_t, bool>> steps;
  for (int64_t s : steps_in(dir)) {
    steps.emplace_back(s, std::filesystem::exists(step_dir(dir, s) / kManifestName));
  }
  Status result;
  for (int64_t s : steps_to_prune(steps, keep_last, keep_every)) {
    if (auto r = fs::remove_tree(step_dir(dir, s)); !r) result = r;
  }
  return result;
}

}  // namespace endure::ckpt
