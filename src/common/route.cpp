#include "common/route.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace endure::net {

Result<std::string> source_address_toward(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(address.c_str(), "9", &hints, &found); rc != 0) {
    return make_error("HostUnreachable", address + ": " + gai_strerror(rc));
  }
  Result<std::string> out = make_error("HostUnreachable", address + ": no route");
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* where =
          local.ss_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
              : &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr;
      if (inet_ntop(local.ss_family, where, text, sizeof text)) out = std::string(text);
    }
    ::close(fd);
    if (out) break;
  }
  freeaddrinfo(found);
  return out;
}

}  // namespace endure::net
