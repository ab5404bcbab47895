#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/fs.h"
#include "common/log.h"
#include "endure/checkpoint.h"
#include "train/ckpt/format.h"
#include "train/ckpt/shard_io.h"
#include "train/ckpt/staging.h"

namespace endure::ckpt {
namespace {

constexpr int kSlots = 2;  // double buffering: one slot copied into while one is written

Result<json> read_sealed(const std::filesystem::path& path) {
  auto text = fs::read_file(path);
  if (!text) return make_error("CorruptCheckpoint", path.string() + ": missing");
  return unseal(*text, path.string());
}

std::filesystem::path slot_dir(const std::filesystem::path& memory_dir, int slot) {
  return memory_dir / fmt::format("slot-{}", slot);
}

// Cheap checks of a committed step: the manifest seals, every shard has its size. The
// manifest read for it is handed back through `manifest` when asked for.
CheckpointInfo inspect(const std::filesystem::path& dir, int64_t step, json* manifest = nullptr) {
  CheckpointInfo info;
  info.step = step;
  info.path = dir;
  info.committed = std::filesystem::exists(dir / kManifestName);
  if (!info.committed) {
    info.reason = "not committed (no manifest)";
    return info;
  }
  auto m = read_sealed(dir / kManifestName);
  if (!m) {
    info.reason = m.error().message;
    return info;
  }
  info.world = m->value("world", 0);
  info.user = m->value("user", json::object());
  if ((step >= 0 && m->value("step", -1LL) != step) || !m->contains("shards") ||
      !(*m)["shards"].is_array() || static_cast<int>((*m)["shards"].size()) != info.world) {
    info.reason = "manifest does not describe this step's shards";
    return info;
  }
  info.step = m->value("step", -1LL);
  for (const auto& s : (*m)["shards"]) {
    std::error_code ec;
    auto size = std::filesystem::file_size(dir / s.value("file", ""), ec);
    if (ec || size != s.value("size", 0ULL)) {
      info.reason = s.value("file", "?") + ": missing or not the size the manifest says";
      return info;
    }
    info.bytes += size;
  }
  info.valid = true;
  if (manifest) *manifest = std::move(*m);
  return info;
}

std::vector<int64_t> steps_in(const std::filesystem::path& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (dir.empty()) return steps;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    int64_t s = parse_step_dir(e.path().filename().string());
    if (s >= 0 && e.is_directory()) steps.push_back(s);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

// A folder holding one step's shards in one tier.
struct Copy {
  std::string tier;
  std::filesystem::path dir;
};

// The shared folder a node-local tier's copies belong to, as their manifests record it: a
// tier folder reused by another job (or another run's folder) is then never restored from.
std::string owner_of(const Options& o) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(o.dir), ec);
  return (ec ? std::filesystem::absolute(o.dir) : p).string();
}

// A node-local tier's manifest in dir when it belongs to `owner`, or nothing.
std::optional<json> own_manifest(const std::string& owner, const std::filesystem::path& dir) {
  auto m = read_sealed(dir / kManifestName);
  if (!m) return std::nullopt;
  if (m->value("of", "") != owner) {
    log::warn("checkpoint: {} belongs to {}, not {}: not used", dir.string(), m->value("of", "?"), owner);
    return std::nullopt;
  }
  return std::move(*m);
}

// The copies of every step (or of `only_step`) in every tier, newest step first, fastest
// tier first. A listing (`uncommitted` given) keeps only committed shared copies and names
// the shared folders without a manifest there; a restore, which stops at the first copy
// that verifies, gets every shared folder unchecked rather than a cold lookup of each.
std::map<int64_t, std::vector<Copy>, std::greater<>> copies_of(const Options& o,
                                                               std::vector<int64_t>* uncommitted = nullptr,
                                                               int64_t only_step = -1) {
  std::map<int64_t, std::vector<Copy>, std::greater<>> out;
  auto steps = [&](const std::filesystem::path& dir) {
    return only_step >= 0 ? std::vector<int64_t>{only_step} : steps_in(dir);
  };
  const std::string owner = o.memory_dir.empty() && o.local_dir.empty() ? "" : owner_of(o);
  if (!o.memory_dir.empty()) {
    for (int slot = 0; slot < kSlots; ++slot) {
      auto dir = slot_dir(o.memory_dir, slot);
      if (auto m = own_manifest(owner, dir)) out[m->value("step", -1LL)].push_back({"memory", dir});
    }
  }
  if (!o.local_dir.empty()) {
    for (int64_t s : steps(o.local_dir)) {
      auto dir = step_dir(o.local_dir, s);
      if (auto m = own_manifest(owner, dir); m && m->value("step", -1LL) == s) {
        out[s].push_back({"local", dir});
      }
    }
  }
  for (int64_t s : steps(o.dir)) {
    auto dir = step_dir(o.dir, s);
    if (!uncommitted || std::filesystem::exists(dir / kManifestName)) {
      out[s].push_back({"shared", dir});
    } else {
      uncommitted->push_back(s);
    }
  }
  out.erase(-1);
  if (only_step >= 0) std::erase_if(out, [&](const auto& entry) { return entry.first != only_step; });
  return out;
}

// The shard description of `rank` in a manifest, or null.
const json* shard_of(const json& manifest, int rank) {
  for (const auto& x : manifest["shards"]) {
    if (x.value("rank", -1) == rank) return &x;
  }
  return nullptr;
}

// Rank r's descriptor of `step` in dir as the manifest lists it (without the descriptor's
// own magic, version and step), or nothing while it is not there.
std::optional<json> shard_entry(const std::filesystem::path& dir, int rank, int64_t step) {
  auto d = read_sealed(dir / descriptor_name(rank));
  if (!d || d->value("step", -1LL) != step) return std::nullopt;
  d->erase("magic");
  d->erase("version");
  d->erase("step");
  return std::move(*d);
}

// Writes the manifest that makes `step` exist in dir. A node-local tier's names the shared
// folder it belongs to (`owner`); the shared folder's own names none.
Status write_manifest(const std::filesystem::path& dir, int64_t step, int world, const json& user,
                      json shards, const std::string& owner = "") {
  json manifest = {{"magic", "endure-ckpt"}, {"version", kFormatVersion}, {"step", step}, {"world", world}};
  if (!owner.empty()) manifest["of"] = owner;
  manifest["user"] = user;
  manifest["shards"] = std::move(shards);
  return fs::atomic_write_file(dir / kManifestName, seal(manifest).dump());
}

// Commits a node-local tier's step once every rank's descriptor of it is there (all ranks on
// this node). Any rank may complete it; the manifest is the same whoever writes it.
Status commit_if_complete(const std::filesystem::path& dir, int64_t step, int world, const json& user,
                          const std::string& owner) {
  json shards = json::array();
  for (int r = 0; r < world; ++r) {
    auto entry = shard_entry(dir, r, step);
    if (!entry) return {};
    shards.push_back(std::move(*entry));
  }
  return write_manifest(dir, step, world, user, std::move(shards), owner);
}

// Removes this rank's files of all but its newest `keep` steps in a node-local tier, with
// each such step's manifest (it no longer holds every shard) and the folder once empty.
void prune_rank(const std::filesystem::path& dir, int rank, int keep) {
  int kept = 0;
  for (int64_t s : steps_in(dir)) {
    auto step = step_dir(dir, s);
    if (!std::filesystem::exists(step / descriptor_name(rank))) continue;
    if (kept++ < keep) continue;
    std::error_code ec;
    std::filesystem::remove(step / kManifestName, ec);
    std::filesystem::remove(step / descriptor_name(rank), ec);
    std::filesystem::remove(step / shard_name(rank), ec);
    std::filesystem::remove(step, ec);  // fails while other ranks' files remain: fine
  }
}

}  // namespace

