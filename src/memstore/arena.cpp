#include "memstore/arena.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

#include "common/error_codes.h"
#include "common/fs.h"
#include "common/log.h"
#include "train/ckpt/format.h"

namespace endure::memstore {
namespace fsys = std::filesystem;
namespace {

constexpr const char* kPartMark = ".part-";
constexpr const char* kPoolDir = ".pool";
// Smaller objects (descriptors, manifests) are not worth keeping the pages of.
constexpr uint64_t kPoolMinBytes = 1u << 20;

bool is_part(const fsys::path& p) {
  return p.filename().string().find(kPartMark) != std::string::npos;
}

int64_t step_of(const std::string& folder) {
  if (folder.size() != 17 || folder.rfind("step-", 0) != 0) return -1;
  int64_t step = 0;
  for (char c : folder.substr(5)) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

int64_t mtime_ns(const fsys::path& p) {
  std::error_code ec;
  auto t = fsys::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

bool rank_object(const std::string& o, const char* suffix) {
  std::string s(suffix);
  if (o.size() != 10 + s.size() || o.rfind("rank-", 0) != 0 || o.substr(10) != s) return false;
  return std::all_of(o.begin() + 5, o.begin() + 10, [](char c) { return c >= '0' && c <= '9'; });
}

// ckpt::shard_name()'s form.
bool is_shard(const std::string& o) { return rank_object(o, ".shard"); }

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Status check_run(const std::string& run) {
  bool ok =
      !run.empty() && run.size() <= 128 && run[0] != '.' &&
      std::all_of(run.begin(), run.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  if (!ok)
    return invalid("run: must be 1 to 128 of A-Z a-z 0-9 . _ - and not start with a dot, not '" +
                   run + "'");
  return Status::Ok();
}

Status check_object(const std::string& object) {
  if (object == ckpt::kManifestName || rank_object(object, ".shard") ||
      rank_object(object, ".json"))
    return Status::Ok();
  return invalid(
      "object: must be rank-<5 digits>.shard, rank-<5 digits>.json or MANIFEST.json, not '" +
      object + "'");
}

Put::Put(Arena* arena, std::string run, int64_t step, std::string object, fsys::path part,
         fsys::path final, uint64_t size, int fd)
    : arena_(arena),
      run_(std::move(run)),
      step_(step),
      object_(std::move(object)),
      part_(std::move(part)),
      final_(std::move(final)),
      size_(size),
      fd_(fd) {}

Put::~Put() {
  if (map_ != nullptr) ::munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
  if (!done_) {
    ::unlink(part_.c_str());
    arena_->finish_put(*this, false);
  }
}

Status Put::map() {
  // A reused file may be longer (its tail's pages go back) or shorter.
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) return fs::io_error("size", part_);
  if (size_ == 0) return Status::Ok();
  // The object's pages, taken at once (ENOSPC now rather than SIGBUS later), written into
  // with a copy each: a network read's small pieces cost no system call each.
  if (int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(size_)); err != 0) {
    errno = err;
    return fs::io_error("allocate", part_);
  }
  void* p = ::mmap(nullptr, size_, PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
  if (p == MAP_FAILED) return fs::io_error("map", part_);
  map_ = static_cast<char*>(p);
  return Status::Ok();
}

Status Put::write(const void* data, size_t size) {
  if (done_ || written_ + size > size_)
    return invalid(fmt::format("body: more than the {} bytes announced", size_));
  std::memcpy(map_ + written_, data, size);
  written_ += size;
  return Status::Ok();
}

char* Put::next(size_t* room) {
  *room = done_ ? 0 : static_cast<size_t>(size_ - written_);
  return map_ + written_;
}

void Put::wrote(size_t size) { written_ += std::min<uint64_t>(size, size_ - written_); }

Status Put::commit() {
  if (written_ != size_)
    return invalid(fmt::format("body: {} bytes of the {} announced", written_, size_));
  // tmpfs: no fsync; the rename alone orders the object's appearance after its bytes.
  if (map_ != nullptr) ::munmap(map_, size_);
  map_ = nullptr;
  ::close(fd_);
  fd_ = -1;
  if (::rename(part_.c_str(), final_.c_str()) != 0) return fs::io_error("rename", final_);
  done_ = true;
  arena_->finish_put(*this, true);
  return Status::Ok();
}

Result<std::unique_ptr<Arena>> Arena::open(const fsys::path& root, uint64_t capacity) {
  if (auto made = fs::make_dirs(root, 0700); !made) return made.error();
  std::unique_ptr<Arena> arena(new Arena(root, capacity));
  std::error_code ec;
  fsys::remove_all(root / kPoolDir, ec);  // a pool is this process's alone
  std::vector<fsys::path> parts;
  for (auto it = fsys::recursive_directory_iterator(root, ec); !ec && it != fsys::end(it);
       it.increment(ec))
    if (it->is_regular_file() && is_part(it->path())) parts.push_back(it->path());
  for (const auto& p : parts) fsys::remove(p, ec);
  if (!parts.empty())
    log::warn("memory store: dropped {} objects a stopped store left half written", parts.size());
  std::lock_guard lock(arena->mu_);
  auto held = arena->held_locked();
  // When a held step's objects came is not known: counted from now, so that a save left
  // unfinished still shows as lag.
  auto now = std::chrono::steady_clock::now();
  for (const auto& h : held)
    if (!fsys::is_empty(arena->step_dir(h.run, h.step), ec))
      arena->arrivals_[{h.run, h.step}] = {now, h.complete};
  if (arena->stats_.used_bytes > capacity) {
    auto drops = evict_for(held, arena->stats_.used_bytes, capacity, 0);
    for (const auto& s : drops.value_or(std::vector<HeldStep>{})) arena->drop_locked(s, true);
    arena->held_locked();
    arena->trim_pool_locked(0);
  }
  return arena;
}

fsys::path Arena::step_dir(const std::string& run, int64_t step) const {
  return root_ / run / fmt::format("step-{:012d}", step);
}

std::vector<HeldStep> Arena::held_locked() {
  std::vector<HeldStep> held;
  std::error_code ec;
  uint64_t objects = 0;
  for (const auto& run : fsys::directory_iterator(root_, ec)) {
    if (!run.is_directory()) continue;
    std::error_code ec2;
    for (const auto& step : fsys::directory_iterator(run.path(), ec2)) {
      int64_t n = step_of(step.path().filename().string());
      if (n < 0 || !step.is_directory()) continue;
      HeldStep h{run.path().filename().string(), n, 0, false, mtime_ns(step.path())};
      std::error_code ec3;
      for (const auto& obj : fsys::directory_iterator(step.path(), ec3)) {
        std::error_code ec4;
        auto size = obj.file_size(ec4);
        if (ec4 || is_part(obj.path())) continue;
        h.bytes += size;
        ++objects;
        if (obj.path().filename() == ckpt::kManifestName) h.complete = true;
      }
      held.push_back(std::move(h));
    }
  }
  stats_.objects = objects;
  stats_.pool_bytes = pool_bytes_;
  uint64_t used = reserved_ + pool_bytes_;
  for (const auto& h : held) used += h.bytes;
  stats_.used_bytes = used;
  return held;
}

void Arena::recycle_locked(const fsys::path& file, uint64_t size) {
  std::error_code ec;
  if (size >= kPoolMinBytes && !readers_.count(file.string())) {
    auto pooled = root_ / kPoolDir / std::to_string(pool_names_++);
    fsys::create_directories(pooled.parent_path(), ec);
    if (::rename(file.c_str(), pooled.c_str()) == 0) {
      pool_.emplace(size, pooled);
      pool_bytes_ += size;
      return;
    }
  }
  fsys::remove(file, ec);
}

bool Arena::reuse_locked(const fsys::path& part, uint64_t size) {
  auto it = pool_.lower_bound(size);
  if (it == pool_.end() || size < kPoolMinBytes) return false;
  bool moved = ::rename(it->second.c_str(), part.c_str()) == 0;
  if (!moved) {
    std::error_code ec;
    fsys::remove(it->second, ec);
  }
  pool_bytes_ -= it->first;
  pool_.erase(it);
  return moved;
}

void Arena::trim_pool_locked(uint64_t incoming) {
  while (!pool_.empty() && stats_.used_bytes + incoming > stats_.capacity_bytes) {
    auto largest = std::prev(pool_.end());
    std::error_code ec;
    fsys::remove(largest->second, ec);
    pool_bytes_ -= largest->first;
    stats_.used_bytes -= largest->first;
    pool_.erase(largest);
  }
  stats_.pool_bytes = pool_bytes_;
}

void Arena::drop_locked(const HeldStep& s, bool evicted) {
  // Part files of a step being dropped are written on by their Put, whose reservation stays
  // counted until it ends: only whole objects go.
  arrivals_.erase({s.run, s.step});
  auto dir = step_dir(s.run, s.step);
  std::error_code ec;
  uint64_t freed = 0;
  for (const auto& obj : fsys::directory_iterator(dir, ec)) {
    if (is_part(obj.path())) continue;
    std::error_code ec2;
    auto size = obj.file_size(ec2);
    if (ec2) continue;
    recycle_locked(obj.path(), size);
    freed += size;
  }
  fsys::remove(dir, ec);  // fails (kept) while a part file is in it
  if (!evicted) return;
  ++stats_.evicted_steps;
  log::info("memory store: evicted {} step {} ({} bytes)", s.run, s.step, freed);
}

Result<std::unique_ptr<Put>> Arena::begin_put(const std::string& run, int64_t step,
                                              const std::string& object, uint64_t size) {
  if (auto ok = check_run(run); !ok) return ok.error();
  if (auto ok = check_object(object); !ok) return ok.error();
  if (step < 0) return invalid("step: must be 0 or more");
  std::unique_lock lock(mu_);
  auto held = held_locked();
  // The pool is room to be had at once: eviction is judged as if it were free.
  auto drops = evict_for(held, stats_.used_bytes - pool_bytes_, stats_.capacity_bytes, size);
  if (!drops) {
    ++stats_.refused_puts;
    return make_error(
        "InsufficientStorage",
        fmt::format("memory store: {} step {} {} ({} bytes) does not fit: {} of {} bytes "
                    "held by steps that must stay",
                    run, step, object, size, stats_.used_bytes - pool_bytes_,
                    stats_.capacity_bytes));
  }
  for (const auto& s : *drops) drop_locked(s, true);
  auto dir = step_dir(run, step);
  if (auto made = fs::make_dirs(dir, 0700); !made) return made.error();
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto part = dir / fmt::format(".{}{}{:016x}", object, kPartMark, rng());
  bool reused = reuse_locked(part, size);
  held_locked();
  trim_pool_locked(size);
  int fd = ::open(part.c_str(), O_RDWR | O_CREAT | (reused ? 0 : O_EXCL) | O_CLOEXEC, 0600);
  if (fd < 0) return fs::io_error("create", part);
  reserved_ += size;
  stats_.used_bytes += size;
  std::unique_ptr<Put> put(new Put(this, run, step, object, part, dir / object, size, fd));
  lock.unlock();  // a Put that fails to map gives its room back, under the lock
  if (Status mapped = put->map(); !mapped) return mapped.error();
  return put;
}

void Arena::finish_put(const Put& put, bool committed) {
  std::lock_guard lock(mu_);
  reserved_ -= std::min(reserved_, put.size_);
  if (committed) {
    ++stats_.puts;
    stats_.put_bytes += put.size_;
    auto now = std::chrono::steady_clock::now();
    auto& step = arrivals_.try_emplace({put.run_, put.step_}, Arrivals{now, false}).first->second;
    // A manifest put again (a retried save) does not complete the step a second time.
    if (put.object_ == ckpt::kManifestName && !step.complete) {
      step.complete = true;
      stats_.last_commit_seconds = seconds(now - step.first);
    }
  }
  // The reservation became the object, or nothing; an object it replaced is given back.
  held_locked();
}

Arena::Reading::~Reading() {
  ::close(fd_);
  std::lock_guard lock(arena_->mu_);
  if (--arena_->readers_[path_] == 0) arena_->readers_.erase(path_);
}

Result<std::unique_ptr<Arena::Reading>> Arena::open_object(const std::string& run, int64_t step,
                                                           const std::string& object) {
  auto missing = [&] {
    return make_error(errors::kResourceNotFound,
                      fmt::format("no such object: {} step {} {}", run, step, object));
  };
  if (!check_run(run) || !check_object(object) || step < 0) return missing();
  auto path = step_dir(run, step) / object;
  std::lock_guard lock(mu_);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    return missing();
  }
  ++readers_[path.string()];
  return std::unique_ptr<Reading>(
      new Reading(this, path.string(), fd, static_cast<uint64_t>(st.st_size)));
}

void Arena::count_get(const std::string& object, uint64_t bytes) {
  std::lock_guard lock(mu_);
  ++stats_.gets;
  if (is_shard(object)) ++stats_.shard_gets;
  stats_.get_bytes += bytes;
}

std::vector<Arena::StepObjects> Arena::list(const std::string& run) {
  std::vector<StepObjects> out;
  if (!check_run(run)) return out;
  std::lock_guard lock(mu_);
  for (const auto& s : held_locked()) {
    if (s.run != run) continue;
    StepObjects so{s, {}};
    std::error_code ec;
    for (const auto& obj : fsys::directory_iterator(step_dir(run, s.step), ec)) {
      if (is_part(obj.path())) continue;
      std::error_code ec2;
      so.objects.emplace_back(obj.path().filename().string(), obj.file_size(ec2));
    }
    std::sort(so.objects.begin(), so.objects.end());
    out.push_back(std::move(so));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.step.step < b.step.step; });
  return out;
}

Status Arena::remove(const std::string& run, std::optional<int64_t> step) {
  if (auto ok = check_run(run); !ok) return ok.error();
  std::lock_guard lock(mu_);
  for (const auto& s : held_locked())
    if (s.run == run && (!step || s.step == *step)) drop_locked(s, false);
  if (!step) {
    std::error_code ec;
    fsys::remove(root_ / run, ec);
  }
  held_locked();
  return Status::Ok();
}

ArenaStats Arena::stats() {
  std::lock_guard lock(mu_);
  held_locked();  // refreshes the object count
  // A run's newest step with objects is the save under way; an incomplete step below a
  // complete one was given up, and is no lag.
  auto now = std::chrono::steady_clock::now();
  double lag = 0;
  for (auto it = arrivals_.begin(); it != arrivals_.end(); ++it) {
    auto next = std::next(it);
    bool newest = next == arrivals_.end() || next->first.first != it->first.first;
    if (newest && !it->second.complete) lag = std::max(lag, seconds(now - it->second.first));
  }
  stats_.replication_lag_seconds = lag;
  return stats_;
}

}  // namespace endure::memstore
