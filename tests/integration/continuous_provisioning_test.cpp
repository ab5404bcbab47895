// NodeProvisioningMode Continuous on real Slurm: a node whose lifecycle script fails is
// tried again, with backoff, while the cluster is InService and the other nodes run jobs;
// without the mode the same failures fail the cluster (cluster_test.cpp).
#include <gtest/gtest.h>

#include "common/fs.h"
#include "harness.h"
#include "support/temp_dir.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

// The base lifecycle folder whose OnCreate fails on worker-1 for its first `failures` tries
// (counted in the cluster's /fsx, which every try of the node sees).
std::filesystem::path lifecycle_failing_first(const std::filesystem::path& dir, int failures) {
  std::filesystem::copy(base_lifecycle_dir(), dir, std::filesystem::copy_options::recursive);
  std::filesystem::rename(dir / "on_create.sh", dir / "on_create_base.sh");
  std::string script = R"SH(#!/bin/bash
set -euo pipefail
cd "$(dirname "$0")"
if [ "${ENDURE_NODE_NAME}" = worker-1 ]; then
  tries=$(( $(cat /fsx/tries-worker-1 2>/dev/null || echo 0) + 1 ))
  echo "$tries" > /fsx/tries-worker-1
  if [ "$tries" -le )SH" +
                       std::to_string(failures) + R"SH( ]; then
    echo "no fabric on ${ENDURE_NODE_NAME} (try $tries)"
    exit 3
  fi
fi
exec bash ./on_create_base.sh
)SH";
  EXPECT_TRUE(fs::atomic_write_file(dir / "on_create.sh", script, 0755).ok());
  return dir;
}

json worker_group(const Endured& e, const std::string& cluster) {
  auto d = e.call("DescribeCluster", {{"ClusterName", cluster}});
  if (!d) return nullptr;
  for (const auto& g : (*d)["InstanceGroups"]) {
    if (g["InstanceGroupName"] == "worker") return g;
  }
  return nullptr;
}

TEST(ContinuousProvisioning, AFailingNodeIsTriedAgainWhileTheClusterServes) {
  TempDir dir;
  Endured e(dir.path() / "home");
  e.start();
  auto lc = lifecycle_failing_first(dir.path() / "lc", 3);
  json spec = make_spec("it-cont", 3, lc);
  spec["NodeProvisioningMode"] = "Continuous";
  ASSERT_TRUE(e.call("CreateCluster", spec));

  // InService with the controller up, while worker-1 still fails (3 tries take 1 + 2 + 4 s
  // of backoff beyond their own time).
  ASSERT_EQ(e.wait_status("it-cont", {"InService"}, 180s), "InService");
  auto described = e.call("DescribeCluster", {{"ClusterName", "it-cont"}});
  ASSERT_TRUE(described);
  EXPECT_EQ((*described)["NodeProvisioningMode"], "Continuous");
  // The other workers run jobs meanwhile.
  ASSERT_TRUE(wait_until(
      [&] {
        auto g = worker_group(e, "it-cont");
        return g.is_object() && g["CurrentCount"] == 2;
      },
      120s));
  json scaling = worker_group(e, "it-cont");
  if (scaling["CurrentCount"] == 2) {
    EXPECT_EQ(scaling["ActiveOperations"], (json{{"Scaling", 1}})) << scaling.dump();
  }
  auto job =
      e.exec("it-cont", "controller-0",
             "timeout 60 srun -N1 -w worker-0 hostname; timeout 60 srun -N1 -w worker-2 hostname");
  EXPECT_EQ(job.out, "worker-0\nworker-2\n") << job.err;

  // worker-1 comes on its fourth try; the cluster never failed.
  ASSERT_TRUE(wait_until(
      [&] {
        auto g = worker_group(e, "it-cont");
        return g.is_object() && g["CurrentCount"] == 3;
      },
      180s))
      << worker_group(e, "it-cont").dump();
  EXPECT_EQ(e.exec("it-cont", "controller-0", "cat /fsx/tries-worker-1").out, "4\n");
  auto events = e.call("ListClusterEvents", {{"ClusterName", "it-cont"}, {"MaxResults", 10000}});
  ASSERT_TRUE(events);
  int retries = 0;
  for (const auto& ev : (*events)["Events"]) {
    EXPECT_NE(ev["EventType"], "ClusterFailed") << ev.dump();
    if (ev["NodeName"] == "worker-1" &&
        ev["Description"].get<std::string>().find("NodeProvisioningMode Continuous") !=
            std::string::npos) {
      ++retries;
    }
  }
  EXPECT_EQ(retries, 3);
  EXPECT_EQ(e.wait_status("it-cont", {"InService"}, 60s), "InService");
  auto all = e.exec("it-cont", "controller-0", "timeout 60 srun -N3 hostname | sort");
  EXPECT_EQ(all.out, "worker-0\nworker-1\nworker-2\n") << all.err;
}

}  // namespace
}  // namespace endure::test
