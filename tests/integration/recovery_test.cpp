// Node health and automatic recovery end to end: each fault is made for real on a node,
// found by the same detection that finds real faults, and repaired.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "cluster_fixture.h"
#include "support/text_files.h"

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

// endured kills itself (SIGKILL) at a point of a node's recovery and is started again: the
// recovery completes once. The node ends Running with exactly one live instance (a new one
// for a replace, the same for a reboot), nothing of the old instance is left, and every
// event of the recovery is written once, NodeReturnedToService last.
struct CrashCase {
  std::string point;
  std::string fault;   // what inject-fault makes on worker-1
  std::string action;  // the recovery it calls for
};
void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.point << " (" << c.action << ")"; }

class RecoveryCrash : public ClusterFixture, public ::testing::WithParamInterface<CrashCase> {};

TEST_P(RecoveryCrash, ControllerKilledMidRecoveryCompletesItOnce) {
  const auto& c = GetParam();
  start_cluster("it-rcrash", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  const std::string id = cluster_id(e, name_);
  // The same endured again, armed with the crash point.
  e.stop();
  reap_orphan_instances();
  e.start(c.point);
  long long mark = last_event_id(e, name_);
  auto injected = e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1",
                         "--kind", c.fault});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(e.wait_exit(60s)) << "endured never reached " << c.point;
  reap_orphan_instances();
  e.start();
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark, 120s)) << events_after(e, name_, mark).dump(2);

  auto after = nodes_by_name(e, name_);
  ASSERT_EQ(after.size(), 3u);
  for (const auto& [name, node] : after) EXPECT_EQ(node.status, "Running") << name;
  if (c.action == "Replace") {
    EXPECT_NE(after["worker-1"].id, before["worker-1"].id);
    // Its first process is gone (and with it its pid namespace, whose number the kernel
    // may already have given to the new instance's).
    for (int pid : instance_processes(e.home(), id)) {
      EXPECT_EQ(read_text("/proc/" + std::to_string(pid) + "/cmdline").find(before["worker-1"].id),
                std::string::npos)
          << "the old instance lives on: pid " << pid;
    }
  } else {
    EXPECT_EQ(after["worker-1"].id, before["worker-1"].id);
  }
  for (const char* other : {"controller-0", "worker-0"}) EXPECT_EQ(after[other].id, before[other].id);
  EXPECT_EQ(instance_processes(e.home(), id).size(), 3u) << "one live instance per node";
  size_t dirs = 0;
  for (auto& entry : std::filesystem::directory_iterator(e.home() / "clusters" / id / "instances")) {
    dirs += entry.is_directory();
  }
  EXPECT_EQ(dirs, 3u) << "an instance's files outlived it";

  auto events = events_after(e, name_, mark);
  auto counts = event_counts(events, "worker-1");
  std::vector<std::string> once = {"NodeUnhealthy", "NodeDrained", "NodeReturnedToService"};
  if (c.action == "Replace") {
    once.insert(once.end(), {"NodeReplacing", "InstanceTerminated", "InstanceLaunching"});
    // Launched by the first endured (recorded by the second) or by the second.
    EXPECT_EQ(counts["InstanceLaunched"] + counts["InstanceAdopted"], 1) << events.dump(1);
  } else {
    once.push_back("NodeRebooting");
  }
  for (const auto& type : once) EXPECT_EQ(counts[type], 1) << type << ": " << events.dump(1);
  for (const auto& [type, n] : counts) EXPECT_LE(n, 1) << type << " written " << n << " times";
  json last;
  for (const auto& ev : events) {
    if (ev.value("NodeName", "") == "worker-1") last = ev;
  }
  EXPECT_EQ(last.value("EventType", ""), "NodeReturnedToService") << events.dump(1);
  EXPECT_TRUE(wait_until([&] { return slurm_state(e, name_, "worker-1") == "idle"; }, 20s))
      << slurm_state(e, name_, "worker-1");
}

