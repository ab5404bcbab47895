#include "provider/local/cluster_index_registry.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace endure::provider {
namespace {

// Holds the registry's lock (flock on a file in it) for its lifetime: claims from two
// controllers are serialised.
class RegistryLock {
 public:
  explicit RegistryLock(const std::filesystem::path& dir) {
    fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RegistryLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Who holds an index: "" when nobody does, or the holder's folder is gone.
std::string live_holder(const std::filesystem::path& claim) {
  auto text = fs::read_file(claim);
  if (!text || text->empty()) return "";
  std::error_code ec;
  return std::filesystem::is_directory(*text, ec) ? *text : "";
}

}  // namespace

ClusterIndexRegistry::ClusterIndexRegistry(std::filesystem::path dir, int max_index)
    : dir_(std::move(dir)), max_index_(max_index) {}

Result<int> ClusterIndexRegistry::claim(const std::filesystem::path& owner, int wanted) {
  if (auto s = fs::make_dirs(owner, 0700); !s) return s.error();
  if (auto s = fs::make_dirs(dir_, 0755); !s) return s.error();
  std::error_code ec;
  const std::string me = std::filesystem::canonical(owner, ec).string();
  if (ec) return make_error("ProviderError", "resolve " + owner.string() + ": " + ec.message());
  RegistryLock lock(dir_);
  if (!lock.held()) {
    return make_error("ProviderError",
                      "lock " + (dir_ / ".lock").string() + ": " + std::strerror(errno));
  }
  auto take = [&](int index) -> Result<int> {
    if (auto s = fs::atomic_write_file(dir_ / std::to_string(index), me, 0644); !s)
      return s.error();
    return index;
  };
  if (wanted > 0) {
    std::string holder = live_holder(dir_ / std::to_string(wanted));
    if (holder == me) return wanted;  // every reconcile pass asks: no write then
    if (holder.empty()) return take(wanted);
    return make_error("ResourceInUse", "cluster index " + std::to_string(wanted) +
                                           " (its addresses and Slurm ports) is held on this "
                                           "host by " +
                                           holder);
  }
  int free_index = 0;
  for (int index = 1; index <= max_index_; ++index) {
    std::string holder = live_holder(dir_ / std::to_string(index));
    if (holder == me) return index;
    if (holder.empty() && free_index == 0) free_index = index;
  }
  if (free_index == 0) {
    return make_error("ResourceInUse", "the local provider runs at most " +
                                           std::to_string(max_index_) +
                                           " clusters on this host at once, across every "
                                           "endured on it; delete one first");
  }
  return take(free_index);
}

Status ClusterIndexRegistry::release(const std::filesystem::path& owner) {
  std::error_code ec;
  // The owner folder may be gone already: compare the path as it was claimed.
  std::filesystem::path me = std::filesystem::weakly_canonical(owner, ec);
  if (ec) me = owner;
  RegistryLock lock(dir_);
  if (!lock.held()) return {};  // no registry: nothing was claimed
  for (int index = 1; index <= max_index_; ++index) {
    auto claim = dir_ / std::to_string(index);
    auto text = fs::read_file(claim);
    if (text && *text == me.string() && ::unlink(claim.c_str()) != 0 && errno != ENOENT) {
      return make_error("ProviderError", "remove " + claim.string() + ": " + std::strerror(errno));
    }
  }
  return {};
}

}  // namespace endure::provider
