// The cloud service's own clients against endured: the JavaScript SDK v3 (tests/sdk, which
// scripts/setup.sh installs from npm on every machine), the real `aws sagemaker` CLI and a
// boto3 script (aws_boto3_client.py) create a local cluster with the memory tier, describe
// it, change the tier (a bad value refused), list its nodes, replace or delete a worker,
// read events and delete it, signing with endured's access key. Requests signed with a
// wrong secret, unsigned or fuzzed, are refused with their exact status and change nothing.
//
// The SDK test never skips in CI. The CLI is found on PATH, then at /root/.pyenv/shims/aws
// (scripts/setup.sh does not install it: PyPI is out of reach here); it must know
// `sagemaker create-cluster` (Debian 12's awscli does not). Without one the CLI and boto3
// tests skip, saying why.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <random>

#include "common/fs.h"
#include "controller/front/access_keys.h"
#include "controller/front/sigv4.h"
#include "harness.h"
#include "support/ci.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;
namespace sigv4 = controller::sigv4;

const char* kPyenvShims = "/root/.pyenv/shims";

struct Key {
  std::string id;
  std::string secret;
};

Key first_key(const Endured& e) {
  auto text = fs::read_file(e.home() / controller::kAccessKeysFile);
  if (!text) return {};
  json doc = json::parse(*text, nullptr, false);
  if (doc.is_discarded() || doc["AccessKeys"].empty()) return {};
  return {doc["AccessKeys"][0]["AccessKeyId"], doc["AccessKeys"][0]["SecretAccessKey"]};
}

// An environment with nothing of this machine's AWS settings: the key given, empty config
// and credentials files, no instance metadata lookups.
std::map<std::string, std::string> aws_env(const TempDir& dir, const Key& key) {
  std::ofstream(dir.str("config")).flush();
  std::ofstream(dir.str("credentials")).flush();
  const char* path = getenv("PATH");
  const char* home = getenv("HOME");
  std::map<std::string, std::string> env = {
      {"PATH", std::string(path ? path : "/usr/bin:/bin") + ":" + kPyenvShims},
      {"HOME", home ? home : "/root"},
      {"LANG", "C.UTF-8"},
      {"AWS_ACCESS_KEY_ID", key.id},
      {"AWS_SECRET_ACCESS_KEY", key.secret},
      {"AWS_CONFIG_FILE", dir.str("config")},
      {"AWS_SHARED_CREDENTIALS_FILE", dir.str("credentials")},
      {"AWS_EC2_METADATA_DISABLED", "true"},
      {"AWS_PAGER", ""}};
  if (const char* root = getenv("PYENV_ROOT")) env["PYENV_ROOT"] = root;
  return env;
}

process::Output run_with(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         std::chrono::milliseconds timeout = 120s) {
  process::Options options;
  options.replace_env = true;
  options.env = env;
  options.timeout = timeout;
  return process::run(argv, options);
}

// The aws CLI that knows the cluster actions, or "" with why in *why.
std::string find_aws_cli(std::string* why) {
  std::vector<std::string> candidates;
  if (const char* path = getenv("PATH")) {
    std::string p = path;
    for (size_t start = 0; start <= p.size();) {
      size_t colon = p.find(':', start);
      if (colon == std::string::npos) colon = p.size();
      auto dir = p.substr(start, colon - start);
      if (!dir.empty()) candidates.push_back(dir + "/aws");
      start = colon + 1;
    }
  }
  candidates.push_back(std::string(kPyenvShims) + "/aws");
  TempDir dir;
  *why = "no aws CLI on PATH or at " + std::string(kPyenvShims) +
         "/aws (see the README: aws-cli 1.45 / botocore 1.43 or newer)";
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) != 0) continue;
    auto out = run_with({c, "sagemaker", "create-cluster", "--generate-cli-skeleton", "input"},
                        aws_env(dir, {"x", "y"}), 60s);
    if (out.exit_code == 0 && out.out.find("ClusterName") != std::string::npos) return c;
    auto version = run_with({c, "--version"}, aws_env(dir, {"x", "y"}), 30s);
    *why = c + " (" + version.out + version.err +
           ") does not know `sagemaker create-cluster`; "
           "it needs aws-cli 1.45 / botocore 1.43 or newer";
  }
  return "";
}

