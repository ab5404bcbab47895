// endured under a storm of concurrent operator and agent requests (issue 20): 32 clients
// send a seeded random mix of valid and invalid calls for 60 s while a small cluster runs,
// once with endured left alone and once with it killed (SIGKILL) twice mid-storm. Then
// endured answers, its database passes SQLite's integrity check, every stored state is one
// the rules reach, the nodes come back to Running, and nothing of a deleted cluster lives on.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "api/wire.h"
#include "cluster_fixture.h"
#include "common/fs.h"
#include "controller/node_state.h"
#include "provider/local/cluster_index_registry.h"
#include "spec/cluster_spec.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kClients = 32;
constexpr auto kStormLength = 60s;
// Valid calls that start or stop instances go at most this often across all clients: on
// 2 cores the cluster must keep up with them for its end state to mean anything.
constexpr auto kHeavyEvery = 200ms;
// The clusters the storm creates and deletes: two names, so two small clusters at most.
const std::vector<std::string> kStormClusters = {"storm-a", "storm-b"};
const std::set<std::string> kClusterStatuses = {
    "Creating", "InService", "Updating", "SystemUpdating", "Deleting", "Failed", "Deleted"};

// ENDURE_STORM_SEED replays a storm's calls: client i draws from seed + i (the interleaving
// of the clients is the scheduler's).
uint64_t storm_seed() {
  if (const char* text = std::getenv("ENDURE_STORM_SEED")) return std::strtoull(text, nullptr, 10);
  return std::random_device{}();
}

