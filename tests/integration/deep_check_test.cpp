// Deep health checks end to end: run in a Slurm maintenance reservation, reported by the
// agents, and a failed one ends in the node's replacement.
#include <gtest/gtest.h>

#include "cluster_fixture.h"

namespace endure::test {
namespace {

TEST_F(ClusterFixture, DeepHealthCheckRunsInAMaintenanceReservationAndReleasesIt) {
  start_cluster("it-deep", 3);
  Endured& e = *e_;
  long long mark = last_event_id(e, name_);
  auto started = e.cli(
      {"start-cluster-health-check", "--cluster-name", name_, "--nodes", "worker-0", "worker-2"});
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
  auto again =
      e.call("StartClusterHealthCheck", {{"ClusterName", name_}, {"NodeIds", {"worker-0"}}});
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
  for (const auto& [name, node] : nodes_by_name(e, name_))
    EXPECT_EQ(node.status, "Running") << name;
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
  ASSERT_TRUE(wait_returned(e, name_, "worker-0", mark, 180s))
      << events_after(e, name_, mark).dump(2);

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
  EXPECT_EQ(event_counts(events, "worker-0")["NodeUnhealthy"], 1)
      << "one verdict: " << events.dump(1);
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