struct Checkpointer::Impl {
  struct Job {
    int64_t step;  // -1: only size the slot to `bytes`, touching its pages
    int slot;
    json user;
    json layout;
    size_t bytes = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  bool writing = false;  // the worker holds a job
  bool stop = false;
  int64_t last_step = -1;
  bool slot_busy[kSlots] = {};
  int next_slot = 0;
  std::vector<StagingSlot> slots;
  Status status;  // the first failure since the last wait()
  std::thread worker;
  std::thread copier;  // save_overlapped()'s copy, until wait_copied()

  // Has the worker size `slot` to `bytes` (its pages touched) unless it is in use or
  // already that size. REQUIRES: mu held.
  void queue_prepare(int slot, size_t bytes) {
    if (slot_busy[slot] || slots[slot].size() == bytes) return;
    slot_busy[slot] = true;
    queue.push_back({-1, slot, {}, {}, bytes});
  }
};

namespace {

// A node-local tier failing (a full /dev/shm, a dead local disk) costs speed, not the
// checkpoint: it is logged and the shared tier is written all the same.
void warn_local(const char* tier, int64_t step, const Status& s) {
  if (!s) log::warn("checkpoint step {}: {} tier: {}", step, tier, s.error().message);
}

// Rank 0's commit: waits for every rank's descriptor in the shared folder, then writes the
// manifest that makes the step exist.
Status commit_shared(const Options& o, const std::filesystem::path& dir, int64_t step, const json& user) {
  json shards = json::array();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(o.commit_timeout_seconds * 1000));
  for (int r = 0; r < o.world; ++r) {
    std::optional<json> entry;
    while (!(entry = shard_entry(dir, r, step))) {
      if (std::chrono::steady_clock::now() > deadline) {
        return make_error("CommitTimeout", fmt::format("rank {} did not make its shard of step {} durable in time",
                                                       r, step));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    shards.push_back(std::move(*entry));
  }
  return write_manifest(dir, step, o.world, user, std::move(shards));
}

// One save's way through the tiers, fastest first: the memory tier (the slot is already its
// shard: only its descriptor is written), the local disk, then the shared folder.
Status persist(const Options& o, int64_t step, const json& user, const json& layout, const StagingSlot& slot) {
  const uint8_t* data = slot.data();
  const size_t size = slot.size();
  const std::string owner = o.memory_dir.empty() && o.local_dir.empty() ? "" : owner_of(o);
  std::vector<std::string> chunks;
  auto descriptor = [&] {
    json d = {{"magic", "endure-ckpt"}, {"version", kFormatVersion}, {"step", step},
              {"rank", o.rank},          {"file", shard_name(o.rank)}, {"size", size},
              {"chunk_bytes", o.chunk_bytes}, {"chunks", chunks},    {"buffers", layout}};
    return seal(d).dump();
  };
  if (!o.memory_dir.empty()) {
    chunks = chunk_checksums(data, size, o.chunk_bytes);
    auto dir = slot.file().parent_path();
    Status s = fs::atomic_write_file(dir / descriptor_name(o.rank), descriptor());
    if (s) s = commit_if_complete(dir, step, o.world, user, owner);
    warn_local("memory", step, s);
  }
  if (!o.local_dir.empty()) {
    auto dir = step_dir(o.local_dir, step);
    Status s = fs::make_dirs(dir);
    if (s) s = write_durable(dir / shard_name(o.rank), data, size, o.chunk_bytes, chunks.empty() ? &chunks : nullptr);
    if (s) s = fs::atomic_write_file(dir / descriptor_name(o.rank), descriptor());
    if (s) s = commit_if_complete(dir, step, o.world, user, owner);
    if (s) prune_rank(o.local_dir, o.rank, o.local_keep_last);
    warn_local("local", step, s);
  }
  auto dir = step_dir(o.dir, step);
  Status s = fs::make_dirs(dir);
  if (s) s = write_durable(dir / shard_name(o.rank), data, size, o.chunk_bytes, chunks.empty() ? &chunks : nullptr);
  if (s) s = fs::atomic_write_file(dir / descriptor_name(o.rank), descriptor());
  if (s && o.rank == 0) {
    s = commit_shared(o, dir, step, user);
    // Retention after the commit: a step it fails to remove goes at a later save's prune.
    if (s) (void)prune(o.dir, o.keep_last, o.keep_every);
  }
  return s;
}

}  // namespace

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
  if (auto s = fs::make_dirs(options.dir); !s) return s.error();
  for (const auto& tier : {options.local_dir, options.memory_dir}) {
    if (tier.empty()) continue;
    if (auto s = fs::make_dirs(tier); !s) return s.error();
  }
  std::unique_ptr<Checkpointer> c(new Checkpointer(options));
  Impl& im = *c->impl_;
  int64_t newest = -1;
  for (int slot = 0; slot < kSlots; ++slot) {
    if (options.memory_dir.empty()) {
      im.slots.emplace_back();
      continue;
    }
    auto dir = slot_dir(options.memory_dir, slot);
    im.slots.emplace_back(dir / shard_name(options.rank));
    // The first save goes to the slot that does not hold the newest in-memory step.
    if (auto m = read_sealed(dir / kManifestName); m && m->value("step", -1LL) > newest) {
      newest = m->value("step", -1LL);
      im.next_slot = (slot + 1) % kSlots;
    }
  }
  Checkpointer* self = c.get();
  im.worker = std::thread([self] {
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
      Status s = persist(self->options_, job.step, job.user, job.layout, im.slots[job.slot]);
      if (!s) log::warn("checkpoint step {}: {}", job.step, s.error().message);
      lock.lock();
      if (!s && im.status) im.status = s;
      im.writing = false;
      im.slot_busy[job.slot] = false;
      im.cv.notify_all();
    }
  });
  return c;
}

