// Node health and automatic recovery end to end: each fault is made for real on a node,
// found by the same detection that finds real faults, and repaired.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <mutex>
#include <thread>

#include "cluster_fixture.h"
#include "provider/local/namespace_processes.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

struct FaultCase {
  std::string kind;
  std::string fault;   // the fault kind endured must name
  std::string action;  // Reboot (same InstanceId) or Replace (new one)
};

// gtest names the case by its fault in test listings.
void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.kind; }

class FaultRecovery : public ClusterFixture, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(FaultRecovery, IsFoundRepairedAndTouchesNoOtherNode) {
  const auto& c = GetParam();
  start_cluster("it-fault", 3);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  ASSERT_EQ(e.exec(name_, "worker-1", "echo kept > /local/marker").exit_code, 0);
  std::map<std::string, std::string> namespaces;
  for (const auto& other : {"controller-0", "worker-0", "worker-2"}) {
    namespaces[other] = node_namespace(e, name_, other);
    ASSERT_FALSE(namespaces[other].empty());
  }
  long long mark = last_event_id(e, name_);

  auto injected = e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1",
                         "--kind", c.kind});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark)) << events_after(e, name_, mark).dump(2);

  auto events = events_after(e, name_, mark);
  auto unhealthy = find_event(events, "worker-1", "NodeUnhealthy");
  ASSERT_FALSE(unhealthy.is_null()) << events.dump(2);
  std::string verdict = unhealthy["Description"];
  EXPECT_NE(verdict.find(c.fault + ":"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("-> " + c.action), std::string::npos) << verdict;
  EXPECT_FALSE(find_event(events, "worker-1", "NodeDrained").is_null());

  auto after = nodes_by_name(e, name_);
  EXPECT_EQ(after["worker-1"].status, "Running");
  if (c.action == "Reboot") {
    EXPECT_EQ(after["worker-1"].id, before["worker-1"].id);
    EXPECT_EQ(e.exec(name_, "worker-1", "cat /local/marker").out, "kept\n");
  } else {
    EXPECT_NE(after["worker-1"].id, before["worker-1"].id);
    EXPECT_NE(e.exec(name_, "worker-1", "cat /local/marker").exit_code, 0)
        << "a new instance starts with an empty local disk";
  }
  EXPECT_TRUE(wait_until([&] { return slurm_state(e, name_, "worker-1") == "idle"; }, 20s))
      << slurm_state(e, name_, "worker-1");
  for (const auto& other : {"controller-0", "worker-0", "worker-2"}) {
    EXPECT_EQ(after[other].id, before[other].id) << other;
    EXPECT_EQ(after[other].status, "Running") << other;
    EXPECT_TRUE(find_event(events, other, "NodeUnhealthy").is_null()) << other;
    EXPECT_EQ(node_namespace(e, name_, other), namespaces[other]) << other << " was restarted";
  }
  auto srun = e.exec(name_, "controller-0", "timeout 60 srun -N3 hostname | sort | tr '\\n' ' '");
  EXPECT_EQ(srun.out, "worker-0 worker-1 worker-2 ") << srun.err;
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultRecovery,
    ::testing::Values(FaultCase{"crash", "crash", "Replace"}, FaultCase{"hang", "hang", "Reboot"},
                      FaultCase{"xid", "xid", "Replace"}, FaultCase{"ecc", "ecc", "Replace"},
                      FaultCase{"disk-full", "disk-full", "Replace"},
                      FaultCase{"slurmd-kill", "slurmd-gone", "Reboot"},
                      FaultCase{"fsx-hang", "fsx-hang", "Reboot"}),
    [](const auto& info) {
      std::string name = info.param.kind;
      for (auto& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

class ManualRecovery : public ClusterFixture {};

TEST_F(ManualRecovery, ActionReplaceInSlurmReplacesTheNode) {
  start_cluster("it-manual", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  long long mark = last_event_id(e, name_);
  auto set = e.exec(name_, "controller-0",
                    "scontrol update node=worker-1 state=fail reason=\"Action:Replace\"");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark)) << events_after(e, name_, mark).dump(2);
  auto after = nodes_by_name(e, name_);
  EXPECT_NE(after["worker-1"].id, before["worker-1"].id);
  EXPECT_EQ(after["worker-0"].id, before["worker-0"].id);
  EXPECT_TRUE(wait_until([&] { return slurm_state(e, name_, "worker-1") == "idle"; }, 20s));
}

TEST_F(ManualRecovery, ActionRebootWaitsForRunningJobsThenReboots) {
  start_cluster("it-manual", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  e.exec(name_, "controller-0", "rm -f /fsx/job-ended");
  auto job =
      e.exec(name_, "controller-0",
             "sbatch --parsable -N1 -w worker-1 --wrap 'sleep 6; date +%s.%N > /fsx/job-ended'");
  ASSERT_EQ(job.exit_code, 0) << job.err;
  ASSERT_TRUE(wait_until([&] { return slurm_state(e, name_, "worker-1") == "alloc"; }, 20s));
  long long mark = last_event_id(e, name_);
  ASSERT_EQ(e.exec(name_, "controller-0",
                   "scontrol update node=worker-1 state=fail reason=\"Action:Reboot\"")
                .exit_code,
            0);
  ASSERT_TRUE(wait_until(
      [&] {
        return !find_event(events_after(e, name_, mark), "worker-1", "NodeRecoveryWaiting").is_null();
      },
      20s));
  // While the job runs nothing happens to the node.
  EXPECT_TRUE(find_event(events_after(e, name_, mark), "worker-1", "NodeRebooting").is_null());
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark, 90s)) << events_after(e, name_, mark).dump(2);
  EXPECT_EQ(nodes_by_name(e, name_)["worker-1"].id, before["worker-1"].id);
  // The job ran to its end once: a reboot under it would have failed it (NODE_FAIL) or
  // requeued it (Restarts=1), and its last line would not have run the first time.
  ASSERT_EQ(e.exec(name_, "controller-0", "test -s /fsx/job-ended").exit_code, 0)
      << "the job never finished";
  auto state = e.exec(name_, "controller-0",
                      "scontrol show job -o " + std::to_string(std::atoll(job.out.c_str())));
  EXPECT_NE(state.out.find("JobState=COMPLETED"), std::string::npos) << state.out << state.err;
  EXPECT_NE(state.out.find("Restarts=0"), std::string::npos) << state.out;
  EXPECT_FALSE(find_event(events_after(e, name_, mark), "worker-1", "NodeRebooting").is_null());
}

TEST_F(ManualRecovery, MisspeltReasonDoesNothing) {
  start_cluster("it-manual", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  long long mark = last_event_id(e, name_);
  for (const char* reason : {"action:replace", "Action: Replace", "Action:Replace please"}) {
    ASSERT_EQ(e.exec(name_, "controller-0",
                     std::string("scontrol update node=worker-1 state=fail reason=\"") + reason + "\"")
                  .exit_code,
              0);
  }
  // Slurm holds the last reason, and endured has looked at it several times since.
  auto reason = e.exec(name_, "controller-0", "sinfo -h -n worker-1 -o %E");
  EXPECT_EQ(reason.out, "Action:Replace please\n") << reason.err;
  ASSERT_TRUE(wait_passes(e));
  auto events = events_after(e, name_, mark);
  EXPECT_TRUE(find_event(events, "worker-1", "NodeUnhealthy").is_null()) << events.dump(2);
  EXPECT_TRUE(find_event(events, "worker-1", "NodeReplacing").is_null());
  EXPECT_EQ(nodes_by_name(e, name_)["worker-1"].id, before["worker-1"].id);
}

TEST_F(ManualRecovery, BatchCallsCheckEveryIdAndRefuseTheController) {
  start_cluster("it-batch", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  auto r = e.call("BatchReplaceClusterNodes",
                  {{"ClusterName", name_},
                   {"NodeIds", {before["controller-0"].id, "i-00000000000000000"}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE((*r)["Successful"].empty());
  ASSERT_EQ((*r)["Failed"].size(), 2u);
  EXPECT_EQ((*r)["Failed"][0]["Code"], "ControllerNodeNotReplaceable");
  EXPECT_EQ((*r)["Failed"][1]["Code"], "InstanceIdNotFound");
  json too_many = json::array();
  for (int i = 0; i < 26; ++i) too_many.push_back(before["worker-0"].id);
  auto big = e.call("BatchRebootClusterNodes", {{"ClusterName", name_}, {"NodeIds", too_many}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, "ValidationException");

  long long mark = last_event_id(e, name_);
  auto reboot = e.cli({"batch-reboot-cluster-nodes", "--cluster-name", name_, "--node-ids",
                       before["worker-0"].id});
  ASSERT_EQ(reboot.exit_code, 0) << reboot.out << reboot.err;
  // A second request while one is under way is refused.
  auto during = e.call("BatchReplaceClusterNodes",
                       {{"ClusterName", name_}, {"NodeIds", {before["worker-0"].id}}});
  ASSERT_TRUE(during.ok()) << during.error().message;
  ASSERT_EQ((*during)["Failed"].size(), 1u) << during->dump();
  EXPECT_EQ((*during)["Failed"][0]["Code"], "InvalidInstanceStatus") << during->dump();
  ASSERT_TRUE(wait_returned(e, name_, "worker-0", mark));
  auto replace = e.cli({"batch-replace-cluster-nodes", "--cluster-name", name_, "--node-ids",
                        before["worker-1"].id});
  ASSERT_EQ(replace.exit_code, 0);
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark));
  auto after = nodes_by_name(e, name_);
  EXPECT_EQ(after["worker-0"].id, before["worker-0"].id);
  EXPECT_NE(after["worker-1"].id, before["worker-1"].id);
  // Nor is one for an instance that is no longer there.
  auto stale = e.call("BatchRebootClusterNodes",
                      {{"ClusterName", name_}, {"NodeIds", {before["worker-1"].id}}});
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ((*stale)["Failed"][0]["Code"], "InstanceIdNotFound");
}

TEST_F(ManualRecovery, NodeRecoveryNoneOnlyMarksAndDrains) {
  start_cluster("it-none", 2, "None");
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  long long mark = last_event_id(e, name_);
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1",
                   "--kind", "xid"})
                .exit_code,
            0);
  ASSERT_TRUE(wait_until(
      [&] { return nodes_by_name(e, name_)["worker-1"].status == "Failure"; }, 30s));
  ASSERT_TRUE(wait_passes(e));
  auto events = events_after(e, name_, mark);
  auto verdict = find_event(events, "worker-1", "NodeUnhealthy");
  ASSERT_FALSE(verdict.is_null()) << events.dump(2);
  EXPECT_NE(verdict["Description"].get<std::string>().find("xid: "), std::string::npos)
      << verdict.dump();
  EXPECT_NE(verdict["Description"].get<std::string>().find("-> Replace"), std::string::npos)
      << verdict.dump();
  EXPECT_FALSE(find_event(events, "worker-1", "NodeDrained").is_null());
  EXPECT_TRUE(find_event(events, "worker-1", "NodeReplacing").is_null());
  EXPECT_TRUE(find_event(events, "worker-1", "NodeRebooting").is_null());
  EXPECT_EQ(event_counts(events, "worker-1")["NodeUnhealthy"], 1)
      << "judged once: " << events.dump(1);
  EXPECT_EQ(nodes_by_name(e, name_)["worker-1"].id, before["worker-1"].id);
  EXPECT_EQ(slurm_state(e, name_, "worker-1"), "drain");
}

// The host pid of a node's process whose pid inside the node is in `pid_file` (a node path).
int host_pid_in_node(Endured& e, const std::string& cluster, const std::string& node,
                     const std::string& pid_file) {
  auto target = e.call("GetNodeExecTarget", {{"ClusterName", cluster}, {"NodeId", node}});
  if (!target) return 0;
  int in_node = std::atoi(e.exec(cluster, node, "cat " + pid_file).out.c_str());
  for (int p : provider::processes_in_namespace_of((*target)["Pid"].get<int>())) {
    if (in_node > 0 && provider::pid_in_own_namespace(p) == in_node) return p;
  }
  return 0;
}

// Every node under full CPU load, its local disk under fsync load and /fsx under write load
// for 120 s; meanwhile one node's agent alone is stopped for 3 s, and another node's slurmd
// alone for 3 s. No node is judged, rebooted or replaced; the silent agent is restarted.
TEST_F(ClusterFixture, LoadedClusterWithAStoppedAgentAndAStoppedSlurmdGetsNoVerdict) {
  start_cluster("it-load", 3);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  std::map<std::string, std::string> namespaces;
  for (const auto& [node, _] : before) namespaces[node] = node_namespace(e, name_, node);
  long long mark = last_event_id(e, name_);
  // Each load runs until its timeout ends it (status 124); the disk loop counts its rounds.
  std::string load =
      "for i in 1 2; do timeout 120 bash -c 'while :; do :; done' & done; "
      "timeout 120 bash -c 'while :; do dd if=/dev/zero of=/local/load bs=1M count=300 "
      "conv=fsync status=none; dd if=/dev/zero of=/fsx/load-$(hostname) bs=1M count=50 "
      "conv=fsync status=none; rm -f /local/load; echo >> /tmp/disk-rounds; done' & "
      "for p in $(jobs -p); do wait $p; echo \"rc=$?\"; done; echo \"rounds=$(wc -l < "
      "/tmp/disk-rounds)\"";
  std::map<std::string, process::Output> outputs;
  std::vector<std::thread> loads;
  std::mutex mu;
  for (const char* node : {"controller-0", "worker-0", "worker-1", "worker-2"}) {
    loads.emplace_back([&, node] {
      // Past the CLI's usual 120 s: the load itself runs that long.
      auto out = e.cli(
          {"exec", "--cluster-name", name_, "--node", node, "--", "/bin/bash", "-c", load}, 180s);
      std::lock_guard lock(mu);
      outputs[node] = out;
    });
  }
  auto stop_for_3s = [&](const std::string& node, const std::string& pid_file) {
    int pid = host_pid_in_node(e, name_, node, pid_file);
    EXPECT_GT(pid, 0) << node << " " << pid_file;
    if (pid <= 0) return;
    ::kill(pid, SIGSTOP);
    std::this_thread::sleep_for(3s);
    ::kill(pid, SIGCONT);  // an agent restarted meanwhile is gone: nothing to continue
  };
  std::this_thread::sleep_for(30s);
  stop_for_3s("worker-1", "/opt/endure/agent.pid");
  std::this_thread::sleep_for(25s);
  stop_for_3s("worker-2", "/run/slurm/slurmd.pid");
  for (auto& t : loads) t.join();

  for (const auto& [node, out] : outputs) {
    EXPECT_EQ(out.out.substr(0, 21), "rc=124\nrc=124\nrc=124\n")
        << node << ": " << out.out << out.err;
    auto rounds = out.out.find("rounds=");
    ASSERT_NE(rounds, std::string::npos) << node << ": " << out.out;
    EXPECT_GE(std::atoi(out.out.c_str() + rounds + 7), 1) << node << ": the disk load never wrote";
  }
  auto events = events_after(e, name_, mark);
  for (const auto& ev : events) {
    for (const char* judged : {"NodeUnhealthy", "NodeRebooting", "NodeReplacing"}) {
      EXPECT_NE(ev["EventType"], judged) << ev.dump();
    }
  }
  EXPECT_FALSE(find_event(events, "worker-1", "AgentRestarted").is_null()) << events.dump(2);
  auto after = nodes_by_name(e, name_);
  for (const auto& [name, node] : after) {
    EXPECT_EQ(node.status, "Running") << name;
    EXPECT_EQ(node.id, before[name].id) << name << " was replaced";
    EXPECT_EQ(node_namespace(e, name_, name), namespaces[name]) << name << " was rebooted";
  }
  // The restarted agent speaks again.
  EXPECT_TRUE(wait_until(
      [&] {
        auto d = e.call("DescribeClusterNode", {{"ClusterName", name_}, {"NodeId", "worker-1"}});
        return d && (*d)["NodeDetails"].value("SecondsSinceHeartbeat", 99.0) < 2;
      },
      10s));
}

}  // namespace
}  // namespace endure::test
