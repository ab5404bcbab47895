// Training programs under srun --auto-resume=1: the PyTorch example and endure-train lose a
// node, resume from their checkpoints (on /fsx, or in an S3 bucket behind the node's own
// disk), and re-make every step with the same loss.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "auto_resume_fixture.h"
#include "s3/lifecycle_cache.h"
#include "s3/s3_client.h"
#include "support/ci.h"
#include "support/s3_server.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace endure::test {
namespace {

// The PyTorch example (examples/pytorch/train_ddp.py, gloo, two ranks on two nodes) resumes
// through auto-resume: after a worker crash its loss goes on from the checkpointed step,
// the same loss, step for step, as the run before the crash.
TEST_F(AutoResume, ThePyTorchExampleContinuesFromItsCheckpoint) {
  start(2);
  Endured& e = *e_;
  std::filesystem::copy_file(source_dir() / "examples/pytorch/train_ddp.py", fsx_ / "train_ddp.py");
  long long job =
      submit_script("torch.sbatch",
                    "#!/bin/bash\n#SBATCH -N2 --ntasks-per-node=1 --output=/fsx/torch-%j.out\n"
                    "srun --auto-resume=1 -N2 --ntasks-per-node=1 python3 /fsx/train_ddp.py "
                    "--ckpt-dir /fsx/ckpt --steps 60 --ckpt-every 5 --step-seconds 0.1\n"
                    "echo \"srun rc=$?\"\n");
  ASSERT_GT(job, 0);
  auto out_path = fsx_ / ("torch-" + std::to_string(job) + ".out");
  auto last_step = [&] {
    int step = 0;
    for (const auto& j : json_lines(out_path)) step = std::max(step, j.value("step", 0));
    return step;
  };
  ASSERT_TRUE(wait_until([&] { return last_step() >= 12; }, 120s)) << read_text(out_path);
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1", "--kind",
                   "crash"})
                .exit_code,
            0);
  ASSERT_TRUE(wait_job_end(job, 240s)) << read_text(out_path);

  std::string output = read_text(out_path);
  EXPECT_NE(output.find("srun rc=0"), std::string::npos) << output;
  std::vector<json> starts;
  std::map<int, double> first_run_loss, resumed_loss;
  json done;
  for (const auto& j : json_lines(out_path)) {
    if (j.value("start", false)) starts.push_back(j);
    if (j.contains("step")) {
      (starts.size() == 1 ? first_run_loss : resumed_loss)[j["step"].get<int>()] = j["loss"];
    }
    if (j.value("done", false)) done = j;
  }
  ASSERT_EQ(starts.size(), 2u) << output;
  EXPECT_TRUE(starts[0]["resumed_from"].is_null()) << output;
  ASSERT_TRUE(starts[1]["resumed_from"].is_number_integer()) << output;
  int resumed_from = starts[1]["resumed_from"];
  EXPECT_GE(resumed_from, 10) << output;
  EXPECT_EQ(resumed_from % 5, 0) << output;
  EXPECT_EQ(starts[1]["auto_resume_count"], 1) << output;
  EXPECT_NE(starts[1]["reason"].get<std::string>().find("worker-1"), std::string::npos) << output;
  ASSERT_FALSE(resumed_loss.empty()) << output;
  EXPECT_EQ(resumed_loss.begin()->first, resumed_from + 1) << output;
  // Same batches (seeded per step and rank), same weights and optimizer state (restored
  // exactly by torch.load), the same two-rank sum in gloo: every step both runs made has
  // the same loss, to the last digit logged.
  const int first_run_last = first_run_loss.rbegin()->first;
  ASSERT_GT(first_run_last, resumed_from)
      << "the crash came before any step was re-made: " << output;
  for (int step = resumed_from + 1; step <= first_run_last; ++step) {
    ASSERT_TRUE(first_run_loss.count(step) && resumed_loss.count(step))
        << "step " << step << output;
    EXPECT_EQ(resumed_loss[step], first_run_loss[step]) << "step " << step;
  }
  EXPECT_LT(resumed_loss.begin()->second, first_run_loss.begin()->second) << output;
  EXPECT_EQ(done.value("final_step", 0), 60) << output;
  EXPECT_EQ(status(job)["ResumeCount"], 1);
}

