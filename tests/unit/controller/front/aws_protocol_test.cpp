// The cloud protocol's conversions over a stand-in /v1 handler: timestamps, pagination,
// the fields the model spells otherwise, unknown actions and error statuses. And the access
// key file endured signs requests against.
#include "controller/front/aws_protocol.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "common/ids.h"
#include "controller/front/access_keys.h"
#include "controller/front/sigv4.h"
#include "support/temp_dir.h"

namespace endure::controller {
namespace {

// Answers like /v1 and records what it was asked.
struct FakeV1 {
  std::vector<std::pair<std::string, json>> calls;
  json nodes = json::array();
  Result<json> operator()(const std::string& action, const json& request) {
    calls.push_back({action, request});
    if (action == "ListClusterNodes") return json{{"ClusterNodeSummaries", nodes}};
    if (action == "DescribeClusterEvent") {
      return json{{"Event",
                   {{"EventId", request["EventId"]},
                    {"ClusterName", "demo"},
                    {"EventTime", "2026-12-02T14:15:00.123Z"}}}};
    }
    if (action == "BatchReplaceClusterNodes") {
      return json{
          {"Successful", {"i-1"}},
          {"Failed", {{{"NodeId", "i-2"}, {"Code", "InstanceIdNotFound"}, {"Message", "no"}}}}};
    }
    if (action == "DescribeCluster") {
      return json{{"ClusterArn", "arn:endure:local:cluster/abc"},
                  {"ClusterName", "demo"},
                  {"CreationTime", "1970-01-01T00:00:10.500Z"}};
    }
    if (action == "StartClusterHealthCheck" || action == "UpdateClusterSoftware") {
      return json{{"ClusterArn", "arn:endure:local:cluster/abc"}};
    }
    return make_error("ResourceNotFound", "ClusterName: no cluster named x");
  }
};

aws::Handler handler(FakeV1& fake) {
  return [&fake](const std::string& a, const json& r) { return fake(a, r); };
}

TEST(AwsProtocol, TimestampsBecomeEpochSeconds) {
  FakeV1 fake;
  auto reply = aws::call("DescribeCluster", {{"ClusterName", "demo"}}, handler(fake));
  ASSERT_TRUE(reply);
  ASSERT_TRUE((*reply)["CreationTime"].is_number());
  EXPECT_DOUBLE_EQ((*reply)["CreationTime"].get<double>(), 10.5);
  double t = 1796000000.25;
  EXPECT_DOUBLE_EQ(*aws::parse_iso_time(ids::iso_time(t)), t);
  EXPECT_FALSE(aws::parse_iso_time("yesterday"));
}

TEST(AwsProtocol, ListClusterNodesPagesWithNextToken) {
  FakeV1 fake;
  for (int i = 0; i < 5; ++i) {
    fake.nodes.push_back({{"InstanceGroupName", "worker"},
                          {"InstanceId", "i-" + std::to_string(i)},
                          {"NodeName", "worker-" + std::to_string(i)},
                          {"LaunchTime", ids::iso_time(1000 + i)}});
  }
  std::vector<std::string> seen;
  json request = {{"ClusterName", "demo"}, {"MaxResults", 2}};
  for (int page = 0; page < 5; ++page) {
    auto reply = aws::call("ListClusterNodes", request, handler(fake));
    ASSERT_TRUE(reply) << reply.error().message;
    for (const auto& n : (*reply)["ClusterNodeSummaries"]) {
      seen.push_back(n["InstanceId"]);
      EXPECT_TRUE(n["LaunchTime"].is_number());
      EXPECT_EQ(n["PrivateDnsHostname"], n["NodeName"]);
    }
    if (!reply->contains("NextToken")) break;
    request["NextToken"] = (*reply)["NextToken"];
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"i-0", "i-1", "i-2", "i-3", "i-4"}));
  // /v1 never sees the protocol's paging members.
  EXPECT_FALSE(fake.calls[0].second.contains("MaxResults"));
}

TEST(AwsProtocol, BadPagingIsAValidationErrorNamingTheField) {
  FakeV1 fake;
  auto zero =
      aws::call("ListClusterNodes", {{"ClusterName", "demo"}, {"MaxResults", 0}}, handler(fake));
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, "ValidationException");
  EXPECT_EQ(zero.error().message.rfind("MaxResults:", 0), 0u);
  auto token = aws::call("ListClusters", {{"NextToken", "abc"}}, handler(fake));
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().message.rfind("NextToken:", 0), 0u);
  EXPECT_TRUE(fake.calls.empty());
}

TEST(AwsProtocol, EventIdsAreStringsAndDetailsAreEventDetails) {
  FakeV1 fake;
  auto reply =
      aws::call("DescribeClusterEvent", {{"ClusterName", "demo"}, {"EventId", "7"}}, handler(fake));
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(fake.calls[0].second["EventId"], 7);
  EXPECT_EQ((*reply)["EventDetails"]["EventId"], "7");
  EXPECT_TRUE((*reply)["EventDetails"]["EventTime"].is_number());
  auto bad = aws::call("DescribeClusterEvent", {{"ClusterName", "demo"}, {"EventId", "7x"}},
                       handler(fake));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("EventId:", 0), 0u);
}

TEST(AwsProtocol, BatchFailuresCarryErrorCode) {
  FakeV1 fake;
  auto reply = aws::call("BatchReplaceClusterNodes",
                         {{"ClusterName", "demo"}, {"NodeIds", {"i-1", "i-2"}}}, handler(fake));
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["Failed"][0]["ErrorCode"], "InstanceIdNotFound");
  EXPECT_FALSE((*reply)["Failed"][0].contains("Code"));
}

