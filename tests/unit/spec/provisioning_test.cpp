// provisioning_parameters.json against a cluster spec: roles, partitions and their paths.
#include "spec/provisioning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "api/wire.h"

namespace endure::spec {
namespace {

// Groups: [0] controller (1), [1] login (1), [2] worker-a (2), [3] worker-b (3).
ClusterSpec cluster() {
  json request = {{"ClusterName", "ml"}, {"InstanceGroups", json::array()}};
  int counts[] = {1, 1, 2, 3};
  const char* names[] = {"controller", "login", "worker-a", "worker-b"};
  for (int i = 0; i < 4; ++i) {
    request["InstanceGroups"].push_back(
        {{"InstanceGroupName", names[i]},
         {"InstanceType", "local.c2"},
         {"InstanceCount", counts[i]},
         {"LifeCycleConfig", {{"SourceS3Uri", "/lc"}, {"OnCreate", "on_create.sh"}}}});
  }
  Result<ClusterSpec> spec = parse_cluster_spec(request);
  EXPECT_TRUE(spec.ok()) << spec.error().message;
  return *spec;
}

const char* kValid = R"({
  "version": "1.0.0", "workload_manager": "slurm",
  "controller_group": "controller", "login_group": "login",
  "worker_groups": [{"instance_group_name": "worker-a", "partition_name": "dev"},
                    {"instance_group_name": "worker-b", "partition_name": "gpu_2.x-y"}],
  "fsx_dns_name": "fs-1.example", "fsx_mountname": "abc"
})";

// The valid file with one top-level key set to value.
std::string with(const std::string& key, const json& value) {
  json params = json::parse(kValid);
  params[key] = value;
  return params.dump();
}

std::string without(const std::string& key) {
  json params = json::parse(kValid);
  params.erase(key);
  return params.dump();
}

// The valid file with worker_groups replaced by the given JSON text.
std::string with_workers(const std::string& workers_text) {
  return with("worker_groups", json::parse(workers_text));
}

struct MalformedProvisioning {
  std::string name;
  std::string text;
  std::string path;
};

std::vector<MalformedProvisioning> malformed_provisioning() {
  const std::string p = "provisioning_parameters.json:";
  const std::string long_partition(41, 'p');
  return {
      {"file_is_array", "[]", "provisioning_parameters.json"},
      {"workload_manager_pbs", with("workload_manager", "pbs"), p + "workload_manager"},
      {"workload_manager_number", with("workload_manager", 1), p + "workload_manager"},
      {"controller_missing", without("controller_group"), p + "controller_group"},
      {"controller_number", with("controller_group", 1), p + "controller_group"},
      {"controller_empty", with("controller_group", ""), p + "controller_group"},
      {"controller_unknown_group", with("controller_group", "ctrl"), p + "controller_group"},
      {"controller_has_two_instances", with("controller_group", "worker-a"),
       "InstanceGroups[2].InstanceCount"},
      {"login_unknown_group", with("login_group", "bastion"), p + "login_group"},
      {"login_not_string", with("login_group", json::array()), p + "login_group"},
      {"login_is_controller", with("login_group", "controller"), p + "login_group"},
      {"workers_missing", without("worker_groups"), p + "worker_groups"},
      {"workers_object", with_workers(R"({"instance_group_name":"worker-a"})"),
       p + "worker_groups"},
      {"workers_empty", with_workers("[]"), p + "worker_groups"},
      {"worker_not_object", with_workers(R"(["worker-a"])"), p + "worker_groups[0]"},
      {"worker_name_missing", with_workers(R"([{"partition_name":"dev"}])"),
       p + "worker_groups[0].instance_group_name"},
      {"worker_unknown_group",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":"dev"},
                        {"instance_group_name":"worker-c","partition_name":"dev"}])"),
       p + "worker_groups[1].instance_group_name"},
      {"worker_is_controller",
       with_workers(R"([{"instance_group_name":"controller","partition_name":"dev"}])"),
       p + "worker_groups[0].instance_group_name"},
      {"worker_listed_twice",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":"dev"},
                        {"instance_group_name":"worker-a","partition_name":"big"}])"),
       p + "worker_groups[1].instance_group_name"},
      {"partition_missing", with_workers(R"([{"instance_group_name":"worker-a"}])"),
       p + "worker_groups[0].partition_name"},
      {"partition_empty",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":""}])"),
       p + "worker_groups[0].partition_name"},
      {"partition_too_long",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":")" + long_partition +
                    R"("}])"),
       p + "worker_groups[0].partition_name"},
      {"partition_space",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":"dev queue"}])"),
       p + "worker_groups[0].partition_name"},
      {"partition_leading_dot",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":".dev"}])"),
       p + "worker_groups[0].partition_name"},
      {"partition_default",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":"default"}])"),
       p + "worker_groups[0].partition_name"},
      {"group_without_role",
       with_workers(R"([{"instance_group_name":"worker-a","partition_name":"dev"}])"),
       "InstanceGroups[3].InstanceGroupName"},
  };
}

