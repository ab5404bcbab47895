#include "swarm_connections.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "swarm_clock.h"

namespace endure::swarm {
namespace {

uint64_t event_key(uint32_t slot, uint32_t sequence) {
  return static_cast<uint64_t>(sequence) << 32 | slot;
}

}  // namespace

ConnectionPool::ConnectionPool(std::size_t capacity, int64_t timeout_ns, OnDone on_done)
    : timeout_ns_(timeout_ns), on_done_(std::move(on_done)), slots_(capacity) {
  free_.reserve(capacity);
  // Handed out from the back: slot 0 first.
  for (std::size_t i = capacity; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
  failed_at_start_.reserve(capacity);
  for (auto& call : slots_) call.request.reserve(1024);
}

ConnectionPool::~ConnectionPool() {
  for (auto& call : slots_) {
    if (call.fd >= 0) ::close(call.fd);
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status ConnectionPool::open() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0)
    return make_error("EpollError", std::string("epoll_create1: ") + std::strerror(errno));
  return {};
}

int ConnectionPool::start(const sockaddr_in& to, std::string_view request, uint64_t tag) {
  uint32_t slot = free_.back();
  free_.pop_back();
  Call& call = slots_[slot];
  ++call.sequence;
  call.tag = tag;
  call.started_ns = steady_ns();
  call.sent_wall = 0;
  call.request.assign(request);
  call.sent = 0;
  call.reply.reset();

  auto fail_now = [&](CallError error) {
    if (call.fd >= 0) ::close(call.fd);
    call.fd = -1;
    call.phase = Phase::kIdle;
    free_.push_back(slot);
    failed_at_start_.push_back({tag, error, 0, call.started_ns, steady_ns(), 0});
    return -1;
  };
  call.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (call.fd < 0) return fail_now(CallError::kSocket);
  // Loopback often refuses at once rather than through the event.
  if (::connect(call.fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0 &&
      errno != EINPROGRESS) {
    return fail_now(CallError::kConnect);
  }
  call.phase = Phase::kConnecting;
  // Edge-triggered with both directions: one epoll_ctl per call; adding a socket that is
  // already writable reports it at once.
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = event_key(slot, call.sequence);
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, call.fd, &ev) != 0) return fail_now(CallError::kSocket);
  return static_cast<int>(slot);
}

void ConnectionPool::cancel(int slot) {
  Call& call = slots_[static_cast<std::size_t>(slot)];
  if (call.phase == Phase::kIdle) return;
  ::close(call.fd);  // closing also takes it out of the epoll set
  call.fd = -1;
  call.phase = Phase::kIdle;
  ++call.sequence;
  free_.push_back(static_cast<uint32_t>(slot));
}

void ConnectionPool::wait(int64_t timeout_ns) {
  if (!failed_at_start_.empty()) timeout_ns = 0;
  timespec timeout{static_cast<time_t>(timeout_ns / kNsPerSecond),
                   static_cast<long>(timeout_ns % kNsPerSecond)};
  // epoll_pwait2 takes nanoseconds: a heartbeat is sent when due, not up to 1 ms late.
  int n = ::epoll_pwait2(epoll_fd_, events_.data(), static_cast<int>(events_.size()), &timeout,
                         nullptr);
  if (n < 0 && errno == ENOSYS) {
    n = ::epoll_wait(epoll_fd_, events_.data(), static_cast<int>(events_.size()),
                     static_cast<int>(timeout_ns / kNsPerMs));
  }
  for (int i = 0; i < n; ++i) {
    auto slot = static_cast<uint32_t>(events_[i].data.u64 & 0xffffffffu);
    auto sequence = static_cast<uint32_t>(events_[i].data.u64 >> 32);
    if (slots_[slot].phase == Phase::kIdle || slots_[slot].sequence != sequence) continue;
    on_event(slot, events_[i].events);
  }
  // on_done may start no call of its own, so this list does not grow while it is read.
  for (const CallOutcome& outcome : failed_at_start_) on_done_(outcome);
  failed_at_start_.clear();
}

void ConnectionPool::expire(int64_t now_ns) {
  for (uint32_t slot = 0; slot < slots_.size(); ++slot) {
    const Call& call = slots_[slot];
    if (call.phase != Phase::kIdle && now_ns - call.started_ns >= timeout_ns_) {
      finish(slot, CallError::kTimeout);
    }
  }
}

void ConnectionPool::on_event(uint32_t slot, uint32_t events) {
  Call& call = slots_[slot];
  if (call.phase == Phase::kConnecting) {
    if (events & (EPOLLERR | EPOLLHUP)) return finish(slot, CallError::kConnect);
    if (!(events & EPOLLOUT)) return;
    call.phase = Phase::kSending;
  }
  if (call.phase == Phase::kSending && !flush(slot)) return;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_reply(slot);
}

bool ConnectionPool::flush(uint32_t slot) {
  Call& call = slots_[slot];
  while (call.sent < call.request.size()) {
    ssize_t n = ::send(call.fd, call.request.data() + call.sent, call.request.size() - call.sent,
                       MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) finish(slot, CallError::kReset);
      return false;  // EAGAIN: the next EPOLLOUT edge goes on
    }
    call.sent += static_cast<std::size_t>(n);
  }
  call.sent_wall = wall_seconds();
  call.phase = Phase::kReading;
  return true;
}

void ConnectionPool::read_reply(uint32_t slot) {
  Call& call = slots_[slot];
  if (call.phase != Phase::kReading) return;
  for (;;) {
    ssize_t n = ::recv(call.fd, scratch_.data(), scratch_.size(), 0);
    if (n > 0) {
      auto state = call.reply.feed(scratch_.data(), static_cast<std::size_t>(n));
      if (state == ReplyReader::State::kMalformed) return finish(slot, CallError::kBadReply);
      if (state == ReplyReader::State::kDone) {
        int status = call.reply.status();
        return finish(slot, status == 200 ? CallError::kNone : CallError::kHttp, status);
      }
      continue;
    }
    if (n == 0) {
      if (call.reply.at_close() != ReplyReader::State::kDone) {
        return finish(slot, CallError::kReset);
      }
      int status = call.reply.status();
      return finish(slot, status == 200 ? CallError::kNone : CallError::kHttp, status);
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) finish(slot, CallError::kReset);
    return;
  }
}

void ConnectionPool::finish(uint32_t slot, CallError error, int status) {
  Call& call = slots_[slot];
  CallOutcome outcome{call.tag, error, status, call.started_ns, steady_ns(), call.sent_wall};
  cancel(static_cast<int>(slot));
  on_done_(outcome);
}

}  // namespace endure::swarm
