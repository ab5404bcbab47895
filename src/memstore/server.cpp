#include "memstore/server.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "common/error_codes.h"
#include "common/ids.h"
#include "common/json.h"
#include "common/log.h"

namespace endure::memstore {
namespace {

using namespace errors;

constexpr const char* kObjectPath = R"(/v1/runs/([^/]+)/steps/([0-9]{1,18})/([^/]+))";
constexpr size_t kReadChunk = 1u << 20;

void reply_error(httplib::Response& res, const Error& e) {
  int status = e.code == kUnauthorized           ? 401
               : e.code == kResourceNotFound     ? 404
               : e.code == "InsufficientStorage" ? 507
               : e.code == kValidationException  ? 400
                                                 : 500;
  res.status = status;
  res.set_content(json{{"__type", e.code}, {"message", e.message}}.dump(), "application/json");
}

bool authorized(const httplib::Request& req, const std::string& token) {
  const std::string prefix = "Bearer ";
  auto header = req.get_header_value("Authorization");
  return header.rfind(prefix, 0) == 0 && ids::same_secret(header.substr(prefix.size()), token);
}

}  // namespace

StoreServer::StoreServer(Arena& arena, std::string token)
    : arena_(arena), token_(std::move(token)), server_(new httplib::Server) {
  // Headers and body go out in separate writes: without it each reply waits for the
  // client's delayed ACK (40 ms).
  server_->set_tcp_nodelay(true);
  routes();
}

StoreServer::~StoreServer() { stop(); }

void StoreServer::routes() {
  auto& s = *server_;
  // Authentication before anything else, the handlers' own checks after.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorized(req, token_)) return httplib::Server::HandlerResponse::Unhandled;
    reply_error(res, make_error(kUnauthorized, "missing or invalid token"));
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Put(kObjectPath, [this](const httplib::Request& req, httplib::Response& res,
                            const httplib::ContentReader& read) {
    if (!req.has_header("Content-Length"))
      return reply_error(res, invalid("Content-Length: required (the room is reserved first)"));
    uint64_t size = std::stoull(req.get_header_value("Content-Length"));
    auto put = arena_.begin_put(req.matches[1], std::stoll(req.matches[2]), req.matches[3], size);
    if (!put) {
      if (put.error().code == "InsufficientStorage") log::warn("{}", put.error().message);
      // The body is read (and dropped) so that the connection stays usable.
      read([](const char*, size_t) { return true; });
      return reply_error(res, put.error());
    }
    Status wrote;
    read([&](const char* data, size_t n) {
      wrote = (*put)->write(data, n);
      return wrote.ok();
    });
    if (wrote.ok()) wrote = (*put)->commit();
    if (!wrote) return reply_error(res, wrote.error());
    res.set_content(json{{"Bytes", size}}.dump(), "application/json");
  });

  s.Get(kObjectPath, [this](const httplib::Request& req, httplib::Response& res) {
    auto opened = arena_.open_object(req.matches[1], std::stoll(req.matches[2]), req.matches[3]);
    if (!opened) return reply_error(res, opened.error());
    std::shared_ptr<Arena::Reading> reading = std::move(*opened);
    uint64_t size = reading->size();
    arena_.count_get(req.matches[3], size);
    res.set_content_provider(size, "application/octet-stream",
                             [reading](size_t offset, size_t length, httplib::DataSink& sink) {
                               std::vector<char> buf(std::min(length, kReadChunk));
                               ssize_t n = ::pread(reading->fd(), buf.data(), buf.size(),
                                                   static_cast<off_t>(offset));
                               if (n <= 0) return false;
                               return sink.write(buf.data(), static_cast<size_t>(n));
                             });
  });

  s.Get(R"(/v1/runs/([^/]+)/steps)", [this](const httplib::Request& req, httplib::Response& res) {
    if (auto ok = check_run(req.matches[1]); !ok) return reply_error(res, ok.error());
    json steps = json::array();
    for (const auto& so : arena_.list(req.matches[1])) {
      json objects = json::array();
      for (const auto& [name, bytes] : so.objects)
        objects.push_back({{"Name", name}, {"Bytes", bytes}});
      steps.push_back(
          {{"Step", so.step.step}, {"Complete", so.step.complete}, {"Objects", objects}});
    }
    res.set_content(json{{"Steps", steps}}.dump(), "application/json");
  });

  s.Delete(R"(/v1/runs/([^/]+)(?:/steps/([0-9]{1,18}))?)",
           [this](const httplib::Request& req, httplib::Response& res) {
             std::optional<int64_t> step;
             if (req.matches[2].matched) step = std::stoll(req.matches[2]);
             auto removed = arena_.remove(req.matches[1], step);
             if (!removed) return reply_error(res, removed.error());
             res.set_content("{}", "application/json");
           });

  s.Get("/v1/stats", [this](const httplib::Request&, httplib::Response& res) {
    auto st = arena_.stats();
    res.set_content(json{{"CapacityBytes", st.capacity_bytes},
                         {"UsedBytes", st.used_bytes},
                         {"PoolBytes", st.pool_bytes},
                         {"Objects", st.objects},
                         {"Puts", st.puts},
                         {"PutBytes", st.put_bytes},
                         {"Gets", st.gets},
                         {"GetBytes", st.get_bytes},
                         {"ShardGets", st.shard_gets},
                         {"RefusedPuts", st.refused_puts},
                         {"EvictedSteps", st.evicted_steps},
                         {"ReplicationLagSeconds", st.replication_lag_seconds},
                         {"LastCommitSeconds", st.last_commit_seconds}}
                        .dump(),
                    "application/json");
  });

  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty())
      reply_error(res,
                  make_error(kResourceNotFound, "no such route: " + req.method + " " + req.path));
  });
}

Status StoreServer::start(const std::string& address, int port) {
  if (port == 0) {
    port_ = server_->bind_to_any_port(address);
  } else {
    port_ = server_->bind_to_port(address, port) ? port : -1;
  }
  if (port_ <= 0)
    return make_error("BindError",
                      "memory store: cannot listen on " + address + ":" + std::to_string(port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing to a server not yet running, which would then run on:
  // start() returns once it runs.
  for (int i = 0; i < 5000 && !server_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status::Ok();
}

void StoreServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace endure::memstore
