// The text format, the event folding and Slurm's summary: pure parts, no store, no daemon.
#include <gtest/gtest.h>

#include <cmath>

#include "controller/metrics/api_stats.h"
#include "controller/metrics/event_tally.h"
#include "controller/metrics/slurm_sampler.h"
#include "controller/metrics/text_format.h"

namespace endure::metrics {
namespace {

TEST(TextFormat, FamilySamplesAndEscapedLabels) {
  TextWriter w;
  w.family("endure_nodes", "gauge", "Nodes by status.");
  w.sample("endure_nodes", {{"cluster", "a\"b\\c\nd"}, {"status", "Running"}}, 4);
  w.sample("endure_up", {}, 1);
  EXPECT_EQ(w.text(),
            "# HELP endure_nodes Nodes by status.\n# TYPE endure_nodes gauge\n"
            "endure_nodes{cluster=\"a\\\"b\\\\c\\nd\",status=\"Running\"} 4\n"
            "endure_up 1\n");
}

TEST(TextFormat, ValuesAsPrometheusSpellsThem) {
  std::string s;
  append_value(s, 0.25);
  s += ' ';
  append_value(s, std::nan(""));
  s += ' ';
  append_value(s, INFINITY);
  s += ' ';
  append_value(s, -INFINITY);
  s += ' ';
  append_value(s, 1e20);
  s += ' ';
  append_value(s, -3);
  EXPECT_EQ(s, "0.25 NaN +Inf -Inf 1e+20 -3");
}

TEST(TextFormat, HistogramBucketsAreCumulative) {
  Histogram h({1, 5});
  h.observe(0.5);
  h.observe(1);  // on a bound: counted in it (le)
  h.observe(3);
  h.observe(100);
  TextWriter w;
  w.histogram("x_seconds", {{"action", "Reboot"}}, h);
  EXPECT_EQ(w.text(),
            "x_seconds_bucket{action=\"Reboot\",le=\"1\"} 2\n"
            "x_seconds_bucket{action=\"Reboot\",le=\"5\"} 3\n"
            "x_seconds_bucket{action=\"Reboot\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{action=\"Reboot\"} 104.5\n"
            "x_seconds_count{action=\"Reboot\"} 4\n");
}

TEST(Verdict, KindAndAction) {
  EXPECT_EQ(verdict_kind("Unhealthy: hang: no heartbeat for 6 s -> Reboot"), "hang");
  EXPECT_EQ(verdict_kind("Unhealthy: crash: every process of the instance is gone -> Replace"),
            "crash");
  EXPECT_EQ(verdict_kind("Unhealthy: Action:Replace set in Slurm -> Replace"), "manual");
  EXPECT_EQ(verdict_kind("Unhealthy: deep-health-check: cpu -> Replace"), "deep-health-check");
  // An agent's own words never become a label.
  EXPECT_EQ(verdict_kind("Unhealthy: made-up-kind: x -> Replace"), "other");
  EXPECT_EQ(verdict_action("Unhealthy: hang: x -> Reboot"), "Reboot");
  EXPECT_EQ(verdict_action("requested by operator -> Replace"), "Replace");
  EXPECT_EQ(verdict_action("NodeRecovery is None"), "");
}

store::EventRow event(long long id, double time, const std::string& node, const std::string& type,
                      const std::string& description = "") {
  store::EventRow e;
  e.id = id;
  e.time = time;
  e.node_name = node;
  e.type = type;
  e.description = description;
  return e;
}

TEST(EventTally, RecoveriesTimedFromVerdictToDrainedAndBack) {
  EventTally t;
  t.fold(event(1, 100, "worker-1", "NodeUnhealthy", "Unhealthy: hang: silent -> Reboot"));
  t.fold(event(2, 100.5, "worker-1", "NodeDrained", "down and drained"));
  t.fold(event(3, 101, "worker-1", "NodeRebooting", "hang"));
  // The reboot fails: a Replace follows, timed from the first verdict.
  t.fold(event(4, 120, "worker-1", "RebootFailed", "timed out"));
  t.fold(event(5, 120.2, "worker-1", "NodeDrained", "again"));
  t.fold(event(6, 121, "worker-1", "NodeReplacing", "hang"));
  t.fold(event(7, 130, "worker-1", "NodeReturnedToService", "replaced"));
  t.fold(event(8, 200, "worker-2", "NodeRecoveryRequested", "operator -> Reboot"));
  t.fold(event(9, 201, "worker-2", "NodeDrained", ""));
  t.fold(event(10, 202, "worker-2", "NodeRebooting", ""));
  t.fold(event(11, 205, "worker-2", "NodeReturnedToService", ""));
  t.fold(event(12, 300, "", "AutoResumeRequested", ""));
  t.fold(event(13, 301, "", "AutoResumeExhausted", ""));
  t.fold(event(14, 302, "", "AutoResumeDeclined", "exit status 3 on healthy nodes"));

  EXPECT_EQ(t.cursor(), 14);
  EXPECT_EQ(t.verdicts["hang"], 1);
  EXPECT_EQ(t.recoveries["Reboot"], 2);
  EXPECT_EQ(t.recoveries["Replace"], 1);
  EXPECT_EQ(t.auto_resumes["granted"], 1);
  EXPECT_EQ(t.auto_resumes["refused"], 1);
  EXPECT_EQ(t.auto_resumes["declined"], 1);
  EXPECT_EQ(t.events["NodeDrained"], 3);
  // worker-1 drained once in its recovery (0.5 s), as a Reboot; worker-2 in 1 s.
  ASSERT_EQ(t.to_drained["Reboot"].count(), 2u);
  EXPECT_DOUBLE_EQ(t.to_drained["Reboot"].sum(), 1.5);
  ASSERT_EQ(t.to_in_service["Replace"].count(), 1u);
  EXPECT_DOUBLE_EQ(t.to_in_service["Replace"].sum(), 30);
  ASSERT_EQ(t.to_in_service["Reboot"].count(), 1u);
  EXPECT_DOUBLE_EQ(t.to_in_service["Reboot"].sum(), 5);
}

TEST(EventTally, NodeRecoveryNoneIsCountedNotTimed) {
  EventTally t;
  t.fold(event(1, 10, "worker-1", "NodeUnhealthy", "Unhealthy: xid: 79"));
  t.fold(event(2, 11, "worker-1", "NodeDrained", "NodeRecovery is None"));
  EXPECT_EQ(t.verdicts["xid"], 1);
  EXPECT_TRUE(t.to_drained.empty());
}

TEST(ApiStats, UnknownActionsShareOneLabel) {
  ApiStats s;
  s.observe("ListClusters", 200, 0.002);
  s.observe("ListClusters", 200, 0.004);
  s.observe("NoSuchAction", 400, 0.001);
  s.observe("AnotherMadeUpOne", 400, 0.001);
  TextWriter w;
  s.write(w);
  const std::string& t = w.text();
  EXPECT_NE(t.find("endure_api_requests_total{action=\"ListClusters\",code=\"200\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("endure_api_requests_total{action=\"Unknown\",code=\"400\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(t.find("NoSuchAction"), std::string::npos);
  EXPECT_NE(t.find("endure_api_request_duration_seconds_count{action=\"ListClusters\"} 2\n"),
            std::string::npos);
}

slurm::NodeState node(const std::string& state, std::vector<std::string> flags, int cpus,
                      int alloc) {
  slurm::NodeState n;
  n.state = state;
  n.flags = std::move(flags);
  n.cpus = cpus;
  n.alloc_cpus = alloc;
  return n;
}

TEST(SlurmSummary, CountsAsTheExporterDoes) {
  std::vector<slurm::NodeState> nodes = {
      node("idle", {}, 2, 0),        node("allocated", {}, 2, 2),
      node("mixed", {}, 4, 1),       node("down", {"NOT_RESPONDING"}, 2, 0),
      node("idle", {"DRAIN"}, 2, 0), node("down", {"DRAIN"}, 2, 0),
  };
  slurm::JobState running, pending, odd;
  running.state = "RUNNING";
  pending.state = "PENDING";
  odd.state = "SOMETHING_NEW";
  auto s = summarize(nodes, {running, pending, pending, odd}, 42);
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.nodes["idle"], 1);
  EXPECT_EQ(s.nodes["alloc"], 1);
  EXPECT_EQ(s.nodes["mix"], 1);
  EXPECT_EQ(s.nodes["down"], 2);
  EXPECT_EQ(s.nodes["drain"], 1);
  EXPECT_EQ(s.jobs["running"], 1);
  EXPECT_EQ(s.jobs["pending"], 2);
  EXPECT_EQ(s.jobs.count("something_new"), 0u);
  EXPECT_EQ(s.cpus_total, 14);
  EXPECT_EQ(s.cpus_alloc, 3);
  EXPECT_EQ(s.cpus_idle, 5);
  EXPECT_EQ(s.cpus_other, 6);
}

}  // namespace
}  // namespace endure::metrics
