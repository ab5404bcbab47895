#include "common/framed_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace endure::net {
namespace {

Error socket_error(const char* what) {
  return make_error("SocketError", fmt::format("{}: {}", what,
                                               errno == EAGAIN ? "timed out" : std::strerror(errno)));
}

}  // namespace

Status send_all(int fd, const void* data, size_t size) {
  auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return socket_error("send");
    p += n, size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status recv_all(int fd, void* data, size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return make_error("SocketError", "recv: the peer closed the connection");
    if (n < 0) return socket_error("recv");
    p += n, size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status send_file(int fd, int file_fd, uint64_t offset, uint64_t size) {
  auto off = static_cast<off_t>(offset);
  while (size > 0) {
    ssize_t n = ::sendfile(fd, file_fd, &off, std::min<uint64_t>(size, 1u << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? make_error("SocketError", "sendfile: the file is shorter")
                              : socket_error("sendfile");
    size -= static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status send_frame(int fd, const json& header) {
  std::string text = header.dump();
  uint32_t n = static_cast<uint32_t>(text.size());
  unsigned char len[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                          static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  text.insert(0, reinterpret_cast<const char*>(len), 4);
  return send_all(fd, text.data(), text.size());
}

Result<json> recv_frame(int fd, size_t max_bytes) {
  unsigned char len[4];
  if (auto s = recv_all(fd, len, 4); !s) return s.error();
  size_t n = len[0] | (len[1] << 8) | (len[2] << 16) | (size_t(len[3]) << 24);
  if (n > max_bytes) return make_error("BadFrame", fmt::format("a header of {} bytes (at most {})", n, max_bytes));
  std::string text(n, '\0');
  if (auto s = recv_all(fd, text.data(), n); !s) return s.error();
  json header = json::parse(text, nullptr, false);
  if (!header.is_object()) return make_error("BadFrame", "a header that is not a JSON object");
  return header;
}

void set_timeouts(int fd, double timeout_seconds) {
  if (timeout_seconds <= 0) return;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_seconds);
  tv.tv_usec = static_cast<suseconds_t>((timeout_seconds - double(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

Result<int> connect_tcp(const std::string& address, int port, double timeout_seconds) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return make_error("SocketError", fmt::format("{}: {}", address, ::gai_strerror(rc)));
  Error last = make_error("SocketError", "no address for " + address);
  for (auto* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    set_timeouts(fd, timeout_seconds);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    last = socket_error(fmt::format("connect {}:{}", address, port).c_str());
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return last;
}

}  // namespace endure::net
