// endure-train across four nodes under srun --auto-resume=1 -N4: a worker's node crashes,
// then the node of rank 0 (the job's batch host, so the job is requeued under its id); each
// try meets in a new rendezvous on /fsx, resumes from the newest checkpoint, re-makes every
// step with the first try's loss, and ends with the checkpoint of an uninterrupted run of
// the same world and stage, byte for byte.
#include <gtest/gtest.h>

#include <thread>

#include "auto_resume_fixture.h"

namespace endure::test {
namespace {

constexpr int kSteps = 160;

// The trainer's flags but its folders: a small model whose 4-rank step takes tens of ms, a
// global batch of 12 that 4 ranks and 3 ranks both split (in 3 and 4 micro-batches).
std::string trainer_flags(int zero, int steps = kSteps) {
  return "--model tiny --dim 128 --n-heads 4 --n-kv-heads 4 --seq-len 128 --batch 1 "
         "--global-batch 12 --threads 1 --steps " +
         std::to_string(steps) +
         " --warmup 10 --lr 1e-3 --min-lr 1e-4 --eval-every 0 --ckpt-every 10 --keep-last 2 "
         "--comm-timeout 30 --zero " +
         std::to_string(zero);
}

class DataParallelResume : public AutoResume, public testing::WithParamInterface<int> {
 protected:
  // The uninterrupted run: four ranks as processes of this host, met in their own folder
  // (rank 0's lines to `log` when given).
  void run_reference(int zero, const std::filesystem::path& ckpt, int steps = kSteps,
                     const std::filesystem::path& log = "") {
    std::string script =
        "set -e; pids=; for r in 0 1 2 3; do SLURM_JOB_ID=1 SLURM_PROCID=$r SLURM_NTASKS=4 "
        "ENDURE_AUTO_RESUME_COUNT=" +
        std::to_string(steps) + " ENDURE_COMM_ADDRESS=127.0.0.1 timeout 300 " +
        (bin_dir() / "endure-train").string() + " --data " + (fsx_ / "data").string() + " " +
        trainer_flags(zero, steps) + " --ckpt-dir " + ckpt.string() +
        (log.empty() ? "" : " --log " + log.string()) +
        " >/dev/null & pids=\"$pids $!\"; done; for p in $pids; do wait $p; done";
    ASSERT_EQ(std::system(("bash -c '" + script + "'").c_str()), 0);
  }

  // The step of each "loss" line of the log, by the try (start line) that made it.
  std::vector<std::map<int64_t, double>> losses_by_try(const std::filesystem::path& log) {
    std::vector<std::map<int64_t, double>> out;
    for (const auto& j : json_lines(log)) {
      if (j.value("start", false)) out.emplace_back();
      if (j.contains("loss") && !out.empty()) out.back()[j["step"]] = j["loss"];
    }
    return out;
  }

  int64_t last_step(const std::filesystem::path& log) {
    int64_t step = 0;
    for (const auto& j : json_lines(log)) {
      if (j.contains("loss")) step = std::max<int64_t>(step, j["step"]);
    }
    return step;
  }

