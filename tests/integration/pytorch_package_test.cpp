// The PyTorch example through `import endure` (examples/pytorch/train_ddp.py: DDP over Gloo,
// endure.checkpoint every step, endure.report, endure.distributed.init) on three workers
// under srun --auto-resume=1, through three faults one after another: a crash of rank 0's
// node (the rendezvous host), a hang, a logged GPU error. The job ends in its own id, with
// the weights, optimizer state and data position of an uninterrupted run, byte for byte,
// and endured saw its tries through ReportTrainingMetrics.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "auto_resume_fixture.h"

namespace endure::test {
namespace {

constexpr int kPyTorchSteps = 150;

class PyTorchPackage : public AutoResume {
 protected:
  // The example on all three workers, its lines in /fsx/<name>-<job>.out, its final state in
  // /fsx/<name>.state.
  long long submit_example(const std::string& name) {
    return submit_script(
        name + ".sbatch",
        fmt::format("#!/bin/bash\n#SBATCH -N3 --ntasks-per-node=1 --output=/fsx/{0}-%j.out "
                    "--open-mode=append\n"
                    "srun --auto-resume=1 -N3 --ntasks-per-node=1 python3 /fsx/train_ddp.py "
                    "--ckpt-dir /fsx/{0}-ckpt --memory-dir /dev/shm/{0}-$SLURM_JOB_ID --steps {1} "
                    "--step-seconds 0.2 --final-state /fsx/{0}.state\n"
                    "echo \"srun rc=$?\"\n",
                    name, kPyTorchSteps));
  }

  std::vector<json> lines(const std::string& name, long long job) {
    return json_lines(fsx_ / (name + "-" + std::to_string(job) + ".out"));
  }
  std::vector<json> starts(const std::string& name, long long job) {
    std::vector<json> out;
    for (const auto& j : lines(name, job)) {
      if (j.value("start", false)) out.push_back(j);
    }
    return out;
  }
  int last_step(const std::string& name, long long job) {
    int step = 0;
    for (const auto& j : lines(name, job)) step = std::max(step, j.value("step", 0));
    return step;
  }
};

TEST_F(PyTorchPackage, TheExampleSurvivesThreeFaultsBitForBit) {
  start(3);
  std::filesystem::copy_file(source_dir() / "examples/pytorch/train_ddp.py", fsx_ / "train_ddp.py");
  const long long job = submit_example("faults");
  ASSERT_GT(job, 0);
  const auto out = [&] { return job_output(job, "faults"); };

  // Each fault once the try before it is well under way; rank 0's node first.
  const std::vector<std::string> faults = {"crash", "hang", "xid"};
  std::map<int, int> lost;  // try -> steps its successor made again
  for (size_t i = 0; i < faults.size(); ++i) {
    ASSERT_TRUE(wait_until(
        [&] {
          auto s = starts("faults", job);
          return s.size() == i + 1 &&
                 last_step("faults", job) >= s.back().value("first_step", 0) + 10;
        },
        240s))
        << out();
    const json start_line = starts("faults", job).back();
    const std::string master = start_line["master"];
    const std::string rank0 = master.substr(0, master.find(':'));
    // Rank 0's node crashes; the hang and the GPU error hit the two other workers.
    std::vector<std::string> others;
    for (const char* w : {"worker-0", "worker-1", "worker-2"}) {
      if (rank0 != w) others.push_back(w);
    }
    const std::string node = i == 0 ? rank0 : others[i - 1];
    const int logged = last_step("faults", job);
    auto r = e_->cli(
        {"debug", "inject-fault", "--cluster-name", name_, "--node", node, "--kind", faults[i]});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ASSERT_TRUE(wait_until([&] { return starts("faults", job).size() == i + 2; }, 300s)) << out();
    const json next = starts("faults", job).back();
    EXPECT_EQ(next["auto_resume_count"], static_cast<int>(i + 1)) << next.dump();
    ASSERT_TRUE(next["resumed_from"].is_number_integer()) << next.dump();
    // Saved every step, to memory (this host's /dev/shm, shared by its namespace nodes) at
    // least: at most the step in flight and the one being copied are made again.
    lost[static_cast<int>(i)] = logged - next["resumed_from"].get<int>();
    EXPECT_LE(lost[static_cast<int>(i)], 1) << faults[i] << " " << out();
  }
  ASSERT_TRUE(wait_job_end(job, 300s)) << out();
  EXPECT_NE(out().find("srun rc=0"), std::string::npos) << out();
  EXPECT_EQ(status(job)["ResumeCount"], 3) << status(job).dump();

  // Every step a later try made again has the loss the try before logged, to the last digit.
  std::map<int, double> loss;
  for (const auto& j : lines("faults", job)) {
    if (!j.contains("loss")) continue;
    const int step = j["step"];
    if (loss.count(step)) {
      EXPECT_EQ(j["loss"].get<double>(), loss[step]) << "step " << step;
    }
    loss[step] = j["loss"];
  }
  ASSERT_EQ(loss.rbegin()->first, kPyTorchSteps) << out();

  // endured saw the run and its tries.
  auto curve = e_->call("GetTrainingMetrics", {{"ClusterName", name_}, {"JobId", job}});
  ASSERT_TRUE(curve.ok()) << curve.error().message;
  ASSERT_EQ((*curve)["Starts"].size(), 4u) << (*curve)["Starts"].dump();
  EXPECT_EQ((*curve)["Starts"][3]["Resume"], 3);
  EXPECT_EQ((*curve)["Points"].back()["Step"], kPyTorchSteps);

  // The same run without faults ends with the same bytes.
  const long long clean = submit_example("clean");
  ASSERT_GT(clean, 0);
  ASSERT_TRUE(wait_job_end(clean, 300s)) << job_output(clean, "clean");
  const std::string faulted = read_text(fsx_ / "faults.state");
  ASSERT_FALSE(faulted.empty());
  EXPECT_TRUE(faulted == read_text(fsx_ / "clean.state"))
      << "the final state differs from an uninterrupted run's";
}

}  // namespace
}  // namespace endure::test
