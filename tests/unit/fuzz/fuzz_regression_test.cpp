// Inputs the fuzzers found (fuzz/): each one refused cleanly, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "api/node_files.h"
#include "autoresume/supervisor_config.h"
#include "controller/core/health_monitor.h"
#include "controller/core/node_decisions.h"
#include "controller/core/software_update_plan.h"
#include "controller/front/agent_service.h"
#include "controller/health/deep_check_manager.h"
#include "controller/jobs/auto_resume_manager.h"
#include "endure/data.h"
#include "slurm/slurm_client.h"
#include "train/ckpt/format.h"
#include "train/data/shard_format.h"

namespace endure {
namespace {

bool mentions(const Error& e, const std::string& text) {
  return e.message.find(text) != std::string::npos;
}

// A SlurmClient whose every command prints `out`.
slurm::SlurmClient printing(const std::string& out) {
  return slurm::SlurmClient([out](const std::vector<std::string>&, std::chrono::milliseconds) {
    return process::Output{0, false, out, ""};
  });
}

// fuzz_slurm_json: a newer Slurm's squeue prints job_state as a list; reading it as a
// string threw out of jobs() (and out of endured's reconcile pass).
TEST(FuzzRegression, SqueueFieldOfAnotherTypeNamesIt) {
  auto jobs =
      printing(R"({"jobs":[{"job_id":9,"job_state":["RUNNING"],"nodes":"worker-1"}]})").jobs();
  ASSERT_FALSE(jobs.ok());
  EXPECT_TRUE(mentions(jobs.error(), "squeue --json: jobs[0].job_state: must be a string"))
      << jobs.error().message;
  auto not_objects = printing(R"({"jobs":[7]})").jobs();
  ASSERT_FALSE(not_objects.ok());
  EXPECT_TRUE(mentions(not_objects.error(), "jobs[0]: must be an object"))
      << not_objects.error().message;
  auto ok =
      printing(R"({"jobs":[{"job_id":9,"job_state":"RUNNING","nodes":"worker-[1-2]"}]})").jobs();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->at(0).nodes, (std::vector<std::string>{"worker-1", "worker-2"}));
}

TEST(FuzzRegression, SinfoFieldOfAnotherTypeNamesIt) {
  for (auto [out, rule] :
       {std::pair{R"({"nodes":[{"name":"w","state_flags":[1]}]})",
                  "sinfo --json: nodes[0].state_flags[0]: must be a string"},
        {R"({"nodes":[{"name":"w","cpus":1e300}]})", "nodes[0].cpus: must be an integer"},
        {R"({"nodes":{"name":"w"}})", "sinfo --json: nodes: must be an array"},
        {R"({"nodes":["w"]})", "nodes[0]: must be an object"}}) {
    auto nodes = printing(out).nodes();
    ASSERT_FALSE(nodes.ok()) << out;
    EXPECT_TRUE(mentions(nodes.error(), rule)) << nodes.error().message;
  }
}

// fuzz_agent_config: a number beyond an int was converted (undefined behaviour), and the
// job credential's MaxResumes of another type threw out of the supervisor.
TEST(FuzzRegression, AgentConfigNumberBeyondIntIsRefused) {
  json j = {{"Endpoint", "e"},          {"InstanceId", "i"}, {"Token", "t"},   {"NodeName", "n"},
            {"InstanceGroupName", "g"}, {"Role", "worker"},  {"OnCreate", "o"}};
  ASSERT_TRUE(api::AgentConfig::from_json(j).ok());
  j["Cpus"] = 1e300;
  auto config = api::AgentConfig::from_json(j);
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(mentions(config.error(), "agent.json: Cpus: must be an integer"))
      << config.error().message;
  j.erase("Cpus");
  j.erase("Token");
  auto missing = api::AgentConfig::from_json(j);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(mentions(missing.error(), "agent.json: Token: is required"))
      << missing.error().message;
}

TEST(FuzzRegression, SupervisorConfigFieldOfAnotherTypeNamesIt) {
  json j = {{"Endpoint", "e"}, {"ClusterName", "c"}, {"Token", "t"}, {"MaxResumes", "3"}};
  auto config = autoresume::SupervisorConfig::from_json(j);
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(mentions(config.error(), "auto_resume.json: MaxResumes: must be an integer"))
      << config.error().message;
  j["MaxResumes"] = 5;
  j["CaFile"] = json::array();
  config = autoresume::SupervisorConfig::from_json(j);
  ASSERT_FALSE(config.ok());
  EXPECT_TRUE(mentions(config.error(), "CaFile: must be a string")) << config.error().message;
}

// fuzz_api_request: a heartbeat's finding that was not an object (or whose Kind was a
// number) was kept as sent, and threw out of the health monitor when it judged the node.
TEST(FuzzRegression, HeartbeatFindingThatIsNotAFindingIsRefused) {
  for (auto [findings, rule] : {std::pair{json::array({1}), "Findings[0]: must be an object"},
                                {json::array({{{"Kind", 7}, {"Check", "c"}, {"Detail", "d"}}}),
                                 "Findings[0].Kind: must be a string"},
                                {json(json::object()), "Findings: must be an array"}}) {
    auto read = controller::heartbeat_findings({{"InstanceId", "i-1"}, {"Findings", findings}});
    ASSERT_FALSE(read.ok()) << findings.dump();
    EXPECT_EQ(read.error().code, "ValidationException");
    EXPECT_TRUE(mentions(read.error(), rule)) << read.error().message;
  }
  auto none = controller::heartbeat_findings({{"InstanceId", "i-1"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto xid = controller::heartbeat_findings(
      {{"Findings", json::array({{{"Kind", "xid"}, {"Check", "kernel-log"}, {"Detail", "79"}}})}});
  ASSERT_TRUE(xid.ok()) << xid.error().message;
  controller::HealthMonitor health([] { return 1.0; });
  health.heartbeat("i-1", *xid);
  auto verdict = health.assess("i-1", true);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->fault, api::FaultKind::kXid);
}

// fuzz_api_request: AutoResumeStepFailed's Resumes or Succeeded of another type threw out
// of endured's handler; a Resumes beyond an int was converted (undefined behaviour).
TEST(FuzzRegression, StepFailedFieldOfAnotherTypeNamesIt) {
  json request = {{"ClusterName", "ml"},
                  {"JobId", 7},
                  {"Nodes", {"worker-0"}},
                  {"StepStartTime", 1},
                  {"FailedAt", 2}};
  auto plain = controller::read_step_failed(request);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->resumes, 0);
  EXPECT_EQ(plain->exit_status, "?");
  for (auto [key, value, rule] : {std::tuple{"Resumes", json("1"), "Resumes: must be an integer"},
                                  {"Resumes", json(1e300), "Resumes: must be an integer"},
                                  {"Succeeded", json(1), "Succeeded: must be a boolean"}}) {
    json bad = request;
    bad[key] = value;
    auto read = controller::read_step_failed(bad);
    ASSERT_FALSE(read.ok()) << bad.dump();
    EXPECT_EQ(read.error().code, "ValidationException");
    EXPECT_TRUE(mentions(read.error(), rule)) << read.error().message;
  }
}

// fuzz_api_request's deep check case (added with this fix): deep check results that were not
// objects, or held a Passed of another type, were stored as sent, and the reconcile pass
// that closes the check threw on them (again after every restart: they are in the store).
TEST(FuzzRegression, DeepCheckResultThatIsNotAResultIsRefused) {
  for (auto [results, rule] :
       {std::pair{json::array({1}), "Results[0]: must be an object"},
        {json::array(
             {{{"Check", "cpu"}, {"Passed", "yes"}, {"Detail", ""}, {"Metrics", json::object()}}}),
         "Results[0].Passed: must be a boolean"},
        {json(json::object()), "Results: must be an array"}}) {
    auto read = controller::deep_check_results({{"Id", "hc-1"}, {"Results", results}});
    ASSERT_FALSE(read.ok()) << results.dump();
    EXPECT_EQ(read.error().code, "ValidationException");
    EXPECT_TRUE(mentions(read.error(), rule)) << read.error().message;
  }
  auto read = controller::deep_check_results(
      {{"Results", json::array({{{"Check", "cpu"},
                                 {"Passed", true},
                                 {"Detail", ""},
                                 {"Metrics", {{"gflops", 12.5}}}}})}});
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_TRUE(controller::decide_deep_check(*read, 60).passed);
}

// fuzz_api_request: UpdateClusterSoftware's MaximumBatchSize.Type of another type than a
// string threw out of plan_software_update().
TEST(FuzzRegression, SoftwareUpdateBatchTypeOfAnotherTypeIsRefused) {
  spec::ClusterLayout layout;
  layout.controller_node = "controller-0";
  spec::NodeSlot worker;
  worker.group = "worker";
  worker.node_name = "worker-0";
  worker.role = spec::NodeRole::kWorker;
  layout.nodes = {worker};
  json request = {{"ClusterName", "ml"},
                  {"DeploymentConfig",
                   {{"RollingUpdatePolicy", {{"MaximumBatchSize", {{"Type", 1}, {"Value", 1}}}}}}}};
  auto plan = controller::plan_software_update(request, layout);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, "ValidationException");
  EXPECT_TRUE(mentions(plan.error(),
                       "MaximumBatchSize.Type: must be INSTANCE_COUNT or CAPACITY_PERCENTAGE"))
      << plan.error().message;
}

// A temporary folder for the data readers' files. open() makes it a data folder of one
// train shard (the header given, then `tokens` 2-byte ids) and an index naming it, with the
// index's fields overridden by `index_fields`, and opens a loader on it; second_document()
// reads a JSONL file written there.
class FuzzRegressionData : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/endure-fuzz-regression-XXXXXX";
    dir_ = ::mkdtemp(templ);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result<std::unique_ptr<data::TokenLoader>> open(const data::ShardHeader& header, uint64_t tokens,
                                                  const json& index_fields, uint64_t listed) {
    std::string shard = data::encode_shard_header(header) + std::string(2 * tokens, '\1');
    std::ofstream(dir_ / data::shard_name("train", 0), std::ios::binary) << shard;
    json index = {
        {"magic", data::kIndexMagic},
        {"version", data::kIndexVersion},
        {"tokenizer", {{"vocab_size", 300}}},
        {"token_bytes", 2},
        {"splits",
         {{"train",
           {{"shards",
             json::array({{{"file", data::shard_name("train", 0)}, {"tokens", listed}}})}}}}}};
    index.update(index_fields, true);
    std::ofstream(dir_ / data::kIndexName) << data::seal_index(index).dump();
    data::LoaderOptions o;
    o.dir = dir_;
    o.verify_checksums = false;
    return data::TokenLoader::open(o);
  }

