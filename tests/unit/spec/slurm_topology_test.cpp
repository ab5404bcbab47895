// SlurmConfig and Orchestrator in the request: each field's bounds, the rules across
// groups, the roles they give and their agreement with a provisioning_parameters.json.
#include <gtest/gtest.h>

#include <string>

#include "spec/cluster_spec.h"
#include "spec/provisioning.h"

namespace endure::spec {
namespace {

json topology_group(const std::string& name, const std::string& type, int count = 1) {
  return {{"InstanceGroupName", name},
          {"InstanceType", "local.c1"},
          {"InstanceCount", count},
          {"LifeCycleConfig", {{"SourceS3Uri", "/src"}, {"OnCreate", "on_create.sh"}}},
          {"SlurmConfig", {{"NodeType", type}}}};
}

// A controller, a login group and two compute groups, one in partition "train".
json topology_request() {
  json train = topology_group("gpu", "Compute", 2);
  train["SlurmConfig"]["PartitionNames"] = {"train"};
  return {{"ClusterName", "c"},
          {"InstanceGroups",
           {topology_group("head", "Controller"), topology_group("login", "Login"), train,
            topology_group("cpu", "Compute", 3)}},
          {"Orchestrator", {{"Slurm", {{"SlurmConfigStrategy", "Merge"}}}}}};
}

std::string topology_errors(const json& request) {
  return describe(validate_cluster_spec(request));
}

TEST(SlurmTopology, EveryGroupsSlurmConfigGivesTheRoles) {
  auto spec = parse_cluster_spec(topology_request());
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(slurm_config_strategy(spec->orchestrator), api::SlurmConfigStrategy::kMerge);
  auto roles = roles_from_slurm_config(*spec);
  ASSERT_TRUE(roles);
  EXPECT_EQ(roles->controller_group, "head");
  EXPECT_EQ(roles->login_group, "login");
  EXPECT_EQ(roles->role_of("gpu"), NodeRole::kWorker);
  EXPECT_EQ(roles->partition_of("gpu"), "train");
  EXPECT_EQ(roles->partition_of("cpu"), kDefaultPartition);
  // The roles pass the provisioning file's own rules.
  EXPECT_TRUE(parse_provisioning(roles->to_json(), *spec)) << roles->to_json().dump();
}

TEST(SlurmTopology, TheSpecEchoesSlurmConfigAndOrchestratorAsGiven) {
  json request = topology_request();
  auto spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec);
  json back = spec->to_json();
  EXPECT_EQ(back["Orchestrator"], request["Orchestrator"]);
  for (size_t i = 0; i < request["InstanceGroups"].size(); ++i) {
    EXPECT_EQ(back["InstanceGroups"][i]["SlurmConfig"],
              request["InstanceGroups"][i]["SlurmConfig"]);
  }
  auto again = parse_cluster_spec(back);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->to_json(), back);
}

TEST(SlurmTopology, WithoutOrchestratorTheStrategyIsManagedAndTheRolesComeFromTheFile) {
  json request = topology_request();
  request.erase("Orchestrator");
  for (auto& g : request["InstanceGroups"]) g.erase("SlurmConfig");
  auto spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(slurm_config_strategy(spec->orchestrator), api::SlurmConfigStrategy::kManaged);
  EXPECT_FALSE(roles_from_slurm_config(*spec));
  json slurm_only = {{"Slurm", json::object()}};
  request["Orchestrator"] = slurm_only;
  spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec);
  EXPECT_EQ(slurm_config_strategy(spec->orchestrator), api::SlurmConfigStrategy::kManaged);
  EXPECT_EQ(spec->to_json()["Orchestrator"], slurm_only);
}

struct FieldCase {
  std::string what;
  json slurm_config;  // replaces the compute group "cpu"'s SlurmConfig
  std::string error;
};