// Python with boto3 that knows the cluster actions: the aws CLI's own (pyenv), else PATH's.
std::string find_boto3_python(std::string* why) {
  TempDir dir;
  for (std::string python : {std::string(kPyenvShims) + "/python3", std::string("python3")}) {
    auto out = run_with({python, "-c",
                         "import boto3; c = boto3.client('sagemaker', region_name='us-east-1'); "
                         "assert hasattr(c, 'batch_replace_cluster_nodes')"},
                        aws_env(dir, {"x", "y"}), 60s);
    if (out.exit_code == 0) return python;
  }
  *why =
      "no python3 here imports a boto3 that knows BatchReplaceClusterNodes "
      "(boto3 with botocore 1.43 or newer)";
  return "";
}

// node, and the SDK that scripts/setup.sh installs under tests/sdk, or "" with why in *why.
std::string find_node_sdk(std::string* why) {
  auto sdk = source_dir() / "tests/sdk/node_modules/@aws-sdk/client-sagemaker/package.json";
  if (!std::filesystem::exists(sdk)) {
    *why = sdk.string() + " is missing: scripts/setup.sh installs it (npm ci in tests/sdk)";
    return "";
  }
  TempDir dir;
  auto version = run_with({"/usr/bin/env", "node", "--version"}, aws_env(dir, {"x", "y"}), 30s);
  if (version.exit_code != 0) {
    *why = "no node on PATH: scripts/setup.sh installs nodejs";
    return "";
  }
  return "node";
}

json cluster_spec(const std::string& name) {
  json spec = make_spec(name, 2);
  // The aws CLI requires ExecutionRole of every group; endure accepts it and ignores it.
  for (auto& g : spec["InstanceGroups"]) {
    g["ExecutionRole"] = "arn:aws:iam::000000000000:role/endure-local";
  }
  spec["TieredStorageConfig"] = {{"Mode", "Enable"}, {"InstanceMemoryAllocationPercentage", 10}};
  return spec;
}

class AwsClients : public ::testing::Test {
 protected:
  void SetUp() override {
    e_ = std::make_unique<Endured>(dir_.path() / "home");
    e_->start();
    key_ = first_key(*e_);
    ASSERT_FALSE(key_.id.empty()) << "endured made no access key at its first start";
  }
  void TearDown() override { e_.reset(); }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(e_->port()); }

  // `aws sagemaker ACTION ... --endpoint-url endured`, parsed; fails the test on an error.
  json aws(const std::string& cli, const std::vector<std::string>& args, const Key& key) {
    std::vector<std::string> argv = {cli, "sagemaker"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> common = {"--endpoint-url", endpoint(), "--region",
                                       "us-east-1",      "--output", "json"};
    argv.insert(argv.end(), common.begin(), common.end());
    last_ = run_with(argv, aws_env(dir_, key));
    if (last_.exit_code != 0) return nullptr;
    return last_.out.empty() ? json::object() : json::parse(last_.out, nullptr, false);
  }

  int clusters() const {
    auto list = e_->call("ListClusters", json::object());
    return list ? static_cast<int>((*list)["ClusterSummaries"].size()) : -1;
  }

  TempDir dir_;
  std::unique_ptr<Endured> e_;
  Key key_;
  process::Output last_;
};

TEST_F(AwsClients, TheJavaScriptSdkDrivesAClusterEndToEnd) {
  std::string why;
  std::string node = find_node_sdk(&why);
  if (node.empty()) SKIP_UNLESS_CI(why);
  json spec = cluster_spec("demo-js");
  spec["InstanceGroups"][1]["InstanceCount"] = 3;
  // The roles in the request too, as the lifecycle folder's file has them.
  spec["InstanceGroups"][0]["SlurmConfig"] = {{"NodeType", "Controller"}};
  spec["InstanceGroups"][1]["SlurmConfig"] = {{"NodeType", "Compute"}, {"PartitionNames", {"dev"}}};
  spec["Orchestrator"] = {{"Slurm", {{"SlurmConfigStrategy", "Managed"}}}};
  std::ofstream(dir_.str("spec.json")) << spec.dump(2);
  auto out = run_with({"/usr/bin/env", node, (source_dir() / "tests/sdk/cluster_client.mjs").string(),
                       endpoint(), dir_.str("spec.json")},
                      aws_env(dir_, key_), 540s);
  std::cout << out.out;
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_NE(out.out.find("\nOK\n"), std::string::npos);
  EXPECT_EQ(clusters(), 0);
}