  // Reads the JSONL file at path up to its second document (the first must read).
  static Result<bool> second_document(const std::filesystem::path& path) {
    auto reader = data::JsonlReader::open(path);
    if (!reader.ok()) return reader.error();
    data::Document doc;
    if (auto first = (*reader)->next(&doc); !first.ok()) return first.error();
    return (*reader)->next(&doc);
  }

  std::filesystem::path dir_;
};

// fuzz_token_index: a shard whose header and index both claimed 2^63 tokens of 2 bytes
// wrapped the byte size round to the file's 32 bytes; the loader read past its mapping.
TEST_F(FuzzRegressionData, CountThatWrapsIsRefused) {
  ASSERT_TRUE(open({2, 64, 300}, 64, json::object(), 64).ok());
  const uint64_t huge = uint64_t{1} << 63;
  auto loader = open({2, huge, 300}, 0, json::object(), huge);
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.error().code, "CorruptData");
  EXPECT_TRUE(mentions(loader.error(), "header or size does not match the index"))
      << loader.error().message;
}

// fuzz_token_index: a vocab_size beyond an int was converted to one (undefined behaviour).
TEST_F(FuzzRegressionData, IndexCountOfAnotherKindIsRefused) {
  for (auto [fields, rule] :
       {std::pair{json{{"tokenizer", {{"vocab_size", 1e300}}}},
                  "\"vocab_size\" must be an integer from 1"},
        {json{{"token_bytes", 2.5}}, "\"token_bytes\" must be an integer from 2 to 4"},
        {json{{"token_bytes", -2}}, "\"token_bytes\" must be an integer from 2 to 4"}}) {
    auto loader = open({2, 64, 300}, 64, fields, 64);
    ASSERT_FALSE(loader.ok()) << fields.dump();
    EXPECT_EQ(loader.error().code, "CorruptData");
    EXPECT_TRUE(mentions(loader.error(), rule)) << loader.error().message;
  }
}

