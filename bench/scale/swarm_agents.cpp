#include "swarm_agents.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>

#include <algorithm>
#include <iterator>

#include "api/fields.h"
#include "api/messages.h"
#include "api/node_gauges.h"
#include "api/wire.h"
#include "common/http_client.h"
#include "common/log.h"

namespace endure::swarm {
namespace {

constexpr int64_t kMinPeriodNs = 10 * kNsPerMs;
constexpr int kBeatsBeforeSilence = 3;

uint64_t call_tag(uint32_t index, uint32_t generation) {
  return static_cast<uint64_t>(index) << 32 | generation;
}

}  // namespace

void SwarmTally::clear() {
  heartbeats = 0;
  beats_collapsed = 0;
  due_to_reply.clear();
  connect_to_reply.clear();
  errors.clear();
}

Swarm::Swarm(const SwarmOptions& options)
    : options_(options),
      pool_(options.max_in_flight, options.call_timeout_ns,
            [this](const CallOutcome& outcome) { on_call_done(outcome); }),
      rng_(options.seed) {
  body_.reserve(1024);
  request_.reserve(2048);
  // A minute at 10,000 heartbeats/s, so that recording a sample does not reallocate.
  window_.due_to_reply.reserve(600'000);
  window_.connect_to_reply.reserve(600'000);
  interval_.due_to_reply.reserve(60'000);
  interval_.connect_to_reply.reserve(60'000);
}

void Swarm::on_machine(const MachineEvent& event) {
  if (event.kind == MachineEvent::Kind::kBoot) return boot(event);
  auto it = index_of_.find(event.instance_id);
  if (it == index_of_.end()) return;
  SimAgent& a = agents_[it->second];
  stop(a);
  a.playing = false;
}

void Swarm::boot(const MachineEvent& event) {
  auto [it, added] =
      index_of_.try_emplace(event.instance_id, static_cast<uint32_t>(agents_.size()));
  if (added) agents_.emplace_back();
  uint32_t index = it->second;
  SimAgent& a = agents_[index];
  stop(a);
  a.playing = false;

  std::string host_header;
  auto address = resolve(event.config.endpoint, host_header);
  if (!address) {
    log::error("swarm: {} boot {}: {}", event.instance_id, event.boot, address.error().message);
    return;
  }
  if (event.config.token.find_first_of("\r\n") != std::string::npos) {
    log::error("swarm: {} boot {}: the token holds a line break", event.instance_id, event.boot);
    return;
  }
  a.instance_id = event.instance_id;
  a.cluster_id = event.cluster_id;
  a.node_name = event.node_name;
  a.boot = event.boot;
  a.address = *address;
  // As httplib's client sends them, with the node's join token.
  a.head = fmt::format(
      "Host: {}\r\nAccept: */*\r\nUser-Agent: endure-scale-swarm\r\nConnection: close\r\n"
      "Authorization: Bearer {}\r\nContent-Type: application/json\r\n",
      host_header, event.config.token);
  a.lifecycle_body =
      api::AgentReportLifecycleRequest{"Succeeded", 0, "", event.instance_id}.to_json().dump();
  a.id_json = json(event.instance_id).dump();
  a.period_ns = std::max(kMinPeriodNs, seconds_to_ns(event.config.heartbeat_seconds));
  a.gauges = boot_gauges(event.config);

  a.playing = true;
  a.silenced = false;
  a.lifecycle_taken = false;
  a.beats_answered = 0;
  a.last_beat_sent = a.last_beat_answered = 0;
  ++playing_;
  agents_max_ = std::max(agents_max_, playing_);
  want_call(index, CallKind::kLifecycle, steady_ns());
}

void Swarm::stop(SimAgent& a) {
  if (a.slot >= 0) pool_.cancel(a.slot);
  a.slot = -1;
  a.busy = false;
  a.beat_waiting = false;
  ++a.generation;
  if (active(a)) {
    --playing_;
    if (a.beats_answered > 0) --heartbeating_;
  }
}

std::optional<SilenceRecord> Swarm::silence_one() {
  std::vector<uint32_t> candidates;
  for (uint32_t i = 0; i < agents_.size(); ++i) {
    const SimAgent& a = agents_[i];
    if (active(a) && a.lifecycle_taken && a.beats_answered >= kBeatsBeforeSilence) {
      candidates.push_back(i);
    }
  }
  if (candidates.empty()) return std::nullopt;
  SimAgent& a = agents_[candidates[std::uniform_int_distribution<std::size_t>(
      0, candidates.size() - 1)(rng_)]];
  stop(a);
  a.silenced = true;
  return SilenceRecord{a.instance_id,    a.cluster_id,         a.node_name,   a.boot,
                       a.last_beat_sent, a.last_beat_answered, wall_seconds()};
}

void Swarm::step(int64_t until_ns) {
  int64_t now = steady_ns();
  fire_due_timers(now);
  dispatch();
  int64_t wake = until_ns;
  if (!timers_.empty()) wake = std::min(wake, timers_.top().due_ns);
  pool_.wait(std::max<int64_t>(0, wake - now));
}

void Swarm::schedule(uint32_t index, CallKind kind, int64_t due_ns) {
  timers_.push({due_ns, index, agents_[index].generation, kind});
}

void Swarm::want_call(uint32_t index, CallKind kind, int64_t due_ns) {
  SimAgent& a = agents_[index];
  if (a.busy) {
    // Only heartbeats come due while a call is out; the real agent would send one, late.
    if (a.beat_waiting) {
      tally([](SwarmTally& t) { ++t.beats_collapsed; });
    } else {
      a.beat_waiting = true;
      a.waiting_due_ns = due_ns;
    }
    return;
  }
  a.busy = true;
  a.call_kind = kind;
  a.call_due_ns = due_ns;
  queue_.push_back({index, a.generation});
}

void Swarm::fire_due_timers(int64_t now_ns) {
  while (!timers_.empty() && timers_.top().due_ns <= now_ns) {
    Timer timer = timers_.top();
    timers_.pop();
    const SimAgent& a = agents_[timer.agent];
    if (timer.generation != a.generation) continue;
    // Heartbeats keep to their phase however long a call takes: the load stays N per period.
    if (timer.kind == CallKind::kHeartbeat) {
      schedule(timer.agent, CallKind::kHeartbeat, timer.due_ns + a.period_ns);
    }
    want_call(timer.agent, timer.kind, timer.due_ns);
  }
}

void Swarm::dispatch() {
  while (pool_.has_room() && !queue_.empty()) {
    QueuedCall next = queue_.front();
    queue_.pop_front();
    SimAgent& a = agents_[next.agent];
    if (next.generation != a.generation) continue;
    build_request(a);
    a.slot = pool_.start(a.address, request_, call_tag(next.agent, next.generation));
  }
}

void Swarm::build_request(const SimAgent& a) {
  const char* action = api::kAgentReportLifecycle;
  const std::string* body = &a.lifecycle_body;
  if (a.call_kind == CallKind::kHeartbeat) {
    action = api::kAgentHeartbeat;
    // What a node's health checks gather (agent/health/resources.cpp, disk.cpp, fsx.cpp,
    // nvml.cpp), moving a little from beat to beat as a live node's do.
    const Gauges& g = a.gauges;
    namespace gauge = api::gauge;
    body_.clear();
    auto out = std::back_inserter(body_);
    fmt::format_to(
        out, R"({{"{}":{},"{}":[],"{}":{{"{}":{:.2f},"{}":{},"{}":{},"{}":{},"{}":{},"{}":{:.4f})",
        api::field::kInstanceId, a.id_json, api::field::kFindings, api::field::kMetrics,
        gauge::kLoad1, g.load1 * uniform(0.9, 1.1), gauge::kMemTotalBytes, g.mem_total,
        gauge::kMemAvailableBytes,
        g.mem_available + static_cast<int64_t>(uniform(-0.005, 0.005) * g.mem_total),
        gauge::kLocalDiskSizeBytes, g.disk_size, gauge::kLocalDiskFreeBytes,
        g.disk_free - static_cast<int64_t>(uniform(0, 1 << 20)), gauge::kFsxProbeSeconds,
        g.fsx_probe_seconds * uniform(0.8, 1.25));
    if (g.gpus > 0) {
      fmt::format_to(out, R"(,"{}":{},"{}":0)", gauge::kGpus, g.gpus, gauge::kGpuEccUncorrected);
    }
    body_ += "}}";
    body = &body_;
  }
  request_.clear();
  auto out = std::back_inserter(request_);
  fmt::format_to(out, "POST {}{} HTTP/1.1\r\n", api::kPathPrefix, action);
  request_ += a.head;
  fmt::format_to(out, "Content-Length: {}\r\n\r\n", body->size());
  request_ += *body;
}

void Swarm::on_call_done(const CallOutcome& outcome) {
  auto index = static_cast<uint32_t>(outcome.tag >> 32);
  auto generation = static_cast<uint32_t>(outcome.tag);
  SimAgent& a = agents_[index];
  // A call that failed at start is reported after its agent may have been stopped.
  if (generation != a.generation) return;
  a.slot = -1;
  a.busy = false;
  bool ok = outcome.error == CallError::kNone;
  if (!ok) tally([&](SwarmTally& t) { t.errors.add(outcome.error, outcome.status); });

  if (a.call_kind == CallKind::kLifecycle) {
    if (ok) {
      a.lifecycle_taken = true;
      ++lifecycle_reports_;
      schedule(
          index, CallKind::kHeartbeat,
          outcome.finished_ns + static_cast<int64_t>(uniform(0, static_cast<double>(a.period_ns))));
    } else {
      schedule(index, CallKind::kLifecycle, outcome.finished_ns + options_.lifecycle_retry_ns);
    }
  } else if (ok) {
    if (a.beats_answered++ == 0) ++heartbeating_;
    a.last_beat_sent = outcome.sent_wall;
    a.last_beat_answered = wall_seconds();
    double due_ms = static_cast<double>(outcome.finished_ns - a.call_due_ns) / kNsPerMs;
    double connect_ms = static_cast<double>(outcome.finished_ns - outcome.started_ns) / kNsPerMs;
    tally([&](SwarmTally& t) {
      ++t.heartbeats;
      t.due_to_reply.add(due_ms);
      t.connect_to_reply.add(connect_ms);
    });
  }
  if (a.beat_waiting) {
    a.beat_waiting = false;
    want_call(index, CallKind::kHeartbeat, a.waiting_due_ns);
  }
}

Result<sockaddr_in> Swarm::resolve(const std::string& endpoint, std::string& host_header) {
  if (auto known = endpoints_.find(endpoint); known != endpoints_.end()) {
    host_header = known->second.second;
    return known->second.first;
  }
  auto parsed = parse_endpoint(endpoint);
  if (!parsed) return parsed.error();
  if (parsed->tls)
    return make_error("Unsupported", "endpoint " + endpoint + ": https is not played");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(parsed->port));
  if (::inet_pton(AF_INET, parsed->host.c_str(), &address.sin_addr) != 1) {
    // Once per endpoint, so a blocking lookup is fine.
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(parsed->host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
      return make_error("Unresolved", "endpoint " + endpoint + ": no IPv4 address for its host");
    }
    address.sin_addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
    ::freeaddrinfo(found);
  }
  host_header = parsed->host + ":" + std::to_string(parsed->port);
  endpoints_.emplace(endpoint, std::make_pair(address, host_header));
  return address;
}

Swarm::Gauges Swarm::boot_gauges(const api::AgentConfig& config) {
  constexpr int64_t kMiB = 1 << 20;
  Gauges g;
  g.gpus = config.gpus;
  g.load1 = uniform(0.05, std::max(0.5, 0.6 * config.cpus));
  // MemTotal is a little under what the instance type promises (the kernel keeps some).
  int64_t promised = (config.memory_mib > 0 ? config.memory_mib : 16384) * kMiB;
  g.mem_total = static_cast<int64_t>(static_cast<double>(promised) * 0.97);
  g.mem_available = static_cast<int64_t>(static_cast<double>(g.mem_total) * uniform(0.55, 0.9));
  // A GPU node's local NVMe, or a small root disk.
  g.disk_size = config.gpus > 0 ? 3'840'755'982'336 : 500'107'862'016;
  g.disk_free = static_cast<int64_t>(static_cast<double>(g.disk_size) * uniform(0.4, 0.95));
  g.fsx_probe_seconds = uniform(0.002, 0.012);
  return g;
}

}  // namespace endure::swarm
