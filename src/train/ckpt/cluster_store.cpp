#include "train/ckpt/cluster_store.h"

#include <httplib.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>

#include "common/error_codes.h"
#include "common/framed_socket.h"

namespace endure::ckpt {

struct ClusterStoreClient::Conn {
  std::mutex mu;
  httplib::Client client;
  int data_fd = -1;  // the data path's connection, opened on first use, closed on any error
  ~Conn() { drop_data(); }
  void drop_data() {
    if (data_fd >= 0) ::close(data_fd);
    data_fd = -1;
  }
  Conn(const StoreAddress& at, double timeout) : client(at.address, at.port) {
    auto sec = static_cast<time_t>(timeout);
    auto usec = static_cast<time_t>((timeout - double(sec)) * 1e6);
    client.set_connection_timeout(sec, usec);
    client.set_read_timeout(sec, usec);
    client.set_write_timeout(sec, usec);
    client.set_keep_alive(true);
    // A request or reply written in two pieces would otherwise wait for the peer's delayed
    // ACK (40 ms) between them: a restore asks a store several small questions.
    client.set_tcp_nodelay(true);
  }
};

namespace {

std::string where(const StoreAddress& at) { return fmt::format("{} ({}:{})", at.node, at.address, at.port); }

// A refusal (status and body) as an Error naming the store.
Error refusal(const StoreAddress& at, int status, const std::string& text) {
  json body = json::parse(text, nullptr, false);
  std::string code = body.is_object() && body.contains("__type") ? body["__type"].get<std::string>()
                                                                  : fmt::format("HTTP{}", status);
  std::string message = body.is_object() && body.contains("message") ? body["message"].get<std::string>()
                                                                      : text;
  return make_error(code, "memory store " + where(at) + ": " + message);
}

// A reply that is not a 2xx, or none, as an Error naming the store.
Error reply_error(const StoreAddress& at, const httplib::Result& r) {
  if (!r) return make_error("StoreUnreachable", "memory store " + where(at) + ": " + httplib::to_string(r.error()));
  return refusal(at, r->status, r->body);
}

bool ok(const httplib::Result& r) { return r && r->status >= 200 && r->status < 300; }

}  // namespace

ClusterStoreClient::ClusterStoreClient(std::string token, double timeout_seconds)
    : token_(std::move(token)), timeout_seconds_(timeout_seconds) {}
ClusterStoreClient::~ClusterStoreClient() = default;

ClusterStoreClient::Conn& ClusterStoreClient::conn(const StoreAddress& at) {
  std::lock_guard lock(mu_);
  auto key = fmt::format("{}:{}", at.address, at.port);
  auto& c = conns_[key];
  if (!c) {
    c = std::make_unique<Conn>(at, timeout_seconds_);
    c->client.set_bearer_token_auth(token_);
  }
  return *c;
}

// One request on the data path (memstore/data_server.h): its header, the body to send
// when putting, and the reply's header, after which a get's bytes follow on the socket.
Result<json> ClusterStoreClient::data_request(Conn& c, const StoreAddress& at, json header,
                                              const void* body, size_t body_size) {
  auto drop = [&](Error e) -> Result<json> {
    c.drop_data();
    return e;
  };
  for (int attempt = 0;; ++attempt) {
    bool fresh = c.data_fd < 0;
    if (fresh) {
      auto fd = net::connect_tcp(at.address, at.port + 1, timeout_seconds_);
      if (!fd) return make_error("StoreUnreachable", "memory store " + where(at) + ": " + fd.error().message);
      c.data_fd = *fd;
    }
    header["Token"] = token_;
    Status sent = net::send_frame(c.data_fd, header);
    Result<json> reply = sent ? net::recv_frame(c.data_fd) : Result<json>(sent.error());
    // A kept connection the store closed meanwhile (it restarted, or was idle too long)
    // fails at its first reply: one new connection is tried.
    if (!reply && !fresh && attempt == 0) {
      (void)drop(reply.error());
      continue;
    }
    // A put's body goes once the store has said it holds the room for it.
    if (reply && reply->value("Ok", false) && header["Op"] == "Put") {
      sent = net::send_all(c.data_fd, body, body_size);
      reply = sent ? net::recv_frame(c.data_fd) : Result<json>(sent.error());
    }
    if (!reply) {
      return drop(make_error("StoreUnreachable", "memory store " + where(at) + ": " + reply.error().message));
    }
    if (!reply->value("Ok", false)) {
      Error refused = make_error(reply->value("__type", std::string("StoreError")),
                                 "memory store " + where(at) + ": " + reply->value("message", std::string()));
      // After these the store keeps the connection (data_server.h); after others it closes it.
      if (refused.code == "InsufficientStorage" || refused.code == errors::kValidationException ||
          refused.code == errors::kResourceNotFound)
        return refused;
      return drop(refused);
    }
    return reply;
  }
}

Status ClusterStoreClient::put(const StoreAddress& at, const std::string& run, int64_t step,
                               const std::string& object, const void* data, size_t size) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  // The caller's memory is sent as it is: no copy of a shard is made.
  auto reply = data_request(
      c, at, {{"Op", "Put"}, {"Run", run}, {"Step", step}, {"Object", object}, {"Bytes", size}}, data, size);
  if (!reply) return reply.error();
  return Status::Ok();
}