// fuzz_jsonl: a number beyond a double (1E400) is not a syntax error to nlohmann, and its
// exception went past the reader's catch: `endure-data prepare` terminated.
TEST_F(FuzzRegressionData, JsonlNumberBeyondADoubleNamesTheLine) {
  const auto path = dir_ / "a.jsonl";
  std::ofstream(path) << "{\"text\": \"fine\"}\n{\"text\": \"a\", \"n\": 1E400}\n";
  auto second = second_document(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, "ValidationException");
  EXPECT_TRUE(mentions(second.error(), "a.jsonl:2: not valid JSON (number overflow"))
      << second.error().message;
}

// Under fuzz_jsonl's limits: a 38 KB zstd file holding one line of 1.2 GB (no newline) was read
// whole into memory, the fuzzer's 2 GiB limit reached; a line is at most 64 MiB now.
TEST_F(FuzzRegressionData, JsonlLineBeyondTheLimitIsRefused) {
  const auto path = dir_ / "long.jsonl";
  std::ofstream(path) << "{\"text\": \"fine\"}\n" << std::string((size_t{64} << 20) + 1, 'a');
  auto second = second_document(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, "ValidationException");
  EXPECT_TRUE(mentions(second.error(), "long.jsonl:2: a line must be at most 64 MiB"))
      << second.error().message;
}

