// endure-train across four nodes under srun --auto-resume=1 -N4: a worker's node crashes,
// then the node of rank 0 (the job's batch host, so the job is requeued under its id); each
// try meets in a new rendezvous on /fsx, resumes from the newest checkpoint, re-makes every
// step with the first try's loss, and ends with the checkpoint of an uninterrupted run of
// the same world and stage, byte for byte.
#include <gtest/gtest.h>

#include "auto_resume_fixture.h"

namespace endure::test {
namespace {

constexpr int kSteps = 400;

// The trainer's flags but its folders: a small model whose 4-rank step takes tens of ms.
std::string trainer_flags(int zero) {
  return "--model tiny --dim 128 --n-heads 4 --n-kv-heads 4 --seq-len 128 --batch 4 "
         "--global-batch 16 --threads 1 --steps " +
         std::to_string(kSteps) +
         " --warmup 10 --lr 1e-3 --min-lr 1e-4 --eval-every 0 --ckpt-every 10 --keep-last 2 "
         "--comm-timeout 30 --zero " +
         std::to_string(zero);
}

class DataParallelResume : public AutoResume, public testing::WithParamInterface<int> {
 protected:
  // The data on /fsx, shared by the job and the reference run.
  void prepare_data() {
    const std::string data_bin = (bin_dir() / "endure-data").string();
    ASSERT_EQ(std::system((data_bin + " sample --out " + (fsx_ / "s.jsonl").string() +
                           " --bytes 300k --seed 2 >/dev/null")
                              .c_str()),
              0);
    ASSERT_EQ(
        std::system((data_bin + " prepare --input " + (fsx_ / "s.jsonl").string() +
                     " --vocab-size 512 --out " + (fsx_ / "data").string() + " --seed 2 >/dev/null")
                        .c_str()),
        0);
  }

  // The uninterrupted run: four ranks as processes of this host, met in their own folder.
  void run_reference(int zero, const std::filesystem::path& ckpt) {
    std::string script =
        "set -e; pids=; for r in 0 1 2 3; do SLURM_JOB_ID=1 SLURM_PROCID=$r "
        "SLURM_NTASKS=4 ENDURE_COMM_ADDRESS=127.0.0.1 timeout 300 " +
        (bin_dir() / "endure-train").string() + " --data " + (fsx_ / "data").string() + " " +
        trainer_flags(zero) + " --ckpt-dir " + ckpt.string() +
        " >/dev/null & pids=\"$pids $!\"; done; for p in $pids; "
        "do wait $p; done";
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
  ASSERT_NO_FATAL_FAILURE(prepare_data());
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
  auto st = status(job);
  EXPECT_EQ(st["ResumeCount"], two_faults ? 2 : 1) << st.dump();
  auto by_try = losses_by_try(log);
  ASSERT_EQ(by_try.size(), two_faults ? 3u : 2u) << output;
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
    if (j.value("start", false)) EXPECT_EQ(j["world"], 4) << j.dump();
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
}

INSTANTIATE_TEST_SUITE_P(Stages, DataParallelResume, testing::Values(0, 2, 3),
                         [](const testing::TestParamInfo<int>& p) {
                           return "zero" + std::to_string(p.param);
                         });

}  // namespace
}  // namespace endure::test
