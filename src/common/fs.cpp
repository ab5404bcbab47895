#include "common/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>

#include "common/ids.h"

namespace endure::fs {

Error io_error(const std::string& what, const std::filesystem::path& path) {
  return make_error("IOError", what + " " + path.string() + ": " + std::strerror(errno));
}

namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

Status sync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return io_error("fsync", dir);
  return {};
}

Status atomic_write_file(const std::filesystem::path& path, const std::string& data, int mode) {
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::filesystem::path tmp = dir / ("." + path.filename().string() + ".tmp-" + ids::random_hex(8));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return io_error("create", tmp);
  // open() applies the umask; the caller's mode (0600 for secrets) must hold exactly.
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0 || !write_all(fd, data.data(), data.size()) ||
      ::fsync(fd) != 0) {
    Error e = io_error("write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = io_error("rename", path);
    ::unlink(tmp.c_str());
    return e;
  }
  return sync_dir(dir);
}

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return make_error("NotFound", path.string() + " does not exist");
    return io_error("open", path);
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Status make_dirs(const std::filesystem::path& path, int mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return make_error("IOError", "mkdir " + path.string() + ": " + ec.message());
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
  return {};
}

Status remove_tree(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return make_error("IOError", "remove " + path.string() + ": " + ec.message());
  return {};
}

std::string tail_lines(const std::filesystem::path& path, int n) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace endure::fs