TEST_F(AwsClients, TheAwsCliDrivesAClusterEndToEnd) {
  std::string why;
  std::string cli = find_aws_cli(&why);
  if (cli.empty()) GTEST_SKIP() << why;
  std::ofstream(dir_.str("spec.json")) << cluster_spec("demo").dump(2);

  json created =
      aws(cli, {"create-cluster", "--cli-input-json", "file://" + dir_.str("spec.json")}, key_);
  ASSERT_TRUE(created.is_object()) << last_.err;
  ASSERT_TRUE(created.contains("ClusterArn")) << last_.out;
  ASSERT_EQ(e_->wait_status("demo", {"InService"}, 180s), "InService");

  json cluster = aws(cli, {"describe-cluster", "--cluster-name", "demo"}, key_);
  ASSERT_TRUE(cluster.is_object()) << last_.err;
  EXPECT_EQ(cluster["ClusterStatus"], "InService");
  EXPECT_EQ(cluster["ClusterArn"], created["ClusterArn"]);
  EXPECT_EQ(cluster["InstanceGroups"].size(), 2u);
  EXPECT_EQ(cluster["TieredStorageConfig"], cluster_spec("demo")["TieredStorageConfig"]);

  json nodes = aws(cli, {"list-cluster-nodes", "--cluster-name", "demo"}, key_);
  ASSERT_TRUE(nodes.is_object()) << last_.err;
  std::cout << "$ aws sagemaker list-cluster-nodes --endpoint-url " << endpoint()
            << " --cluster-name demo\n"
            << last_.out;
  ASSERT_EQ(nodes["ClusterNodeSummaries"].size(), 3u);
  json worker;
  for (const auto& n : nodes["ClusterNodeSummaries"]) {
    EXPECT_EQ(n["InstanceStatus"]["Status"], "Running");
    if (n["InstanceGroupName"] == "worker" && worker.is_null()) worker = n;
  }
  ASSERT_FALSE(worker.is_null());
  std::string old_id = worker["InstanceId"];
  std::string host = worker["PrivateDnsHostname"];

  // The memory tier changed by update-cluster alone reaches the running worker; a bad
  // value is refused with the field named, and changes nothing.
  json tier = memory_store_of(*e_, "demo", host);
  ASSERT_TRUE(tier.is_object()) << host << " has no memory_store.json";
  EXPECT_EQ(tier["InstanceMemoryAllocationPercentage"], 10);
  json fifty = {{"Mode", "Enable"}, {"InstanceMemoryAllocationPercentage", 50}};
  ASSERT_TRUE(
      aws(cli,
          {"update-cluster", "--cluster-name", "demo", "--tiered-storage-config", fifty.dump()},
          key_)
          .is_object())
      << last_.err;
  ASSERT_EQ(e_->wait_status("demo", {"InService"}, 120s), "InService");
  cluster = aws(cli, {"describe-cluster", "--cluster-name", "demo"}, key_);
  EXPECT_EQ(cluster["TieredStorageConfig"], fifty) << last_.out;
  json pushed = memory_store_of(*e_, "demo", host);
  EXPECT_EQ(pushed["InstanceMemoryAllocationPercentage"], 50) << pushed.dump();
  EXPECT_EQ(pushed["Token"], tier["Token"]);
  json bad = {{"Mode", "Enable"}, {"InstanceMemoryAllocationPercentage", 101}};
  EXPECT_TRUE(
      aws(cli, {"update-cluster", "--cluster-name", "demo", "--tiered-storage-config", bad.dump()},
          key_)
          .is_null());
  EXPECT_NE(last_.err.find("ValidationException"), std::string::npos) << last_.err;
  EXPECT_NE(last_.err.find("TieredStorageConfig.InstanceMemoryAllocationPercentage: must be an "
                           "integer from 0 to 100"),
            std::string::npos)
      << last_.err;
  cluster = aws(cli, {"describe-cluster", "--cluster-name", "demo"}, key_);
  EXPECT_EQ(cluster["TieredStorageConfig"], fifty) << last_.out;
  EXPECT_EQ(cluster["ClusterStatus"], "InService");

  json node =
      aws(cli, {"describe-cluster-node", "--cluster-name", "demo", "--node-id", old_id}, key_);
  ASSERT_TRUE(node.is_object()) << last_.err;
  EXPECT_EQ(node["NodeDetails"]["InstanceId"], old_id);

  json replaced = aws(
      cli, {"batch-replace-cluster-nodes", "--cluster-name", "demo", "--node-ids", old_id}, key_);
  ASSERT_TRUE(replaced.is_object()) << last_.err;
  ASSERT_EQ(replaced["Successful"], json::array({old_id})) << last_.out;
  std::string new_id;
  bool back = wait_until(
      [&] {
        json now = aws(cli, {"list-cluster-nodes", "--cluster-name", "demo"}, key_);
        if (!now.is_object()) return false;
        for (const auto& n : now["ClusterNodeSummaries"]) {
          if (n["PrivateDnsHostname"] == host && n["InstanceId"] != old_id &&
              n["InstanceStatus"]["Status"] == "Running") {
            new_id = n["InstanceId"];
            return true;
          }
        }
        return false;
      },
      240s);
  ASSERT_TRUE(back) << host << " was not replaced; last reply: " << last_.out << last_.err;
  std::cout << host << ": " << old_id << " replaced by " << new_id << "\n";
  // The replacement gets the tier as it is now, with the cluster's same credential.
  EXPECT_EQ(memory_store_of(*e_, "demo", host), pushed);

  json events = aws(cli, {"list-cluster-events", "--cluster-name", "demo"}, key_);
  ASSERT_TRUE(events.is_object()) << last_.err;
  ASSERT_FALSE(events["Events"].empty());
  bool saw_old = false;
  for (const auto& ev : events["Events"]) {
    EXPECT_TRUE(ev["EventId"].is_string());
    saw_old |= ev.value("InstanceId", "") == old_id;
  }
  EXPECT_TRUE(saw_old) << "no event names the replaced instance";
  std::string first = events["Events"][0]["EventId"];
  json event =
      aws(cli, {"describe-cluster-event", "--cluster-name", "demo", "--event-id", first}, key_);
  ASSERT_TRUE(event.is_object()) << last_.err;
  EXPECT_EQ(event["EventDetails"]["EventId"], first);

  // An error comes back in the protocol's form, which the CLI names.
  EXPECT_TRUE(aws(cli, {"describe-cluster", "--cluster-name", "nope"}, key_).is_null());
  EXPECT_NE(last_.err.find("ResourceNotFound"), std::string::npos) << last_.err;

  json deleted = aws(cli, {"delete-cluster", "--cluster-name", "demo"}, key_);
  ASSERT_TRUE(deleted.is_object()) << last_.err;
  EXPECT_TRUE(wait_until([&] { return clusters() == 0; }, 120s));
}