Checkpointer::~Checkpointer() {
  (void)wait();  // the save in flight ends here; its outcome was the caller's to ask
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

Status Checkpointer::save(int64_t step, const std::vector<Buffer>& buffers, const json& user) {
  wait_copied();
  auto slot = begin_save(step, buffers);
  if (!slot) return slot.error();
  queue_save(step, *slot, user, copy_into_slot(*slot, buffers));
  return {};
}

Status Checkpointer::save_overlapped(int64_t step, const std::vector<Buffer>& buffers,
                                     const json& user) {
  wait_copied();
  auto slot = begin_save(step, buffers);
  if (!slot) return slot.error();
  // The buffers' addresses are the caller's and stay valid: it writes none of them, nor
  // frees them, before wait_copied().
  impl_->copier = std::thread([this, step, buffers, user, slot = *slot] {
    queue_save(step, slot, user, copy_into_slot(slot, buffers));
  });
  return {};
}

void Checkpointer::wait_copied() {
  if (impl_->copier.joinable()) impl_->copier.join();
}

Result<int> Checkpointer::begin_save(int64_t step, const std::vector<Buffer>& buffers) {
  if (buffers.empty()) return make_error("ValidationException", "buffers: at least one");
  std::set<std::string> names;
  for (const auto& b : buffers) {
    if (b.name.empty()) return make_error("ValidationException", "buffers: a name is empty");
    if (!names.insert(b.name).second) {
      return make_error("ValidationException", "buffers: name \"" + b.name + "\" given twice");
    }
    if (b.size > 0 && b.data == nullptr) {
      return make_error("ValidationException", "buffers: \"" + b.name + "\" has no data");
    }
  }
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  if (step < 0 || step <= im.last_step) {
    return make_error("ValidationException", "step: must be above the last saved step (" +
                                                 std::to_string(im.last_step) + ")");
  }
  const int slot = im.next_slot;
  im.cv.wait(lock, [&] { return !im.slot_busy[slot]; });
  im.slot_busy[slot] = true;
  lock.unlock();

  size_t total = kShardHeaderBytes;
  for (const auto& b : buffers) total += b.size;
  invalidate_memory_copy(slot);
  if (Status s = im.slots[slot].resize(total); !s) {
    lock.lock();
    im.slot_busy[slot] = false;
    return s.error();
  }
  lock.lock();
  // Claimed: a later save's step must be above this one's even while this one copies.
  im.last_step = step;
  im.next_slot = (slot + 1) % kSlots;
  return slot;
}

json Checkpointer::copy_into_slot(int slot, const std::vector<Buffer>& buffers) {
  StagingSlot& staging = impl_->slots[slot];
  std::string header = shard_header(options_.rank);
  std::memcpy(staging.data(), header.data(), header.size());
  json layout = json::array();
  size_t off = kShardHeaderBytes;
  for (const auto& b : buffers) {
    if (b.size) std::memcpy(staging.data() + off, b.data, b.size);
    layout.push_back({{"name", b.name}, {"offset", off}, {"size", b.size}});
    off += b.size;
  }
  return layout;
}

void Checkpointer::queue_save(int64_t step, int slot, const json& user, json layout) {
  Impl& im = *impl_;
  const size_t total = im.slots[slot].size();
  std::lock_guard lock(im.mu);
  im.queue.push_back({step, slot, user, std::move(layout)});
  // The next save's slot is sized (its pages touched) in the background, not in its stall.
  im.queue_prepare(im.next_slot, total);
  im.cv.notify_all();
}

void Checkpointer::reserve(size_t bytes) {
  const size_t total = kShardHeaderBytes + bytes;
  Impl& im = *impl_;
  std::lock_guard lock(im.mu);
  for (int slot = 0; slot < kSlots; ++slot) im.queue_prepare(slot, total);
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

Status Checkpointer::wait() {
  wait_copied();
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->queue.empty() && !impl_->writing; });
  return std::exchange(impl_->status, Status());
}