// endured's database, opened read-only beside the running endured (WAL lets both in).
class StoreReader {
 public:
  explicit StoreReader(const std::filesystem::path& db) {
    if (sqlite3_open_v2(db.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "open " << db << ": " << sqlite3_errmsg(db_);
    }
    sqlite3_busy_timeout(db_, 5000);
  }
  ~StoreReader() { sqlite3_close(db_); }
  StoreReader(const StoreReader&) = delete;
  StoreReader& operator=(const StoreReader&) = delete;

  // Every row of a query, each column as text.
  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    std::vector<std::vector<std::string>> out;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return out;
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      auto& row = out.emplace_back();
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const auto* text = sqlite3_column_text(s, i);
        row.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
      }
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Every (status, stage) the node table reaches from a new row, as to_string() spells them.
std::set<std::string> reachable_node_states() {
  using controller::NodeState;
  const auto& table = controller::node_transitions();
  std::set<std::string> seen;
  std::vector<NodeState> todo;
  for (const auto& t : table) {
    if (!t.from) todo.push_back(t.to);
  }
  while (!todo.empty()) {
    NodeState state = todo.back();
    todo.pop_back();
    if (!seen.insert(controller::to_string(state)).second) continue;
    for (const auto& t : table) {
      if (t.from && *t.from == state) todo.push_back(t.to);
    }
  }
  return seen;
}

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
    return out + "  slowest answer: " + std::to_string(slowest_ / 1ms) + " ms (" + slowest_action_ +
           ")\n";
  }

 private:
  using Rng = std::mt19937_64;

  static int below(Rng& rng, int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  static bool chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }
  template <class T>
  static const T& pick(Rng& rng, const std::vector<T>& v) {
    return v[below(rng, static_cast<int>(v.size()))];
  }

  void client(int index) {
    Rng rng(seed_ + static_cast<uint64_t>(index));
    const HttpClient op = e_.client();
    while (Clock::now() < end_) {
      Call call = next_call(rng);
      const auto t0 = Clock::now();
      Result<json> r = call.token ? HttpClient(Endpoint::loopback(e_.port()), *call.token)
                                        .post(api::kPathPrefix + call.action, call.body)
                                  : op.post(api::kPathPrefix + call.action, call.body);
      record(call, r, Clock::now() - t0);
      std::this_thread::sleep_for(std::chrono::milliseconds(below(rng, 50)));
    }
  }

  void record(const Call& call, const Result<json>& r, Clock::duration took) {
    std::string problem;
    const std::string code = r ? "OK" : r.error().code;
    if (r) {
      if (call.bad_credential) {
        problem = "accepted a bad credential";
      } else if (!call.valid) {
        problem = "accepted an invalid call";
      } else if (call.check_reply) {
        problem = call.check_reply(*r);
      }
    } else if (code == "ConnectionFailure") {
      if (!endured_killed_) problem = "no answer";
    } else if (call.bad_credential) {
      if (code != api::kUnauthorized) problem = "a bad credential not refused as Unauthorized";
    } else if (code != api::kValidationException && code != api::kResourceNotFound &&
               code != api::kResourceInUse && code != api::kConflictException &&
               code != "UnknownOperation") {
      problem = "an answer no valid or invalid call should get";
    }
    if (took > 20s) problem = "answered after " + std::to_string(took / 1s) + " s";
    std::lock_guard lock(mu_);
    ++calls_;
    ++outcomes_[call.action + " " + code];
    if (took > slowest_) {
      slowest_ = took;
      slowest_action_ = call.action;
    }
    if (!problem.empty() && violations_.size() < 20) {
      violations_.push_back(problem + ": " + call.action + " " + call.body.dump() + " -> " +
                            (r ? r->dump() : code + ": " + r.error().message));
    }
    if (r && call.action == api::kListClusterNodes && call.body.is_object()) {
      learn_nodes(call.body.value("ClusterName", ""), *r);
    }
  }

  // Caller holds mu_.
  void learn_nodes(const std::string& cluster, const json& reply) {
    auto& known = nodes_[cluster];
    known.clear();
    for (const auto& n : reply["ClusterNodeSummaries"]) {
      known.push_back({n["NodeName"], n["InstanceId"], n["InstanceStatus"]["Status"]});
    }
  }

  // The cluster's nodes as endured lists them now, through a call of the storm's own.
  std::vector<KnownNode> list_nodes(const std::string& cluster) {
    const Call call(api::kListClusterNodes, {{"ClusterName", cluster}}, true);
    const auto t0 = Clock::now();
    auto r = e_.call(call.action, call.body);
    record(call, r, Clock::now() - t0);
    return r ? nodes_of(cluster) : std::vector<KnownNode>{};
  }

  std::vector<KnownNode> nodes_of(const std::string& cluster) {
    std::lock_guard lock(mu_);
    return nodes_[cluster];
  }

  Call next_call(Rng& rng) {
    const int roll = below(rng, 100);
    if (roll < 35) return read_call(rng);
    if (roll < 43) return create_call(rng);
    if (roll < 51) return update_call(rng);
    if (roll < 56) return delete_call(rng);
    if (roll < 64) return batch_recover_call(rng);
    if (roll < 72) return fault_call(rng);
    if (roll < 87) return agent_call(rng);
    if (roll < 95) return bad_operator_call(rng);
    return odd_call(rng);
  }

  // A cluster name for a read: mostly one that may exist.
  json any_cluster_name(Rng& rng) {
    const int roll = below(rng, 20);
    if (roll < 10) return main_;
    if (roll < 17) return pick(rng, kStormClusters);
    if (roll < 19) return "storm-none";
    return pick(rng, std::vector<json>{42, "", "bad name!", nullptr});
  }

  json any_node_id(Rng& rng, const std::string& cluster) {
    auto known = nodes_of(cluster);
    if (!known.empty() && chance(rng, 0.8)) {
      const auto& n = pick(rng, known);
      return chance(rng, 0.5) ? n.id : n.name;
    }
    return pick(rng, std::vector<json>{"i-00000000000000000", "worker-9", "", 7});
  }

  Call read_call(Rng& rng) {
    json name = any_cluster_name(rng);
    const std::string cluster = name.is_string() ? name.get<std::string>() : "";
    switch (below(rng, 9)) {
      case 0:
        return {api::kDescribeCluster, {{"ClusterName", name}}, true};
      case 1:
        return {api::kListClusters, json::object(), true};
      case 2:
        return {api::kListClusterNodes, {{"ClusterName", name}}, true};
      case 3:
        return {api::kDescribeClusterNode,
                {{"ClusterName", name}, {"NodeId", any_node_id(rng, cluster)}},
                true};
      case 4: {
        json body = {{"ClusterName", name}};
        if (chance(rng, 0.5)) body["AfterEventId"] = below(rng, 3000);
        if (chance(rng, 0.3)) body["MaxResults"] = below(rng, 20000) - 10;
        if (chance(rng, 0.1)) body["AfterEventId"] = "last";
        return {api::kListClusterEvents, body, true};
      }
      case 5:
        return {api::kDescribeClusterEvent,
                {{"ClusterName", name},
                 {"EventId", chance(rng, 0.9) ? json(below(rng, 3000)) : json("1")}},
                true};
      case 6:
        return {api::kGetClusterNodeLog,
                {{"ClusterName", name}, {"NodeId", any_node_id(rng, cluster)}},
                true};
      case 7:
        return {api::kGetNodeExecTarget,
                {{"ClusterName", name}, {"NodeId", any_node_id(rng, cluster)}},
                true};
      default:
        return {api::kDebugDescribeController, json::object(), true};
    }
  }

  Call create_call(Rng& rng) {
    if (heavy_.take()) {
      return {api::kCreateCluster, make_spec(pick(rng, kStormClusters), below(rng, 2)), true};
    }
    json spec = make_spec("storm-bad", 1);
    switch (below(rng, 9)) {
      case 0:
        spec["InstanceGroups"][1]["InstanceCount"] = -1;
        break;
      case 1:
        spec["InstanceGroups"][0]["InstanceCount"] = 2;
        break;
      case 2:
        spec["ClusterName"] = "bad name!";
        break;
      case 3:
        spec.erase("InstanceGroups");
        break;
      case 4:
        spec = make_spec("storm-bad", 1, "/nonexistent/lifecycle");
        break;
      case 5:
        spec = pick(rng, std::vector<json>{json::array(), "spec", 5, nullptr});
        break;
      case 6:  // a name in use
        spec = make_spec(main_, 1);
        break;
      case 7:
        spec["InstanceGroups"][1]["InstanceType"] = "local.none";
        break;
      default:
        spec["InstanceGroups"][1]["InstanceCount"] = spec::kMaxInstancesPerGroup + 1;
    }
    return {api::kCreateCluster, spec};
  }

  Call update_call(Rng& rng) {
    auto update = [](const std::string& cluster, int workers) {
      return json{{"ClusterName", cluster},
                  {"InstanceGroups", make_spec(cluster, workers)["InstanceGroups"]}};
    };
    if (heavy_.take()) {
      // The fixture's cluster keeps 1 or 2 workers, the storm's 0 or 1.
      if (chance(rng, 0.5)) return {api::kUpdateCluster, update(main_, 1 + below(rng, 2)), true};
      return {api::kUpdateCluster, update(pick(rng, kStormClusters), below(rng, 2)), true};
    }
    const std::string cluster = chance(rng, 0.7) ? main_ : pick(rng, kStormClusters);
    json body = update(cluster, 1);
    switch (below(rng, 8)) {
      case 0:
        body["InstanceGroups"][1]["InstanceCount"] = spec::kMaxInstancesPerGroup + 1;
        break;
      case 1:
        body["InstanceGroups"][0]["InstanceCount"] = 0;
        break;
      case 2:
        body["InstanceGroups"][1]["InstanceGroupName"] = "gpu";
        break;
      case 3:
        body["InstanceGroups"][1]["InstanceType"] = "local.c4";
        break;
      case 4:
        body.erase("InstanceGroups");
        break;
      case 5:
        body["ClusterName"] = "storm-none";
        break;
      case 6:
        body["NodeRecovery"] = "Sometimes";
        break;
      default:
        body = json::array({body});
    }
    return {api::kUpdateCluster, body};
  }

  Call delete_call(Rng& rng) {
    if (heavy_.take()) {
      return {api::kDeleteCluster, {{"ClusterName", pick(rng, kStormClusters)}}, true};
    }
    return {api::kDeleteCluster, pick(rng, std::vector<json>{json{{"ClusterName", "storm-none"}},
                                                             json{{"ClusterName", 42}},
                                                             json::object(), json("storm-a")})};
  }

  Call batch_recover_call(Rng& rng) {
    const bool replace = chance(rng, 0.25);
    const std::string action =
        replace ? api::kBatchReplaceClusterNodes : api::kBatchRebootClusterNodes;
    const std::string cluster = chance(rng, 0.7) ? main_ : pick(rng, kStormClusters);
    auto known = nodes_of(cluster);
    if (!known.empty() && heavy_.take()) {
      json ids = json::array({pick(rng, known).id});
      if (chance(rng, 0.3)) ids.push_back(pick(rng, known).id);
      Call call{action, {{"ClusterName", cluster}, {"NodeIds", ids}}, true};
      // An id refused is refused for what it is, whatever else is under way.
      call.check_reply = [](const json& reply) -> std::string {
        static const std::set<std::string> codes = {
            "InstanceIdNotFound", "ControllerNodeNotReplaceable", "InvalidInstanceStatus"};
        for (const auto& f : reply["Failed"]) {
          if (!codes.count(f["Code"].get<std::string>())) return "refused an id as " + f.dump();
        }
        return "";
      };
      return call;
    }
    json body = {{"ClusterName", cluster}};
    switch (below(rng, 6)) {
      case 0:
        body["NodeIds"] = json::array();
        break;
      case 1:
        body["NodeIds"] = json(std::vector<std::string>(api::kMaxBatchNodes + 1, "i-1"));
        break;
      case 2:
        body["NodeIds"] = json::array({42});
        break;
      case 3:
        break;  // no NodeIds
      case 4:
        body["ClusterName"] = "storm-none";
        body["NodeIds"] = {"i-00000000000000000"};
        break;
      default: {
        // Well formed but naming no instance: answered, and nothing is recovered.
        Call call{action, body, true};
        call.body["NodeIds"] = {"i-00000000000000000", "i-00000000000000001"};
        call.check_reply = [](const json& reply) -> std::string {
          return reply["Successful"].empty() ? "" : "recovered an instance that is not there";
        };
        return call;
      }
    }
    return {action, body};
  }

  Call fault_call(Rng& rng) {
    const std::string cluster = chance(rng, 0.7) ? main_ : pick(rng, kStormClusters);
    const std::vector<std::string> kinds(api::kFaultKinds.begin(), api::kFaultKinds.end());
    if (heavy_.take()) {
      // Running workers only. A controller node cannot be replaced: the faults that call
      // for a replacement leave it unhealthy by design. A node frozen before its scripts
      // report waits out LifecycleTimeoutSeconds (15 min), and a slot whose new instances
      // fail twice fails its cluster: both by design, neither what a storm should wait on.
      std::vector<std::string> workers;
      for (const auto& n : list_nodes(cluster)) {
        if (n.name.rfind("worker-", 0) == 0 && n.status == "Running") workers.push_back(n.name);
      }
      if (!workers.empty()) {
        return {
            api::kDebugInjectFault,
            {{"ClusterName", cluster}, {"NodeId", pick(rng, workers)}, {"Kind", pick(rng, kinds)}},
            true};
      }
    }
    json body = {{"ClusterName", cluster}, {"NodeId", "worker-0"}, {"Kind", pick(rng, kinds)}};
    switch (below(rng, 5)) {
      case 0:
        body["Kind"] = "meteor";
        break;
      case 1:
        body.erase("Kind");
        break;
      case 2:
        body["Kind"] = 7;
        break;
      case 3:
        body["NodeId"] = "worker-9";
        break;
      default:
        body["ClusterName"] = "storm-none";
    }
    return {api::kDebugInjectFault, body};
  }

  // An agent's call with a token that is not its own: none, a wrong one, the operator's,
  // another instance's or one of an instance since replaced.
  Call agent_call(Rng& rng) {
    static const std::vector<std::string> actions = {
        api::kAgentHeartbeat, api::kAgentReportLifecycle, api::kAgentReportFindings,
        api::kAgentReportDeepHealthCheck};
    const std::string action = pick(rng, actions);
    auto known = nodes_of(main_);
    json body = json::object();
    std::string id = known.empty() ? "i-00000000000000000" : pick(rng, known).id;
    if (chance(rng, 0.1)) id = "";
    if (!id.empty()) body["InstanceId"] = id;
    if (action == api::kAgentReportLifecycle) {
      body["Status"] = "Failed";
      body["ExitCode"] = 3;
      body["LastLines"] = "storm";
    } else if (action == api::kAgentReportFindings) {
      body["Findings"] = json::array({{{"Kind", "xid"}, {"Detail", "storm"}}});
    } else if (action == api::kAgentReportDeepHealthCheck) {
      body["Id"] = "storm";
    }
    Call call(action, body);
    call.token = "";
    call.bad_credential = true;
    const int roll = below(rng, 4);
    if (roll == 1) call.token = "not-the-token";
    if (roll == 2) call.token = std::nullopt;  // the operator's
    if (roll == 3 && !agent_tokens_.empty()) {
      // Another instance's token, or this one's from before it was replaced.
      const auto& [owner, token] = pick(rng, agent_tokens_);
      call.token = owner == id && !id.empty() ? "not-the-token" : token;
    }
    // A job's calls carry the cluster's auto-resume token; a wrong one is refused as well.
    if (chance(rng, 0.15)) {
      call.action = chance(rng, 0.5) ? api::kAutoResumeStatus : api::kReportTrainingMetrics;
      call.body = {{"ClusterName", main_}, {"JobId", 1}, {"Records", json::array()}};
      call.token = chance(rng, 0.5) ? "" : "not-the-token";
    }
    return call;
  }

  // An operator call that would change something, without the operator's token.
  Call bad_operator_call(Rng& rng) {
    std::vector<Call> calls = {
        {api::kDeleteCluster, {{"ClusterName", main_}}},
        {api::kUpdateCluster,
         {{"ClusterName", main_}, {"InstanceGroups", make_spec(main_, 0)["InstanceGroups"]}}},
        {api::kCreateCluster, make_spec("storm-a", 1)},
        {api::kDebugInjectFault,
         {{"ClusterName", main_}, {"NodeId", "worker-0"}, {"Kind", "crash"}}},
        {api::kBatchRebootClusterNodes, {{"ClusterName", main_}, {"NodeIds", {"i-1"}}}},
        {api::kListClusters, json::object()},
    };
    Call call = pick(rng, calls);
    call.token = chance(rng, 0.5) ? "" : "not-the-token";
    call.bad_credential = true;
    return call;
  }

  // Actions that do not exist and bodies that are not objects.
  Call odd_call(Rng& rng) {
    if (chance(rng, 0.5)) return {"NoSuchAction", json::object()};
    return {pick(rng, std::vector<std::string>{api::kDescribeCluster, api::kListClusterNodes,
                                               api::kBatchRebootClusterNodes}),
            pick(rng, std::vector<json>{json::array(), "x", 1.5, nullptr, true})};
  }

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