TEST(SlurmTopology, EachFieldsRuleIsNamedWithItsPath) {
  const std::string at = "InstanceGroups[3].SlurmConfig";
  const std::string pattern =
      ": must match [a-zA-Z0-9](-*[a-zA-Z0-9])* (letters, digits and hyphens, starting and "
      "ending with a letter or digit)";
  const std::vector<FieldCase> cases = {
      {"not an object", "Compute", at + ": must be an object"},
      {"no NodeType", json::object(), at + ".NodeType: is required"},
      {"an unknown NodeType",
       {{"NodeType", "Worker"}},
       at + ".NodeType: must be one of Controller, Login, Compute"},
      {"NodeType not a string",
       {{"NodeType", 1}},
       at + ".NodeType: must be one of Controller, Login, Compute"},
      {"an unknown field",
       {{"NodeType", "Compute"}, {"Partitions", json::array()}},
       at + ".Partitions: is not a known field; known: NodeType, PartitionNames"},
      {"PartitionNames not a list",
       {{"NodeType", "Compute"}, {"PartitionNames", "dev"}},
       at + ".PartitionNames: must be an array"},
      {"two partitions",
       {{"NodeType", "Compute"}, {"PartitionNames", {"a", "b"}}},
       at + ".PartitionNames: must list at most 1 partition name"},
      {"a name not a string",
       {{"NodeType", "Compute"}, {"PartitionNames", {7}}},
       at + ".PartitionNames[0]: must be a string"},
      {"an empty name",
       {{"NodeType", "Compute"}, {"PartitionNames", {""}}},
       at + ".PartitionNames[0]" + pattern},
      {"a leading hyphen",
       {{"NodeType", "Compute"}, {"PartitionNames", {"-dev"}}},
       at + ".PartitionNames[0]" + pattern},
      {"a trailing hyphen",
       {{"NodeType", "Compute"}, {"PartitionNames", {"dev-"}}},
       at + ".PartitionNames[0]" + pattern},
      {"an underscore",
       {{"NodeType", "Compute"}, {"PartitionNames", {"my_dev"}}},
       at + ".PartitionNames[0]" + pattern},
      {"1025 characters",
       {{"NodeType", "Compute"}, {"PartitionNames", {std::string(1025, 'p')}}},
       at + ".PartitionNames[0]: must be 1 to 1024 characters long"},
      {"Slurm's DEFAULT",
       {{"NodeType", "Compute"}, {"PartitionNames", {"Default"}}},
       at + ".PartitionNames[0]: DEFAULT is reserved by Slurm"},
  };
  for (const auto& c : cases) {
    json request = topology_request();
    request["InstanceGroups"][3]["SlurmConfig"] = c.slurm_config;
    EXPECT_EQ(topology_errors(request), c.error) << c.what;
  }
  // At the bounds: no name, one name of 1024, hyphens inside.
  for (json names : {json::array(), json{std::string(1024, 'p')}, json{"a--b-c9"}}) {
    json request = topology_request();
    request["InstanceGroups"][3]["SlurmConfig"]["PartitionNames"] = names;
    EXPECT_EQ(topology_errors(request), "") << names.dump();
  }
}

TEST(SlurmTopology, TheRulesAcrossGroupsAreNamed) {
  auto with = [](auto change) {
    json request = topology_request();
    change(request);
    return topology_errors(request);
  };
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][2].erase("SlurmConfig"); }),
            "InstanceGroups[2].SlurmConfig: is required when another group has one "
            "(InstanceGroups[0]): the roles come from SlurmConfig on every group or from "
            "provisioning_parameters.json");
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][3]["SlurmConfig"]["NodeType"] = "Controller"; }),
            "InstanceGroups[3].SlurmConfig.NodeType: a second Controller group (InstanceGroups[0] "
            "is one); a cluster has one controller group; InstanceGroups[3].InstanceCount: the "
            "controller group must have exactly 1 instance");
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][0]["InstanceCount"] = 2; }),
            "InstanceGroups[0].InstanceCount: the controller group must have exactly 1 instance");
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][0]["SlurmConfig"]["NodeType"] = "Compute"; }),
            "InstanceGroups: one group must have SlurmConfig.NodeType Controller");
  EXPECT_EQ(with([](json& r) {
              r["InstanceGroups"][2]["SlurmConfig"] = {{"NodeType", "Login"}};
              r["InstanceGroups"][3]["SlurmConfig"]["NodeType"] = "Login";
            }),
            "InstanceGroups[2].SlurmConfig.NodeType: a second Login group (InstanceGroups[1] is "
            "one); a cluster has at most one login group; InstanceGroups[3].SlurmConfig.NodeType: "
            "a second Login group (InstanceGroups[1] is one); a cluster has at most one login "
            "group; InstanceGroups: at least one group must have SlurmConfig.NodeType Compute");
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][1]["SlurmConfig"]["PartitionNames"] = {"x"}; }),
            "InstanceGroups[1].SlurmConfig.PartitionNames: only a Compute group joins a partition");
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][1]["WarmSpares"] = 1; }),
            "InstanceGroups[1].WarmSpares: only a Compute group keeps warm spares");
  EXPECT_EQ(with([](json& r) { r["InstanceGroups"][3]["WarmSpares"] = 1; }), "");
}

