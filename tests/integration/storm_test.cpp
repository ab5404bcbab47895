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
#include "controller/core/node_state.h"
#include "provider/local/cluster_index_registry.h"
#include "spec/cluster_spec.h"
#include "storm_clients.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kStormLength = 60s;
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
    // Files stay for the live instances, and for the failed ones (their logs are read). The
    // folders are listed before the store is read: an instance's row is there before its
    // folder, and a retired one's folder is gone before its row says so, so a fault the storm
    // left for a later health check to find (a full disk, its node replaced meanwhile) is no
    // false alarm. Orphans go at a reconcile pass: given a few.
    auto outlived = [&] {
      std::vector<std::string> dirs, out;
      for (const auto& entry :
           std::filesystem::directory_iterator(e.home() / "clusters" / id / "instances")) {
        if (entry.is_directory()) dirs.push_back(entry.path().filename().string());
      }
      std::set<std::string> kept;
      StoreReader db(e.home() / "endured.db");
      for (const auto& row : db.rows("SELECT instance_id FROM instances WHERE cluster_id = '" + id +
                                     "' AND (terminated_at = 0 OR status = 'Failure')")) {
        kept.insert(row[0]);
      }
      for (const auto& d : dirs) {
        if (!kept.count(d)) out.push_back(d);
      }
      return out;
    };
    if (!wait_until([&] { return outlived().empty(); }, 30s)) {
      for (const auto& d : outlived())
        ADD_FAILURE() << "the files of instance " << d << " outlived it";
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
