#include "memstore/data_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/error_codes.h"
#include "common/framed_socket.h"
#include "common/ids.h"
#include "common/log.h"

namespace endure::memstore {
namespace {

using namespace std::chrono_literals;

// A connection idle this long between requests, or stalled within one, is closed.
constexpr double kIdleSeconds = 300;

json refusal(const Error& e) { return {{"Ok", false}, {"__type", e.code}, {"message", e.message}}; }

}  // namespace

DataServer::DataServer(Arena& arena, std::string token) : arena_(arena), token_(std::move(token)) {}

DataServer::~DataServer() { stop(); }

Status DataServer::start(const std::string& address, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1)
    return invalid("address: an IPv4 address, not '" + address + "'");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0)
    return make_error("BindError", std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    auto e =
        make_error("BindError", fmt::format("memory store data path: cannot listen on {}:{}: {}",
                                            address, port, std::strerror(errno)));
    ::close(listen_fd_);
    listen_fd_ = -1;
    return e;
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
  return Status::Ok();
}

void DataServer::stop() {
  if (!acceptor_.joinable()) return;
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  std::unique_lock lock(mu_);
  for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  // The connections' threads end once their sockets are shut down.
  while (serving_ > 0) {
    lock.unlock();
    std::this_thread::sleep_for(5ms);
    lock.lock();
  }
}

void DataServer::accept_loop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (!stopping_) log::warn("memory store data path: accept: {}", std::strerror(errno));
      return;
    }
    std::lock_guard lock(mu_);
    connections_.insert(fd);
    ++serving_;
    std::thread([this, fd] { serve(fd); }).detach();
  }
}

void DataServer::serve(int fd) {
  net::set_timeouts(fd, kIdleSeconds);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  while (!stopping_ && handle(fd)) {
  }
  std::lock_guard lock(mu_);
  connections_.erase(fd);
  ::close(fd);
  --serving_;
}

bool DataServer::handle(int fd) {
  auto header = net::recv_frame(fd);
  if (!header) return false;  // the client went, or sent garbage
  const json& h = *header;
  // Authentication before anything else: a caller without the token learns nothing.
  if (!h.contains("Token") || !h["Token"].is_string() ||
      !ids::same_secret(h["Token"].get<std::string>(), token_)) {
    (void)net::send_frame(fd,
                          refusal(make_error(errors::kUnauthorized, "missing or invalid token")));
    return false;
  }
  std::string op = h.value("Op", ""), run = h.value("Run", ""), object = h.value("Object", "");
  int64_t step =
      h.contains("Step") && h["Step"].is_number_integer() ? h["Step"].get<int64_t>() : -1;

  if (op == "Put") {
    if (!h.contains("Bytes") || !h["Bytes"].is_number_unsigned()) {
      (void)net::send_frame(fd, refusal(invalid("Bytes: the object's size, required")));
      return false;
    }
    uint64_t size = h["Bytes"].get<uint64_t>();
    auto put = arena_.begin_put(run, step, object, size);
    if (!put) {
      if (put.error().code == "InsufficientStorage") log::warn("{}", put.error().message);
      // Refused before the body was sent: the connection stays good.
      return net::send_frame(fd, refusal(put.error())).ok();
    }
    // The room is held: the client may send the body.
    if (!net::send_frame(fd, {{"Ok", true}}).ok()) return false;
    size_t room = 0;
    char* into = (*put)->next(&room);
    if (auto got = net::recv_all(fd, into, room); !got) return false;  // abandoned: nothing held
    (*put)->wrote(room);
    if (auto done = (*put)->commit(); !done) {
      (void)net::send_frame(fd, refusal(done.error()));
      return false;
    }
    return net::send_frame(fd, {{"Ok", true}, {"Bytes", size}}).ok();
  }

  if (op == "Get") {
    auto reading = arena_.open_object(run, step, object);
    if (!reading) return net::send_frame(fd, refusal(reading.error())).ok();
    uint64_t size = (*reading)->size();
    bool sent = net::send_frame(fd, {{"Ok", true}, {"Bytes", size}}).ok() &&
                net::send_file(fd, (*reading)->fd(), 0, size).ok();
    if (sent) arena_.count_get(object, size);
    return sent;
  }

  (void)net::send_frame(fd, refusal(invalid("Op: Put or Get, not '" + op + "'")));
  return false;
}

}  // namespace endure::memstore