Status ClusterStoreClient::receive(Conn& c, const StoreAddress& at, void* dest, size_t size) {
  if (auto got = net::recv_all(c.data_fd, dest, size); !got) {
    c.drop_data();
    return make_error("StoreUnreachable", "memory store " + where(at) + ": " + got.error().message);
  }
  return Status::Ok();
}

Result<std::string> ClusterStoreClient::get(const StoreAddress& at, const std::string& run, int64_t step,
                                            const std::string& object) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto reply = data_request(c, at, {{"Op", "Get"}, {"Run", run}, {"Step", step}, {"Object", object}});
  if (!reply) return reply.error();
  std::string bytes(reply->value("Bytes", uint64_t{0}), '\0');
  if (auto got = receive(c, at, bytes.data(), bytes.size()); !got) return got.error();
  return bytes;
}

Status ClusterStoreClient::get_into(const StoreAddress& at, const std::string& run, int64_t step,
                                    const std::string& object, void* dest, size_t size) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto reply = data_request(c, at, {{"Op", "Get"}, {"Run", run}, {"Step", step}, {"Object", object}});
  if (!reply) return reply.error();
  uint64_t bytes = reply->value("Bytes", uint64_t{0});
  if (bytes != size) {
    // The object's bytes are on their way: the connection is given up, not read through.
    c.drop_data();
    return make_error("ShardSize", fmt::format("memory store {}: {} step {} {} is {} bytes, not {}", where(at),
                                               run, step, object, bytes, size));
  }
  return receive(c, at, dest, size);
}

Result<json> ClusterStoreClient::steps(const StoreAddress& at, const std::string& run) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto r = c.client.Get(fmt::format("/v1/runs/{}/steps", run));
  if (!ok(r)) return reply_error(at, r);
  json body = json::parse(r->body, nullptr, false);
  if (!body.is_object() || !body.contains("Steps"))
    return make_error("BadReply", "memory store " + where(at) + ": not a step listing");
  return body;
}

Status ClusterStoreClient::remove(const StoreAddress& at, const std::string& run,
                                  std::optional<int64_t> step) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto path = step ? fmt::format("/v1/runs/{}/steps/{}", run, *step) : fmt::format("/v1/runs/{}", run);
  auto r = c.client.Delete(path);
  if (!ok(r)) return reply_error(at, r);
  return Status::Ok();
}

Result<json> ClusterStoreClient::stats(const StoreAddress& at) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto r = c.client.Get("/v1/stats");
  if (!ok(r)) return reply_error(at, r);
  return json::parse(r->body, nullptr, false);
}

}  // namespace endure::ckpt