INSTANTIATE_TEST_SUITE_P(
    CrashPoints, RecoveryCrash,
    ::testing::Values(CrashCase{"recovery.after_drain", "xid", "Replace"},
                      CrashCase{"recovery.after_terminate", "xid", "Replace"},
                      CrashCase{"recovery.after_launch", "xid", "Replace"},
                      CrashCase{"recovery.after_drain", "slurmd-kill", "Reboot"}),
    [](const auto& info) {
      std::string name = info.param.point.substr(info.param.point.find('.') + 1) + "_" +
                         info.param.action;
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
  auto job = e.exec(name_, "controller-0",
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
  // The job ran to its end, and only then was the node rebooted.
  auto ended = e.exec(name_, "controller-0", "cat /fsx/job-ended");
  ASSERT_EQ(ended.exit_code, 0) << "the job never finished: " << ended.err;
  auto rebooting = find_event(events_after(e, name_, mark), "worker-1", "NodeRebooting");
  ASSERT_FALSE(rebooting.is_null());
  EXPECT_GT(event_seconds(rebooting), std::stod(ended.out)) << rebooting.dump() << " job ended " << ended.out;
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
  EXPECT_NE(verdict["Description"].get<std::string>().find("xid: "), std::string::npos) << verdict.dump();
  EXPECT_NE(verdict["Description"].get<std::string>().find("-> Replace"), std::string::npos) << verdict.dump();
  EXPECT_FALSE(find_event(events, "worker-1", "NodeDrained").is_null());
  EXPECT_TRUE(find_event(events, "worker-1", "NodeReplacing").is_null());
  EXPECT_TRUE(find_event(events, "worker-1", "NodeRebooting").is_null());
  EXPECT_EQ(event_counts(events, "worker-1")["NodeUnhealthy"], 1) << "judged once: " << events.dump(1);
  EXPECT_EQ(nodes_by_name(e, name_)["worker-1"].id, before["worker-1"].id);
  EXPECT_EQ(slurm_state(e, name_, "worker-1"), "drain");
}

// Full CPU and disk load on every node for 60 s: no verdict.
TEST_F(ClusterFixture, HealthyClusterUnderLoadGetsNoVerdict) {
  start_cluster("it-load", 3);
  Endured& e = *e_;
  long long mark = last_event_id(e, name_);
  // Each load runs until its timeout ends it (status 124); the disk loop counts its rounds.
  std::string load =
      "for i in 1 2; do timeout 60 bash -c 'while :; do :; done' & done; "
      "timeout 60 bash -c 'while :; do dd if=/dev/zero of=/local/load bs=1M count=300 "
      "conv=fsync status=none; dd if=/dev/zero of=/fsx/load-$(hostname) bs=1M count=50 "
      "conv=fsync status=none; rm -f /local/load; echo >> /tmp/disk-rounds; done' & "
      "for p in $(jobs -p); do wait $p; echo \"rc=$?\"; done; echo \"rounds=$(wc -l < /tmp/disk-rounds)\"";
  std::map<std::string, process::Output> outputs;
  std::vector<std::thread> loads;
  std::mutex mu;
  for (const char* node : {"worker-0", "worker-1", "worker-2"}) {
    loads.emplace_back([&, node] {
      auto out = e.exec(name_, node, load);
      std::lock_guard lock(mu);
      outputs[node] = out;
    });
  }
  for (auto& t : loads) t.join();
  for (const auto& [node, out] : outputs) {
    EXPECT_EQ(out.out.substr(0, 21), "rc=124\nrc=124\nrc=124\n") << node << ": " << out.out << out.err;
    auto rounds = out.out.find("rounds=");
    ASSERT_NE(rounds, std::string::npos) << node << ": " << out.out;
    EXPECT_GE(std::atoi(out.out.c_str() + rounds + 7), 1) << node << ": the disk load never wrote";
  }
  auto events = events_after(e, name_, mark);
  for (const auto& ev : events) {
    EXPECT_NE(ev["EventType"], "NodeUnhealthy") << ev.dump();
  }
  for (const auto& [name, node] : nodes_by_name(e, name_)) EXPECT_EQ(node.status, "Running") << name;
}

}  // namespace
}  // namespace endure::test