TEST_F(AwsClients, AWrongSecretOrUnknownKeyIsRefusedAndChangesNothing) {
  std::string why;
  std::string cli = find_aws_cli(&why);
  if (cli.empty()) GTEST_SKIP() << why;
  std::ofstream(dir_.str("spec.json")) << cluster_spec("demo").dump(2);
  std::string input = "file://" + dir_.str("spec.json");

  EXPECT_TRUE(
      aws(cli, {"create-cluster", "--cli-input-json", input}, {key_.id, "wrong"}).is_null());
  EXPECT_NE(last_.err.find(sigv4::kInvalidSignature), std::string::npos) << last_.err;
  EXPECT_EQ(last_.err.find(key_.secret), std::string::npos);
  EXPECT_TRUE(
      aws(cli, {"create-cluster", "--cli-input-json", input}, {"AKIA0000000000000000", key_.secret})
          .is_null());
  EXPECT_NE(last_.err.find(sigv4::kUnrecognizedClient), std::string::npos) << last_.err;
  EXPECT_EQ(clusters(), 0);
  auto log = fs::read_file(e_->home() / "endured.log");
  ASSERT_TRUE(log);
  EXPECT_EQ(log->find(key_.secret), std::string::npos) << "a secret reached endured's log";

  // A key made by the CLI works; deleted, it is refused.
  auto made = e_->cli({"create-access-key"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  json key = json::parse(made.out)["AccessKey"];
  Key second{key["AccessKeyId"], key["SecretAccessKey"]};
  EXPECT_TRUE(aws(cli, {"list-clusters"}, second).is_object()) << last_.err;
  auto listed = e_->cli({"list-access-keys"});
  EXPECT_NE(listed.out.find(second.id), std::string::npos);
  EXPECT_EQ(listed.out.find(second.secret), std::string::npos);
  ASSERT_EQ(e_->cli({"delete-access-key", "--access-key-id", second.id}).exit_code, 0);
  EXPECT_TRUE(aws(cli, {"list-clusters"}, second).is_null());
  EXPECT_NE(last_.err.find(sigv4::kUnrecognizedClient), std::string::npos) << last_.err;
}

TEST_F(AwsClients, UnsignedOrFuzzedRequestsNeverChangeState) {
  httplib::Client http("127.0.0.1", e_->port());
  std::string body = cluster_spec("fuzz").dump();
  std::string target = "SageMaker.CreateCluster";
  auto post = [&](const httplib::Headers& headers, const std::string& content) {
    return http.Post("/", headers, content, "application/x-amz-json-1.1");
  };
  // Signed with endured's key, exactly as the SDKs sign.
  auto signed_headers = [&](const std::string& content) {
    sigv4::Request r{"POST",
                     "/",
                     {},
                     {{"Host", "127.0.0.1:" + std::to_string(e_->port())},
                      {"Content-Type", "application/x-amz-json-1.1"},
                      {"X-Amz-Target", target},
                      {"X-Amz-Date", sigv4::amz_date(static_cast<double>(time(nullptr)))}},
                     content};
    httplib::Headers h;
    for (const auto& [k, v] : r.headers) {
      if (k != "Content-Type") h.emplace(k, v);  // httplib sends the content type itself
    }
    h.emplace("Authorization", sigv4::sign(r, key_.id, key_.secret, "us-east-1", "sagemaker"));
    return h;
  };

  auto unsigned_reply = post({{"X-Amz-Target", target}}, body);
  ASSERT_TRUE(unsigned_reply);
  EXPECT_EQ(unsigned_reply->status, 403);
  EXPECT_NE(unsigned_reply->body.find(sigv4::kMissingAuthenticationToken), std::string::npos);
  EXPECT_FALSE(unsigned_reply->get_header_value("x-amzn-RequestId").empty());

  // A signed call of an action endure does not serve is the protocol's error, not a crash.
  target = "SageMaker.CreateTrainingJob";
  auto unknown = post(signed_headers("{}"), "{}");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 400);
  EXPECT_NE(unknown->body.find("UnknownOperationException"), std::string::npos) << unknown->body;
  target = "SageMaker.CreateCluster";

  // Each fuzzed request: a valid signed request with one byte of its body, target, date or
  // signature changed, or a header dropped; each refused with its exact status and code.
  struct Refusal {
    int status;
    std::string code;
  };
  const Refusal mismatch{403, sigv4::kInvalidSignature};
  std::mt19937 rng(23);
  int refused = 0;
  for (int i = 0; i < 200; ++i) {
    auto headers = signed_headers(body);
    std::string content = body;
    Refusal expected = mismatch;
    switch (i % 4) {
      case 0:
        content[rng() % content.size()] ^= static_cast<char>(1 + rng() % 127);
        break;
      case 1: {
        auto it = headers.find("Authorization");
        std::string auth = it->second;
        auth[auth.size() - 1 - rng() % 64] = "0123456789abcdef"[rng() % 16];
        if (auth == it->second) auth[auth.size() - 1] = auth.back() == '0' ? '1' : '0';
        headers.erase(it);
        headers.emplace("Authorization", auth);
        break;
      }
      case 2: {
        headers.erase("X-Amz-Target");
        headers.emplace("X-Amz-Target", "SageMaker.DeleteCluster");
        break;
      }
      default: {
        const char* drop[] = {"X-Amz-Date", "Authorization", "X-Amz-Target"};
        const std::string dropped = drop[rng() % 3];
        headers.erase(dropped);
        // Both are signed headers: the signature names what the request lacks.
        if (dropped != "Authorization") expected = {400, sigv4::kIncompleteSignature};
        if (dropped == "Authorization") expected = {403, sigv4::kMissingAuthenticationToken};
      }
    }
    auto reply = post(headers, content);
    ASSERT_TRUE(reply) << "endured did not answer fuzzed request " << i;
    json error = json::parse(reply->body, nullptr, false);
    ASSERT_EQ(reply->status, expected.status) << "fuzzed request " << i << ": " << reply->body;
    ASSERT_TRUE(error.is_object()) << "fuzzed request " << i << ": " << reply->body;
    ASSERT_EQ(error.value("__type", ""), expected.code) << "fuzzed request " << i;
    refused += 1;
  }
  EXPECT_EQ(refused, 200);
  EXPECT_EQ(clusters(), 0);

  // The request unchanged is accepted: the fuzzing changed what it meant to.
  auto good = post(signed_headers(body), body);
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  EXPECT_EQ(clusters(), 1);
}

TEST_F(AwsClients, Boto3DrivesAClusterEndToEnd) {
  std::string why;
  std::string python = find_boto3_python(&why);
  if (python.empty()) GTEST_SKIP() << why;
  std::ofstream(dir_.str("spec.json")) << cluster_spec("demo-boto3").dump(2);
  auto out = run_with({python, (source_dir() / "tests/integration/aws_boto3_client.py").string(),
                       endpoint(), dir_.str("spec.json")},
                      aws_env(dir_, key_), 600s);
  std::cout << out.out;
  if (out.exit_code == 77) GTEST_SKIP() << out.out;
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_NE(out.out.find("OK"), std::string::npos);
  EXPECT_EQ(clusters(), 0);
}

}  // namespace
}  // namespace endure::test
