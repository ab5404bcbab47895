#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "common/fs.h"
#include "common/log.h"
#include "endure/checkpoint.h"
#include "train/ckpt/format.h"

#include <xxhash.h>
#include <fmt/format.h>

namespace endure::ckpt {
namespace {

Error io_error(const std::string& what) {
  return make_error("IOError", what + ": " + std::strerror(errno));
}

// write, fsync, rename, fsync the folder: the shard appears whole or not at all.
Status write_durable(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  auto tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("create " + tmp.string());
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, std::min<size_t>(size - done, 64u << 20));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Error e = io_error("write " + tmp.string());
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Error e = io_error("fsync " + tmp.string());
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = io_error("rename " + tmp.string());
    ::unlink(tmp.c_str());
    return e;
  }
  return fs::sync_dir(path.parent_path());
}

Result<json> read_sealed(const std::filesystem::path& path) {
  auto text = fs::read_file(path);
  if (!text) return make_error("CorruptCheckpoint", path.string() + ": missing");
  return unseal(*text, path.string());
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
  if (m->value("step", -1LL) != step || !m->contains("shards") || !(*m)["shards"].is_array() ||
      static_cast<int>((*m)["shards"].size()) != info.world) {
    info.reason = "manifest does not describe this step's shards";
    return info;
  }
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
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    int64_t s = parse_step_dir(e.path().filename().string());
    if (s >= 0 && e.is_directory()) steps.push_back(s);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

}  // namespace

struct Checkpointer::Impl {
  std::mutex mu;
  std::condition_variable cv;
  bool busy = false;  // a save is being persisted
  bool stop = false;
  bool has_job = false;
  int64_t step = -1;
  int64_t last_step = -1;
  json user;
  json layout;
  std::vector<uint8_t> staging;  // reused: touched once, not allocated per save
  Status status;
  std::thread worker;
};

Checkpointer::Checkpointer(Options options) : options_(std::move(options)), impl_(new Impl) {}

Result<std::unique_ptr<Checkpointer>> Checkpointer::open(const Options& options) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world) {
    return make_error("ValidationException", "rank/world: need 0 <= rank < world");
  }
  if (options.chunk_bytes < 4096) return make_error("ValidationException", "chunk_bytes: at least 4096");
  if (options.keep_last < 0 || options.keep_every < 0) {
    return make_error("ValidationException", "keep_last/keep_every: must not be negative");
  }
  if (auto s = fs::make_dirs(options.dir); !s) return s.error();
  std::unique_ptr<Checkpointer> c(new Checkpointer(options));
  Impl& im = *c->impl_;
  Checkpointer* self = c.get();
  im.worker = std::thread([self] {
    Impl& im = *self->impl_;
    const Options& o = self->options_;
    for (;;) {
      std::unique_lock lock(im.mu);
      im.cv.wait(lock, [&] { return im.has_job || im.stop; });
      if (!im.has_job) return;
      lock.unlock();
      // Persist: this rank's shard, its description, then (rank 0) the commit.
      auto dir = step_dir(o.dir, im.step);
      Status s = fs::make_dirs(dir);
      if (s) s = write_durable(dir / shard_name(o.rank), im.staging.data(), im.staging.size());
      json desc = {{"magic", "endure-ckpt"}, {"version", kFormatVersion}, {"step", im.step},
                   {"rank", o.rank}, {"file", shard_name(o.rank)}, {"size", im.staging.size()},
                   {"chunk_bytes", o.chunk_bytes},
                   {"chunks", chunk_checksums(im.staging.data(), im.staging.size(), o.chunk_bytes)},
                   {"buffers", im.layout}};
      if (s) s = fs::atomic_write_file(dir / descriptor_name(o.rank), seal(desc).dump());
      if (s && o.rank == 0) {
        json shards = json::array();
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(o.commit_timeout_seconds * 1000));
        for (int r = 0; r < o.world && s; ++r) {
          for (;;) {
            auto d = read_sealed(dir / descriptor_name(r));
            if (d && d->value("step", -1LL) == im.step) {
              d->erase("magic");
              d->erase("version");
              d->erase("step");
              shards.push_back(*d);
              break;
            }
            if (std::chrono::steady_clock::now() > deadline) {
              s = make_error("CommitTimeout", "rank " + std::to_string(r) +
                                                  " did not make its shard of step " +
                                                  std::to_string(im.step) + " durable in time");
              break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }
        if (s) {
          json manifest = {{"magic", "endure-ckpt"}, {"version", kFormatVersion},
                           {"step", im.step},       {"world", o.world},
                           {"user", im.user},       {"shards", shards}};
          s = fs::atomic_write_file(dir / kManifestName, seal(manifest).dump());
        }
        if (s) prune(o.dir, o.keep_last, o.keep_every);
      }
      if (!s) log::warn("checkpoint step {}: {}", im.step, s.error().message);
      lock.lock();
      im.status = s;
      im.has_job = false;
      im.busy = false;
      im.cv.notify_all();
    }
  });
  return c;
}