TEST(AwsProtocol, UnknownActionsAndErrorsGetTheProtocolsAnswer) {
  FakeV1 fake;
  for (const char* action : {"CreateTrainingJob", "DebugInjectFault", "CreateAccessKey", ""}) {
    auto reply = aws::call(action, json::object(), handler(fake));
    ASSERT_FALSE(reply);
    EXPECT_EQ(reply.error().code, aws::kUnknownOperation);
  }
  EXPECT_TRUE(fake.calls.empty());
  EXPECT_EQ(aws::http_status(aws::kUnknownOperation), 400);
  EXPECT_EQ(aws::http_status("ResourceNotFound"), 400);
  EXPECT_EQ(aws::http_status("ValidationException"), 400);
  EXPECT_EQ(aws::http_status("ConflictException"), 400);
  EXPECT_EQ(aws::http_status("ResourceLimitExceeded"), 400);
  EXPECT_EQ(aws::http_status(sigv4::kIncompleteSignature), 400);
  EXPECT_EQ(aws::http_status(sigv4::kInvalidSignature), 403);
  EXPECT_EQ(aws::http_status("InternalFailure"), 500);
  auto body = aws::error_body(make_error("ResourceNotFound", "ClusterName: no cluster named x"));
  EXPECT_EQ(body.dump(),
            R"({"__type":"ResourceNotFound","message":"ClusterName: no cluster named x"})");
}

TEST(AwsProtocol, HealthChecksNameGroupsAndSoftwareUpdatesNameGroupObjects) {
  FakeV1 fake;
  fake.nodes = {{{"InstanceGroupName", "controller"}, {"InstanceId", "i-c"}},
                {{"InstanceGroupName", "worker"}, {"InstanceId", "i-w1"}},
                {{"InstanceGroupName", "worker"}, {"InstanceId", "i-w2"}},
                {{"InstanceGroupName", "login"}, {"InstanceId", "i-l"}}};
  json request = {{"ClusterName", "demo"},
                  {"DeepHealthCheckConfigurations",
                   {{{"InstanceGroupName", "worker"}, {"DeepHealthChecks", {"InstanceStress"}}},
                    {{"InstanceGroupName", "login"},
                     {"InstanceIds", {"i-l"}},
                     {"DeepHealthChecks", {"InstanceConnectivity"}}}}}};
  auto started = aws::call("StartClusterHealthCheck", request, handler(fake));
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_EQ(*started, (json{{"ClusterArn", "arn:endure:local:cluster/abc"}}));
  EXPECT_EQ(fake.calls.back().second["NodeIds"], (json{"i-w1", "i-w2", "i-l"}));
  auto missing = aws::call("StartClusterHealthCheck", {{"ClusterName", "demo"}}, handler(fake));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.rfind("DeepHealthCheckConfigurations:", 0), 0u);

  auto updated =
      aws::call("UpdateClusterSoftware",
                {{"ClusterName", "demo"}, {"InstanceGroups", {{{"InstanceGroupName", "worker"}}}}},
                handler(fake));
  ASSERT_TRUE(updated);
  EXPECT_EQ(fake.calls.back().second["InstanceGroups"], (json{"worker"}));
}

TEST(AccessKeyFile, FirstOpenMakesOneKeyReadableByOwnerAlone) {
  test::TempDir dir;
  auto path = dir.path() / kAccessKeysFile;
  auto keys = AccessKeys::open(path);
  ASSERT_TRUE(keys) << keys.error().message;
  auto listed = (*keys)->list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id.rfind("AKIA", 0), 0u);
  EXPECT_TRUE(listed[0].secret.empty());  // list() never hands out a secret
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  auto secret = (*keys)->secret_of(listed[0].id);
  ASSERT_TRUE(secret);
  EXPECT_EQ(secret->size(), 40u);

  // Kept across restarts; more keys made and deleted.
  auto again = AccessKeys::open(path);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->secret_of(listed[0].id), secret);
  auto made = (*again)->handle(kCreateAccessKey, json::object());
  ASSERT_TRUE(made);
  std::string id = (*made)["AccessKey"]["AccessKeyId"];
  EXPECT_EQ((*made)["AccessKey"]["SecretAccessKey"].get<std::string>().size(), 40u);
  auto list = (*again)->handle(kListAccessKeys, json::object());
  ASSERT_TRUE(list);
  EXPECT_EQ((*list)["AccessKeyMetadata"].size(), 2u);
  EXPECT_EQ(list->dump().find(*secret), std::string::npos);

  auto before = fs::read_file(path);
  auto unknown = (*again)->handle(kDeleteAccessKey, {{"AccessKeyId", "AKIANOSUCHKEY"}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, "ResourceNotFound");
  EXPECT_EQ(*fs::read_file(path), *before);
  ASSERT_TRUE((*again)->handle(kDeleteAccessKey, {{"AccessKeyId", id}}));
  EXPECT_FALSE((*again)->secret_of(id));
  EXPECT_FALSE((*AccessKeys::open(path))->secret_of(id));
}

TEST(AccessKeyFile, ABrokenFileIsAnErrorNamingIt) {
  test::TempDir dir;
  auto path = dir.path() / kAccessKeysFile;
  ASSERT_TRUE(fs::atomic_write_file(path, "{\"AccessKeys\": [{}]}", 0600));
  auto keys = AccessKeys::open(path);
  ASSERT_FALSE(keys);
  EXPECT_NE(keys.error().message.find(path.string()), std::string::npos);
}

}  // namespace
}  // namespace endure::controller