// endure-train under srun --auto-resume=1 with its checkpoints on /fsx: the node running it
// crashes, endure replaces it, and the trainer starts again from its newest checkpoint,
// every re-made step with the loss the first run logged, to the end.
class LlamaAutoResume : public AutoResume {
 protected:
  // Runs the trainer as the one task of a job of `nodes` nodes (on `node`; "": wherever
  // the job runs, which after a requeue may be another node), crashes the node it runs on
  // at step 25 and waits for the job's end. Fills starts_ and checks the losses.
  void run_through_a_crash(int nodes, const std::string& node) {
    start(2, endured_config_);
    ASSERT_NO_FATAL_FAILURE(prepare_training_data());
    const std::string n = std::to_string(nodes);
    job_ = submit_script(
        "train.sbatch",
        "#!/bin/bash\n#SBATCH -N" + n + " --output=/fsx/train-%j.out --open-mode=append\n" +
            job_environment_ + "srun --auto-resume=1 -N1 " + (node.empty() ? "" : "-w " + node) +
            " /opt/endure/bin/endure-train "
            "--data /fsx/data --model tiny "
            "--dim 128 --n-heads 4 --n-kv-heads 4 --seq-len 128 --batch 8 --threads 1 --steps 400 "
            "--warmup 10 --lr 1e-3 --min-lr 1e-4 --eval-every 100 " +
            ckpt_flags_ +
            " --ckpt-every 10 --log /fsx/train.jsonl >/dev/null\n"
            "echo \"srun rc=$?\"\n");
    ASSERT_GT(job_, 0);
    const auto log_path = fsx_ / "train.jsonl";
    const auto out_path = fsx_ / ("train-" + std::to_string(job_) + ".out");
    auto last_step = [&] {
      int64_t step = 0;
      for (const auto& j : json_lines(log_path)) {
        if (j.contains("loss")) step = std::max<int64_t>(step, j["step"]);
      }
      return step;
    };
    // A checkpoint of step 20 or later committed in the tier a resume will need first: its
    // write runs beside training at idle priority, and on a loaded machine it may still be
    // under way at step 25.
    ASSERT_TRUE(wait_until([&] { return last_step() >= 25 && committed_from_20_(); }, 120s))
        << read_text(out_path) << read_text(log_path);
    crashed_ = node.empty() ? batch_host(job_) : node;
    ASSERT_FALSE(crashed_.empty());
    ASSERT_NO_FATAL_FAILURE(crash(crashed_));
    ASSERT_TRUE(wait_job_end(job_, 300s)) << read_text(out_path) << read_text(log_path);

    output_ = read_text(out_path) + read_text(log_path);
    EXPECT_NE(output_.find("srun rc=0"), std::string::npos) << output_;
    std::map<int64_t, double> first_run_loss;
    json done;
    for (const auto& j : json_lines(log_path)) {
      if (j.value("start", false)) starts_.push_back(j);
      if (j.contains("loss")) {
        const int64_t step = j["step"];
        if (starts_.size() == 1) {
          first_run_loss[step] = j["loss"];
        } else if (first_run_loss.count(step)) {
          EXPECT_EQ(j["loss"].get<double>(), first_run_loss[step]) << "step " << step;
        }
      }
      if (j.value("done", false)) done = j;
    }
    ASSERT_EQ(starts_.size(), 2u) << output_;
    EXPECT_TRUE(starts_[0]["resumed_from"].is_null()) << output_;
    ASSERT_TRUE(starts_[1]["resumed_from"].is_number_integer()) << output_;
    EXPECT_GE(starts_[1]["resumed_from"].get<int>(), 20) << output_;
    EXPECT_EQ(starts_[1]["resumed_from"].get<int>() % 10, 0) << output_;
    EXPECT_EQ(done.value("final_step", 0), 400) << output_;
  }

  // Where the trainer keeps its checkpoints, whether a step from 20 on is committed there,
  // and lines of the job script before srun (its environment).
  std::string ckpt_flags_ = "--ckpt-dir /fsx/ckpt";
  std::function<bool()> committed_from_20_ = [this] {
    return std::filesystem::exists(fsx_ / "ckpt" / "step-000000000020" / "MANIFEST.json");
  };
  std::string job_environment_;
  json endured_config_ = json::object();
  long long job_ = 0;
  std::string crashed_;  // the node the trainer ran on
  std::vector<json> starts_;
  std::string output_;
};