  // Waits for the newest try (the `tries`-th start line) to have made `steps` steps.
  bool wait_try(const std::filesystem::path& log, size_t tries, int64_t steps) {
    return wait_until(
        [&] {
          auto by_try = losses_by_try(log);
          return by_try.size() >= tries && !by_try[tries - 1].empty() &&
                 by_try[tries - 1].rbegin()->first >= steps;
        },
        180s);
  }
};

TEST_P(DataParallelResume, AWorkerAndRankZerosNodeCrashAndTheRunEndsBitForBit) {
  const int zero = GetParam();
  const bool two_faults = zero != 3;  // stage 3: one fault (a worker)
  start(4);
  ASSERT_NO_FATAL_FAILURE(prepare_training_data());
  const auto reference = fsx_ / "reference";
  ASSERT_NO_FATAL_FAILURE(run_reference(zero, reference));

  const long long job =
      submit_script("train-dp.sbatch",
                    "#!/bin/bash\n#SBATCH -N4 --output=/fsx/train-dp-%j.out --open-mode=append\n"
                    "srun --auto-resume=1 -N4 --ntasks-per-node=1 /opt/endure/bin/endure-train "
                    "--data /fsx/data " +
                        trainer_flags(zero) +
                        " --ckpt-dir /fsx/ckpt --log /fsx/train.jsonl >/dev/null\n"
                        "echo \"srun rc=$?\"\n");
  ASSERT_GT(job, 0);
  const auto log = fsx_ / "train.jsonl";
  const auto out = fsx_ / ("train-dp-" + std::to_string(job) + ".out");
  // Each fault comes halfway between two checkpoints (every 10 steps), so that the steps
  // since the last one are made again.
  ASSERT_TRUE(wait_try(log, 1, 35)) << read_text(out) << read_text(log);
  const std::string rank0 = batch_host(job);
  ASSERT_FALSE(rank0.empty());
  const std::string worker = rank0 == "worker-2" ? "worker-1" : "worker-2";
  ASSERT_NO_FATAL_FAILURE(crash(worker));
  if (two_faults) {
    ASSERT_TRUE(wait_try(log, 2, losses_by_try(log)[0].rbegin()->first / 10 * 10 + 25))
        << read_text(out) << read_text(log);
    ASSERT_NO_FATAL_FAILURE(crash(rank0));
  }
  ASSERT_TRUE(wait_job_end(job, 400s)) << read_text(out) << read_text(log);

  const std::string output = read_text(out) + read_text(log);
  EXPECT_NE(output.find("srun rc=0"), std::string::npos) << output;
  // The same job id all along; every try after the first resumed and re-made its steps
  // with the loss the earlier tries logged.
  // On a loaded machine a node may also be judged hung (its agent starved of the cores)
  // and rebooted: one more fault the run must survive alike, so at least the faults made.
  auto st = status(job);
  const int resumes = st.value("ResumeCount", 0);
  EXPECT_GE(resumes, two_faults ? 2 : 1) << st.dump();
  auto by_try = losses_by_try(log);
  ASSERT_EQ(by_try.size(), static_cast<size_t>(resumes) + 1) << output;
  std::map<int64_t, double> seen;
  int remade = 0;
  for (const auto& losses : by_try) {
    for (const auto& [step, loss] : losses) {
      if (seen.count(step)) {
        EXPECT_EQ(loss, seen[step]) << "step " << step;
        ++remade;
      }
      seen[step] = loss;
    }
  }
  EXPECT_GT(remade, 0) << "no step was made twice: the faults tested nothing";
  EXPECT_EQ(last_step(log), kSteps);
  const auto starts = json_lines(log);
  for (const auto& j : starts) {
    if (j.value("start", false)) {
      EXPECT_EQ(j["world"], 4) << j.dump();
    }
  }

  // Every rank's final shard and the manifest's metadata, against the uninterrupted run.
  char step_dir[32];
  std::snprintf(step_dir, sizeof step_dir, "step-%012d", kSteps);
  for (int r = 0; r < 4; ++r) {
    char shard[32];
    std::snprintf(shard, sizeof shard, "rank-%05d.shard", r);
    const std::string got = read_text(fsx_ / "ckpt" / step_dir / shard);
    const std::string want = read_text(reference / step_dir / shard);
    ASSERT_FALSE(want.empty()) << reference / step_dir / shard;
    EXPECT_TRUE(got == want) << "rank " << r << "'s final parameters and AdamW state differ";
  }
  auto manifest = [](const std::filesystem::path& dir) {
    return json::parse(read_text(dir / "MANIFEST.json"), nullptr, false).value("user", json());
  };
  EXPECT_EQ(manifest(fsx_ / "ckpt" / step_dir), manifest(reference / step_dir));
  if (zero != 2) return;

  // The job's last checkpoint onto 3 nodes for 10 steps more, beside the uninterrupted
  // run's 4 ranks going on from theirs: the same losses within the order of the sums.
  ASSERT_NO_FATAL_FAILURE(run_reference(zero, reference, kSteps + 10, fsx_ / "four.jsonl"));
  const long long three =
      submit_script("train-dp3.sbatch",
                    "#!/bin/bash\n#SBATCH -N3 --output=/fsx/train-dp3-%j.out\n"
                    "srun --auto-resume=1 -N3 --ntasks-per-node=1 "
                    "/opt/endure/bin/endure-train --data /fsx/data " +
                        trainer_flags(zero, kSteps + 10) +
                        " --ckpt-dir /fsx/ckpt --log /fsx/three.jsonl >/dev/null\n");
  ASSERT_GT(three, 0);
  ASSERT_TRUE(wait_job_end(three, 120s)) << read_text(fsx_ / "three.jsonl");
  auto four_losses = losses_by_try(fsx_ / "four.jsonl");
  auto three_losses = losses_by_try(fsx_ / "three.jsonl");
  ASSERT_EQ(three_losses.size(), 1u) << read_text(fsx_ / "three.jsonl");
  ASSERT_EQ(four_losses.size(), 1u);
  for (int step = kSteps + 1; step <= kSteps + 10; ++step) {
    ASSERT_TRUE(three_losses[0].count(step) && four_losses[0].count(step)) << "step " << step;
    EXPECT_NEAR(three_losses[0][step], four_losses[0][step], 1e-5 * four_losses[0][step])
        << "step " << step << " on 3 ranks";
  }
  const auto first = json_lines(fsx_ / "three.jsonl").front();
  EXPECT_EQ(first["world"], 3) << first.dump();
  EXPECT_EQ(first["resumed_from"], kSteps) << first.dump();
}

// Not run by ctest (minutes long): stories15M on four nodes for about ten minutes at
// ZeRO-2, a worker's node crashed at a third of it and rank 0's at two thirds; the log
// (every try's steps, for a loss curve) is copied to $ENDURE_CURVE_OUT when set.
TEST_F(DataParallelResume, DISABLED_TenMinutesOfStories15MWithTwoFaults) {
  start(4);
  ASSERT_NO_FATAL_FAILURE(prepare_training_data());
  const long long job = submit_script(
      "curve.sbatch",
      "#!/bin/bash\n#SBATCH -N4 --output=/fsx/curve-%j.out --open-mode=append\n"
      "srun --auto-resume=1 -N4 --ntasks-per-node=1 /opt/endure/bin/endure-train --data /fsx/data "
      "--model stories15M --vocab-size 32000 --batch 2 --global-batch 8 --threads 1 --zero 2 "
      "--steps 100000 --warmup 20 --lr 1e-3 --min-lr 1e-4 --eval-every 0 --ckpt-every 10 "
      "--ckpt-dir /fsx/ckpt --log /fsx/curve.jsonl >/dev/null\n");
  ASSERT_GT(job, 0);
  const auto log = fsx_ / "curve.jsonl";
  const std::string rank0 = [&] {
    std::string host;
    // "n/a" until the job starts.
    wait_until([&] { return (host = batch_host(job)).starts_with("worker-"); }, 60s);
    return host;
  }();
  ASSERT_TRUE(rank0.starts_with("worker-")) << rank0;
  std::this_thread::sleep_for(200s);
  crash(rank0 == "worker-2" ? "worker-1" : "worker-2");
  std::this_thread::sleep_for(200s);
  crash(rank0);
  std::this_thread::sleep_for(200s);
  e_->exec(name_, "controller-0", "scancel " + std::to_string(job));
  EXPECT_TRUE(wait_job_end(job, 120s));
  if (const char* out = std::getenv("ENDURE_CURVE_OUT")) {
    std::filesystem::copy_file(log, out, std::filesystem::copy_options::overwrite_existing);
  }
  EXPECT_EQ(status(job)["ResumeCount"], 2) << status(job).dump();
}

INSTANTIATE_TEST_SUITE_P(Stages, DataParallelResume, testing::Values(0, 2, 3),
                         [](const testing::TestParamInfo<int>& p) {
                           return "zero" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace endure::test
