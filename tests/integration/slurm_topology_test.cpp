// The Slurm topology in the request, on real Slurm: a cluster made from SlurmConfig alone
// (no provisioning_parameters.json) has the partitions and roles asked for, its login node
// runs no slurmd; a file that disagrees with SlurmConfig is refused; and a slurm.conf edited
// by hand on the controller is met as SlurmConfigStrategy says (Merge keeps the partition a
// person added, Overwrite removes it, Managed leaves the file and says so in an event).
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "common/fs.h"
#include "harness.h"
#include "support/temp_dir.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

std::set<std::string> output_lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

// The base lifecycle folder without its provisioning_parameters.json.
std::filesystem::path lifecycle_without_roles(const TempDir& dir) {
  auto to = dir.path() / "lifecycle";
  std::filesystem::copy(base_lifecycle_dir(), to, std::filesystem::copy_options::recursive);
  std::filesystem::remove(to / "provisioning_parameters.json");
  return to;
}

json slurm_group(const std::string& name, const std::string& type, int count,
                 const std::filesystem::path& lifecycle, const std::string& partition = "") {
  json g = {
      {"InstanceGroupName", name},
      {"InstanceType", "local.c2"},
      {"InstanceCount", count},
      {"LifeCycleConfig", {{"SourceS3Uri", lifecycle.string()}, {"OnCreate", "on_create.sh"}}},
      {"SlurmConfig", {{"NodeType", type}}}};
  if (!partition.empty()) g["SlurmConfig"]["PartitionNames"] = {partition};
  return g;
}

std::vector<std::string> event_types(const Endured& e, const std::string& cluster) {
  std::vector<std::string> out;
  auto events = e.call("ListClusterEvents", {{"ClusterName", cluster}, {"MaxResults", 10000}});
  if (!events) return out;
  for (const auto& ev : (*events)["Events"]) out.push_back(ev.value("EventType", ""));
  return out;
}

class SlurmTopology : public ::testing::Test {
 protected:
  void SetUp() override {
    e_ = std::make_unique<Endured>(dir_.path() / "home");
    e_->start();
  }
  void TearDown() override { e_.reset(); }

  // `sinfo` on the controller: "PARTITION NODELIST" lines.
  std::set<std::string> partitions(const std::string& cluster) {
    return output_lines(e_->exec(cluster, "controller-0", "sinfo -h -o '%P %N'").out);
  }

  // UpdateCluster with the worker group at `workers`, waiting for InService.
  void scale_workers(const std::string& cluster, int workers) {
    json spec = make_spec(cluster, workers);
    auto updated = e_->call("UpdateCluster",
                            {{"ClusterName", cluster}, {"InstanceGroups", spec["InstanceGroups"]}});
    ASSERT_TRUE(updated) << updated.error().message;
  }

  void set_strategy(const std::string& cluster, const std::string& strategy) {
    auto updated = e_->call("UpdateCluster",
                            {{"ClusterName", cluster},
                             {"Orchestrator", {{"Slurm", {{"SlurmConfigStrategy", strategy}}}}}});
    ASSERT_TRUE(updated) << updated.error().message;
    ASSERT_EQ(e_->wait_status(cluster, {"InService"}, 60s), "InService");
  }

  // A person adds a partition on the controller and tells slurmctld.
  void add_partition_by_hand(const std::string& cluster, const std::string& partition) {
    auto out = e_->exec(cluster, "controller-0",
                        "echo 'PartitionName=" + partition +
                            " Nodes=worker-0 Default=NO State=UP' >> /etc/slurm/slurm.conf && "
                            "scontrol reconfigure");
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
    ASSERT_TRUE(
        wait_until([&] { return partitions(cluster).count(partition + " worker-0") > 0; }, 30s))
        << "slurmctld did not take the hand-added partition " << partition;
  }

  TempDir dir_;
  std::unique_ptr<Endured> e_;
};

TEST_F(SlurmTopology, AClusterFromSlurmConfigAloneHasTheRolesAndPartitionsAsked) {
  auto lifecycle = lifecycle_without_roles(dir_);
  json spec = {{"ClusterName", "it-topo"},
               {"InstanceGroups",
                {slurm_group("controller", "Controller", 1, lifecycle),
                 slurm_group("login", "Login", 1, lifecycle),
                 slurm_group("gpu", "Compute", 2, lifecycle, "train"),
                 slurm_group("cpu", "Compute", 1, lifecycle)}},
               {"Orchestrator", {{"Slurm", {{"SlurmConfigStrategy", "Merge"}}}}}};
  auto created = e_->call("CreateCluster", spec);
  ASSERT_TRUE(created) << created.error().message;
  ASSERT_EQ(e_->wait_status("it-topo", {"InService"}, 180s), "InService");

  // The partitions asked for, the first named one Slurm's default.
  EXPECT_EQ(partitions("it-topo"), (std::set<std::string>{"train* gpu-[0-1]", "dev cpu-0"}));
  // The login node is a Slurm client: it reaches slurmctld and /fsx, and runs no slurmd.
  auto login = e_->exec("it-topo", "login-0",
                        "sinfo -h -o %P | sort | tr '\\n' ' '; test -d /fsx && echo fsx; "
                        "pgrep -x slurmd >/dev/null && echo slurmd || echo no-slurmd");
  EXPECT_EQ(login.exit_code, 0) << login.err;
  EXPECT_EQ(login.out, "dev train* fsx\nno-slurmd\n");
  auto compute = e_->exec("it-topo", "cpu-0", "pgrep -x slurmd >/dev/null && echo slurmd");
  EXPECT_EQ(compute.out, "slurmd\n");
  auto jobs = e_->exec("it-topo", "login-0", "timeout 60 srun -p dev -N1 hostname");
  EXPECT_EQ(jobs.out, "cpu-0\n") << jobs.err;

  // DescribeCluster echoes what was asked, and says the roles it gave.
  auto described = e_->call("DescribeCluster", {{"ClusterName", "it-topo"}});
  ASSERT_TRUE(described);
  EXPECT_EQ((*described)["Orchestrator"], spec["Orchestrator"]);
  for (size_t i = 0; i < spec["InstanceGroups"].size(); ++i) {
    const json& group = (*described)["InstanceGroups"][i];
    EXPECT_EQ(group["SlurmConfig"], spec["InstanceGroups"][i]["SlurmConfig"]) << i;
  }
  EXPECT_EQ((*described)["InstanceGroups"][1]["Role"], "login");
  EXPECT_EQ((*described)["InstanceGroups"][2]["PartitionName"], "train");
  EXPECT_EQ((*described)["InstanceGroups"][3]["PartitionName"], "dev");
}