// The pid namespaces of every instance under a home, looked at every half second while the
// storm runs: the namespaces that must be empty once their clusters are gone.
class NamespaceWatch {
 public:
  explicit NamespaceWatch(std::filesystem::path home) : home_(std::move(home)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        look();
        std::this_thread::sleep_for(500ms);
      }
    });
  }
  ~NamespaceWatch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void look() {
    std::error_code ec;
    for (const auto& dir : std::filesystem::directory_iterator(home_ / "clusters", ec)) {
      for (int pid : instance_processes(home_, dir.path().filename().string())) {
        std::string ns = pid_namespace_of(pid);
        std::lock_guard lock(mu_);
        if (!ns.empty()) seen_.insert(ns);
      }
    }
    reap_orphan_instances();
  }
  std::set<std::string> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::filesystem::path home_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::set<std::string> seen_;
  std::thread thread_;
};

class Storm : public ClusterFixture {
 protected:
  // With $ENDURE_ARTIFACTS set, each storm leaves endured's log there, to read beside its
  // seed.
  void TearDown() override {
    const char* artifacts = std::getenv("ENDURE_ARTIFACTS");
    if (artifacts && e_) {
      const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
      std::error_code ec;
      std::filesystem::create_directories(artifacts, ec);
      std::filesystem::copy_file(
          e_->home() / "endured.log",
          std::filesystem::path(artifacts) /
              (std::string("storm-") + test->name() + "-" + std::to_string(seed_) + ".log"),
          std::filesystem::copy_options::overwrite_existing, ec);
    }
    ClusterFixture::TearDown();
  }

