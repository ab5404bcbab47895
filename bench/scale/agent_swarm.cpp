// endure-scale-swarm: the load of endured's scale benchmark. Plays one endure agent per
// machine of the simulated provider (<sim-dir>/machines.jsonl, see swarm_machines.h) against
// endured, with the real agent's calls, 1,000 to 10,000 of them from one thread; silences
// some during the measuring window so that the benchmark can time endured's detection; and
// writes what it measured to --out.
//
//   endure-scale-swarm --sim-dir DIR --out results.json [--seconds 60] [--warmup 15]
//                      [--silences K] [--max-in-flight 4096] [--seed 1] [--expect N]
//
// The run starts when --expect agents heartbeat (one line to stdout then), or at once;
// the measuring window opens --warmup s later and lasts --seconds. Progress goes to stderr
// every 5 s. Stops at the window's end or on SIGINT/SIGTERM, writes the results, exits 0.
//
// The results (times are epoch seconds):
//   agents_max            most agents playing at once (booted, not gone, not silenced)
//   heartbeats            answered 200 in the window; heartbeat_rate: the same per second
//   latency_ms            {p50,p90,p99,max} from when a heartbeat was due to its whole reply,
//                         queueing for a connection included; connect_to_reply_ms: from connect()
//   errors                {total, by_kind: {connect, timeout, reset, bad_reply, socket,
//                         http_<status>}} of every call in the window, lifecycle reports too
//   lifecycle_reports     taken (200) over the run; boots_seen, gones_seen: records read
//   silences              [{InstanceId, ClusterId, NodeName, Boot, last_heartbeat_sent,
//                         last_heartbeat_answered, silenced_at}]; silences_missed: due with no
//                         agent qualified
//   heartbeats_collapsed  came due while the agent already had one waiting behind a call
//   machine_lines_skipped lines of machines.jsonl that did not parse
//   expect_reached_at     when --expect agents were heartbeating, or null
//   window                {start, end}
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "common/fs.h"
#include "common/log.h"
#include "swarm_agents.h"
#include "swarm_clock.h"
#include "swarm_machines.h"

using namespace endure;
using namespace endure::swarm;

namespace {

// Each silence must leave endured this long to notice before the run ends.
constexpr double kDetectionMarginSeconds = 5;
constexpr int64_t kTickNs = 100 * kNsPerMs;  // machines.jsonl, timeouts, silences
constexpr int64_t kProgressNs = 5 * kNsPerSecond;
// Descriptors besides the calls' own: the log, epoll, stdio, the results.
constexpr std::size_t kSpareFiles = 64;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Flags {
  std::string sim_dir;
  double seconds = 60;
  double warmup = 15;
  int silences = 0;
  std::size_t max_in_flight = 4096;
  uint64_t seed = 1;
  std::string out;
  std::size_t expect = 0;  // 0: none
  double setup_seconds = 600;
};

void install_signal_handlers() {
  struct sigaction stop {};
  stop.sa_handler = on_signal;
  // No SA_RESTART: the wait for sockets returns at once with EINTR.
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

// Raises the open-file limit to its hard limit; returns the soft limit now in force.
rlim_t raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    log::warn("swarm: cannot raise the open-file limit to {}: {}", limit.rlim_max,
              std::strerror(errno));
    return before;
  }
  return limit.rlim_cur;
}

// The provider reads <sim-dir>/off/<InstanceId> as "that machine lost its power".
Status power_off(const std::filesystem::path& sim_dir, const std::string& instance_id) {
  if (instance_id.empty() || instance_id.find('/') != std::string::npos) {
    return make_error("BadInstanceId", "'" + instance_id + "' cannot name a file");
  }
  auto dir = sim_dir / "off";
  if (Status made = fs::make_dirs(dir); !made) return made;
  auto path = dir / instance_id;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error("IoError", path.string() + ": " + std::strerror(errno));
  ::close(fd);
  return {};
}

// When each silence is due (steady clock): spread evenly over the measuring window, which
// opens --warmup s after start, each in the middle of its share, the last at least
// kDetectionMarginSeconds before the end.
std::vector<int64_t> silence_times(const Flags& flags, int64_t started_ns) {
  std::vector<int64_t> times;
  double span = flags.seconds - kDetectionMarginSeconds;
  for (int i = 0; i < flags.silences; ++i) {
    double at = flags.warmup + span * (i + 0.5) / flags.silences;
    times.push_back(started_ns + seconds_to_ns(at));
  }
  return times;
}

