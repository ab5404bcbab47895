// The CreateCluster / UpdateCluster spec: every rule is named by the field path it reports.
#include <gtest/gtest.h>

#include <fstream>

#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "api/wire.h"
#include "spec/cluster_spec.h"
#include "spec/instance_types.h"

namespace endure::spec {
namespace {

// One valid group; cases below change one thing each.
std::string group(const std::string& name, int count = 1) {
  return R"({"InstanceGroupName":")" + name + R"(","InstanceType":"local.c1","InstanceCount":)" +
         std::to_string(count) +
         R"(,"LifeCycleConfig":{"SourceS3Uri":"/src","OnCreate":"on_create.sh"}})";
}

std::string groups_of(int n, int count) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + group("g" + std::to_string(i), count);
  return out + "]";
}

// A whole request around a literal InstanceGroups entry.
std::string with_group(const std::string& group_text) {
  return R"({"ClusterName":"c","InstanceGroups":[)" + group_text + "]}";
}

// A group whose LifeCycleConfig is the given literal.
std::string with_lifecycle(const std::string& lifecycle_text) {
  return with_group(
      R"({"InstanceGroupName":"w","InstanceType":"local.c1","InstanceCount":1,"LifeCycleConfig":)" +
      lifecycle_text + "}");
}

// A group with one more (or replacing) field, spelled as JSON text.
std::string with_group_field(const std::string& field_text) {
  std::string g = group("w");
  return with_group(g.substr(0, g.size() - 1) + "," + field_text + "}");
}

std::string group_without(const std::string& field) {
  json g = json::parse(group("w"));
  g.erase(field);
  return with_group(g.dump());
}

std::string with_count(const std::string& count_text) {
  return with_group(R"({"InstanceGroupName":"w","InstanceType":"local.c1","InstanceCount":)" +
                    count_text +
                    R"(,"LifeCycleConfig":{"SourceS3Uri":"/src","OnCreate":"on_create.sh"}})");
}

std::string with_top(const std::string& fields_text) {
  return R"({"ClusterName":"c","InstanceGroups":[)" + group("w") + "]," + fields_text + "}";
}

std::string with_name(const std::string& name_json) {
  return R"({"ClusterName":)" + name_json + R"(,"InstanceGroups":[)" + group("w") + "]}";
}

// A cluster on hosts (one group, HostPool rack-a) whose SharedFileSystem is the given
// object with one field set to the given JSON text (or, with value_text empty, removed).
const char* kSharedFs =
    R"({"DnsName":"fs-01.rack-a.example","Port":22,"User":"root","MountName":"/export/ml",)"
    R"("HostKey":"SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",)"
    R"("IdentityFile":"/etc/endure/ssh/id_ed25519"})";

std::string on_hosts_with_fs(const std::string& field, const std::string& value_text) {
  json fs = json::parse(kSharedFs);
  if (value_text.empty()) {
    fs.erase(field);
  } else {
    fs[field] = json::parse(value_text);
  }
  json request = json::parse(with_group_field(R"("HostPool":"rack-a")"));
  request["SharedFileSystem"] = fs;
  return request.dump();
}

struct MalformedCase {
  std::string name;  // test name suffix
  std::string text;  // the request, as JSON text
  std::string path;  // the field path the error must name
};

std::vector<MalformedCase> malformed_cases() {
  const std::string long_name(64, 'a');
  return {
      {"request_is_array", "[]", ""},
      {"request_is_string", R"("cluster")", ""},
      {"unknown_top_level_field", with_top(R"("Foo":1)"), "Foo"},
      {"orchestrator_eks", with_top(R"("Orchestrator":{"Eks":{}})"), "Orchestrator.Eks"},
      {"tags_not_array", with_top(R"("Tags":{"k":"v"})"), "Tags"},
      {"cluster_name_missing", R"({"InstanceGroups":[)" + group("w") + "]}", "ClusterName"},
      {"cluster_name_number", with_name("5"), "ClusterName"},
      {"cluster_name_empty", with_name(R"("")"), "ClusterName"},
      {"cluster_name_too_long", with_name("\"" + long_name + "\""), "ClusterName"},
      {"cluster_name_underscore", with_name(R"("my_cluster")"), "ClusterName"},
      {"cluster_name_leading_hyphen", with_name(R"("-c")"), "ClusterName"},
      {"cluster_name_trailing_hyphen", with_name(R"("c-")"), "ClusterName"},
      {"cluster_name_slash", with_name(R"("a/b")"), "ClusterName"},
      {"instance_groups_missing", R"({"ClusterName":"c"})", "InstanceGroups"},
      {"instance_groups_object", R"({"ClusterName":"c","InstanceGroups":{}})", "InstanceGroups"},
      {"instance_groups_empty", R"({"ClusterName":"c","InstanceGroups":[]})", "InstanceGroups"},
      {"instance_groups_too_many",
       R"({"ClusterName":"c","InstanceGroups":)" + groups_of(kMaxInstanceGroups + 1, 1) + "}",
       "InstanceGroups"},
      {"group_not_object", with_group("5"), "InstanceGroups[0]"},
      {"group_unknown_field", with_group_field(R"("Foo":1)"), "InstanceGroups[0].Foo"},
      {"group_name_missing", group_without("InstanceGroupName"),
       "InstanceGroups[0].InstanceGroupName"},
      {"group_name_dot", with_group(group("w.1")), "InstanceGroups[0].InstanceGroupName"},
      {"group_name_too_long", with_group(group(long_name)), "InstanceGroups[0].InstanceGroupName"},
      {"group_name_duplicate", with_group(group("w") + "," + group("w")),
       "InstanceGroups[1].InstanceGroupName"},
      {"group_name_duplicate_ignoring_case",
       with_group(group("a") + "," + group("w") + "," + group("W")),
       "InstanceGroups[2].InstanceGroupName"},
      {"instance_type_missing", group_without("InstanceType"), "InstanceGroups[0].InstanceType"},
      {"instance_type_unknown",
       with_group(R"({"InstanceGroupName":"w","InstanceType":"ml.p4d.24xlarge","InstanceCount":1,)"
                  R"("LifeCycleConfig":{"SourceS3Uri":"/src","OnCreate":"on_create.sh"}})"),
       "InstanceGroups[0].InstanceType"},
      {"instance_count_missing", group_without("InstanceCount"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_float", with_count("1.0"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_fraction", with_count("2.5"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_string", with_count(R"("1")"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_bool", with_count("true"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_null", with_count("null"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_negative", with_count("-1"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_over_group_max", with_count("65"), "InstanceGroups[0].InstanceCount"},
      {"instance_count_over_uint64", with_count("18446744073709551615"),
       "InstanceGroups[0].InstanceCount"},
      {"second_group_count_bad", with_group(group("a") + "," + group("b", 99)),
       "InstanceGroups[1].InstanceCount"},
      {"lifecycle_missing", group_without("LifeCycleConfig"), "InstanceGroups[0].LifeCycleConfig"},
      {"lifecycle_string", with_lifecycle(R"("/src/on_create.sh")"),
       "InstanceGroups[0].LifeCycleConfig"},
      {"lifecycle_unknown_field",
       with_lifecycle(R"({"SourceS3Uri":"/src","OnCreate":"a.sh","OnStart":"b.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.OnStart"},
      {"source_missing", with_lifecycle(R"({"OnCreate":"a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.SourceS3Uri"},
      {"source_empty", with_lifecycle(R"({"SourceS3Uri":"","OnCreate":"a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.SourceS3Uri"},
      {"source_http", with_lifecycle(R"({"SourceS3Uri":"http://host/src","OnCreate":"a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.SourceS3Uri"},
      {"source_relative", with_lifecycle(R"({"SourceS3Uri":"scripts","OnCreate":"a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.SourceS3Uri"},
      {"source_file_relative",
       with_lifecycle(R"({"SourceS3Uri":"file://scripts","OnCreate":"a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.SourceS3Uri"},
      {"source_s3_without_bucket", with_lifecycle(R"({"SourceS3Uri":"s3://","OnCreate":"a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.SourceS3Uri"},
      {"on_create_missing", with_lifecycle(R"({"SourceS3Uri":"/src"})"),
       "InstanceGroups[0].LifeCycleConfig.OnCreate"},
      {"on_create_number", with_lifecycle(R"({"SourceS3Uri":"/src","OnCreate":1})"),
       "InstanceGroups[0].LifeCycleConfig.OnCreate"},
      {"on_create_absolute", with_lifecycle(R"({"SourceS3Uri":"/src","OnCreate":"/bin/sh"})"),
       "InstanceGroups[0].LifeCycleConfig.OnCreate"},
      {"on_create_parent", with_lifecycle(R"({"SourceS3Uri":"/src","OnCreate":"../a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.OnCreate"},
      {"on_create_inner_parent",
       with_lifecycle(R"({"SourceS3Uri":"/src","OnCreate":"lib/../../a.sh"})"),
       "InstanceGroups[0].LifeCycleConfig.OnCreate"},
      {"threads_per_core_three", with_group_field(R"("ThreadsPerCore":3)"),
       "InstanceGroups[0].ThreadsPerCore"},
      {"threads_per_core_string", with_group_field(R"("ThreadsPerCore":"2")"),
       "InstanceGroups[0].ThreadsPerCore"},
      {"execution_role_number", with_group_field(R"("ExecutionRole":1)"),
       "InstanceGroups[0].ExecutionRole"},
      {"host_pool_empty", with_group_field(R"("HostPool":"")"), "InstanceGroups[0].HostPool"},
      {"host_pool_bad_name", with_group_field(R"("HostPool":"rack a")"),
       "InstanceGroups[0].HostPool"},
      {"host_pool_number", with_group_field(R"("HostPool":7)"), "InstanceGroups[0].HostPool"},
      {"warm_spares_negative", with_group_field(R"("WarmSpares":-1)"),
       "InstanceGroups[0].WarmSpares"},
      {"warm_spares_over_max", with_group_field(R"("WarmSpares":9)"),
       "InstanceGroups[0].WarmSpares"},
      {"warm_spares_past_the_group_block",
       with_group(R"({"InstanceGroupName":"w","InstanceType":"local.c1","InstanceCount":60,)"
                  R"("WarmSpares":5,"LifeCycleConfig":{"SourceS3Uri":"/src","OnCreate":"a.sh"}})"),
       "InstanceGroups[0].WarmSpares"},
      {"host_pool_without_shared_fs", with_group_field(R"("HostPool":"rack-a")"),
       "SharedFileSystem"},
      {"shared_fs_on_local_nodes", with_top(std::string(R"("SharedFileSystem":)") + kSharedFs),
       "InstanceGroups[0].HostPool"},
      {"shared_fs_not_object",
       [] {
         json request = json::parse(with_group_field(R"("HostPool":"rack-a")"));
         request["SharedFileSystem"] = "fs-01";
         return request.dump();
       }(),
       "SharedFileSystem"},
      {"shared_fs_unknown_field", on_hosts_with_fs("Size", "1"), "SharedFileSystem.Size"},
      {"shared_fs_no_dns_name", on_hosts_with_fs("DnsName", ""), "SharedFileSystem.DnsName"},
      {"shared_fs_dns_name_option", on_hosts_with_fs("DnsName", R"("-oProxyCommand=x")"),
       "SharedFileSystem.DnsName"},
      {"shared_fs_port_zero", on_hosts_with_fs("Port", "0"), "SharedFileSystem.Port"},
      {"shared_fs_user_upper", on_hosts_with_fs("User", R"("Root")"), "SharedFileSystem.User"},
      {"shared_fs_no_mount_name", on_hosts_with_fs("MountName", ""), "SharedFileSystem.MountName"},
      {"shared_fs_relative_mount_name", on_hosts_with_fs("MountName", R"("export/ml")"),
       "SharedFileSystem.MountName"},
      {"shared_fs_root_mount_name", on_hosts_with_fs("MountName", R"("/")"),
       "SharedFileSystem.MountName"},
      {"shared_fs_parent_in_mount_name", on_hosts_with_fs("MountName", R"("/export/../etc")"),
       "SharedFileSystem.MountName"},
      {"shared_fs_space_in_mount_name", on_hosts_with_fs("MountName", R"("/export/a b")"),
       "SharedFileSystem.MountName"},
      {"shared_fs_no_host_key", on_hosts_with_fs("HostKey", ""), "SharedFileSystem.HostKey"},
      {"shared_fs_bad_host_key", on_hosts_with_fs("HostKey", R"("AAAA")"),
       "SharedFileSystem.HostKey"},
      {"shared_fs_relative_identity", on_hosts_with_fs("IdentityFile", R"("id_ed25519")"),
       "SharedFileSystem.IdentityFile"},
      {"node_recovery_unknown", with_top(R"("NodeRecovery":"Manual")"), "NodeRecovery"},
      {"node_recovery_lowercase", with_top(R"("NodeRecovery":"automatic")"), "NodeRecovery"},
      {"node_recovery_bool", with_top(R"("NodeRecovery":true)"), "NodeRecovery"},
      {"tiered_storage_string", with_top(R"("TieredStorageConfig":"Enable")"),
       "TieredStorageConfig"},
      {"tiered_storage_no_mode",
       with_top(R"("TieredStorageConfig":{"InstanceMemoryAllocationPercentage":20})"),
       "TieredStorageConfig.Mode"},
      {"tiered_storage_mode_unknown", with_top(R"("TieredStorageConfig":{"Mode":"On"})"),
       "TieredStorageConfig.Mode"},
      {"tiered_storage_mode_lowercase", with_top(R"("TieredStorageConfig":{"Mode":"enable"})"),
       "TieredStorageConfig.Mode"},
      {"tiered_storage_mode_bool", with_top(R"("TieredStorageConfig":{"Mode":true})"),
       "TieredStorageConfig.Mode"},
      {"tiered_storage_percent_negative",
       with_top(
           R"("TieredStorageConfig":{"Mode":"Enable","InstanceMemoryAllocationPercentage":-1})"),
       "TieredStorageConfig.InstanceMemoryAllocationPercentage"},
      {"tiered_storage_percent_over_100",
       with_top(
           R"("TieredStorageConfig":{"Mode":"Enable","InstanceMemoryAllocationPercentage":101})"),
       "TieredStorageConfig.InstanceMemoryAllocationPercentage"},
      {"tiered_storage_percent_fraction",
       with_top(
           R"("TieredStorageConfig":{"Mode":"Enable","InstanceMemoryAllocationPercentage":20.5})"),
       "TieredStorageConfig.InstanceMemoryAllocationPercentage"},
      {"tiered_storage_percent_string",
       with_top(
           R"("TieredStorageConfig":{"Mode":"Enable","InstanceMemoryAllocationPercentage":"20"})"),
       "TieredStorageConfig.InstanceMemoryAllocationPercentage"},
      {"tiered_storage_percent_over_uint64",
       with_top(R"("TieredStorageConfig":{"Mode":"Disable",)"
                R"("InstanceMemoryAllocationPercentage":18446744073709551615})"),
       "TieredStorageConfig.InstanceMemoryAllocationPercentage"},
      {"tiered_storage_unknown_field",
       with_top(R"("TieredStorageConfig":{"Mode":"Enable","Size":1})"), "TieredStorageConfig.Size"},
  };
}

// gtest names a failing case by this rather than by the struct's bytes.
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

class SpecMalformed : public testing::TestWithParam<MalformedCase> {};

TEST_P(SpecMalformed, IsRejectedAtItsPath) {
  const MalformedCase& c = GetParam();
  SCOPED_TRACE(c.text);
  json request = json::parse(c.text);
  std::vector<FieldError> errors = validate_cluster_spec(request);
  ASSERT_FALSE(errors.empty());
  // Each case breaks one rule, so every error names that one field: no knock-on noise.
  for (const FieldError& e : errors) EXPECT_EQ(e.path, c.path) << e.rule;

  Result<ClusterSpec> parsed = parse_cluster_spec(request);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, api::kValidationException);
  EXPECT_EQ(parsed.error().message, describe(errors));
}

INSTANTIATE_TEST_SUITE_P(Spec, SpecMalformed, testing::ValuesIn(malformed_cases()),
                         [](const testing::TestParamInfo<MalformedCase>& param) {
                           return param.param.name;
                         });

TEST(SpecMalformedTable, HasAtLeast25DistinctCases) {
  std::vector<MalformedCase> cases = malformed_cases();
  EXPECT_GE(cases.size(), 25u);
  std::set<std::string> names, texts;
  for (const MalformedCase& c : cases) {
    names.insert(c.name);
    texts.insert(c.text);
  }
  EXPECT_EQ(names.size(), cases.size());
  EXPECT_EQ(texts.size(), cases.size());
}

const char* kValidSpec = R"({
  "ClusterName": "ml-cluster",
  "InstanceGroups": [
    {"InstanceGroupName": "controller", "InstanceType": "local.c1", "InstanceCount": 1,
     "LifeCycleConfig": {"SourceS3Uri": "/opt/lifecycle", "OnCreate": "on_create.sh"}},
    {"InstanceGroupName": "worker", "InstanceType": "local.c4", "InstanceCount": 4,
     "LifeCycleConfig": {"SourceS3Uri": "s3://bucket/lifecycle", "OnCreate": "scripts/on_create.sh"},
     "ThreadsPerCore": 2, "ExecutionRole": "arn:aws:iam::1:role/x", "InstanceStorageConfigs": []}
  ],
  "NodeRecovery": "None",
  "Tags": [{"Key": "team", "Value": "ml"}],
  "VpcConfig": {"Subnets": []}
})";

TEST(SpecTest, ValidSpecParsesAndRoundTrips) {
  json request = json::parse(kValidSpec);
  EXPECT_TRUE(validate_cluster_spec(request).empty()) << describe(validate_cluster_spec(request));
  Result<ClusterSpec> spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->name, "ml-cluster");
  EXPECT_EQ(spec->node_recovery, "None");
  ASSERT_EQ(spec->groups.size(), 2u);
  const InstanceGroupSpec& worker = spec->groups[1];
  EXPECT_EQ(worker.name, "worker");
  EXPECT_EQ(worker.instance_type, "local.c4");
  EXPECT_EQ(worker.instance_count, 4);
  EXPECT_EQ(worker.lifecycle.source_uri, "s3://bucket/lifecycle");
  EXPECT_EQ(worker.lifecycle.on_create, "scripts/on_create.sh");
  EXPECT_EQ(worker.threads_per_core, 2);
  EXPECT_EQ(spec->find_group("worker"), &spec->groups[1]);
  EXPECT_EQ(spec->find_group("nope"), nullptr);

  json echoed = spec->to_json();
  EXPECT_FALSE(echoed.contains("Tags"));  // accepted, not kept
  Result<ClusterSpec> again = parse_cluster_spec(echoed);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->to_json(), echoed);
}

TEST(SpecTest, AppliesDefaults) {
  Result<ClusterSpec> spec = parse_cluster_spec(json::parse(with_group(group("w"))));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->groups[0].threads_per_core, 1);
  EXPECT_EQ(spec->node_recovery, "Automatic");
  EXPECT_EQ(spec->to_json()["InstanceGroups"][0]["ThreadsPerCore"], 1);
  EXPECT_EQ(spec->to_json()["NodeRecovery"], "Automatic");
}

TEST(SpecTest, AcceptsEachSourceFormAndZeroInstances) {
  for (const char* source :
       {"/abs/path", "file:///abs/path", "s3://bucket/prefix", "s3://bucket"}) {
    SCOPED_TRACE(source);
    json request = json::parse(with_count("0"));
    request["InstanceGroups"][0]["LifeCycleConfig"]["SourceS3Uri"] = source;
    EXPECT_TRUE(validate_cluster_spec(request).empty()) << describe(validate_cluster_spec(request));
  }
}

TEST(SpecTest, ReportsEveryErrorAtOnce) {
  json request = json::parse(R"({
    "ClusterName": "bad_name",
    "InstanceGroups": [
      {"InstanceGroupName": "w", "InstanceType": "local.gpu", "InstanceCount": 1.5,
       "LifeCycleConfig": {"SourceS3Uri": "http://x", "OnCreate": "../x.sh"}},
      {"InstanceGroupName": "w", "InstanceType": "local.c1", "InstanceCount": 1}
    ],
    "NodeRecovery": "Sometimes",
    "Extra": 1
  })");
  std::vector<FieldError> errors = validate_cluster_spec(request);
  std::vector<std::string> paths;
  for (const FieldError& e : errors) paths.push_back(e.path);
  std::vector<std::string> want = {
      "Extra",
      "ClusterName",
      "InstanceGroups[0].InstanceType",
      "InstanceGroups[0].InstanceCount",
      "InstanceGroups[0].LifeCycleConfig.SourceS3Uri",
      "InstanceGroups[0].LifeCycleConfig.OnCreate",
      "InstanceGroups[1].LifeCycleConfig",
      "InstanceGroups[1].InstanceGroupName",
      "NodeRecovery",
  };
  EXPECT_EQ(paths, want) << describe(errors);
  std::string message = describe(errors);
  EXPECT_NE(message.find("InstanceGroups[0].InstanceCount: must be an integer from 0 to 64"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("; NodeRecovery: must be one of Automatic, None"), std::string::npos)
      << message;
}

// The cluster memory tier: the cloud's shape, echoed with the share the nodes get.
std::string tier_echo(const std::string& tier_text) {
  Result<ClusterSpec> spec =
      parse_cluster_spec(json::parse(with_top(R"("TieredStorageConfig":)" + tier_text)));
  if (!spec) return "error: " + spec.error().message;
  json echoed = spec->to_json();
  Result<ClusterSpec> again = parse_cluster_spec(echoed);
  EXPECT_TRUE(again.ok() && again->to_json() == echoed) << echoed.dump();
  return echoed["TieredStorageConfig"].dump();
}

TEST(SpecTest, TieredStorageIsEchoedWithTheShareTheNodesGet) {
  EXPECT_EQ(tier_echo(R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":30})"),
            R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":30})");
  EXPECT_EQ(tier_echo(R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":100})"),
            R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":100})");
  // Absent or 0 with Enable: the default share, shown as such.
  EXPECT_EQ(kDefaultMemoryPercent, 20);
  EXPECT_EQ(tier_echo(R"({"Mode":"Enable"})"),
            R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":20})");
  EXPECT_EQ(tier_echo(R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":0})"),
            R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":20})");
  // With Disable the share means nothing and is kept as given.
  EXPECT_EQ(tier_echo(R"({"Mode":"Disable"})"), R"({"Mode":"Disable"})");
  EXPECT_EQ(tier_echo(R"({"InstanceMemoryAllocationPercentage":0,"Mode":"Disable"})"),
            R"({"Mode":"Disable","InstanceMemoryAllocationPercentage":0})");

  Result<ClusterSpec> none = parse_cluster_spec(json::parse(with_group(group("w"))));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->tiered_storage.has_value());
  EXPECT_FALSE(none->to_json().contains("TieredStorageConfig"));
  EXPECT_EQ(memory_store_setting(none->tiered_storage), "");
  EXPECT_EQ(memory_store_setting(TieredStorageSpec{api::TieredStorageMode::kDisable, 50}), "");
  EXPECT_EQ(memory_store_setting(TieredStorageSpec{api::TieredStorageMode::kEnable, 30}),
            "Enable, 30 %");
}

TEST(SpecTest, TieredStorageErrorsNameTheFieldAndTheRule) {
  auto error = [](const std::string& tier_text) {
    Result<ClusterSpec> spec =
        parse_cluster_spec(json::parse(with_top(R"("TieredStorageConfig":)" + tier_text)));
    EXPECT_FALSE(spec.ok()) << tier_text;
    if (spec.ok()) return std::string();
    EXPECT_EQ(spec.error().code, api::kValidationException);
    return spec.error().message;
  };
  const std::string percent_rule =
      "TieredStorageConfig.InstanceMemoryAllocationPercentage: must be an integer from 0 to 100";
  EXPECT_EQ(error(R"({"Mode":"Enabled"})"),
            "TieredStorageConfig.Mode: must be one of Enable, Disable");
  EXPECT_EQ(error(R"({"Mode":5})"), "TieredStorageConfig.Mode: must be one of Enable, Disable");
  EXPECT_EQ(error(R"({})"), "TieredStorageConfig.Mode: is required");
  EXPECT_EQ(error(R"("Enable")"), "TieredStorageConfig: must be an object");
  for (const char* bad : {"-1", "101", "20.0", "\"20\"", "true", "null"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(
        error(std::string(R"({"Mode":"Enable","InstanceMemoryAllocationPercentage":)") + bad + "}"),
        percent_rule);
  }
  EXPECT_EQ(error(R"({"Mode":"Enable","Percent":20})"),
            "TieredStorageConfig.Percent: is not a known field; known: Mode, "
            "InstanceMemoryAllocationPercentage");
  // Every broken rule at once, as for the rest of the spec.
  EXPECT_EQ(error(R"({"Mode":"On","InstanceMemoryAllocationPercentage":200})"),
            "TieredStorageConfig.Mode: must be one of Enable, Disable; " + percent_rule);
}

TEST(SpecTest, DescribeJoinsPathAndRule) {
  EXPECT_EQ(describe({}), "");
  EXPECT_EQ(describe({{"A", "is required"}, {"B[0].C", "must be 1 or 2"}}),
            "A: is required; B[0].C: must be 1 or 2");
  EXPECT_EQ(describe({{"", "must be a JSON object"}}), "must be a JSON object");
}

TEST(SpecTest, UnknownFieldRuleListsKnownFields) {
  std::vector<FieldError> errors = validate_cluster_spec(json::parse(with_top(R"("Foo":1)")));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rule.rfind("is not a known field; known: ClusterName, InstanceGroups, "
                                 "NodeRecovery, TieredStorageConfig, Orchestrator, "
                                 "NodeProvisioningMode, Tags",
                                 0),
            0u)
      << errors[0].rule;
}

TEST(SpecTest, UnknownInstanceTypeRuleListsKnownTypes) {
  json request = json::parse(with_group(group("w")));
  request["InstanceGroups"][0]["InstanceType"] = "local.c3";
  std::vector<FieldError> errors = validate_cluster_spec(request);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rule, "must be one of " + instance_type_names());
}

TEST(SpecTest, InstanceTypesAreTheLocalOnes) {
  for (const char* name : {"local.c1", "local.c2", "local.c4", "local.m2"}) {
    SCOPED_TRACE(name);
    const InstanceType* type = find_instance_type(name);
    ASSERT_NE(type, nullptr);
    EXPECT_GT(type->cpus, 0);
    EXPECT_GE(type->memory_mib, 1024);
    EXPECT_EQ(type->gpus, 0);
    EXPECT_FALSE(type->summary.empty());
  }
  EXPECT_EQ(find_instance_type("local.c2")->cpus, 2);
  EXPECT_EQ(find_instance_type("local.m2")->memory_mib, 4096);
  EXPECT_EQ(find_instance_type("ml.p4d.24xlarge"), nullptr);
  EXPECT_EQ(instance_type_names().rfind("local.c1, local.c2, local.c4, local.m2", 0), 0u);
}

// --- UpdateCluster ---

ClusterSpec current_spec() {
  Result<ClusterSpec> spec = parse_cluster_spec(json::parse(kValidSpec));
  EXPECT_TRUE(spec.ok());
  return *spec;
}

// The current spec as an update request, so each test changes one thing.
json update_request() {
  json request = current_spec().to_json();
  request.erase("NodeRecovery");
  return request;
}

// The paths apply_cluster_update reports; checks that it refuses exactly when they exist.
std::vector<std::string> update_error_paths(const ClusterSpec& current, const json& request) {
  std::vector<FieldError> errors = validate_cluster_update(current, request);
  Result<ClusterSpec> next = apply_cluster_update(current, request);
  EXPECT_EQ(next.ok(), errors.empty());
  if (!next.ok()) {
    EXPECT_EQ(next.error().code, api::kValidationException);
    EXPECT_EQ(next.error().message, describe(errors));
  }
  std::vector<std::string> paths;
  for (const FieldError& e : errors) paths.push_back(e.path);
  return paths;
}

TEST(SpecUpdateTest, ScalesUpAndDown) {
  ClusterSpec current = current_spec();
  json request = update_request();
  request["InstanceGroups"][1]["InstanceCount"] = 8;
  Result<ClusterSpec> up = apply_cluster_update(current, request);
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->find_group("worker")->instance_count, 8);
  EXPECT_EQ(up->find_group("controller")->instance_count, 1);
  EXPECT_EQ(up->node_recovery, "None");  // left out: unchanged

  request["InstanceGroups"][1]["InstanceCount"] = 0;
  request["NodeRecovery"] = "Automatic";
  Result<ClusterSpec> down = apply_cluster_update(*up, request);
  ASSERT_TRUE(down.ok()) << down.error().message;
  EXPECT_EQ(down->find_group("worker")->instance_count, 0);
  EXPECT_EQ(down->node_recovery, "Automatic");
  // The result is a valid spec in its own right.
  EXPECT_TRUE(validate_cluster_spec(down->to_json()).empty());
}

TEST(SpecUpdateTest, AcceptsGroupsInAnyOrderAndOmittedThreadsPerCore) {
  json request = update_request();
  std::swap(request["InstanceGroups"][0], request["InstanceGroups"][1]);
  request["InstanceGroups"][0].erase("ThreadsPerCore");  // worker, 2 in the spec
  Result<ClusterSpec> next = apply_cluster_update(current_spec(), request);
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->groups[0].name, "controller");  // the spec's order is kept
  EXPECT_EQ(next->find_group("worker")->threads_per_core, 2);
}

// A valid spec on hosts: every group in pool rack-a, with a SharedFileSystem.
json on_hosts_spec() {
  json request = json::parse(kValidSpec);
  for (auto& g : request["InstanceGroups"]) g["HostPool"] = "rack-a";
  request["SharedFileSystem"] = json::parse(kSharedFs);
  return request;
}

TEST(SpecTest, ReadsHostPoolAndWarmSparesAndEchoesThemOnlyWhenSet) {
  json request = on_hosts_spec();
  request["InstanceGroups"][1]["WarmSpares"] = 2;
  request["InstanceGroups"][0]["HostPool"] = "rack-b";
  Result<ClusterSpec> spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->find_group("worker")->host_pool, "rack-a");
  EXPECT_EQ(spec->find_group("worker")->warm_spares, 2);
  EXPECT_EQ(spec->find_group("controller")->host_pool, "rack-b");
  json echoed = spec->to_json();
  EXPECT_EQ(echoed["InstanceGroups"][1]["HostPool"], "rack-a");
  EXPECT_EQ(echoed["InstanceGroups"][1]["WarmSpares"], 2);
  EXPECT_FALSE(echoed["InstanceGroups"][0].contains("WarmSpares"));
  EXPECT_EQ(echoed["SharedFileSystem"], json::parse(kSharedFs));

  Result<ClusterSpec> local = parse_cluster_spec(json::parse(kValidSpec));
  ASSERT_TRUE(local.ok());
  json local_echo = local->to_json();
  EXPECT_FALSE(local_echo["InstanceGroups"][0].contains("HostPool"));
  EXPECT_FALSE(local_echo.contains("SharedFileSystem"));
}

TEST(SpecTest, SharedFileSystemDefaultsPortAndUser) {
  json request = on_hosts_spec();
  request["SharedFileSystem"].erase("Port");
  request["SharedFileSystem"].erase("User");
  Result<ClusterSpec> spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_TRUE(spec->shared_fs.has_value());
  EXPECT_EQ(spec->shared_fs->port, 22);
  EXPECT_EQ(spec->shared_fs->user, "root");
  EXPECT_EQ(spec->shared_fs->mount_name, "/export/ml");
}

TEST(SpecUpdateTest, SharedFileSystemMayBeEchoedButNotChanged) {
  ClusterSpec current = *parse_cluster_spec(on_hosts_spec());
  json request = current.to_json();
  EXPECT_TRUE(apply_cluster_update(current, request).ok());
  request["SharedFileSystem"]["MountName"] = "/export/other";
  EXPECT_EQ(update_error_paths(current, request), std::vector<std::string>{"SharedFileSystem"});
}

TEST(SpecTest, TheExampleSpecsAreValid) {
  for (const char* name : {"local.json", "hosts.json"}) {
    const std::string folder = std::string(ENDURE_SOURCE_DIR) + "/examples/cluster/";
    std::ifstream in(folder + name);
    ASSERT_TRUE(in.good()) << name;
    json spec = json::parse(in);
    // Relative to the file, as the CLI reads them.
    for (auto& g : spec["InstanceGroups"]) {
      auto& uri = g["LifeCycleConfig"]["SourceS3Uri"];
      uri = folder + uri.get<std::string>();
    }
    EXPECT_EQ(describe(validate_cluster_spec(spec)), "") << name;
  }
}

TEST(SpecUpdateTest, ChangesWarmSparesKeepsThemWhenLeftOutAndRefusesANewHostPool) {
  json create = on_hosts_spec();
  create["InstanceGroups"][1]["WarmSpares"] = 1;
  ClusterSpec current = *parse_cluster_spec(create);
  json request = current.to_json();
  request["InstanceGroups"][1]["WarmSpares"] = 3;
  auto more = apply_cluster_update(current, request);
  ASSERT_TRUE(more.ok()) << more.error().message;
  EXPECT_EQ(more->find_group("worker")->warm_spares, 3);

  request["InstanceGroups"][1].erase("WarmSpares");
  request["InstanceGroups"][1].erase("HostPool");
  auto kept = apply_cluster_update(*more, request);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ(kept->find_group("worker")->warm_spares, 3);
  EXPECT_EQ(kept->find_group("worker")->host_pool, "rack-a");

  request["InstanceGroups"][1]["HostPool"] = "rack-b";
  EXPECT_EQ(update_error_paths(*more, request),
            std::vector<std::string>{"InstanceGroups[1].HostPool"});
}

TEST(SpecUpdateTest, RejectsTypeChange) {
  json request = update_request();
  request["InstanceGroups"][1]["InstanceType"] = "local.c2";
  Result<ClusterSpec> next = apply_cluster_update(current_spec(), request);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(update_error_paths(current_spec(), request),
            std::vector<std::string>{"InstanceGroups[1].InstanceType"});
  EXPECT_NE(next.error().message.find("cannot be changed by UpdateCluster"), std::string::npos);
}

TEST(SpecUpdateTest, RejectsLifecycleAndThreadsChange) {
  json request = update_request();
  request["InstanceGroups"][0]["LifeCycleConfig"]["OnCreate"] = "other.sh";
  request["InstanceGroups"][1]["LifeCycleConfig"]["SourceS3Uri"] = "/elsewhere";
  request["InstanceGroups"][1]["ThreadsPerCore"] = 1;
  EXPECT_EQ(update_error_paths(current_spec(), request),
            (std::vector<std::string>{
                "InstanceGroups[0].LifeCycleConfig.OnCreate",
                "InstanceGroups[1].LifeCycleConfig.SourceS3Uri",
                "InstanceGroups[1].ThreadsPerCore",
            }));
}

TEST(SpecUpdateTest, ChangesNodeRecoveryAloneWithoutListingGroups) {
  Result<ClusterSpec> next = apply_cluster_update(
      current_spec(), {{"ClusterName", "ml-cluster"}, {"NodeRecovery", "Automatic"}});
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->node_recovery, "Automatic");
  EXPECT_EQ(next->find_group("worker")->instance_count,
            current_spec().find_group("worker")->instance_count);
  // With neither, there is nothing to change: the error names what is missing.
  EXPECT_EQ(update_error_paths(current_spec(), {{"ClusterName", "ml-cluster"}}),
            std::vector<std::string>{"InstanceGroups"});
  EXPECT_EQ(update_error_paths(current_spec(),
                               {{"ClusterName", "ml-cluster"}, {"NodeRecovery", "Sometimes"}}),
            std::vector<std::string>{"NodeRecovery"});
}

TEST(SpecUpdateTest, ChangesTieredStorageAloneOrWithTheGroupsAndKeepsItWhenLeftOut) {
  json enable = {{"Mode", "Enable"}, {"InstanceMemoryAllocationPercentage", 40}};
  Result<ClusterSpec> on = apply_cluster_update(
      current_spec(), {{"ClusterName", "ml-cluster"}, {"TieredStorageConfig", enable}});
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_EQ(on->to_json()["TieredStorageConfig"], enable);
  EXPECT_EQ(on->groups.size(), current_spec().groups.size());
  EXPECT_EQ(on->node_recovery, current_spec().node_recovery);

  // Left out, it stays; given, it replaces the whole (a share left out is the default).
  json scale = update_request();
  scale["InstanceGroups"][1]["InstanceCount"] = 2;
  Result<ClusterSpec> scaled = apply_cluster_update(*on, scale);
  ASSERT_TRUE(scaled.ok()) << scaled.error().message;
  EXPECT_EQ(scaled->tiered_storage, on->tiered_storage);
  scale["TieredStorageConfig"] = {{"Mode", "Enable"}};
  Result<ClusterSpec> reset = apply_cluster_update(*on, scale);
  ASSERT_TRUE(reset.ok()) << reset.error().message;
  EXPECT_EQ(reset->tiered_storage->memory_percent, kDefaultMemoryPercent);
  Result<ClusterSpec> off = apply_cluster_update(
      *on, {{"ClusterName", "ml-cluster"}, {"TieredStorageConfig", {{"Mode", "Disable"}}}});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->to_json()["TieredStorageConfig"], (json{{"Mode", "Disable"}}));

  // A bad one is refused at its path, and nothing else is applied with it.
  json bad = update_request();
  bad["InstanceGroups"][1]["InstanceCount"] = 2;
  bad["TieredStorageConfig"] = {{"Mode", "Enable"}, {"InstanceMemoryAllocationPercentage", 101}};
  EXPECT_EQ(update_error_paths(*on, bad),
            std::vector<std::string>{"TieredStorageConfig.InstanceMemoryAllocationPercentage"});
  Result<ClusterSpec> refused = apply_cluster_update(*on, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "TieredStorageConfig.InstanceMemoryAllocationPercentage: must be an integer from 0 "
            "to 100");
  EXPECT_EQ(apply_cluster_update(current_spec(), {{"ClusterName", "ml-cluster"}}).error().message,
            "InstanceGroups: is required unless NodeRecovery, TieredStorageConfig, Orchestrator "
            "or NodeProvisioningMode is given");
}

TEST(SpecUpdateTest, RejectsMissingGroup) {
  json request = update_request();
  request["InstanceGroups"].erase(1);
  Result<ClusterSpec> next = apply_cluster_update(current_spec(), request);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().message, "InstanceGroups: group 'worker' is missing; list every group");
}

TEST(SpecUpdateTest, RejectsUnknownGroup) {
  json request = update_request();
  json extra = request["InstanceGroups"][1];
  extra["InstanceGroupName"] = "gpu";
  request["InstanceGroups"].push_back(extra);
  Result<ClusterSpec> next = apply_cluster_update(current_spec(), request);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().message,
            "InstanceGroups[2].InstanceGroupName: no such instance group in cluster ml-cluster "
            "(adding groups is not supported)");
}

TEST(SpecUpdateTest, RejectsGroupListedTwice) {
  json request = update_request();
  request["InstanceGroups"].push_back(request["InstanceGroups"][1]);
  EXPECT_EQ(update_error_paths(current_spec(), request),
            std::vector<std::string>{"InstanceGroups[2].InstanceGroupName"});
}

TEST(SpecUpdateTest, RejectsNameMismatch) {
  json request = update_request();
  request["ClusterName"] = "other-cluster";
  EXPECT_EQ(update_error_paths(current_spec(), request), std::vector<std::string>{"ClusterName"});
}

TEST(SpecUpdateTest, ValidatesListedGroupsLikeCreate) {
  ClusterSpec current = current_spec();
  struct Case {
    std::string name;
    std::string field;
    json value;
    std::string path;
  };
  std::vector<Case> cases = {
      {"count over max", "InstanceCount", 65, "InstanceGroups[1].InstanceCount"},
      {"count float", "InstanceCount", 2.0, "InstanceGroups[1].InstanceCount"},
      {"unknown field", "Foo", 1, "InstanceGroups[1].Foo"},
      {"bad threads", "ThreadsPerCore", 4, "InstanceGroups[1].ThreadsPerCore"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json request = update_request();
    request["InstanceGroups"][1][c.field] = c.value;
    EXPECT_EQ(update_error_paths(current, request), std::vector<std::string>{c.path});
  }
  json request = update_request();
  request["NodeRecovery"] = "Never";
  EXPECT_EQ(update_error_paths(current, request), std::vector<std::string>{"NodeRecovery"});
  request = update_request();
  request.erase("InstanceGroups");
  EXPECT_EQ(update_error_paths(current, request), std::vector<std::string>{"InstanceGroups"});
  EXPECT_EQ(update_error_paths(current, json::array()), std::vector<std::string>{""});
}

// A cluster may fill its whole address and port plan: 20 groups of 64 (1,280 nodes).
TEST(SpecTest, AClusterMayFillItsLayout) {
  auto spec = parse_cluster_spec(json::parse(R"({"ClusterName":"c","InstanceGroups":)" +
                                             groups_of(kMaxInstanceGroups, kMaxInstancesPerGroup) +
                                             "}"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->groups.size(), static_cast<size_t>(kMaxInstanceGroups));
}

TEST(SpecTest, NodeProvisioningModeIsContinuousOrAbsentAndAnUpdateTurnsItOn) {
  auto on = parse_cluster_spec(json::parse(with_top(R"("NodeProvisioningMode":"Continuous")")));
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->continuous);
  EXPECT_EQ(on->to_json()["NodeProvisioningMode"], "Continuous");
  EXPECT_FALSE(current_spec().continuous);
  EXPECT_FALSE(current_spec().to_json().contains("NodeProvisioningMode"));
  for (const char* bad : {R"("continuous")", R"("Batch")", "1", "null", R"("")"}) {
    EXPECT_EQ(describe(validate_cluster_spec(
                  json::parse(with_top(std::string(R"("NodeProvisioningMode":)") + bad)))),
              "NodeProvisioningMode: must be Continuous")
        << bad;
  }
  auto updated = apply_cluster_update(
      current_spec(), {{"ClusterName", "ml-cluster"}, {"NodeProvisioningMode", "Continuous"}});
  ASSERT_TRUE(updated) << updated.error().message;
  EXPECT_TRUE(updated->continuous);
  auto kept = apply_cluster_update(*updated, {{"ClusterName", "ml-cluster"}, {"NodeRecovery", "None"}});
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->continuous);
}

TEST(SpecTest, AScheduledUpdateIsReadEchoedAndReplacedOrKeptByAnUpdate) {
  json schedule = {{"ScheduleExpression", "cron(0 3 ? * 1 *)"},
                   {"DeploymentConfig",
                    {{"RollingUpdatePolicy",
                      {{"MaximumBatchSize", {{"Type", "INSTANCE_COUNT"}, {"Value", 1}}}}},
                     {"WaitIntervalInSeconds", 0}}}};
  json request = current_spec().to_json();
  request["InstanceGroups"][1]["ScheduledUpdateConfig"] = schedule;
  auto spec = parse_cluster_spec(request);
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_TRUE(spec->groups[1].scheduled_update);
  EXPECT_EQ(spec->to_json()["InstanceGroups"][1]["ScheduledUpdateConfig"], schedule);
  EXPECT_EQ(spec->to_json(), request);

  request["InstanceGroups"][1]["ScheduledUpdateConfig"]["ScheduleExpression"] = "cron(0 3 * * * *)";
  EXPECT_NE(describe(validate_cluster_spec(request))
                .find("InstanceGroups[1].ScheduledUpdateConfig.ScheduleExpression: "),
            std::string::npos)
      << describe(validate_cluster_spec(request));

  json update = spec->to_json();
  update.erase("NodeRecovery");
  update["InstanceGroups"][1].erase("ScheduledUpdateConfig");
  auto kept = apply_cluster_update(*spec, update);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->groups[1].scheduled_update, spec->groups[1].scheduled_update);
  update["InstanceGroups"][1]["ScheduledUpdateConfig"] = {{"ScheduleExpression", "rate(1 day)"}};
  auto replaced = apply_cluster_update(*spec, update);
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_EQ(replaced->groups[1].scheduled_update->schedule.text(), "rate(1 day)");
}

}  // namespace
}  // namespace endure::spec