namespace endure::test {
namespace {

TEST_F(ClusterFixture, DeepHealthCheckRunsInAMaintenanceReservationAndReleasesIt) {
  start_cluster("it-deep", 3);
  Endured& e = *e_;
  long long mark = last_event_id(e, name_);
  auto started = e.cli({"start-cluster-health-check", "--cluster-name", name_, "--nodes",
                        "worker-0", "worker-2"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  auto reply = json::parse(started.out);
  std::string reservation = reply["Reservation"];
  auto nodes = nodes_by_name(e, name_);
  EXPECT_EQ(nodes["worker-0"].status, "DeepHealthCheckInProgress");
  EXPECT_EQ(nodes["worker-2"].status, "DeepHealthCheckInProgress");
  EXPECT_EQ(nodes["worker-1"].status, "Running");
  auto res = e.exec(name_, "controller-0", "scontrol show reservation " + reservation);
  EXPECT_NE(res.out.find("MAINT"), std::string::npos) << res.out << res.err;
  EXPECT_NE(res.out.find("worker-[0,2]"), std::string::npos) << res.out;
  // A second check on a node already under one is refused.
  auto again = e.call("StartClusterHealthCheck", {{"ClusterName", name_}, {"NodeIds", {"worker-0"}}});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, "ConflictException") << again.error().message;

  ASSERT_TRUE(wait_until(
      [&] {
        auto n = nodes_by_name(e, name_);
        return n["worker-0"].status == "Running" && n["worker-2"].status == "Running";
      },
      120s));
  auto events = events_after(e, name_, mark);
  for (const char* node : {"worker-0", "worker-2"}) {
    auto passed = find_event(events, node, "DeepHealthCheckPassed");
    ASSERT_FALSE(passed.is_null()) << events.dump(2);
    std::string text = passed["Description"];
    for (const char* check : {"cpu", "memory", "disk", "network"}) {
      EXPECT_NE(text.find(check), std::string::npos) << check << " missing: " << text;
    }
  }
  EXPECT_TRUE(find_event(events, "worker-1", "DeepHealthCheckStarted").is_null());
  EXPECT_TRUE(wait_until(
      [&] {
        auto out = e.exec(name_, "controller-0", "scontrol show reservation " + reservation);
        return out.exit_code != 0 || out.out.find("not found") != std::string::npos;
      },
      20s));
  for (const auto& [name, node] : nodes_by_name(e, name_)) EXPECT_EQ(node.status, "Running") << name;
}

// The deep check's disk test fails through the disk itself: the node's local disk is left
// with room for the continuous checks (no verdict) but not for the test's 128 MiB.
TEST_F(ClusterFixture, AFailedDeepHealthCheckReplacesTheNode) {
  start_cluster("it-deepfail", 2);
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  auto fill = e.exec(name_, "worker-0",
                     "avail=$(df --output=avail -k /local | tail -1); "
                     "fallocate -l $(( (avail - 100 * 1024) * 1024 )) /local/fill && "
                     "df --output=avail -m /local | tail -1");
  ASSERT_EQ(fill.exit_code, 0) << fill.err;
  EXPECT_LT(std::stoi(fill.out), 128) << "MiB left: " << fill.out;
  EXPECT_GT(std::stoi(fill.out), 64) << "MiB left: " << fill.out;
  long long mark = last_event_id(e, name_);
  auto started =
      e.cli({"start-cluster-health-check", "--cluster-name", name_, "--nodes", "worker-0"});
  ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
  ASSERT_TRUE(wait_returned(e, name_, "worker-0", mark, 180s)) << events_after(e, name_, mark).dump(2);

  auto events = events_after(e, name_, mark);
  auto failed = find_event(events, "worker-0", "DeepHealthCheckFailed");
  ASSERT_FALSE(failed.is_null()) << events.dump(2);
  std::string detail = failed["Description"];
  EXPECT_NE(detail.find("disk: "), std::string::npos) << detail;
  EXPECT_NE(detail.find("No space left on device"), std::string::npos) << detail;
  auto unhealthy = find_event(events, "worker-0", "NodeUnhealthy");
  ASSERT_FALSE(unhealthy.is_null()) << events.dump(2);
  EXPECT_NE(unhealthy["Description"].get<std::string>().find("deep-health-check: disk"),
            std::string::npos)
      << unhealthy.dump();
  EXPECT_EQ(event_counts(events, "worker-0")["NodeUnhealthy"], 1) << "one verdict: " << events.dump(1);
  EXPECT_FALSE(find_event(events, "worker-0", "NodeReplacing").is_null()) << events.dump(2);
  auto after = nodes_by_name(e, name_);
  EXPECT_NE(after["worker-0"].id, before["worker-0"].id);
  EXPECT_EQ(after["worker-0"].status, "Running");
  EXPECT_EQ(after["worker-1"].id, before["worker-1"].id);
  EXPECT_NE(e.exec(name_, "worker-0", "test -e /local/fill").exit_code, 0)
      << "the new instance starts with an empty local disk";
}

}  // namespace
}  // namespace endure::test
