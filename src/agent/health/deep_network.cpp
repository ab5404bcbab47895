// The network test: a server on each node that swallows what it is sent, and a client that
// sends to a peer's server for a while and counts what got there.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "agent/health/deep.h"

namespace endure::agent::health {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kBufferBytes = 1024 * 1024;
constexpr int kPollMillis = 100;                        // how soon the server notices stop()
constexpr auto kServerIdle = std::chrono::seconds(10);  // a silent client is dropped
constexpr int kConnectMillis = 3000;
constexpr int kStallMillis = 3000;  // a send that cannot go on, or a peer that never closes

std::optional<sockaddr_in> ipv4(const std::string& address, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  if (port < 0 || port > 65535 || ::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    return std::nullopt;
  }
  return sa;
}

int millis_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, 1'000'000));
}

// Reads one connection to its end (or until stop, or kServerIdle of silence), then closes it.
void drain(int conn, const std::atomic<bool>& stopping, std::vector<char>& scratch) {
  auto last_data = Clock::now();
  while (!stopping.load() && Clock::now() - last_data < kServerIdle) {
    pollfd p{conn, POLLIN, 0};
    int ready = ::poll(&p, 1, kPollMillis);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = ::recv(conn, scratch.data(), scratch.size(), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // the client's end, or an error
    last_data = Clock::now();
  }
  ::close(conn);
}

void serve(int listen_fd, const std::atomic<bool>& stopping) {
  try {
    std::vector<char> scratch(kBufferBytes);
    while (!stopping.load()) {
      pollfd p{listen_fd, POLLIN, 0};
      int ready = ::poll(&p, 1, kPollMillis);
      if (ready <= 0 || stopping.load()) continue;
      int conn = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) {
        // Out of descriptors and the like: do not spin on a listener that stays ready.
        if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) ::usleep(10'000);
        continue;
      }
      drain(conn, stopping, scratch);
    }
  } catch (...) {
    // Only the scratch allocation throws; the server then ends, and clients see refusals.
  }
}

// Connects within kConnectMillis; the socket stays non-blocking. Returns the descriptor, or
// -1 with what went wrong in error.
int connect_to(const sockaddr_in& sa, const std::string& peer, std::string& error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = fmt::format("socket: {}", strerror(errno));
    return -1;
  }
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  int err = rc == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, kConnectMillis);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      ::close(fd);
      error = fmt::format("connect to {}: no answer within {} s", peer, kConnectMillis / 1000);
      return -1;
    }
    socklen_t len = sizeof(err);
    if (ready < 0) {
      err = errno;
    } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      err = errno;
    }
  }
  if (err != 0) {
    ::close(fd);
    error = fmt::format("connect to {}: {}", peer, strerror(err));
    return -1;
  }
  return fd;
}

// Sends the buffer over and over until the deadline; nullopt, or what failed.
std::optional<std::string> send_until(int fd, Clock::time_point deadline, const std::string& peer,
                                      long long& bytes) {
  std::vector<char> buffer(kBufferBytes);
  std::uint64_t state = 0x3c6ef372fe94f82bULL;  // content that no link compresses away
  for (std::size_t i = 0; i + 8 <= buffer.size(); i += 8) {
    std::uint64_t v = splitmix64(state);
    ::memcpy(buffer.data() + i, &v, 8);
  }
  std::size_t offset = 0;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLOUT, 0};
    int timeout = std::min(kStallMillis, millis_until(deadline) + 1);
    int ready = ::poll(&p, 1, timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return fmt::format("poll on {}: {}", peer, strerror(errno));
    if (ready == 0 && timeout == kStallMillis) {
      return fmt::format("send to {}: no progress for {} s", peer, kStallMillis / 1000);
    }
    if (ready == 0) continue;  // the deadline, which the loop checks
    ssize_t n = ::send(fd, buffer.data() + offset, buffer.size() - offset, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return fmt::format("send to {}: {}", peer, strerror(errno));
    bytes += n;
    offset = (offset + static_cast<std::size_t>(n)) % buffer.size();
  }
  return std::nullopt;
}

// After our end is shut, the peer closes once it has read everything: waits for that.
std::optional<std::string> await_close(int fd, const std::string& peer) {
  auto deadline = Clock::now() + std::chrono::milliseconds(kStallMillis);
  char sink[4096];
  while (true) {
    int left = millis_until(deadline);
    if (left <= 0) {
      return fmt::format("{} did not close the connection within {} s of the end of sending", peer,
                         kStallMillis / 1000);
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return fmt::format("poll on {}: {}", peer, strerror(errno));
    if (ready == 0) continue;
    ssize_t n = ::recv(fd, sink, sizeof(sink), 0);
    if (n == 0) return std::nullopt;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return fmt::format("waiting for {} to close: {}", peer, strerror(errno));
  }
}

DeepResult run_network_check(const std::string& peer_address, int port,
                             const DeepCheckOptions& options) {
  DeepResult result;
  result.check = "network";
  std::string peer = fmt::format("{}:{}", peer_address, port);
  result.metrics = {{"mbps", 0.0}, {"bytes", 0}, {"peer", peer}};
  auto sa = ipv4(peer_address, port);
  if (!sa) {
    result.detail = fmt::format("{}: not an IPv4 address and port", peer);
    return result;
  }
  std::string error;
  int fd = connect_to(*sa, peer, error);
  if (fd < 0) {
    result.detail = error;
    return result;
  }
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                              std::max(0.0, options.network_seconds)));
  long long bytes = 0;
  auto failed = send_until(fd, deadline, peer, bytes);
  if (!failed) {
    if (::shutdown(fd, SHUT_WR) != 0) {
      failed = fmt::format("shutdown to {}: {}", peer, strerror(errno));
    } else {
      failed = await_close(fd, peer);
    }
  }
  ::close(fd);
  // Until the peer closed, so that bytes still in the socket buffers count only once there.
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  double mbps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0;
  result.metrics["mbps"] = mbps;
  result.metrics["bytes"] = bytes;
  if (failed) {
    result.detail = fmt::format("{} (after {} bytes)", *failed, bytes);
  } else if (mbps < options.min_network_mbps) {
    result.detail = fmt::format("{:.1f} MB/s to {}, below the minimum {:g} MB/s", mbps, peer,
                                options.min_network_mbps);
  } else {
    result.passed = true;
    result.detail = fmt::format("{:.1f} MB/s to {} for {:.1f} s", mbps, peer, seconds);
  }
  return result;
}

}  // namespace

BandwidthServer::~BandwidthServer() { stop(); }

bool BandwidthServer::start(const std::string& address, int port) {
  if (fd_ >= 0) return false;  // already listening
  auto sa = ipv4(address, port);
  if (!sa) return false;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&*sa), sizeof(*sa)) != 0 ||
      ::listen(fd, 16) != 0) {
    ::close(fd);
    return false;
  }
  stopping_ = false;
  try {
    thread_ = std::thread(serve, fd, std::cref(stopping_));
  } catch (...) {
    ::close(fd);
    return false;
  }
  fd_ = fd;
  return true;
}

void BandwidthServer::stop() {
  stopping_ = true;
  // The thread sees stopping_ within kPollMillis; the descriptor closes after it is gone,
  // so that it cannot be reused under the thread's poll.
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

DeepResult network_check(const std::string& peer_address, int port,
                         const DeepCheckOptions& options) {
  return guarded_check("network", [&] { return run_network_check(peer_address, port, options); });
}

}  // namespace endure::agent::health