TEST(SlurmTopology, OrchestratorTakesSlurmAloneWithAKnownStrategy) {
  auto with = [](const json& orchestrator) {
    json request = topology_request();
    request["Orchestrator"] = orchestrator;
    return topology_errors(request);
  };
  EXPECT_EQ(with("Slurm"), "Orchestrator: must be an object");
  EXPECT_EQ(with(json::object()), "Orchestrator.Slurm: is required");
  EXPECT_EQ(with({{"Eks", {{"ClusterArn", "arn:aws:eks:us-east-1:1:cluster/x"}}}}),
            "Orchestrator.Eks: endure orchestrates with Slurm: give Orchestrator.Slurm or nothing");
  EXPECT_EQ(with({{"Slurm", 1}}), "Orchestrator.Slurm: must be an object");
  EXPECT_EQ(with({{"Slurm", {{"SlurmConfigStrategy", "Replace"}}}}),
            "Orchestrator.Slurm.SlurmConfigStrategy: must be one of Managed, Overwrite, Merge");
  EXPECT_EQ(with({{"Slurm", {{"Strategy", "Merge"}}}}),
            "Orchestrator.Slurm.Strategy: is not a known field; known: SlurmConfigStrategy");
  for (const char* s : {"Managed", "Overwrite", "Merge"}) {
    EXPECT_EQ(with({{"Slurm", {{"SlurmConfigStrategy", s}}}}), "") << s;
  }
}

TEST(SlurmTopology, UpdateClusterKeepsTheRolesAndMayChangeTheStrategy) {
  auto current = parse_cluster_spec(topology_request());
  ASSERT_TRUE(current);
  json request = topology_request();
  request.erase("Orchestrator");
  request["InstanceGroups"][3]["InstanceCount"] = 5;
  request["InstanceGroups"][2].erase("SlurmConfig");  // left out: kept
  auto next = apply_cluster_update(*current, request);
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->groups[3].instance_count, 5);
  EXPECT_EQ(next->groups[2].slurm, current->groups[2].slurm);
  EXPECT_EQ(next->orchestrator, current->orchestrator);

  request["InstanceGroups"][3]["SlurmConfig"]["PartitionNames"] = {"other"};
  EXPECT_EQ(describe(validate_cluster_update(*current, request)),
            "InstanceGroups[3].SlurmConfig: cannot be changed by UpdateCluster (is "
            "{\"NodeType\":\"Compute\"})");

  json strategy = {{"ClusterName", "c"},
                   {"Orchestrator", {{"Slurm", {{"SlurmConfigStrategy", "Overwrite"}}}}}};
  next = apply_cluster_update(*current, strategy);
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(slurm_config_strategy(next->orchestrator), api::SlurmConfigStrategy::kOverwrite);
  EXPECT_EQ(next->to_json()["InstanceGroups"], current->to_json()["InstanceGroups"]);
}

TEST(SlurmTopology, AProvisioningFileMustAgreeWithSlurmConfig) {
  auto spec = parse_cluster_spec(topology_request());
  ASSERT_TRUE(spec);
  auto config = roles_from_slurm_config(*spec);
  ASSERT_TRUE(config);
  json file = config->to_json();
  auto same = parse_provisioning(file, *spec);
  ASSERT_TRUE(same);
  EXPECT_TRUE(role_disagreements(*spec, *config, *same).empty());

  file["worker_groups"][0]["partition_name"] = "dev";
  file.erase("login_group");
  file["worker_groups"].push_back({{"instance_group_name", "login"}, {"partition_name", "dev"}});
  auto other = parse_provisioning(file, *spec);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(describe(role_disagreements(*spec, *config, *other)),
            "InstanceGroups[1].SlurmConfig: makes login the login, but "
            "provisioning_parameters.json makes it the worker in partition dev; make them agree "
            "or remove the file; InstanceGroups[2].SlurmConfig: makes gpu the worker in partition "
            "train, but provisioning_parameters.json makes it the worker in partition dev; make "
            "them agree or remove the file");
}

}  // namespace
}  // namespace endure::spec