  uint64_t seed_ = 0;

  // The storm against the fixture's cluster; endured is killed at each of kill_at.
  void storm(const std::vector<Clock::duration>& kill_at) {
    const auto began = Clock::now();
    // Where the time goes, for a failure's report and for CI's budget.
    auto mark = [&](const std::string& what) {
      std::cout << "[" << (Clock::now() - began) / 1s << " s] " << what << std::endl;
    };
    ASSERT_NO_FATAL_FAILURE(start_cluster("storm-main", 2));
    mark("cluster in service");
    Endured& e = *e_;
    const uint64_t seed = seed_ = storm_seed();
    std::cout << "storm seed " << seed << " (ENDURE_STORM_SEED=" << seed << " replays it)\n";
    RecordProperty("seed", std::to_string(seed));
    NamespaceWatch namespaces(e.home());

    StormClients storm(e, name_, seed, !kill_at.empty());
    {
      StoreReader db(e.home() / "endured.db");
      std::vector<std::pair<std::string, std::string>> tokens;
      for (const auto& row : db.rows("SELECT instance_id, agent_token FROM instances")) {
        tokens.emplace_back(row[0], row[1]);
      }
      storm.set_agent_tokens(std::move(tokens));
    }
    const auto start = Clock::now();
    storm.run(start + kStormLength, [&] {
      for (auto at : kill_at) {
        std::this_thread::sleep_until(start + at);
        e.kill9();
        // What SIGKILL left on disk is a whole database before anyone recovers it.
        EXPECT_EQ(StoreReader(e.home() / "endured.db").rows("PRAGMA integrity_check"),
                  (std::vector<std::vector<std::string>>{{"ok"}}));
        reap_orphan_instances();
        e.start();
      }
    });
    ASSERT_FALSE(HasFatalFailure()) << "endured did not start again";
    std::cout << storm.calls() << " calls in " << kStormLength / 1s << " s, by action and answer:\n"
              << storm.summary();
    for (const auto& v : storm.violations()) ADD_FAILURE() << v;

    // endured answers, and its store is whole and holds only states the rules reach.
    if (!e.call(api::kDebugDescribeController, json::object())) {
      ADD_FAILURE() << "endured is gone; its log: " << (e.home() / "endured.log");
      e.kill9();  // reaped, and started again to clean up
      ASSERT_NO_FATAL_FAILURE(e.start());
    }
    expect_store_whole(e);
    mark("storm over, store whole");
    // The storm's clusters deleted, the fixture's cluster converges: every node Running.
    delete_clusters_but(e, name_);
    mark("storm clusters deleted");
    expect_converged(e, name_);
    mark("nodes converged");
    expect_no_orphans(e, namespaces.seen(), name_);
    // And nothing is left once the last cluster is deleted too.
    namespaces.stop();
    std::set<std::string> seen = namespaces.seen();
    delete_clusters_but(e, "");
    expect_no_orphans(e, seen, "");
    expect_store_whole(e);
    StoreReader db(e.home() / "endured.db");
    mark("all deleted; " + db.rows("SELECT count(*) FROM clusters")[0][0] + " clusters and " +
         db.rows("SELECT count(*) FROM instances")[0][0] + " instances in all, " +
         std::to_string(seen.size()) + " pid namespaces, none left");
  }

