// endure-train survives SIGKILL at any moment: killed at random times (seeded) and started
// again on the same checkpoint folder, it ends with the weights, optimizer state and data
// position of an uninterrupted run, bit for bit, and every step it re-makes has the loss
// the uninterrupted run logged.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "endure/checkpoint.h"
#include "memstore/data_server.h"
#include "memstore/server.h"
#include "support/spawned.h"
#include "support/temp_dir.h"
#include "support/text_files.h"
#include "train/ckpt/format.h"

namespace endure::test {
namespace {

using Clock = std::chrono::steady_clock;

int run(const std::vector<std::string>& args, const std::filesystem::path& out) {
  pid_t pid = spawn(args, out);
  return pid < 0 ? -1 : wait_exit(pid);
}

class TrainerResume : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_root_ = new TempDir("endure-train-data");
    auto log = data_root_->path() / "data.log";
    ASSERT_EQ(run({ENDURE_DATA_BIN, "sample", "--out", data_root_->str("s.jsonl"), "--bytes",
                   "400k", "--seed", "3"}, log), 0) << read_text(log);
    ASSERT_EQ(run({ENDURE_DATA_BIN, "prepare", "--input", data_root_->str("s.jsonl"),
                   "--vocab-size", "512", "--out", data_root_->str("data"), "--seed", "3"},
                  log), 0) << read_text(log) << read_text(log.string() + ".err");
  }
  static void TearDownTestSuite() {
    delete data_root_;
    data_root_ = nullptr;
  }

