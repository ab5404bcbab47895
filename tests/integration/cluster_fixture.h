// What the cluster integration tests share: a fixture with one endured and one cluster, and
// helpers that read nodes, events and Slurm state through the real API and CLI.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "common/fs.h"
#include "harness.h"

namespace endure::test {

using namespace std::chrono_literals;

struct Node {
  std::string id;
  std::string status;
};

inline std::map<std::string, Node> nodes_by_name(Endured& e, const std::string& cluster) {
  std::map<std::string, Node> out;
  auto r = e.call("ListClusterNodes", {{"ClusterName", cluster}});
  if (!r) return out;
  for (const auto& n : (*r)["ClusterNodeSummaries"]) {
    out[n["NodeName"]] = {n["InstanceId"], n["InstanceStatus"]["Status"]};
  }
  return out;
}

inline std::string cluster_id(Endured& e, const std::string& cluster) {
  auto r = e.call("DescribeCluster", {{"ClusterName", cluster}});
  return r ? (*r)["ClusterId"].get<std::string>() : "";
}

// How often each event type was written for a node.
inline std::map<std::string, int> event_counts(const json& events, const std::string& node) {
  std::map<std::string, int> out;
  for (const auto& ev : events) {
    if (ev.value("NodeName", "") == node) out[ev["EventType"].get<std::string>()] += 1;
  }
  return out;
}

inline json events_after(Endured& e, const std::string& cluster, long long after) {
  auto r = e.call("ListClusterEvents", {{"ClusterName", cluster}, {"AfterEventId", after}});
  return r ? (*r)["Events"] : json::array();
}

inline long long last_event_id(Endured& e, const std::string& cluster) {
  auto events = events_after(e, cluster, 0);
  return events.empty() ? 0 : events.back()["EventId"].get<long long>();
}

// The first event of a type for a node after an event id, or null.
inline json find_event(const json& events, const std::string& node, const std::string& type) {
  for (const auto& ev : events) {
    if (ev.value("NodeName", "") == node && ev["EventType"] == type) return ev;
  }
  return nullptr;
}

// The pid namespace of a node's processes: the same one means the node was not restarted.
inline std::string node_namespace(Endured& e, const std::string& cluster, const std::string& node) {
  auto r = e.call("GetNodeExecTarget", {{"ClusterName", cluster}, {"NodeId", node}});
  return r ? pid_namespace_of((*r)["Pid"].get<int>()) : "";
}

inline std::string slurm_state(Endured& e, const std::string& cluster, const std::string& node) {
  auto out = e.exec(cluster, "controller-0", "sinfo -h -n " + node + " -o %t");
  return out.out.empty() ? "" : out.out.substr(0, out.out.find('\n'));
}

// Waits until endured has completed `n` more reconcile passes: every change made before the
// call has then been looked at (a pass may have been under way when it was made).
inline bool wait_passes(Endured& e, int n = 3, std::chrono::seconds timeout = 30s) {
  auto passes = [&]() -> long long {
    auto r = e.call("DebugDescribeController", json::object());
    return r ? (*r)["ReconcilePasses"].get<long long>() : -1;
  };
  long long start = passes();
  return start >= 0 && wait_until([&] { return passes() >= start + n; }, timeout);
}

// Waits for a node's recovery to finish (its NodeReturnedToService event after `after`).
inline bool wait_returned(Endured& e, const std::string& cluster, const std::string& node,
                   long long after, std::chrono::seconds timeout = 60s) {
  return wait_until(
      [&] {
        return !find_event(events_after(e, cluster, after), node, "NodeReturnedToService")
                    .is_null();
      },
      timeout);
}

class ClusterFixture : public ::testing::Test {
 protected:
  // config: endured's config.json (written before it starts), when not empty.
  void start_cluster(const std::string& name, int workers, const std::string& recovery = "Automatic",
                     const json& config = json::object()) {
    e_ = std::make_unique<Endured>(home_.path() / "home");
    if (!config.empty()) {
      std::filesystem::create_directories(home_.path() / "home");
      std::ofstream(home_.path() / "home" / "config.json") << config.dump();
    }
    e_->start();
    json spec = make_spec(name, workers);
    spec["NodeRecovery"] = recovery;
    if (warm_spares_ > 0) spec["InstanceGroups"][1]["WarmSpares"] = warm_spares_;
    for (const auto& [key, value] : spec_fields_.items()) spec[key] = value;
    if (!lifecycle_source_.empty()) {
      for (auto& g : spec["InstanceGroups"]) {
        g["LifeCycleConfig"]["SourceS3Uri"] = lifecycle_source_;
      }
    }
    ASSERT_TRUE(e_->call("CreateCluster", spec).ok());
    ASSERT_EQ(e_->wait_status(name, {"InService"}, 180s), "InService");
    name_ = name;
  }

  // A failed test shows the end of endured's and slurmctld's logs: what they saw and
  // decided is what a failure in CI needs to be understood.
  void TearDown() override {
    if (HasFailure() && e_) {
      std::cerr << "the end of endured.log:\n" << fs::tail_lines(e_->home() / "endured.log", 250);
      if (!name_.empty()) {
        auto ctld = e_->exec(name_, "controller-0", "tail -n 120 /var/log/slurm/slurmctld.log");
        std::cerr << "the end of slurmctld.log:\n" << ctld.out << "\n";
      }
    }
    e_.reset();
  }

  TempDir home_;
  std::unique_ptr<Endured> e_;
  std::string name_;
  int warm_spares_ = 0;           // the worker group's WarmSpares, set before start_cluster
  std::string lifecycle_source_;  // every group's SourceS3Uri when set (before start_cluster)
  json spec_fields_ = json::object();  // top-level fields of the spec (before start_cluster)
};

}  // namespace endure::test
