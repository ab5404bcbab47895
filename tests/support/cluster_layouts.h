// Cluster layouts for unit tests: groups and worker partitions in, a validated layout out.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spec/cluster_spec.h"
#include "spec/layout.h"
#include "spec/provisioning.h"

namespace endure::test {

struct Group {
  std::string name;
  std::string type;
  int count;
  int threads_per_core = 1;
  int warm_spares = 0;
};

struct Worker {
  std::string group;
  std::string partition;
};

// The layout of a cluster whose controller group is "controller"; a parse failure fails
// the calling test and gives an empty layout.
inline spec::ClusterLayout layout_of(const std::vector<Group>& groups,
                                     const std::vector<Worker>& workers, int cluster_index = 1,
                                     const std::string& login = "",
                                     const std::string& name = "ml") {
  json request = {{"ClusterName", name}, {"InstanceGroups", json::array()}};
  for (const Group& g : groups) {
    request["InstanceGroups"].push_back(
        {{"InstanceGroupName", g.name},
         {"InstanceType", g.type},
         {"InstanceCount", g.count},
         {"LifeCycleConfig", {{"SourceS3Uri", "/lc"}, {"OnCreate", "on_create.sh"}}},
         {"ThreadsPerCore", g.threads_per_core}});
    if (g.warm_spares > 0) request["InstanceGroups"].back()["WarmSpares"] = g.warm_spares;
  }
  json params = {{"version", "1.0.0"},
                 {"workload_manager", "slurm"},
                 {"controller_group", "controller"},
                 {"worker_groups", json::array()}};
  if (!login.empty()) params["login_group"] = login;
  for (const Worker& w : workers) {
    params["worker_groups"].push_back(
        {{"instance_group_name", w.group}, {"partition_name", w.partition}});
  }
  auto model = spec::load_cluster_model(request, params, cluster_index);
  EXPECT_TRUE(model.ok()) << model.error().message;
  return model.ok() ? model->layout : spec::ClusterLayout{};
}

}  // namespace endure::test