  // A small model and a run long enough (about a second) that random kills land in steps,
  // evaluations and checkpoint writes alike.
  // In extra, "{run}" stands for the checkpoint folder's name (each run's own tiers).
  std::vector<std::string> train_args(const std::filesystem::path& ckpt,
                                      std::vector<std::string> extra = {},
                                      const std::string& ckpt_every = "7") const {
    for (auto& e : extra) {
      if (auto at = e.find("{run}"); at != std::string::npos) {
        e.replace(at, 5, ckpt.filename().string());
      }
    }
    std::vector<std::string> a = {
        ENDURE_TRAIN_BIN, "--data", data_root_->str("data"), "--model", "tiny", "--dim", "64",
        "--n-heads", "4", "--n-kv-heads", "2", "--seq-len", "64", "--batch", "4",
        "--grad-accum", "2", "--steps", std::to_string(kSteps), "--warmup", "10", "--lr",
        "3e-3", "--min-lr", "3e-4", "--eval-every", "25", "--eval-batches", "2", "--threads",
        "2", "--ckpt-dir", ckpt.string(), "--ckpt-every", ckpt_every, "--keep-last", "2", "--seed",
        "11"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // The final checkpoint's every buffer and its metadata.
  static ckpt::Loaded final_state(const std::filesystem::path& dir) {
    ckpt::Options o;
    o.dir = dir;
    auto c = ckpt::Checkpointer::open(o);
    EXPECT_TRUE(c.ok());
    auto loaded = (*c)->load(-1);
    EXPECT_TRUE(loaded.ok()) << loaded.error().message;
    return loaded.ok() ? std::move(*loaded) : ckpt::Loaded{};
  }

  static std::map<int64_t, double> losses(const std::vector<json>& lines) {
    std::map<int64_t, double> out;
    for (const auto& j : lines) {
      if (j.contains("loss")) out[j["step"].get<int64_t>()] = j["loss"].get<double>();
    }
    return out;
  }

  // Trains to the end while a seeded generator kills the process at random moments, then
  // compares everything with an uninterrupted run.
  void kill_and_resume(uint32_t seed, int kills, const std::vector<std::string>& extra,
                       const std::string& ckpt_every = "7") {
    TempDir root("endure-train-resume");
    auto ref_log = root.path() / "reference.log";
    ASSERT_EQ(run(train_args(root.path() / "reference", extra, ckpt_every), ref_log), 0)
        << read_text(ref_log.string() + ".err");
    const auto reference = json_lines(ref_log);

    // Each kill waits for a random step past the last one logged, then for a random part
    // of a step more: kills land in steps, evaluations and checkpoint writes alike.
    std::mt19937 rng(seed);
    auto log = root.path() / "killed.log";
    int killed = 0, exit_code = -1;
    for (int attempt = 0; attempt < kills + 1 && exit_code != 0; ++attempt) {
      auto so_far = losses(json_lines(log));
      const int64_t done = so_far.empty() ? 0 : so_far.rbegin()->first;
      pid_t pid = spawn(train_args(root.path() / "killed", extra, ckpt_every), log);
      ASSERT_GT(pid, 0);
      int status = 0;
      bool exited = false;
      if (attempt < kills) {
        const int64_t target = std::uniform_int_distribution<int64_t>(done, kSteps - 1)(rng);
        const auto deadline = Clock::now() + std::chrono::seconds(60);
        while (!(exited = waitpid(pid, &status, WNOHANG) == pid) && Clock::now() < deadline) {
          auto seen = losses(json_lines(log));
          if (!seen.empty() && seen.rbegin()->first >= target) break;
          std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
        if (!exited && !(exited = waitpid(pid, &status, WNOHANG) == pid)) {
          kill(pid, SIGKILL);
          ++killed;
        }
      }
      if (!exited) waitpid(pid, &status, 0);
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (attempt == kills) {
        ASSERT_EQ(exit_code, 0) << read_text(log.string() + ".err");
      }
    }
    EXPECT_GE(killed, kills / 2) << "the kills came too late to test anything";

    auto expected = final_state(root.path() / "reference");
    auto got = final_state(root.path() / "killed");
    ASSERT_EQ(expected.step, kSteps);
    EXPECT_EQ(got.step, expected.step);
    EXPECT_EQ(got.user, expected.user);  // AdamW's step, the loader's position, the model
    // Each unit's parameters and AdamW moments: three buffers a unit.
    ASSERT_FALSE(expected.buffers.empty());
    ASSERT_EQ(got.buffers.size(), expected.buffers.size());
    for (const auto& [name, bytes] : expected.buffers) {
      EXPECT_TRUE(got.buffers[name] == bytes) << name << " differs from the uninterrupted run";
    }

    // Every step made (some twice, after a kill) has the uninterrupted run's loss exactly.
    auto want = losses(reference);
    auto lines = json_lines(log);
    killed_lines_ = lines;
    int starts = 0, resumed = 0;
    for (const auto& j : lines) {
      if (!j.value("start", false)) continue;
      ++starts;
      resumed += j["resumed_from"].is_number_integer();
    }
    // A kill may land before the start line is out.
    EXPECT_LE(starts, killed + 1);
    EXPECT_GE(starts, 2);
    EXPECT_GE(resumed, 1);
    for (const auto& j : lines) {
      if (!j.contains("loss")) continue;
      const int64_t step = j["step"];
      EXPECT_EQ(j["loss"].get<double>(), want.at(step)) << "step " << step;
    }
  }

  static constexpr int kSteps = 120;
  static TempDir* data_root_;
  std::vector<json> killed_lines_;  // the killed run's log, after kill_and_resume()
};

TempDir* TrainerResume::data_root_ = nullptr;

TEST_F(TrainerResume, KilledAtRandomMomentsEndsWithTheUninterruptedWeightsBitForBit) {
  kill_and_resume(20261203, 8, {});
}

// A checkpoint every step, each copied while the next step computes: a kill lands in a
// copy as often as in a step.
TEST_F(TrainerResume, CheckpointingEveryStepTheSameHolds) { kill_and_resume(5, 8, {}, "1"); }

// A memory tier's folder on tmpfs, named after a test's own folder, removed at the end.
struct MemoryTier {
  explicit MemoryTier(const TempDir& owner) : path(std::filesystem::path("/dev/shm") / owner.path().filename()) {}
  ~MemoryTier() { std::filesystem::remove_all(path); }
  std::filesystem::path path;
};

TEST_F(TrainerResume, WithMemoryAndLocalTiersTheSameHolds) {
  TempDir tiers("endure-train-tiers");
  // Each run has its own node-local tiers; the memory tier is a tmpfs folder.
  MemoryTier memory(tiers);
  kill_and_resume(7, 6, {"--ckpt-local", tiers.str("local-{run}"), "--ckpt-memory",
                         (memory.path / "{run}").string()});
}

// A checkpoint every step with the memory tier (one folder across a run's restarts, as on
// one node): saves due while the disk still writes an earlier one go to memory alone, a
// kill restores the newest step of either tier, and the run's end puts its last step on
// disk, where the comparison reads it.
TEST_F(TrainerResume, EveryStepWithTheMemoryTierTheSameHolds) {
  TempDir tiers("endure-train-every");
  MemoryTier memory(tiers);
  kill_and_resume(13, 6, {"--ckpt-memory", (memory.path / "{run}").string()}, "1");
}

// ckpt_disk_duty: with the disk tiers resting 99 times as long as each write, most saves of
// a run saving every step go to memory alone, the log says which, and the run's end still
// puts its last step on disk.
TEST_F(TrainerResume, ADiskThatRestsLeavesTheSavesBetweenToTheMemoryTier) {
  TempDir root("endure-train-duty");
  MemoryTier memory(root);
  auto log = root.path() / "log";
  ASSERT_EQ(
      run(train_args(root.path() / "ckpt",
                     {"--ckpt-memory", (memory.path / "ckpt").string(), "--ckpt-disk-duty", "0.01"},
                     "1"),
          log),
      0)
      << read_text(log.string() + ".err");
  int memory_only = 0, behind = 0;
  for (const auto& j : json_lines(log)) {
    if (j.value("tiers", "") == "memory") ++memory_only;
    if (j.contains("checkpoint_disk_behind")) ++behind;
  }
  EXPECT_GT(memory_only, kSteps / 2);
  EXPECT_GT(behind, 0);
  EXPECT_EQ(final_state(root.path() / "ckpt").step, kSteps);
}

// A kill after the last step reached the memory tier and before it reached the disk: the
// next start restores it from memory, has nothing left to train, and still ends with it in
// the shared folder, bit for bit.
TEST_F(TrainerResume, ResumedAtTheLastStepFromMemoryItEndsWithThatStepOnDisk) {
  TempDir root("endure-train-last");
  MemoryTier memory(root);
  auto log = root.path() / "log";
  const auto args =
      train_args(root.path() / "ckpt", {"--ckpt-memory", (memory.path / "ckpt").string()}, "1");
  ASSERT_EQ(run(args, log), 0) << read_text(log.string() + ".err");
  const ckpt::Loaded ended = final_state(root.path() / "ckpt");
  ASSERT_EQ(ended.step, kSteps);
  std::filesystem::remove_all(ckpt::step_dir(root.path() / "ckpt", kSteps));
  ASSERT_NE(final_state(root.path() / "ckpt").step, kSteps);

  ASSERT_EQ(run(args, log), 0) << read_text(log.string() + ".err");
  const auto lines = json_lines(log);
  const auto start = std::find_if(lines.rbegin(), lines.rend(),
                                  [](const json& j) { return j.value("start", false); });
  ASSERT_NE(start, lines.rend());
  EXPECT_EQ((*start)["resumed_from"], kSteps);
  EXPECT_EQ((*start)["resumed_tier"], "memory");
  const ckpt::Loaded again = final_state(root.path() / "ckpt");
  EXPECT_EQ(again.step, kSteps);
  EXPECT_EQ(again.user, ended.user);
  EXPECT_TRUE(again.buffers == ended.buffers);
}

// A node's memory store, as on a cluster whose TieredStorageConfig enables the tier: the
// store on 127.0.0.11 and the node's memory_store.json and resource_config.json in a folder.
struct NodeStore {
  NodeStore() {
    for (int attempt = 0; attempt < 30 && !data; ++attempt) {
      port = 21000 + (::getpid() * 11 + attempt * 71) % 20000;
      auto h = std::make_unique<memstore::StoreServer>(*arena, "tok");
      auto d = std::make_unique<memstore::DataServer>(*arena, "tok");
      if (h->start("127.0.0.11", port) && d->start("127.0.0.11", port + 1))
        http = std::move(h), data = std::move(d);
    }
    std::ofstream(config.path() / "memory_store.json") << json{
        {"ClusterName", "c1"},
        {"InstanceMemoryAllocationPercentage", 20},
        {"Port", port},
        {"Token", "tok"}}.dump();
    json node = {{"InstanceName", "node-1"}, {"CustomerIpAddress", "127.0.0.11"}};
    std::ofstream(config.path() / "resource_config.json") << json{
        {"InstanceGroups",
         json::array({{{"Name", "workers"},
                       {"Instances", json::array({node})}}})}}.dump();
  }
  ~NodeStore() {
    if (data) data->stop();
    if (http) http->stop();
  }
  TempDir dir{"endure-train-store"}, config{"endure-train-store-config"};
  std::unique_ptr<memstore::Arena> arena =
      std::move(*memstore::Arena::open(dir.path(), 256u << 20));
  std::unique_ptr<memstore::StoreServer> http;
  std::unique_ptr<memstore::DataServer> data;
  int port = 0;
};

// Variables of a Slurm step, set for the processes this test starts and unset after.
struct SlurmStepEnv {
  explicit SlurmStepEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~SlurmStepEnv() {
    for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
  }
  std::map<std::string, std::string> vars_;
};

// The cluster memory tier saving every step and the disk every 50th: a kill restores the
// newest step from the node's store, with nothing read from the disk, and the run still
// ends with the uninterrupted weights, bit for bit.
TEST_F(TrainerResume, EveryStepToTheClusterMemoryTierTheSameHolds) {
  NodeStore store;
  ASSERT_TRUE(store.data) << "no port free on 127.0.0.11";
  SlurmStepEnv env({{"SLURMD_NODENAME", "node-1"},
                    {"SLURM_STEP_NODELIST", "node-1"},
                    {"SLURM_STEP_TASKS_PER_NODE", "1"}});
  kill_and_resume(17, 6, {"--ckpt-cluster", "on", "--ckpt-cluster-config", store.config.str()},
                  "50");
  int from_store = 0;
  for (const auto& j : killed_lines_) {
    if (j.value("start", false)) {
      EXPECT_TRUE(j.value("cluster_memory_tier", false)) << j.dump();
    }
    if (!j.contains("restored")) continue;
    ASSERT_EQ(j["from"].size(), 1u) << j.dump();
    if (j["from"][0]["tier"] == "cluster own node node-1") {
      ++from_store;
      EXPECT_GT(j["from"][0]["bytes"].get<uint64_t>(), 0u) << j.dump();
    }
  }
  EXPECT_GE(from_store, 1) << "no restart restored from the node's store";
}

// ckpt_cluster on where the node has no memory store is refused, naming the file.
TEST_F(TrainerResume, TheClusterTierOnWhereTheNodeHasNoStoreIsRefused) {
  TempDir root("endure-train-nostore");
  auto log = root.path() / "log";
  SlurmStepEnv env({{"SLURMD_NODENAME", "node-1"},
                    {"SLURM_STEP_NODELIST", "node-1"},
                    {"SLURM_STEP_TASKS_PER_NODE", "1"}});
  EXPECT_EQ(run(train_args(root.path() / "ckpt",
                           {"--ckpt-cluster", "on", "--ckpt-cluster-config", root.str("none")}),
                log),
            2);
  EXPECT_NE(read_text(log.string() + ".err").find("memory_store.json is not there"),
            std::string::npos)
      << read_text(log.string() + ".err");
  EXPECT_FALSE(std::filesystem::exists(root.path() / "ckpt"));
}

TEST_F(TrainerResume, ACheckpointOfAnotherModelIsRefused) {
  TempDir root("endure-train-other");
  auto log = root.path() / "log";
  auto args = train_args(root.path() / "ckpt");
  ASSERT_EQ(run(args, log), 0) << read_text(log.string() + ".err");
  args.insert(args.end(), {"--dim", "96"});
  EXPECT_EQ(run(args, log), 2);
  EXPECT_NE(read_text(log.string() + ".err").find("of another model"), std::string::npos)
      << read_text(log.string() + ".err");
}

TEST_F(TrainerResume, SigtermSavesACheckpointAndStops) {
  TempDir root("endure-train-term");
  auto log = root.path() / "log";
  auto args = train_args(root.path() / "ckpt");
  args[std::find(args.begin(), args.end(), "--steps") - args.begin() + 1] = "100000";
  args[std::find(args.begin(), args.end(), "--ckpt-every") - args.begin() + 1] = "100000";
  pid_t pid = spawn(args, log);
  ASSERT_GT(pid, 0);
  // Until it has made a few steps.
  for (int i = 0; i < 600 && losses(json_lines(log)).size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 143) << read_text(log.string() + ".err");
  auto lines = json_lines(log);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.back().value("stopped", false)) << lines.back().dump();
  const int64_t last = lines.back()["final_step"];
  EXPECT_EQ(final_state(root.path() / "ckpt").step, last);
}

}  // namespace
}  // namespace endure::test
