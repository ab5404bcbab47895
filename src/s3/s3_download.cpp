// Ranged parallel GETs into a caller's buffer or into a file.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fs.h"
#include "s3/parallel.h"
#include "s3/request_url.h"
#include "s3/s3_client.h"

namespace endure::s3 {

Status S3Client::ranged_get(const std::string& bucket, const std::string& key, std::uint64_t size,
                            const std::string& etag,
                            const std::function<bool(std::uint64_t, const char*, size_t)>& write) {
  const std::uint64_t part = config_.part_size;
  size_t ranges = static_cast<size_t>((size + part - 1) / part);
  return parallel_for(ranges, config_.parallelism, [&](size_t i) -> Status {
    std::uint64_t offset = i * part;
    std::uint64_t length = std::min<std::uint64_t>(part, size - offset);
    std::uint64_t written = 0;
    HttpRequest get;
    get.url = object_url(config_, bucket, key);
    get.headers.push_back("Range: bytes=" + std::to_string(offset) + "-" +
                          std::to_string(offset + length - 1));
    // Every range from the version HEAD saw: S3 refuses the others (412), and a server that
    // ignores If-Match still names the version it sent in its ETag, checked below.
    if (!etag.empty()) get.headers.push_back("If-Match: " + etag);
    get.sink_reset = [&] { written = 0; };
    get.sink = [&](const char* data, size_t n) {
      // More than the range asked for: a server that ignored Range, or an object that changed.
      if (written + n > length) return false;
      if (!write(offset + written, data, n)) return false;
      written += n;
      return true;
    };
    auto r = execute(get, "GetObject", bucket, key);
    if (!r) return r.error();
    if (auto sent = r->headers.find("etag");
        !etag.empty() && sent != r->headers.end() && sent->second != etag) {
      return make_error("PreconditionFailed", "GetObject s3://" + bucket + "/" + key +
                                                  ": the object changed while it was read (ETag " +
                                                  etag + ", then " + sent->second + ")");
    }
    if (written != length) {
      return make_error("IncompleteBody",
                        "GetObject s3://" + bucket + "/" + key + " bytes " +
                            std::to_string(offset) + "+" + std::to_string(length) + ": got " +
                            std::to_string(written) + " bytes (the object changed or shrank?)");
    }
    return Status::Ok();
  });
}

Result<std::uint64_t> S3Client::download_to_buffer(const std::string& bucket,
                                                   const std::string& key, char* buffer,
                                                   std::uint64_t capacity) {
  auto info = head_object(bucket, key);
  if (!info) return info.error();
  if (info->size > capacity) {
    return make_error("BufferTooSmall",
                      "GetObject s3://" + bucket + "/" + key + ": " + std::to_string(info->size) +
                          " bytes do not fit a buffer of " + std::to_string(capacity));
  }
  Status st = ranged_get(bucket, key, info->size, info->etag,
                         [&](std::uint64_t offset, const char* data, size_t n) {
                           std::memcpy(buffer + offset, data, n);
                           return true;
                         });
  if (!st) return st.error();
  return info->size;
}

Status S3Client::download_to_file(const std::string& bucket, const std::string& key,
                                  const std::filesystem::path& path) {
  auto info = head_object(bucket, key);
  if (!info) return info.error();
  std::string temp = path.string() + ".s3-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    return make_error("IOError", "download of s3://" + bucket + "/" + key + ": cannot create " +
                                     temp + ": " + std::strerror(errno));
  }
  auto fail = [&](const std::string& what, int err) -> Status {
    ::close(fd);
    ::unlink(temp.c_str());
    return make_error("IOError", "download of s3://" + bucket + "/" + key + " to " + path.string() +
                                     ": " + what +
                                     (err ? std::string(": ") + std::strerror(err) : ""));
  };
  // mkstemp's 0600 would outlive the rename; a downloaded file reads like a written one.
  if (::fchmod(fd, 0644) != 0) return fail("fchmod", errno);
  if (::ftruncate(fd, static_cast<off_t>(info->size)) != 0) return fail("ftruncate", errno);
  int write_errno = 0;
  Status st = ranged_get(bucket, key, info->size, info->etag,
                         [&](std::uint64_t offset, const char* data, size_t n) {
                           while (n > 0) {
                             ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
                             if (w < 0 && errno == EINTR) continue;
                             if (w <= 0) {
                               write_errno = errno;
                               return false;
                             }
                             data += w;
                             n -= static_cast<size_t>(w);
                             offset += static_cast<std::uint64_t>(w);
                           }
                           return true;
                         });
  if (!st) {
    ::close(fd);
    ::unlink(temp.c_str());
    if (write_errno != 0) {
      return make_error("IOError",
                        "download to " + path.string() + ": write: " + std::strerror(write_errno));
    }
    return st;
  }
  if (::fsync(fd) != 0) return fail("fsync", errno);
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    return make_error("IOError", "download to " + path.string() + ": close failed");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return make_error("IOError",
                      "download to " + path.string() + ": rename: " + std::strerror(err));
  }
  return fs::sync_dir(path.parent_path().empty() ? "." : path.parent_path());
}

}  // namespace endure::s3
