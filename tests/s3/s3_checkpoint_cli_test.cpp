// The S3 tier from the programs: `endure ckpt ls|verify|prune s3://...`, and endure-train
// with an s3:// --ckpt-dir that, its local folders gone, resumes from S3 and ends with the
// weights of an uninterrupted run, bit for bit.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/json.h"
#include "endure/checkpoint.h"
#include "s3_checkpoint_fixture.h"
#include "support/spawned.h"
#include "support/text_files.h"

namespace endure::test {
namespace {

using Clock = std::chrono::steady_clock;

struct Ran {
  int code = -1;
  std::string out;
};

// A command's exit code and its stdout and stderr together.
Ran sh(const std::string& command) {
  Ran r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = ::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

class S3CheckpointCli : public S3CheckpointTest {};

TEST_F(S3CheckpointCli, CkptLsVerifyPruneWorkOnAnS3Prefix) {
  ckpt::Options o = options("cli");
  o.keep_last = 0;
  {
    auto c = ckpt::Checkpointer::open(o);
    ASSERT_TRUE(c) << c.error().message;
    std::vector<uint8_t> weights = noise(200 << 10, 1);
    for (int64_t step = 1; step <= 3; ++step) {
      weights[0] = static_cast<uint8_t>(step);
      ASSERT_TRUE((*c)->save(step, {{"weights", weights.data(), weights.size()}}));
      Status s = (*c)->wait();
      ASSERT_TRUE(s) << s.error().message;
    }
  }
  put("cli/step-000000000004/rank-00000.shard", "an upload that did not finish");
  {
    std::fstream f(stored("cli/step-000000000002/rank-00000.shard"),
                   std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f);
    f.seekp(100000);
    f.put('\x7f');
  }
  const std::string endure = ENDURE_BIN, prefix = uri("cli");

  Ran ls = sh(endure + " ckpt ls " + prefix);
  ASSERT_EQ(ls.code, 0) << ls.out;
  EXPECT_PRED2(contains, ls.out, "STEP");
  for (const char* step : {"\n1 ", "\n2 ", "\n3 "}) {
    auto at = ls.out.find(step);
    ASSERT_NE(at, std::string::npos) << step << " in " << ls.out;
    const std::string line = ls.out.substr(at + 1, ls.out.find('\n', at + 1) - at - 1);
    EXPECT_PRED2(contains, line, "s3");
    EXPECT_PRED2(contains, line, "complete");
  }
  EXPECT_PRED2(contains, ls.out, "incomplete: not committed (no manifest)");

  Ran verify = sh(endure + " ckpt verify " + prefix);
  EXPECT_NE(verify.code, 0) << verify.out;
  EXPECT_PRED2(contains, verify.out, "step 3 (s3): OK");
  EXPECT_PRED2(contains, verify.out, "step 2 (s3): DAMAGED");
  EXPECT_PRED2(contains, verify.out, "fails its checksum");
  EXPECT_PRED2(contains, verify.out, "step 1 (s3): OK");
  EXPECT_PRED2(contains, verify.out, "step 4: incomplete");

  Ran prune = sh(endure + " ckpt prune --keep-last 1 " + prefix);
  ASSERT_EQ(prune.code, 0) << prune.out;
  EXPECT_PRED2(contains, prune.out, "kept step 3 (complete)");
  EXPECT_PRED2(contains, prune.out, "kept step 4 (incomplete");  // newer: still uploading
  EXPECT_FALSE(contains(prune.out, "kept step 1")) << prune.out;
  auto left = client_->list_objects(bucket_, "cli/step-000000000001/");
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());

  Ran bad = sh(endure + " ckpt ls s3://Not_A_Bucket/x");
  EXPECT_EQ(bad.code, 2) << bad.out;  // a usage error
  EXPECT_PRED2(contains, bad.out, "DIR 's3://Not_A_Bucket/x'");
  Ran unreachable = sh("AWS_ENDPOINT_URL=http://127.0.0.1:1 " + endure + " ckpt ls " + prefix);
  EXPECT_EQ(unreachable.code, 1) << unreachable.out;  // the store failed, not the command
  EXPECT_PRED2(contains, unreachable.out, "s3://endure-ckpt/cli/");
}

// endure-train's arguments for a small model and a short run.
std::vector<std::string> train_args(const std::filesystem::path& data, const std::string& ckpt_dir,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {ENDURE_TRAIN_BIN,
                                "--data",
                                data.string(),
                                "--model",
                                "tiny",
                                "--dim",
                                "64",
                                "--n-heads",
                                "4",
                                "--n-kv-heads",
                                "2",
                                "--seq-len",
                                "64",
                                "--batch",
                                "4",
                                "--steps",
                                "60",
                                "--warmup",
                                "5",
                                "--lr",
                                "3e-3",
                                "--min-lr",
                                "3e-4",
                                "--eval-every",
                                "0",
                                "--threads",
                                "1",
                                "--ckpt-dir",
                                ckpt_dir,
                                "--ckpt-every",
                                "7",
                                "--keep-last",
                                "2",
                                "--seed",
                                "11"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

ckpt::Loaded final_state(ckpt::Options o) {
  auto c = ckpt::Checkpointer::open(o);
  EXPECT_TRUE(c) << c.error().message;
  if (!c) return {};
  auto loaded = (*c)->load();
  EXPECT_TRUE(loaded) << loaded.error().message;
  return loaded ? std::move(*loaded) : ckpt::Loaded{};
}

TEST_F(S3CheckpointCli, EndureTrainResumesFromS3AfterItsLocalFoldersAreDeleted) {
  auto data = root_.path() / "data";
  auto log = root_.path() / "data.log";
  ASSERT_EQ(sh(std::string(ENDURE_DATA_BIN) + " sample --out " + root_.str("s.jsonl") +
               " --bytes 200k --seed 3 >" + log.string())
                .code,
            0);
  Ran prepared = sh(std::string(ENDURE_DATA_BIN) + " prepare --input " + root_.str("s.jsonl") +
                    " --vocab-size 512 --out " + data.string() + " --seed 3");
  ASSERT_EQ(prepared.code, 0) << prepared.out;

  // The uninterrupted run, with the S3 tier behind its folder (--ckpt-s3): its last step is
  // in S3 when it ends, the same bytes.
  auto ref_log = root_.path() / "reference.log";
  ASSERT_EQ(
      wait_exit(spawn(train_args(data, root_.str("reference"), {"--ckpt-s3", uri("reference")}),
                      ref_log)),
      0)
      << read_text(ref_log.string() + ".err");
  auto ref_steps = ckpt::list_s3(uri("reference"));
  ASSERT_TRUE(ref_steps) << ref_steps.error().message;
  ASSERT_FALSE(ref_steps->empty());
  EXPECT_EQ(ref_steps->front().step, 60);
  EXPECT_TRUE(ref_steps->front().valid) << ref_steps->front().reason;
  auto shard = client_->get_object(bucket_, "reference/step-000000000060/rank-00000.shard");
  ASSERT_TRUE(shard) << shard.error().message;
  EXPECT_TRUE(*shard == read_text(root_.path() / "reference/step-000000000060/rank-00000.shard"));

  // The run keeps its checkpoints in S3, staged in a local folder, and is stopped part way.
  auto stage = root_.path() / "stage";
  auto args = train_args(data, uri("train"), {"--ckpt-local", stage.string()});
  auto run_log = root_.path() / "s3.log";
  pid_t pid = spawn(args, run_log);
  ASSERT_GT(pid, 0);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  bool far_enough = false;
  while (!far_enough && Clock::now() < deadline) {
    for (const auto& j : json_lines(run_log)) far_enough = far_enough || j.value("step", 0) >= 20;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGTERM);
  const int stopped = wait_exit(pid);
  ASSERT_TRUE(stopped == 143 || stopped == 0) << stopped << read_text(run_log.string() + ".err");
  ASSERT_TRUE(far_enough) << read_text(run_log.string() + ".err");

  // The node is gone: only S3 holds the checkpoints.
  std::filesystem::remove_all(stage);
  ASSERT_EQ(wait_exit(spawn(args, run_log)), 0) << read_text(run_log.string() + ".err");
  int resumed = 0;
  for (const auto& j : json_lines(run_log)) {
    if (j.value("start", false) && j["resumed_from"].is_number_integer()) {
      ++resumed;
      EXPECT_EQ(j.value("resumed_tier", ""), "s3") << j.dump();
      EXPECT_GE(j["resumed_from"].get<int64_t>(), 20);
    }
  }
  EXPECT_EQ(resumed, 1) << read_text(run_log);

  ckpt::Options ref;
  ref.dir = root_.path() / "reference";
  ckpt::Options from_s3;
  from_s3.dir = root_.path() / "empty";
  from_s3.s3 = uri("train");
  auto expected = final_state(ref);
  auto got = final_state(from_s3);
  ASSERT_EQ(expected.step, 60);
  EXPECT_EQ(got.step, 60);
  EXPECT_EQ(got.user, expected.user);
  ASSERT_FALSE(expected.buffers.empty());
  EXPECT_TRUE(got.buffers == expected.buffers) << "the weights differ from the uninterrupted run";
}

TEST(S3CheckpointFlags, BadS3SettingsAreRefusedNamingTheField) {
  TempDir tmp("endure-s3-flags");
  const std::string train = std::string(ENDURE_TRAIN_BIN) + " --data " + tmp.str() + " ";
  const std::string local = tmp.str("local");
  struct Case {
    std::string flags, error;
  };
  for (const Case& c : std::vector<Case>{
           {"--ckpt-dir s3://Bad_Bucket/x --ckpt-local " + local,
            "ckpt_dir 's3://Bad_Bucket/x': a bucket name"},
           {"--ckpt-dir " + local + " --ckpt-s3 bucket/x",
            "ckpt_s3 'bucket/x': must start with s3://"},
           {"--ckpt-s3 s3://bucket/x", "ckpt_s3 is a tier of ckpt_dir: give ckpt_dir too"},
           {"--ckpt-dir s3://bucket/x --ckpt-s3 s3://bucket/y --ckpt-local " + local,
            "ckpt_s3: ckpt_dir is an s3:// prefix already"}}) {
    Ran r = sh(train + c.flags);
    EXPECT_NE(r.code, 0) << c.flags;
    EXPECT_PRED2(contains, r.out, c.error) << c.flags;
  }
  EXPECT_FALSE(std::filesystem::exists(local)) << "a refused run made its folder";
}

}  // namespace
}  // namespace endure::test
