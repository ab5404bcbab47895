// endured killed in the middle of a node's recovery: started again, it completes the
// recovery exactly once.
#include <gtest/gtest.h>

#include "cluster_fixture.h"
#include "support/text_files.h"

namespace endure::test {
namespace {

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
  auto injected = e.cli(
      {"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1", "--kind", c.fault});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(e.wait_exit(60s)) << "endured never reached " << c.point;
  reap_orphan_instances();
  e.start();
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark, 120s))
      << events_after(e, name_, mark).dump(2);

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
  for (const char* other : {"controller-0", "worker-0"})
    EXPECT_EQ(after[other].id, before[other].id);
  EXPECT_EQ(instance_processes(e.home(), id).size(), 3u) << "one live instance per node";
  size_t dirs = 0;
  for (auto& entry :
       std::filesystem::directory_iterator(e.home() / "clusters" / id / "instances")) {
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
                      CrashCase{"recovery.after_lifecycle", "xid", "Replace"},
                      CrashCase{"recovery.before_return", "xid", "Replace"},
                      CrashCase{"recovery.after_drain", "slurmd-kill", "Reboot"},
                      CrashCase{"recovery.after_reboot", "slurmd-kill", "Reboot"},
                      CrashCase{"recovery.before_return", "slurmd-kill", "Reboot"}),
    [](const auto& info) {
      std::string name =
          info.param.point.substr(info.param.point.find('.') + 1) + "_" + info.param.action;
      return name;
    });

}  // namespace
}  // namespace endure::test