  // SQLite's integrity check, and every cluster and node state one the rules allow.
  void expect_store_whole(Endured& e) {
    StoreReader db(e.home() / "endured.db");
    EXPECT_EQ(db.rows("PRAGMA integrity_check"), (std::vector<std::vector<std::string>>{{"ok"}}));
    for (const auto& row : db.rows("SELECT name, status FROM clusters")) {
      EXPECT_TRUE(kClusterStatuses.count(row[1])) << "cluster " << row[0] << " is " << row[1];
    }
    static const std::set<std::string> reachable = reachable_node_states();
    for (const auto& row :
         db.rows("SELECT node_name, instance_id, status, recovery_stage, lifecycle_status "
                 "FROM instances")) {
      auto state = controller::parse_node_state(row[2], row[3]);
      ASSERT_TRUE(state) << row[0] << " " << row[1] << " is " << row[2] << "/" << row[3];
      EXPECT_TRUE(reachable.count(controller::to_string(*state)))
          << row[0] << " " << row[1] << " is " << controller::to_string(*state)
          << ", which no transition reaches";
      EXPECT_TRUE(controller::parse_lifecycle_status(row[4])) << row[0] << " lifecycle " << row[4];
    }
    // A deleted cluster has no live instance left.
    auto leaked = db.rows(
        "SELECT c.name, i.node_name, i.instance_id, i.status FROM instances i JOIN clusters c "
        "ON c.id = i.cluster_id WHERE c.status = 'Deleted' AND i.terminated_at = 0");
    EXPECT_TRUE(leaked.empty()) << leaked.size() << " live instances of deleted clusters, first "
                                << (leaked.empty() ? "" : leaked[0][0] + " " + leaked[0][1]);
    // A state and its event are one transaction, SIGKILL or not: every instance was launched
    // once, and one that ended ended once; every cluster was created once, and one deleted
    // was deleted once.
    auto events_off = db.rows(
        "SELECT i.node_name, i.instance_id, i.terminated_at > 0, "
        "  sum(e.type = 'InstanceLaunching'), "
        "  sum(e.type IN ('InstanceTerminated', 'InstanceFailed', 'WarmSpareLost')) "
        "FROM instances i LEFT JOIN events e ON e.instance_id = i.instance_id "
        "GROUP BY i.instance_id HAVING sum(e.type = 'InstanceLaunching') IS NOT 1 "
        "  OR sum(e.type IN ('InstanceTerminated', 'InstanceFailed', 'WarmSpareLost')) "
        "     IS NOT (i.terminated_at > 0)");
    for (const auto& row : events_off) {
      ADD_FAILURE() << row[0] << " " << row[1] << (row[2] == "1" ? " (ended)" : " (live)") << ": "
                    << row[3] << " InstanceLaunching, " << row[4] << " end events";
    }
    auto clusters_off = db.rows(
        "SELECT c.name, c.status, sum(e.type = 'ClusterCreating'), sum(e.type = 'ClusterDeleted') "
        "FROM clusters c LEFT JOIN events e ON e.cluster_id = c.id GROUP BY c.id "
        "HAVING sum(e.type = 'ClusterCreating') IS NOT 1 "
        "  OR sum(e.type = 'ClusterDeleted') IS NOT (c.status = 'Deleted')");
    for (const auto& row : clusters_off) {
      ADD_FAILURE() << "cluster " << row[0] << " (" << row[1] << "): " << row[2]
                    << " ClusterCreating, " << row[3] << " ClusterDeleted";
    }
  }