std::vector<CheckpointInfo> Checkpointer::list() const {
  std::vector<int64_t> uncommitted;
  auto all = copies_of(options_, &uncommitted);
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
      auto info = inspect(copy.dir, s);
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

// Reads a shard straight into the caller's buffers, every chunk verified on the way.
Status read_shard(const std::filesystem::path& dir, const json& shard, const std::vector<MutableBuffer>& buffers) {
  auto path = dir / shard.value("file", "");
  uint64_t size = shard.value("size", 0ULL);
  if (!shard.contains("chunks") || !shard["chunks"].is_array() || !shard.contains("buffers") ||
      !shard["buffers"].is_array()) {
    return make_error("CorruptCheckpoint", path.string() + ": shard description incomplete");
  }
  uint8_t header[kShardHeaderBytes];
  std::vector<Segment> segments = {{header, kShardHeaderBytes}};
  size_t next = kShardHeaderBytes;
  for (const auto& b : shard["buffers"]) {
    std::string name = b.value("name", "");
    size_t off = b.value("offset", size_t{0}), n = b.value("size", size_t{0});
    auto it = std::find_if(buffers.begin(), buffers.end(), [&](auto& m) { return m.name == name; });
    if (it == buffers.end() || it->size != n) {
      return make_error("ValidationException",
                        "buffers: \"" + name + "\" of " + std::to_string(n) + " bytes must be given with that size");
    }
    if (off != next) return make_error("CorruptCheckpoint", path.string() + ": buffers not contiguous");
    segments.push_back({static_cast<uint8_t*>(it->data), n});
    next += n;
  }
  if (next != size) return make_error("CorruptCheckpoint", path.string() + ": sizes disagree");
  Status s = read_verified(path, size, shard.value("chunk_bytes", size_t{0}), shard["chunks"], segments);
  if (s && std::memcmp(header, kShardMagic, 8) != 0) {
    s = make_error("CorruptCheckpoint", path.string() + ": not a shard (magic)");
  }
  return s;
}

// Where each buffer of a shard goes (or why it cannot be restored).
using Destinations = std::function<Result<std::vector<MutableBuffer>>(const json& shard)>;

// Restores this rank's shard of `step` (the newest that verifies when step < 0) into the
// memory `destinations` names, from the fastest tier whose copy verifies: the one
// read-and-verify path of load() and load_into().
Result<CheckpointInfo> restore(const Options& o, int64_t step, const Destinations& destinations) {
  Error last = make_error("NotFound", step < 0 ? o.dir.string() + ": no complete, valid checkpoint"
                                               : fmt::format("{}: step {} is not committed in any tier",
                                                             o.dir.string(), step));
  for (const auto& [s, copies] : copies_of(o, nullptr, step)) {
    for (const Copy& copy : copies) {
      json manifest;
      auto info = inspect(copy.dir, s, &manifest);
      if (!info.committed) continue;  // a save that never finished, or no such step
      Status st;
      if (!info.valid) st = make_error("CorruptCheckpoint", info.path.string() + ": " + info.reason);
      const json* shard = st ? shard_of(manifest, o.rank) : nullptr;
      if (st && !shard) {
        st = make_error("WorldMismatch", fmt::format("{}: no shard for rank {} (saved by a world of {})",
                                                     info.path.string(), o.rank, info.world));
      }
      if (st) {
        auto buffers = destinations(*shard);
        st = buffers ? read_shard(copy.dir, *shard, *buffers) : Status(buffers.error());
      }
      if (st) {
        info.tiers = {copy.tier};
        info.tier_paths = {copy.dir};
        return info;
      }
      if (st.error().code == "ValidationException") return st.error();
      log::warn("checkpoint step {} ({} tier) skipped: {}", s, copy.tier, st.error().message);
      last = st.error();
    }
  }
  return last;
}

// Memory for every buffer a shard holds, in `storage`, by name.
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
  auto info = restore(o, step, [&](const json& shard) -> Result<std::vector<MutableBuffer>> {
    out.buffers.clear();
    if (!shard.contains("buffers") || !shard["buffers"].is_array()) return std::vector<MutableBuffer>{};
    return allocate(shard, out.buffers);
  });
  if (!info) return info.error();
  out.step = info->step;
  out.world = info->world;
  out.user = info->user;
  return out;
}