// A one-node job: its node is its batch host, so the job is requeued under its id.
TEST_F(LlamaAutoResume, OnTheBatchHostTheJobIsRequeuedAndResumes) {
  ASSERT_NO_FATAL_FAILURE(run_through_a_crash(1, ""));
  EXPECT_EQ(starts_[1]["slurm_restart_count"], 1) << starts_[1].dump();
  EXPECT_EQ(starts_[1]["auto_resume_count"], 1) << starts_[1].dump();
  auto st = status(job_);
  EXPECT_EQ(st["Mode"], "Requeue") << st.dump();
  EXPECT_EQ(st["ResumeCount"], 1) << st.dump();
  EXPECT_NE(st["Reason"].get<std::string>().find(crashed_), std::string::npos) << st.dump();
}

// A two-node job running the trainer on its second node: the step is re-run in place, in
// the same job, with no requeue.
TEST_F(LlamaAutoResume, OnAnotherNodeTheStepIsReRunInPlace) {
  ASSERT_NO_FATAL_FAILURE(run_through_a_crash(2, "worker-1"));
  EXPECT_EQ(starts_[1]["slurm_restart_count"], 0) << starts_[1].dump();
  EXPECT_EQ(starts_[1]["auto_resume_count"], 1) << starts_[1].dump();
  EXPECT_NE(starts_[1]["auto_resume_reason"].get<std::string>().find("worker-1"), std::string::npos)
      << starts_[1].dump();
  auto st = status(job_);
  EXPECT_EQ(st["Mode"], "Expand") << st.dump();
  EXPECT_EQ(st["ResumeCount"], 1) << st.dump();

  // The trainer's rank 0 reported its lines to endured with the node's job credential: the
  // run, both tries and every step are there with nothing run beside the job.
  auto runs = e_->call("ListTrainingRuns", {{"ClusterName", name_}});
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ((*runs)["TrainingRuns"].size(), 1u) << runs->dump();
  const json& run = (*runs)["TrainingRuns"][0];
  EXPECT_EQ(run["JobId"], job_) << run.dump();
  EXPECT_EQ(run["LastStep"], 400) << run.dump();
  EXPECT_EQ(run["Resumes"], 1) << run.dump();
  EXPECT_EQ(run["Status"], "Done") << run.dump();
  EXPECT_GT(run["Mfu"].get<double>(), 0) << run.dump();
  auto curve = e_->call("GetTrainingMetrics", {{"ClusterName", name_}, {"JobId", job_}});
  ASSERT_TRUE(curve.ok()) << curve.error().message;
  // Every step from the checkpoint resumed to the end (the crash may take the first try's
  // last second of step lines with it; its start line went out at once).
  const json& points = (*curve)["Points"];
  const int resumed = starts_[1]["resumed_from"];
  ASSERT_GE(points.size(), 400u - resumed);
  EXPECT_EQ(points.back()["Step"], 400);
  EXPECT_EQ(points[points.size() - (400 - resumed)]["Step"], resumed + 1);
  ASSERT_EQ((*curve)["Starts"].size(), 2u) << (*curve)["Starts"].dump();
  EXPECT_EQ((*curve)["Starts"][1]["ResumedFrom"], starts_[1]["resumed_from"]);
  EXPECT_EQ((*curve)["Starts"][1]["Resume"], 1);
  EXPECT_FALSE((*curve)["Checkpoints"].empty());
  auto jobs = e_->call("ListClusterJobs", {{"ClusterName", name_}});
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_EQ((*jobs)["Jobs"].size(), 1u) << jobs->dump();
  EXPECT_EQ((*jobs)["Jobs"][0]["Resumes"], 1) << jobs->dump();
}

