// Plays many endure agents against one endured over one ConnectionPool. Each machine's
// boot reports its lifecycle (Succeeded) until endured takes it, then heartbeats every
// HeartbeatSeconds at a phase of its own; the swarm measures what it sees.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "swarm_clock.h"
#include "swarm_connections.h"
#include "swarm_machines.h"
#include "swarm_stats.h"

namespace endure::swarm {

struct SwarmOptions {
  std::size_t max_in_flight = 4096;
  int64_t call_timeout_ns = 10 * kNsPerSecond;
  int64_t lifecycle_retry_ns = kNsPerSecond;  // after a lifecycle report endured did not take
  uint64_t seed = 1;
};

// An agent made silent, with what endured last heard of it (wall clock, epoch seconds).
struct SilenceRecord {
  std::string instance_id;
  std::string cluster_id;
  std::string node_name;
  int boot = 0;
  double last_beat_sent = 0;      // the last heartbeat answered 200 was all written
  double last_beat_answered = 0;  // and its reply read
  double silenced_at = 0;
};

// What happened over a span: the measuring window, or one progress interval.
struct SwarmTally {
  int64_t heartbeats = 0;           // answered 200
  int64_t beats_collapsed = 0;      // dropped: came due while one of its agent's already waited
  LatencySamples due_to_reply;      // ms from when the heartbeat was due
  LatencySamples connect_to_reply;  // ms from its connect()
  ErrorCounts errors;               // of every call, lifecycle reports included
  void clear();
};

class Swarm {
 public:
  explicit Swarm(const SwarmOptions& options);

  Status open() { return pool_.open(); }

  // A Boot (re)starts playing the machine's agent, forgetting any silence of it; a Gone
  // stops it.
  void on_machine(const MachineEvent& event);

  // Silences an agent picked at random among those endured has been hearing from
  // (lifecycle taken, at least 3 heartbeats answered since its boot): its call in flight is
  // dropped and it makes no more until a later Boot. nullopt when none qualifies.
  std::optional<SilenceRecord> silence_one();

  // Sends what has come due and reads replies, returning by until_ns (steady clock).
  void step(int64_t until_ns);
  // Fails the calls that have run past the timeout.
  void expire(int64_t now_ns) { pool_.expire(now_ns); }

  // From now on, what happens counts in window() too.
  void open_window() { window_open_ = true; }
  SwarmTally& window() { return window_; }
  // Since the caller last cleared it.
  SwarmTally& interval() { return interval_; }

  std::size_t playing() const { return playing_; }
  std::size_t heartbeating() const { return heartbeating_; }
  std::size_t agents_max() const { return agents_max_; }
  int64_t lifecycle_reports() const { return lifecycle_reports_; }
  std::size_t in_flight() const { return pool_.in_flight(); }
  std::size_t queued() const { return queue_.size(); }

 private:
  enum class CallKind : uint8_t { kLifecycle, kHeartbeat };

  // The node's gauges at boot, which each heartbeat varies a little.
  struct Gauges {
    double load1 = 0;
    int64_t mem_total = 0;
    int64_t mem_available = 0;
    int64_t disk_size = 0;
    int64_t disk_free = 0;
    double fsx_probe_seconds = 0;
    int gpus = 0;
  };

  struct SimAgent {
    // From its latest Boot record.
    std::string instance_id;
    std::string cluster_id;
    std::string node_name;
    int boot = 0;
    sockaddr_in address{};
    std::string head;  // the headers every call of it sends, up to Content-Length
    std::string lifecycle_body;
    std::string id_json;  // its InstanceId as a JSON string
    int64_t period_ns = kNsPerSecond;
    Gauges gauges;

    // Bumped whenever it (re)boots, goes or goes silent: timers, queued calls and replies
    // of an older generation are dropped.
    uint32_t generation = 0;
    bool playing = false;   // its machine is up
    bool silenced = false;  // ... but powered off by silence_one()
    bool lifecycle_taken = false;
    int64_t beats_answered = 0;  // since its last Boot
    // Like the real agent, one call at a time: queued or in flight.
    bool busy = false;
    CallKind call_kind = CallKind::kLifecycle;
    int64_t call_due_ns = 0;
    int slot = -1;  // in the pool, while in flight
    // A heartbeat that came due while busy, sent when the call ends.
    bool beat_waiting = false;
    int64_t waiting_due_ns = 0;
    double last_beat_sent = 0;
    double last_beat_answered = 0;
  };

  struct Timer {
    int64_t due_ns;
    uint32_t agent;
    uint32_t generation;
    CallKind kind;
    bool operator>(const Timer& other) const { return due_ns > other.due_ns; }
  };

  struct QueuedCall {
    uint32_t agent;
    uint32_t generation;
  };

  static bool active(const SimAgent& a) { return a.playing && !a.silenced; }

  void boot(const MachineEvent& event);
  // Drops the agent's timers and calls and takes it out of the counts.
  void stop(SimAgent& a);
  void schedule(uint32_t index, CallKind kind, int64_t due_ns);
  void want_call(uint32_t index, CallKind kind, int64_t due_ns);
  void fire_due_timers(int64_t now_ns);
  void dispatch();
  void build_request(const SimAgent& a);
  void on_call_done(const CallOutcome& outcome);
  Result<sockaddr_in> resolve(const std::string& endpoint, std::string& host_header);
  Gauges boot_gauges(const api::AgentConfig& config);
  double uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }

  template <class F>
  void tally(F f) {
    f(interval_);
    if (window_open_) f(window_);
  }

  SwarmOptions options_;
  ConnectionPool pool_;
  std::mt19937_64 rng_;
  std::vector<SimAgent> agents_;
  std::unordered_map<std::string, uint32_t> index_of_;
  std::unordered_map<std::string, std::pair<sockaddr_in, std::string>> endpoints_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::deque<QueuedCall> queue_;  // waiting for room in the pool, oldest first
  std::string body_;              // scratch, reused by every call
  std::string request_;           // scratch, reused by every call

  std::size_t playing_ = 0;
  std::size_t heartbeating_ = 0;  // playing with a heartbeat answered since its boot
  std::size_t agents_max_ = 0;
  int64_t lifecycle_reports_ = 0;
  bool window_open_ = false;
  SwarmTally window_;
  SwarmTally interval_;
};

}  // namespace endure::swarm