Checkpointer::~Checkpointer() {
  wait();
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

Status Checkpointer::save(int64_t step, const std::vector<Buffer>& buffers, const json& user) {
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
  wait();
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  if (step < 0 || step <= im.last_step) {
    return make_error("ValidationException", "step: must be above the last saved step (" +
                                                 std::to_string(im.last_step) + ")");
  }
  size_t total = kShardHeaderBytes;
  for (const auto& b : buffers) total += b.size;
  im.staging.resize(total);
  std::string header = shard_header(options_.rank);
  std::memcpy(im.staging.data(), header.data(), header.size());
  json layout = json::array();
  size_t off = kShardHeaderBytes;
  for (const auto& b : buffers) {
    if (b.size) std::memcpy(im.staging.data() + off, b.data, b.size);
    layout.push_back({{"name", b.name}, {"offset", off}, {"size", b.size}});
    off += b.size;
  }
  im.step = step;
  im.last_step = step;
  im.user = user;
  im.layout = std::move(layout);
  im.has_job = true;
  im.busy = true;
  im.cv.notify_all();
  return {};
}

Status Checkpointer::wait() {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return !impl_->busy; });
  return impl_->status;
}

std::vector<CheckpointInfo> Checkpointer::list() const {
  std::vector<CheckpointInfo> out;
  for (int64_t s : steps_in(options_.dir)) out.push_back(inspect(step_dir(options_.dir, s), s));
  return out;
}

std::optional<CheckpointInfo> Checkpointer::latest() const {
  for (auto& info : list()) {
    if (info.valid) return info;
  }
  return std::nullopt;
}

namespace {

// Reads a shard straight into the caller's buffers in file order, checking each chunk's
// XXH3 as its bytes arrive.
Status read_into(const std::filesystem::path& dir, const json& shard,
                 const std::vector<MutableBuffer>& buffers) {
  auto path = dir / shard.value("file", "");
  size_t chunk = shard.value("chunk_bytes", size_t{0});
  const auto& sums = shard["chunks"];
  uint64_t size = shard.value("size", 0ULL);
  struct Segment {
    uint8_t* dst;
    size_t size;
  };
  uint8_t header[kShardHeaderBytes];
  std::vector<Segment> segments = {{header, kShardHeaderBytes}};
  size_t next = kShardHeaderBytes;
  for (const auto& b : shard["buffers"]) {
    std::string name = b.value("name", "");
    size_t off = b.value("offset", size_t{0}), n = b.value("size", size_t{0});
    auto it = std::find_if(buffers.begin(), buffers.end(), [&](auto& m) { return m.name == name; });
    if (it == buffers.end() || it->size != n) {
      return make_error("ValidationException",
                        "buffers: \"" + name + "\" of " + std::to_string(n) +
                            " bytes must be given with that size");
    }
    if (off != next) return make_error("CorruptCheckpoint", path.string() + ": buffers not contiguous");
    segments.push_back({static_cast<uint8_t*>(it->data), n});
    next += n;
  }
  if (next != size || chunk == 0) return make_error("CorruptCheckpoint", path.string() + ": sizes disagree");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("CorruptCheckpoint", path.string() + ": cannot open");
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // a larger readahead: read once, in order
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  uint64_t pos = 0, chunk_end = std::min<uint64_t>(chunk, size);
  size_t index = 0;
  Status result;
  auto check_chunk = [&]() -> bool {
    std::string got = fmt::format("{:016x}", XXH3_64bits_digest(state));
    if (index >= sums.size() || sums[index] != got) {
      result = make_error("CorruptCheckpoint", fmt::format("{}: chunk {} (bytes {}..) fails its checksum",
                                                           path.string(), index, index * chunk));
      return false;
    }
    ++index;
    XXH3_64bits_reset(state);
    chunk_end = std::min<uint64_t>(chunk_end + chunk, size);
    return true;
  };
  for (const auto& seg : segments) {
    size_t done = 0;
    while (result && done < seg.size) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(seg.size - done, chunk_end - pos));
      ssize_t got = ::pread(fd, seg.dst + done, n, static_cast<off_t>(pos));
      if (got <= 0) {
        result = make_error("CorruptCheckpoint", path.string() + ": shorter than the manifest says");
        break;
      }
      XXH3_64bits_update(state, seg.dst + done, static_cast<size_t>(got));
      done += static_cast<size_t>(got);
      pos += static_cast<uint64_t>(got);
      if (pos == chunk_end && !check_chunk()) break;
    }
    if (!result) break;
  }
  if (result && size == 0) check_chunk();
  if (result && index != sums.size()) result = make_error("CorruptCheckpoint", path.string() + ": chunk count differs");
  if (result && std::memcmp(header, kShardMagic, 8) != 0) {
    result = make_error("CorruptCheckpoint", path.string() + ": not a shard (magic)");
  }
  XXH3_freeState(state);
  ::close(fd);
  return result;
}