json silence_json(const SilenceRecord& s) {
  return {{"InstanceId", s.instance_id},
          {"ClusterId", s.cluster_id},
          {"NodeName", s.node_name},
          {"Boot", s.boot},
          {"last_heartbeat_sent", s.last_beat_sent},
          {"last_heartbeat_answered", s.last_beat_answered},
          {"silenced_at", s.silenced_at}};
}

// One run: follows machines.jsonl into the swarm, opens the measuring window, places the
// silences, prints progress, until --seconds have passed or a signal came.
class BenchRun {
 public:
  BenchRun(const Flags& flags, Swarm& swarm)
      : flags_(flags),
        swarm_(swarm),
        machines_(std::filesystem::path(flags.sim_dir) / "machines.jsonl"),
        started_(steady_ns()),
        end_(started_ + seconds_to_ns(flags.setup_seconds + flags.warmup + flags.seconds)) {
    if (flags.expect == 0) start(started_);
  }

  void run() {
    int64_t next_tick = started_;
    while (!g_stop && (now_ = steady_ns()) < end_) {
      if (now_ >= next_tick) {
        tick();
        next_tick = now_ + kTickNs;
      }
      swarm_.step(std::min(next_tick, end_));
    }
    window_end_wall_ = wall_seconds();
    if (!window_open_) window_start_wall_ = window_end_wall_;
  }

  // The results file's content (see the top of this file). REQUIRES: run() ended.
  json results() {
    SwarmTally& window = swarm_.window();
    double window_seconds = window_end_wall_ - window_start_wall_;
    json silences = json::array();
    for (const SilenceRecord& s : silences_) silences.push_back(silence_json(s));
    auto due_by_stop = std::count_if(silence_due_.begin(), silence_due_.end(),
                                     [&](int64_t due) { return due <= now_; });
    return {
        {"agents_max", swarm_.agents_max()},
        {"heartbeats", window.heartbeats},
        {"heartbeat_rate",
         window_seconds > 0 ? static_cast<double>(window.heartbeats) / window_seconds : 0.0},
        {"latency_ms", window.due_to_reply.summary()},
        {"connect_to_reply_ms", window.connect_to_reply.summary()},
        {"errors", window.errors.to_json()},
        {"lifecycle_reports", swarm_.lifecycle_reports()},
        {"boots_seen", boots_seen_},
        {"gones_seen", gones_seen_},
        {"silences", silences},
        // Silences whose time came while no agent qualified.
        {"silences_missed", due_by_stop - static_cast<int64_t>(silences_.size())},
        {"heartbeats_collapsed", window.beats_collapsed},
        {"machine_lines_skipped", machines_.bad_lines()},
        {"expect_reached_at", expect_reached_at_ ? json(*expect_reached_at_) : json(nullptr)},
        {"window", {{"start", window_start_wall_}, {"end", window_end_wall_}}},
    };
  }

 private:
  void tick() {
    for (const MachineEvent& event : machines_.read_new()) {
      ++(event.kind == MachineEvent::Kind::kBoot ? boots_seen_ : gones_seen_);
      swarm_.on_machine(event);
    }
    swarm_.expire(now_);
    if (!window_open_ && start_ && now_ >= *start_ + seconds_to_ns(flags_.warmup)) {
      swarm_.open_window();
      window_open_ = true;
      window_start_wall_ = wall_seconds();
    }
    // A silence with no agent to take waits for the next tick.
    while (silences_.size() < silence_due_.size() && now_ >= silence_due_[silences_.size()]) {
      auto silenced = swarm_.silence_one();
      if (!silenced) break;
      log::ok(power_off(flags_.sim_dir, silenced->instance_id),
              "swarm: power off " + silenced->instance_id);
      silences_.push_back(std::move(*silenced));
    }
    if (flags_.expect > 0 && !expect_reached_at_ && swarm_.heartbeating() >= flags_.expect) {
      expect_reached_at_ = wall_seconds();
      start(now_);
      fmt::print("swarm: {} agents heartbeating after {:.1f} s\n", swarm_.heartbeating(),
                 seconds_since(started_));
      std::fflush(stdout);  // a harness may be waiting on this line
    }
    if (now_ - last_progress_ >= kProgressNs) {
      print_progress(seconds_since(last_progress_));
      last_progress_ = now_;
    }
  }

  // The run's clock starts: every agent expected heartbeats (or at once without --expect).
  void start(int64_t now) {
    start_ = now;
    end_ = now + seconds_to_ns(flags_.warmup + flags_.seconds);
    silence_due_ = silence_times(flags_, now);
  }