  // Deletes every cluster but `keep` and waits until they are gone.
  void delete_clusters_but(Endured& e, const std::string& keep) {
    auto names = [&] {
      std::set<std::string> out;
      auto list = e.call(api::kListClusters, json::object());
      EXPECT_TRUE(list.ok()) << (list ? "" : list.error().message);
      if (list) {
        for (const auto& c : (*list)["ClusterSummaries"]) out.insert(c["ClusterName"]);
      }
      out.erase(keep);
      return out;
    };
    for (const auto& name : names()) {
      auto r = e.call(api::kDeleteCluster, {{"ClusterName", name}});
      EXPECT_TRUE(r.ok()) << name << ": " << r.error().message;
    }
    EXPECT_TRUE(wait_until([&] { return names().empty(); }, 120s))
        << "still there: " << json(names()).dump();
  }

  // The cluster's status, its live nodes' states, and the events of those not Running.
  std::string unsettled(Endured& e, const std::string& cluster, const std::string& id) {
    std::string out = "cluster " + e.wait_status(cluster, {}, 0s) + "\n";
    StoreReader db(e.home() / "endured.db");
    const auto events = events_after(e, cluster, 0);
    for (const auto& row :
         db.rows("SELECT node_name, instance_id, status, recovery_stage, recovery, "
                 "lifecycle_status, message FROM instances WHERE cluster_id = '" +
                 id + "' AND terminated_at = 0")) {
      out += row[0] + " " + row[1] + " " + row[2] + "/" + row[3] + " recovery " + row[4] +
             " lifecycle " + row[5] + " (" + row[6] + ")\n";
      if (row[2] == "Running" && row[3].empty()) continue;
      for (const auto& ev : events) {
        if (ev.value("InstanceId", "") != row[1]) continue;
        out += "  " + ev["EventTime"].get<std::string>() + " " +
               ev["EventType"].get<std::string>() + ": " + ev["Description"].get<std::string>() +
               "\n";
      }
    }
    return out;
  }

