// Saves of a state the checkpointer holds (include/endure/checkpoint.h, next_state()): the
// caller's optimizer writes each step's state straight into a slot laid out as a shard, so
// a save is the slot's checksums and a commit, with no copy. Three slots take turns.
#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "endure/checkpoint.h"
#include "train/ckpt/checkpointer_impl.h"
#include "train/ckpt/format.h"

namespace endure::ckpt {

// The slot the next state goes to: neither the one holding the state now (the caller reads
// it) nor the one the last save to every tier is written from; of those left, one that does
// not hold the newest checkpoint if there is one. REQUIRES: mu held.
int Checkpointer::Impl::free_slot() const {
  int chosen = -1;
  for (int s = 0; s < kSlots; ++s) {
    if (s == state_slot || s == disk_slot) continue;
    if (chosen < 0 || chosen == newest_slot) chosen = s;
  }
  return chosen;
}

Result<std::vector<MutableBuffer>> Checkpointer::next_state(
    const std::vector<BufferShape>& shapes) {
  if (auto s = check_names(shapes, "shapes"); !s) return s.error();
  json layout = json::array();
  size_t total = kShardHeaderBytes;
  for (const auto& b : shapes) {
    layout.push_back({{"name", b.name}, {"offset", total}, {"size", b.size}});
    total += b.size;
  }
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  if (im.mode == Impl::Mode::copy) {
    return make_error("ValidationException",
                      "next_state: this checkpointer's saves copy the caller's buffers (save()); "
                      "a state kept in place needs a checkpointer of its own");
  }
  const int slot = im.free_slot();
  im.cv.wait(lock, [&] { return !im.slot_busy[slot]; });
  im.slot_busy[slot] = true;
  lock.unlock();

  invalidate_memory_copy(slot);
  StagingSlot& staging = im.slots[slot];
  Status s = staging.resize(total);
  if (s) {
    const std::string header = shard_header(options_.rank);
    std::memcpy(staging.data(), header.data(), header.size());
  }
  lock.lock();
  im.slot_busy[slot] = false;
  im.cv.notify_all();
  if (!s) return s.error();
  im.state_checksums.reset(staging.data(), staging.size(), options_.chunk_bytes, kShardHeaderBytes);
  im.mode = Impl::Mode::in_place;
  const int reading = im.state_slot;
  im.state_slot = slot;
  im.held[slot] = {};
  im.state_layout[slot] = layout;
  // The third slot is sized (its pages touched) in the background, not in a later call.
  for (int k = 0; k < kSlots; ++k) {
    if (k != slot && k != reading) im.queue_prepare(k, total);
  }
  lock.unlock();

  std::vector<MutableBuffer> out;
  for (const auto& b : layout) {
    out.push_back({b["name"].get<std::string>(), staging.data() + b["offset"].get<size_t>(),
                   b["size"].get<size_t>()});
  }
  return out;
}

void Checkpointer::state_written(int thread, const void* data, size_t bytes, const void* copy) {
  impl_->state_checksums.written(thread, data, bytes, copy);
}

Status Checkpointer::save_in_place(int64_t step, const json& user, Tiers tiers, unsigned threads) {
  if (auto s = check_tiers(tiers); !s) return s;
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  if (im.state_slot < 0) {
    return make_error("ValidationException",
                      "save_in_place: no state held yet: next_state() first");
  }
  const int slot = im.state_slot;
  if (im.held[slot].step >= 0) {
    return make_error("ValidationException",
                      fmt::format("save_in_place: the state held is saved already, as step {}: "
                                  "next_state() first",
                                  im.held[slot].step));
  }
  if (step < 0 || step <= im.last_step) {
    return make_error("ValidationException", "step: must be above the last saved step (" +
                                                 std::to_string(im.last_step) + ")");
  }
  im.last_step = step;
  const json layout = im.state_layout[slot];
  lock.unlock();

  // The slot is the state: nothing writes it until another next_state() hands it out.
  const StagingSlot& staging = im.slots[slot];
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  auto checksums = im.state_checksums.finish(threads);
  if (!options_.memory_dir.empty())
    persist_memory(options_, step, user, layout, staging, checksums);

  lock.lock();
  const bool disk = tiers == Tiers::all;
  im.newest_slot = slot;
  im.held[slot] = {step, slot, user, layout, std::move(checksums), false, disk};
  if (disk || im.cluster) {
    if (disk) {
      ++im.disk_pending;
      im.disk_slot = slot;
    }
    im.slot_busy[slot] = true;
    im.queue.push_back(im.held[slot]);
    im.queue.back().cluster = im.cluster != nullptr;
    im.cv.notify_all();
  }
  return {};
}

}  // namespace endure::ckpt
