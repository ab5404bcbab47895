#include "train/ckpt/staging.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"

namespace endure::ckpt {

StagingSlot::StagingSlot(StagingSlot&& o) noexcept
    : file_(std::move(o.file_)), fd_(o.fd_), data_(o.data_), size_(o.size_), mapped_(o.mapped_) {
  o.fd_ = -1;
  o.data_ = nullptr;
  o.size_ = o.mapped_ = 0;
}

StagingSlot::~StagingSlot() {
  unmap();
  if (fd_ >= 0) ::close(fd_);
}

void StagingSlot::unmap() {
  if (data_) ::munmap(data_, mapped_);
  data_ = nullptr;
  mapped_ = 0;
}

Status StagingSlot::resize(size_t bytes) {
  if (bytes == size_ && data_) return {};
  auto fail = [&](const std::string& what) {
    return make_error("IOError", what + " " + (file_.empty() ? "staging memory" : file_.string()) +
                                     ": " + std::strerror(errno));
  };
  if (file_.empty()) {
    if (bytes <= mapped_) {  // anonymous memory only grows: its pages are touched already
      size_ = bytes;
      return {};
    }
    unmap();
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return fail("map");
    data_ = static_cast<uint8_t*>(p);
    mapped_ = size_ = bytes;
    return {};
  }
  if (fd_ < 0) {
    if (auto s = fs::make_dirs(file_.parent_path()); !s) return s;
    fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return fail("open");
  }
  // The file is the shard: exactly its size, so that readers see a whole shard.
  unmap();
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return fail("resize");
  size_ = bytes;
  if (bytes == 0) return {};
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
  if (p == MAP_FAILED) return fail("map");
  data_ = static_cast<uint8_t*>(p);
  mapped_ = bytes;
  return {};
}

}  // namespace endure::ckpt