  // The cluster ends InService with its target count of nodes, each Running with no
  // recovery under way and idle in Slurm.
  void expect_converged(Endured& e, const std::string& cluster) {
    auto targets = [&] {
      int n = 0;
      auto d = e.call(api::kDescribeCluster, {{"ClusterName", cluster}});
      if (d) {
        for (const auto& g : (*d)["InstanceGroups"]) n += g["TargetCount"].get<int>();
      }
      return n;
    };
    const std::string id = cluster_id(e, cluster);
    auto settled = [&] {
      if (e.wait_status(cluster, {"InService"}, 0s) != "InService") return false;
      StoreReader db(e.home() / "endured.db");
      auto live = db.rows("SELECT status, recovery_stage FROM instances WHERE cluster_id = '" + id +
                          "' AND terminated_at = 0");
      if (static_cast<int>(live.size()) != targets()) return false;
      for (const auto& row : live) {
        if (row[0] != "Running" || !row[1].empty()) return false;
      }
      return true;
    };
    ASSERT_TRUE(wait_until(settled, 180s)) << unsettled(e, cluster, id);
    const auto nodes = nodes_by_name(e, cluster);
    for (const auto& [name, node] : nodes) {
      EXPECT_EQ(node.status, "Running") << name;
      if (name.rfind("worker-", 0) != 0) continue;
      EXPECT_TRUE(wait_until([&] { return slurm_state(e, cluster, name) == "idle"; }, 30s))
          << name << " is " << slurm_state(e, cluster, name) << " in Slurm";
    }
    EXPECT_EQ(instance_processes(e.home(), id).size(), nodes.size()) << "one instance per node";
    // Files stay for the live instances, and for the failed ones (their logs are read).
    std::set<std::string> kept;
    for (const auto& [name, node] : nodes) kept.insert(node.id);
    StoreReader db(e.home() / "endured.db");
    for (const auto& row : db.rows("SELECT instance_id FROM instances WHERE cluster_id = '" + id +
                                   "' AND status = 'Failure'")) {
      kept.insert(row[0]);
    }
    for (const auto& entry :
         std::filesystem::directory_iterator(e.home() / "clusters" / id / "instances")) {
      EXPECT_TRUE(!entry.is_directory() || kept.count(entry.path().filename().string()))
          << "the files of instance " << entry.path().filename() << " outlived it";
    }
  }

