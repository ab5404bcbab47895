// The request storm's clients (storm_test.cpp): kClients threads, each a real HTTP client,
// sending a seeded random mix of valid and invalid operator calls and agent calls with bad
// credentials, each answer checked against what endured may answer it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness.h"

namespace endure::test {

using Clock = std::chrono::steady_clock;

constexpr int kClients = 32;
// Valid calls that start or stop instances go at most this often across all clients: on
// 2 cores the cluster must keep up with them for its end state to mean anything.
constexpr auto kHeavyEvery = std::chrono::milliseconds(200);

// Valid heavy calls at most one per interval, whoever asks.
class Pacer {
 public:
  explicit Pacer(Clock::duration interval) : interval_(interval.count()) {}
  bool take() {
    const Clock::rep now = Clock::now().time_since_epoch().count();
    Clock::rep next = next_.load();
    while (now >= next) {
      if (next_.compare_exchange_weak(next, now + interval_)) return true;
    }
    return false;
  }

 private:
  Clock::rep interval_;
  std::atomic<Clock::rep> next_{0};
};

// One request of the storm and the answers endured may give it.
struct Call {
  Call(std::string action_, json body_, bool valid_ = false)
      : action(std::move(action_)), body(std::move(body_)), valid(valid_) {}

  std::string action;
  json body;
  // The bearer token; nullopt: the operator's.
  std::optional<std::string> token;
  // An invalid call must be refused; a bad credential must be refused as Unauthorized.
  bool valid = false;
  bool bad_credential = false;
  // Checks a 200 reply; returns what is wrong with it, or "".
  std::function<std::string(const json&)> check_reply;
};

struct KnownNode {
  std::string name;
  std::string id;
  std::string status;
};

// What the clients share: targets learnt from replies, and what endured answered.
class StormClients {
 public:
  StormClients(Endured& e, std::string main_cluster, uint64_t seed, bool endured_killed)
      : e_(e), main_(std::move(main_cluster)), seed_(seed), endured_killed_(endured_killed) {}

  void set_agent_tokens(std::vector<std::pair<std::string, std::string>> tokens) {
    agent_tokens_ = std::move(tokens);
  }

  // Runs kClients clients until `end`; `during` runs on this thread meanwhile.
  void run(Clock::time_point end, const std::function<void()>& during) {
    end_ = end;
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) clients.emplace_back([this, i] { client(i); });
    during();
    for (auto& t : clients) t.join();
  }

  long calls() const { return calls_; }
  const std::vector<std::string>& violations() const { return violations_; }
  std::string summary() const {
    std::string out;
    for (const auto& [key, n] : outcomes_) out += "  " + key + ": " + std::to_string(n) + "\n";
    return out + "  slowest answer: " + std::to_string(slowest_ / std::chrono::milliseconds(1)) +
           " ms (" + slowest_action_ + ")\n";
  }

 private:
  using Rng = std::mt19937_64;

  static int below(Rng& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  static bool chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }
  template <class T>
  static const T& pick(Rng& rng, const std::vector<T>& v) {
    return v[below(rng, static_cast<int>(v.size()))];
  }

  void client(int index);

  void record(const Call& call, const Result<json>& r, Clock::duration took);

  // Caller holds mu_.
  void learn_nodes(const std::string& cluster, const json& reply);

  // The cluster's nodes as endured lists them now, through a call of the storm's own.
  std::vector<KnownNode> list_nodes(const std::string& cluster);

  std::vector<KnownNode> nodes_of(const std::string& cluster);

  Call next_call(Rng& rng);

  // A cluster name for a read: mostly one that may exist.
  json any_cluster_name(Rng& rng);

  json any_node_id(Rng& rng, const std::string& cluster);

  Call read_call(Rng& rng);

  Call create_call(Rng& rng);

  Call update_call(Rng& rng);

  Call delete_call(Rng& rng);

  Call batch_recover_call(Rng& rng);

  Call fault_call(Rng& rng);

  // An agent's call with a token that is not its own: none, a wrong one, the operator's,
  // another instance's or one of an instance since replaced.
  Call agent_call(Rng& rng);

  // An operator call that would change something, without the operator's token.
  Call bad_operator_call(Rng& rng);

  // Actions that do not exist and bodies that are not objects.
  Call odd_call(Rng& rng);

  Endured& e_;
  const std::string main_;
  const uint64_t seed_;
  const bool endured_killed_;
  Clock::time_point end_;
  Pacer heavy_{kHeavyEvery};
  std::vector<std::pair<std::string, std::string>> agent_tokens_;  // (instance id, token)

  std::mutex mu_;
  std::map<std::string, std::vector<KnownNode>> nodes_;  // by cluster, from ListClusterNodes
  std::map<std::string, long> outcomes_;                 // "Action code" -> calls
  std::vector<std::string> violations_;
  long calls_ = 0;
  Clock::duration slowest_{};
  std::string slowest_action_;
};

}  // namespace endure::test