// fuzz_token_index: an index that seals but whose magic is a number threw out of the reader.
TEST(FuzzRegression, IndexMagicOfAnotherTypeIsNotAnIndex) {
  for (json index :
       {json{{"magic", 1}, {"version", 1}}, json{{"magic", data::kIndexMagic}, {"version", "1"}}}) {
    auto read = data::unseal_index(data::seal_index(index).dump(), "index.json");
    ASSERT_FALSE(read.ok()) << index.dump();
    EXPECT_TRUE(mentions(read.error(), "not an endure-data index")) << read.error().message;
  }
}

// A data index's shard named outside its folder ("../x", "/etc/passwd") was opened there.
TEST_F(FuzzRegressionData, ShardOutsideTheFolderIsRefused) {
  for (const char* file : {"../train-00000.bin", "/etc/passwd", "..", ""}) {
    json fields = {{"splits", {{"train", {{"shards", {{{"file", file}, {"tokens", 64}}}}}}}}};
    auto loader = open({2, 64, 300}, 64, fields, 64);
    ASSERT_FALSE(loader.ok()) << file;
    EXPECT_EQ(loader.error().code, "CorruptData");
    EXPECT_TRUE(mentions(loader.error(), "must name a file in the data folder"))
        << loader.error().message;
  }
}

// A checkpoint manifest's or descriptor's shard named outside its step's folder was read there.
TEST(FuzzRegression, CheckpointShardOutsideTheStepIsRefused) {
  for (const char* file : {"../step-000000000001/rank-00000.shard", "/etc/passwd", "."}) {
    json manifest = {{"step", 2}, {"shards", {{{"rank", 0}, {"file", file}}}}};
    auto read = ckpt::unseal(ckpt::seal(manifest).dump(), "manifest.json");
    ASSERT_FALSE(read.ok()) << file;
    EXPECT_TRUE(mentions(read.error(), "must name a file in the step's folder"))
        << read.error().message;
    json descriptor = {{"rank", 0}, {"file", file}};
    read = ckpt::unseal(ckpt::seal(descriptor).dump(), "rank-00000.json");
    ASSERT_FALSE(read.ok()) << file;
  }
}

}  // namespace
}  // namespace endure