Result<CheckpointInfo> Checkpointer::load_into(int64_t step, const std::vector<MutableBuffer>& buffers) const {
  return restore(options_, step, [&](const json&) -> Result<std::vector<MutableBuffer>> { return buffers; });
}

Status verify_checkpoint(const std::filesystem::path& dir) {
  json manifest;
  auto info = inspect(dir, parse_step_dir(dir.filename().string()), &manifest);
  if (!info.valid) return make_error("CorruptCheckpoint", dir.string() + ": " + info.reason);
  for (const auto& shard : manifest["shards"]) {
    std::map<std::string, std::vector<uint8_t>> storage;
    if (!shard.contains("buffers") || !shard["buffers"].is_array()) {
      return make_error("CorruptCheckpoint", dir.string() + ": shard description incomplete");
    }
    if (auto s = read_shard(dir, shard, allocate(shard, storage)); !s) return s;
  }
  return {};
}

Status prune(const std::filesystem::path& dir, int keep_last, int keep_every) {
  auto steps = steps_in(dir);
  int64_t newest_committed = -1;
  int kept = 0;
  Status result;
  for (int64_t s : steps) {
    auto path = step_dir(dir, s);
    bool committed = std::filesystem::exists(path / kManifestName);
    bool keep;
    if (!committed) {
      // Older than a commit: a save that never finished. Newer: one still being written.
      keep = newest_committed < 0 || s > newest_committed;
    } else {
      if (newest_committed < 0) newest_committed = s;
      keep = keep_last == 0 || kept < keep_last || (keep_every > 0 && s % keep_every == 0);
      ++kept;
    }
    if (!keep) {
      if (auto r = fs::remove_tree(path); !r) result = r;
    }
  }
  return result;
}

}  // namespace endure::ckpt