TEST_F(SlurmTopology, SlurmConfigAndAProvisioningFileThatDisagreeAreRefusedNamingBoth) {
  // The base folder's file makes "worker" a worker in partition dev.
  json spec = make_spec("it-both", 1);
  spec["InstanceGroups"][0]["SlurmConfig"] = {{"NodeType", "Controller"}};
  spec["InstanceGroups"][1]["SlurmConfig"] = {{"NodeType", "Compute"},
                                              {"PartitionNames", {"train"}}};
  auto refused = e_->call("CreateCluster", spec);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "ValidationException");
  EXPECT_EQ(refused.error().message,
            "InstanceGroups[1].SlurmConfig: makes worker the worker in partition train, but "
            "provisioning_parameters.json makes it the worker in partition dev; make them agree "
            "or remove the file");
  auto list = e_->call("ListClusters", json::object());
  ASSERT_TRUE(list);
  EXPECT_TRUE((*list)["ClusterSummaries"].empty());

  // Agreeing, both are fine.
  spec["InstanceGroups"][1]["SlurmConfig"].erase("PartitionNames");
  EXPECT_TRUE(e_->call("CreateCluster", spec)) << "dev is what the file says too";
}

TEST_F(SlurmTopology, AHandEditedSlurmConfIsMergedOverwrittenOrLeftAsTheStrategySays) {
  json spec = make_spec("it-edit", 1);
  spec["Orchestrator"] = {{"Slurm", {{"SlurmConfigStrategy", "Merge"}}}};
  ASSERT_TRUE(e_->call("CreateCluster", spec));
  ASSERT_EQ(e_->wait_status("it-edit", {"InService"}, 180s), "InService");

  // Merge: the partition a person added stays when endured writes the file for a new node.
  add_partition_by_hand("it-edit", "manual");
  scale_workers("it-edit", 2);
  ASSERT_EQ(e_->wait_status("it-edit", {"InService"}, 120s), "InService");
  EXPECT_EQ(partitions("it-edit"), (std::set<std::string>{"dev* worker-[0-1]", "manual worker-0"}));

  // Overwrite: endured's file replaces the edit.
  set_strategy("it-edit", "Overwrite");
  add_partition_by_hand("it-edit", "manual2");
  scale_workers("it-edit", 3);
  ASSERT_EQ(e_->wait_status("it-edit", {"InService"}, 120s), "InService");
  EXPECT_EQ(partitions("it-edit"), (std::set<std::string>{"dev* worker-[0-2]"}));

  // Managed: the edited file is left as it is and endured's change waits, saying why.
  set_strategy("it-edit", "Managed");
  add_partition_by_hand("it-edit", "manual3");
  scale_workers("it-edit", 2);
  ASSERT_TRUE(wait_until(
      [&] {
        auto types = event_types(*e_, "it-edit");
        return std::count(types.begin(), types.end(), "SlurmConfigEdited") == 1;
      },
      60s));
  auto conf =
      e_->exec("it-edit", "controller-0", "grep -c PartitionName=manual3 /etc/slurm/slurm.conf");
  EXPECT_EQ(conf.out, "1\n");
  EXPECT_EQ(partitions("it-edit").count("manual3 worker-0"), 1u);
  auto described = e_->call("DescribeCluster", {{"ClusterName", "it-edit"}});
  ASSERT_TRUE(described);
  EXPECT_EQ((*described)["ClusterStatus"], "Updating") << "the change was applied anyway";

  // The event log tells the story in order.
  auto types = event_types(*e_, "it-edit");
  auto at = [&](const std::string& type) {
    return std::find(types.begin(), types.end(), type) - types.begin();
  };
  ASSERT_LT(at("SlurmConfigMerged"), static_cast<long>(types.size()));
  EXPECT_LT(at("SlurmConfigMerged"), at("SlurmConfigOverwritten"));
  EXPECT_LT(at("SlurmConfigOverwritten"), at("SlurmConfigEdited"));

  // Overwrite again: endured's change goes through, and the hand-added partition goes.
  set_strategy("it-edit", "Overwrite");
  EXPECT_EQ(partitions("it-edit"), (std::set<std::string>{"dev* worker-[0-1]"}));
}

}  // namespace
}  // namespace endure::test
