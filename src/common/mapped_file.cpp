#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace endure::fs {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return make_error("NotFound", path.string() + " does not exist");
    return make_error("IOError", "open " + path.string() + ": " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Error e = make_error("IOError", "stat " + path.string() + ": " + std::strerror(errno));
    ::close(fd);
    return e;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Error e = make_error("IOError", "mmap " + path.string() + ": " + std::strerror(errno));
      ::close(fd);
      return e;
    }
  }
  ::close(fd);  // the mapping keeps the file
  return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const unsigned char*>(p), size));
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace endure::fs