// gtest names a failing case by this rather than by the struct's bytes.
void PrintTo(const MalformedProvisioning& c, std::ostream* os) { *os << c.name; }

class ProvisioningMalformed : public testing::TestWithParam<MalformedProvisioning> {};

TEST_P(ProvisioningMalformed, IsRejectedAtItsPath) {
  const MalformedProvisioning& c = GetParam();
  SCOPED_TRACE(c.text);
  json params = json::parse(c.text);
  ClusterSpec spec = cluster();
  std::vector<FieldError> errors = validate_provisioning(params, spec);
  // A broken role can also leave its group with no role, so look for the path, not a count.
  EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [&](const FieldError& e) {
    return e.path == c.path;
  })) << describe(errors);

  Result<ProvisioningParameters> parsed = parse_provisioning(params, spec);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, api::kValidationException);
  EXPECT_EQ(parsed.error().message, describe(errors));
}

INSTANTIATE_TEST_SUITE_P(Provisioning, ProvisioningMalformed,
                         testing::ValuesIn(malformed_provisioning()),
                         [](const testing::TestParamInfo<MalformedProvisioning>& param) {
                           return param.param.name;
                         });

TEST(ProvisioningTest, ValidFileGivesRolesAndPartitions) {
  ClusterSpec spec = cluster();
  json params = json::parse(kValid);
  EXPECT_TRUE(validate_provisioning(params, spec).empty())
      << describe(validate_provisioning(params, spec));
  Result<ProvisioningParameters> p = parse_provisioning(params, spec);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->role_of("controller"), NodeRole::kController);
  EXPECT_EQ(p->role_of("login"), NodeRole::kLogin);
  EXPECT_EQ(p->role_of("worker-a"), NodeRole::kWorker);
  EXPECT_EQ(p->role_of("worker-b"), NodeRole::kWorker);
  EXPECT_EQ(p->partition_of("worker-a"), "dev");
  EXPECT_EQ(p->partition_of("worker-b"), "gpu_2.x-y");
  EXPECT_EQ(p->partition_of("controller"), "");
  EXPECT_STREQ(role_name(NodeRole::kController), "controller");
  EXPECT_STREQ(role_name(NodeRole::kLogin), "login");
  EXPECT_STREQ(role_name(NodeRole::kWorker), "worker");

  json out = p->to_json();
  EXPECT_FALSE(out.contains("fsx_dns_name"));  // the lifecycle scripts' business
  Result<ProvisioningParameters> again = parse_provisioning(out, spec);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->to_json(), out);
}

TEST(ProvisioningTest, LoginGroupAndWorkloadManagerAreOptional) {
  ClusterSpec spec = cluster();
  spec.groups.erase(spec.groups.begin() + 1);  // no login group
  json params = json::parse(without("login_group"));
  params.erase("workload_manager");
  params.erase("version");
  Result<ProvisioningParameters> p = parse_provisioning(params, spec);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->login_group, "");
  EXPECT_EQ(p->version, "1.0.0");
  EXPECT_EQ(p->workload_manager, "slurm");
  EXPECT_EQ(p->role_of("login"), NodeRole::kWorker);  // no such role here
  EXPECT_FALSE(p->to_json().contains("login_group"));
}

TEST(ProvisioningTest, ControllerCountRuleNamesTheSpecField) {
  ClusterSpec spec = cluster();
  spec.groups[0].instance_count = 0;
  std::vector<FieldError> errors = validate_provisioning(json::parse(kValid), spec);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(describe(errors),
            "InstanceGroups[0].InstanceCount: the controller group must have exactly 1 instance");
}

TEST(ProvisioningTest, OnlyAWorkerGroupKeepsWarmSpares) {
  ClusterSpec spec = cluster();
  spec.groups[0].warm_spares = 1;
  spec.groups[2].warm_spares = 2;
  std::vector<FieldError> errors = validate_provisioning(json::parse(kValid), spec);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(describe(errors),
            "InstanceGroups[0].WarmSpares: only a worker group keeps warm spares; controller is "
            "the controller group");
}

TEST(ProvisioningTest, GroupWithoutRoleRule) {
  std::vector<FieldError> errors = validate_provisioning(
      json::parse(with_workers(R"([{"instance_group_name":"worker-b","partition_name":"dev"}])")),
      cluster());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(describe(errors),
            "InstanceGroups[2].InstanceGroupName: has no role in provisioning_parameters.json");
}

TEST(ProvisioningMalformedTable, HasAtLeast8DistinctCases) {
  std::vector<MalformedProvisioning> cases = malformed_provisioning();
  EXPECT_GE(cases.size(), 8u);
  for (size_t i = 0; i < cases.size(); ++i) {
    for (size_t j = i + 1; j < cases.size(); ++j) {
      EXPECT_NE(cases[i].text, cases[j].text) << cases[i].name << " / " << cases[j].name;
    }
  }
}

}  // namespace
}  // namespace endure::spec