// A cluster whose lifecycle scripts come from an S3 bucket (SourceS3Uri s3://..., endured
// reaching the bucket through its S3 settings), and endure-train keeping its checkpoints on
// the node's own disk (/local) with the S3 tier behind it: the node crashes, endure replaces
// it from the same lifecycle snapshot, and the replacement's disk is empty, so the trainer
// resumes from S3, every re-made step with the first run's loss.
TEST_F(LlamaAutoResume, WithLifecycleAndCheckpointsInS3TheReplacementResumesFromTheBucket) {
  if (auto why = S3Server::unavailable_reason(); !why.empty()) SKIP_UNLESS_CI(why);
  constexpr const char* kBucket = "endure-e2e";
  S3Server server({kBucket});
  ASSERT_TRUE(server.start());
  auto client = s3::S3Client::create(server.config());
  ASSERT_TRUE(client) << client.error().message;
  for (const auto& f : std::filesystem::directory_iterator(base_lifecycle_dir())) {
    auto text = fs::read_file(f.path());
    ASSERT_TRUE(text);
    ASSERT_TRUE((*client)->put_object(kBucket, "lifecycle/" + f.path().filename().string(), *text));
  }
  // endured reads the bucket through its settings (config.json), its environment holding
  // no AWS variable; the job's trainer through the AWS environment of its script.
  TempDir aws_dir("endure-e2e-aws");
  std::ofstream(aws_dir.path() / "credentials")
      << "[e2e]\naws_access_key_id = " << S3Server::kAccessKey
      << "\naws_secret_access_key = " << S3Server::kSecretKey << "\n";
  endured_config_ = {{"S3EndpointUrl", server.endpoint_url()},
                     {"S3Region", "us-east-1"},
                     {"S3CredentialsFile", (aws_dir.path() / "credentials").string()},
                     {"S3Profile", "e2e"}};
  ScopedEnv no_aws({{"AWS_ENDPOINT_URL", std::nullopt},
                    {"AWS_ENDPOINT_URL_S3", std::nullopt},
                    {"AWS_ACCESS_KEY_ID", std::nullopt},
                    {"AWS_SECRET_ACCESS_KEY", std::nullopt},
                    {"AWS_SESSION_TOKEN", std::nullopt},
                    {"AWS_PROFILE", std::nullopt}});
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"AWS_ENDPOINT_URL", server.endpoint_url()},
           {"AWS_ACCESS_KEY_ID", S3Server::kAccessKey},
           {"AWS_SECRET_ACCESS_KEY", S3Server::kSecretKey},
           {"AWS_REGION", "us-east-1"}}) {
    job_environment_ += "export " + name + "=" + value + "\n";
  }
  lifecycle_source_ = std::string("s3://") + kBucket + "/lifecycle";
  ckpt_flags_ = std::string("--ckpt-dir /local/ckpt --ckpt-s3 s3://") + kBucket + "/train";
  // A save due while the bucket still takes an earlier one replaces it there: step 20 may
  // be skipped for 30.
  committed_from_20_ = [&] {
    const std::string steps = "train/step-";  // then 12 digits, '/', the step's objects
    auto objects = (*client)->list_objects(kBucket, steps);
    if (!objects) return false;
    for (const auto& o : *objects) {
      const auto manifest = o.key.find("/MANIFEST.json");
      if (manifest != std::string::npos &&
          std::stoll(o.key.substr(steps.size(), manifest - steps.size())) >= 20) {
        return true;
      }
    }
    return false;
  };

  ASSERT_NO_FATAL_FAILURE(run_through_a_crash(1, ""));
  EXPECT_EQ(starts_[1]["resumed_tier"], "s3") << starts_[1].dump();
  EXPECT_EQ(starts_[1]["slurm_restart_count"], 1) << starts_[1].dump();
  // Every node, the replacement too, ran the bucket's scripts from the snapshot endured
  // took at creation: one snapshot (the bucket never changed), holding the scripts put there.
  const auto cache = e_->home() / "lifecycle-s3";
  ASSERT_TRUE(std::filesystem::is_directory(cache)) << cache << ": no s3:// source was fetched";
  std::vector<std::filesystem::path> snapshots;
  for (const auto& source : std::filesystem::directory_iterator(cache)) {
    if (!source.is_directory()) continue;
    for (const auto& snapshot : std::filesystem::directory_iterator(source.path())) {
      if (s3::is_lifecycle_snapshot(snapshot.path())) snapshots.push_back(snapshot.path());
    }
  }
  ASSERT_EQ(snapshots.size(), 1u) << "snapshots under " << cache;
  EXPECT_EQ(read_text(snapshots[0] / "on_create.sh"),
            read_text(base_lifecycle_dir() / "on_create.sh"));
  auto nodes = e_->call("ListClusterNodes", {{"ClusterName", name_}});
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  for (const auto& n : (*nodes)["ClusterNodeSummaries"]) {
    EXPECT_EQ(n["InstanceStatus"]["Status"], "Running") << n.dump();
  }
}

}  // namespace
}  // namespace endure::test
