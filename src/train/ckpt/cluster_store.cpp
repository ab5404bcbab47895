#include "train/ckpt/cluster_store.h"

#include <httplib.h>

#include <cstring>
#include <fmt/format.h>

#include "common/error_codes.h"

namespace endure::ckpt {

struct ClusterStoreClient::Conn {
  std::mutex mu;
  httplib::Client client;
  Conn(const StoreAddress& at, double timeout) : client(at.address, at.port) {
    auto sec = static_cast<time_t>(timeout);
    auto usec = static_cast<time_t>((timeout - double(sec)) * 1e6);
    client.set_connection_timeout(sec, usec);
    client.set_read_timeout(sec, usec);
    client.set_write_timeout(sec, usec);
    client.set_keep_alive(true);
  }
};

namespace {

std::string object_path(const std::string& run, int64_t step, const std::string& object) {
  return fmt::format("/v1/runs/{}/steps/{}/{}", run, step, object);
}

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

std::string shard_object(int rank) { return fmt::format("rank-{:05d}.shard", rank); }
std::string descriptor_object(int rank) { return fmt::format("rank-{:05d}.json", rank); }

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

Status ClusterStoreClient::put(const StoreAddress& at, const std::string& run, int64_t step,
                               const std::string& object, const void* data, size_t size) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto* bytes = static_cast<const char*>(data);
  // The caller's memory is sent as it is, a window at a time: no copy of a shard is made.
  auto r = c.client.Put(
      object_path(run, step, object), size,
      [bytes](size_t offset, size_t length, httplib::DataSink& sink) {
        return sink.write(bytes + offset, std::min<size_t>(length, 4u << 20));
      },
      "application/octet-stream");
  if (!ok(r)) return reply_error(at, r);
  return Status::Ok();
}

Result<std::string> ClusterStoreClient::get(const StoreAddress& at, const std::string& run, int64_t step,
                                            const std::string& object) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  auto r = c.client.Get(object_path(run, step, object));
  if (!ok(r)) return reply_error(at, r);
  return std::move(r->body);
}

Status ClusterStoreClient::get_into(const StoreAddress& at, const std::string& run, int64_t step,
                                    const std::string& object, void* dest, size_t size) {
  auto& c = conn(at);
  std::lock_guard lock(c.mu);
  size_t got = 0;
  bool too_long = false, status_ok = false;
  std::string error_body;  // a refusal's JSON, which goes nowhere near dest
  auto* out = static_cast<char*>(dest);
  auto r = c.client.Get(
      object_path(run, step, object), httplib::Headers{},
      [&](const httplib::Response& res) {
        status_ok = res.status >= 200 && res.status < 300;
        return true;
      },
      [&](const char* data, size_t n) {
        if (!status_ok) return error_body.append(data, n), true;
        if (got + n > size) return !(too_long = true);
        std::memcpy(out + got, data, n);
        got += n;
        return true;
      });
  if (!too_long && !r) return reply_error(at, r);
  if (!too_long && !status_ok) return refusal(at, r->status, error_body);
  if (too_long || got != size)
    return make_error("ShardSize", fmt::format("memory store {}: {} step {} {} is not {} bytes", where(at),
                                               run, step, object, size));
  return Status::Ok();
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