  // Of every cluster endured ever had, only `keep` has processes, files or an index; the
  // pid namespaces seen are empty but for keep's instances.
  void expect_no_orphans(Endured& e, const std::set<std::string>& seen, const std::string& keep) {
    const std::string keep_id = keep.empty() ? "" : cluster_id(e, keep);
    std::set<std::string> kept;
    if (!keep_id.empty()) {
      for (int pid : instance_processes(e.home(), keep_id)) kept.insert(pid_namespace_of(pid));
    }
    StoreReader db(e.home() / "endured.db");
    for (const auto& row : db.rows("SELECT id, name FROM clusters")) {
      if (row[0] == keep_id) continue;
      EXPECT_TRUE(wait_until([&] { return instance_processes(e.home(), row[0]).empty(); }, 20s))
          << row[1] << " " << row[0] << " has live instances";
      EXPECT_FALSE(std::filesystem::exists(e.home() / "clusters" / row[0])) << row[1];
      EXPECT_FALSE(std::filesystem::exists(e.home() / "secrets" / row[0])) << row[1];
    }
    for (const auto& ns : seen) {
      if (kept.count(ns)) continue;
      EXPECT_TRUE(wait_until([&] { return processes_in_pid_namespace(ns).empty(); }, 20s))
          << "a process of " << ns << " outlived its cluster";
    }
    // The host-wide index claims name cluster folders; none may name one of ours but keep's.
    const std::string ours = std::filesystem::weakly_canonical(e.home() / "clusters").string();
    std::error_code ec;
    for (const auto& claim :
         std::filesystem::directory_iterator(provider::kHostClusterIndexDir, ec)) {
      auto holder = fs::read_file(claim.path());
      if (!holder || holder->rfind(ours, 0) != 0) continue;
      EXPECT_FALSE(keep_id.empty() || holder->find(keep_id) == std::string::npos)
          << claim.path() << " still claims " << *holder;
    }
  }
};

TEST_F(Storm, ThirtyTwoClientsForSixtySeconds) { storm({}); }

TEST_F(Storm, EnduredKilledTwiceMidStorm) { storm({20s, 40s}); }

}  // namespace
}  // namespace endure::test