  void print_progress(double interval_seconds) {
    SwarmTally& t = swarm_.interval();
    double p50 = t.due_to_reply.percentile(50);
    double p99 = t.due_to_reply.percentile(99);
    fmt::print(stderr,
               "swarm: {:.0f} s: {} playing, {} heartbeating, {:.1f} heartbeats/s, latency p50 "
               "{:.2f} ms p99 {:.2f} ms, {} errors ({} in flight, {} queued)\n",
               seconds_since(started_), swarm_.playing(), swarm_.heartbeating(),
               static_cast<double>(t.heartbeats) / interval_seconds, p50, p99, t.errors.total(),
               swarm_.in_flight(), swarm_.queued());
    t.clear();
  }

  double seconds_since(int64_t then) const {
    return static_cast<double>(now_ - then) / kNsPerSecond;
  }

  const Flags& flags_;
  Swarm& swarm_;
  MachineLog machines_;
  const int64_t started_;
  int64_t end_;
  std::vector<int64_t> silence_due_;  // steady clock; set at start
  int64_t now_ = 0;
  int64_t last_progress_ = started_;
  std::vector<SilenceRecord> silences_;
  int64_t boots_seen_ = 0;
  int64_t gones_seen_ = 0;
  bool window_open_ = false;
  double window_start_wall_ = 0;
  double window_end_wall_ = 0;
  std::optional<double> expect_reached_at_;
  std::optional<int64_t> start_;  // warmup and window count from here
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"endure-scale-swarm: plays the simulated provider's agents against endured"};
  app.name("endure-scale-swarm");
  app.add_option("--sim-dir", flags.sim_dir,
                 "the simulated provider's folder, holding machines.jsonl (required)");
  app.add_option("--out", flags.out, "file to write the results to, as JSON (required)");
  app.add_option("--seconds", flags.seconds,
                 "the measuring window, after --warmup, in seconds (default 60)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup,
                 "seconds from the start (--expect reached, or the program's start) to the "
                 "measuring window (default 15)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--silences", flags.silences,
                 "agents to silence, spread over the measuring window (count, default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-in-flight", flags.max_in_flight,
                 "calls open at once; the rest queue (connections, default 4096)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", flags.seed, "seed of the phases, gauges and silence picks (default 1)");
  app.add_option("--expect", flags.expect,
                 "start once this many agents are heartbeating, and print a line to stdout then "
                 "(agents, default none: start at once)");
  app.add_option("--setup-seconds", flags.setup_seconds,
                 "with --expect: give up after this many seconds without it (default 600)")
      ->check(CLI::PositiveNumber);
  if (auto exit = parse_command_line(app, argc, argv)) return *exit;
  spdlog::set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [swarm] [%l] %v");

  // Checked here, not by CLI11: parse_command_line reads any missing option as a missing
  // subcommand.
  std::string usage_error;
  if (flags.sim_dir.empty()) usage_error = "--sim-dir is required";
  if (flags.out.empty()) usage_error = "--out is required";
  if (flags.silences > 0 && flags.seconds <= kDetectionMarginSeconds) {
    usage_error = fmt::format("--silences needs --seconds more than {:g}", kDetectionMarginSeconds);
  }
  if (!usage_error.empty()) {
    fmt::print(stderr, "endure-scale-swarm: error: {} (see 'endure-scale-swarm --help')\n",
               usage_error);
    return kExitUsage;
  }
  rlim_t files = raise_open_file_limit();
  if (files < flags.max_in_flight + kSpareFiles) {
    std::size_t fit = files > kSpareFiles * 2 ? files - kSpareFiles : kSpareFiles;
    log::warn("swarm: {} open files allowed: --max-in-flight lowered from {} to {}", files,
              flags.max_in_flight, fit);
    flags.max_in_flight = fit;
  }
  install_signal_handlers();

  SwarmOptions options;
  options.max_in_flight = flags.max_in_flight;
  options.seed = flags.seed;
  Swarm swarm(options);
  if (!log::ok(swarm.open(), "swarm")) return 1;
  fmt::print(stderr, "swarm: following {}/machines.jsonl for {:g} s (warmup {:g} s, {} silences)\n",
             flags.sim_dir, flags.seconds, flags.warmup, flags.silences);
  BenchRun run(flags, swarm);
  run.run();

  json results = run.results();
  if (!log::ok(fs::atomic_write_file(flags.out, results.dump(2) + "\n"), "swarm: write results")) {
    return 1;
  }
  fmt::print(stderr, "swarm: {} heartbeats in the window ({:.1f}/s), {} errors; results in {}\n",
             results["heartbeats"].get<int64_t>(), results["heartbeat_rate"].get<double>(),
             results["errors"]["total"].get<int64_t>(), flags.out);
  return 0;
}