// Where each buffer of a shard goes (or why it cannot be restored).
using Destinations = std::function<Result<std::vector<MutableBuffer>>(const json& shard)>;

// Restores this rank's shard of `step` (the newest that verifies when step < 0) into the
// memory `destinations` names: the one read-and-verify path of load() and load_into().
Result<CheckpointInfo> restore(const Options& o, int64_t step, const Destinations& destinations) {
  std::vector<int64_t> steps;
  if (step >= 0) steps.push_back(step);
  else steps = steps_in(o.dir);
  Error last = make_error("NotFound", o.dir.string() + ": no complete, valid checkpoint");
  for (int64_t candidate : steps) {
    json manifest;
    auto info = inspect(step_dir(o.dir, candidate), candidate, &manifest);
    if (!info.committed && step < 0) continue;  // a save in progress, or one never finished
    Status s;
    if (!info.valid) s = make_error("CorruptCheckpoint", info.path.string() + ": " + info.reason);
    const json* shard = nullptr;
    if (s) {
      for (const auto& x : manifest["shards"]) {
        if (x.value("rank", -1) == o.rank) shard = &x;
      }
      if (!shard) {
        s = make_error("WorldMismatch", info.path.string() + ": no shard for rank " +
                                            std::to_string(o.rank) + " (saved by a world of " +
                                            std::to_string(info.world) + ")");
      }
    }
    if (s) {
      auto buffers = destinations(*shard);
      s = buffers ? read_into(info.path, *shard, *buffers) : Status(buffers.error());
    }
    if (s) return info;
    if (step >= 0 || s.error().code == "ValidationException") return s.error();
    log::warn("checkpoint step {} skipped: {}", info.step, s.error().message);
    last = s.error();
  }
  return last;
}

// Memory for every buffer a shard holds, in `storage`, by name.
std::vector<MutableBuffer> allocate(const json& shard,
                                    std::map<std::string, std::vector<uint8_t>>& storage) {
  std::vector<MutableBuffer> out;
  for (const auto& b : shard["buffers"]) {
    auto& v = storage[b.value("name", "")];
    v.assign(b.value("size", size_t{0}), 0);
    out.push_back({b.value("name", ""), v.data(), v.size()});
  }
  return out;
}

}  // namespace

Result<Loaded> Checkpointer::load(int64_t step) const {
  Loaded out;
  auto info = restore(options_, step, [&](const json& shard) -> Result<std::vector<MutableBuffer>> {
    out.buffers.clear();
    return allocate(shard, out.buffers);
  });
  if (!info) return info.error();
  out.step = info->step;
  out.world = info->world;
  out.user = info->user;
  return out;
}

Result<CheckpointInfo> Checkpointer::load_into(int64_t step,
                                               const std::vector<MutableBuffer>& buffers) const {
  return restore(options_, step,
                 [&](const json&) -> Result<std::vector<MutableBuffer>> { return buffers; });
}

Status verify_checkpoint(const std::filesystem::path& dir) {
  json manifest;
  auto info = inspect(dir, parse_step_dir(dir.filename().string()), &manifest);
  if (!info.valid) return make_error("CorruptCheckpoint", dir.string() + ": " + info.reason);
  for (const auto& shard : manifest["shards"]) {
    std::map<std::string, std::vector<uint8_t>> storage;
    if (auto s = read_into(dir, shard, allocate(shard, storage)); !s) return s;
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
