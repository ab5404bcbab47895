// srun --auto-resume=1 end to end on a real cluster: a batch job's step is killed by a real
// fault (made on the node through the sources detection reads), endured replaces or
// reboots the node, and the same step runs again in the same job from its checkpoint.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "cluster_fixture.h"
#include "support/text_files.h"

namespace endure::test {
namespace {

constexpr int kRanks = 4;

// The cluster's shared folder as the host sees it (every node's /fsx).
std::filesystem::path fsx_on_host(Endured& e, const std::string& cluster) {
  auto d = e.call("DescribeCluster", {{"ClusterName", cluster}});
  std::string arn = d ? (*d)["ClusterArn"].get<std::string>() : "";
  return e.home() / "clusters" / arn.substr(arn.rfind('/') + 1) / "fsx";
}


std::vector<int> done_units(const std::filesystem::path& dir, int rank) {
  std::vector<int> out;
  std::ifstream in(dir / ("done-" + std::to_string(rank) + ".log"));
  int u;
  while (in >> u) out.push_back(u);
  return out;
}


class AutoResume : public ClusterFixture {
 protected:

  void start(int workers, const json& config = json::object()) {
    start_cluster("it-resume", workers, "Automatic", config);
    fsx_ = fsx_on_host(*e_, name_);
    std::filesystem::copy_file(source_dir() / "tests/integration/jobs/units.py", fsx_ / "units.py");
  }

  // Writes `script` to /fsx/<file> and submits it from the controller; returns the job's
  // id (0 when sbatch refused it).
  long long submit_script(const std::string& file, const std::string& script) {
    std::ofstream(fsx_ / file) << script;
    auto out = e_->exec(name_, "controller-0", "sbatch --parsable /fsx/" + file);
    EXPECT_EQ(out.exit_code, 0) << out.err;
    return std::atoll(out.out.c_str());
  }

  // Submits the units job (units.py on every node through srun --auto-resume=1) and
  // returns its id.
  long long submit(int units, const std::string& worker_args = "", int nodes = kRanks) {
    return submit_units("units", "run", nodes, units, worker_args);
  }

  // The units job as /fsx/<name>.sbatch, its progress in /fsx/<dir>, its output in
  // /fsx/<name>-<job>.out; sbatch_args choose its nodes.
  long long submit_units(const std::string& name, const std::string& dir, int nodes, int units,
                         const std::string& worker_args, const std::string& sbatch_args = "") {
    std::filesystem::create_directories(fsx_ / dir);
    const std::string n = std::to_string(nodes);
    return submit_script(name + ".sbatch",
                         "#!/bin/bash\n#SBATCH -N" + n + " " + sbatch_args + " --output=/fsx/" + name +
                             "-%j.out\n" + "srun --auto-resume=1 -N" + n +
                             " python3 /fsx/units.py --dir /fsx/" + dir + " --units " +
                             std::to_string(units) + " " + worker_args + "\n" +
                             "echo \"srun rc=$?\"\n");
  }

  // Crashes the node (a real fault, through inject-fault).
  void crash(const std::string& node) {
    auto out = e_->cli({"debug", "inject-fault", "--cluster-name", name_, "--node", node, "--kind",
                        "crash"});
    ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  }

  // The node that runs the job's batch script.
  std::string batch_host(long long job) {
    auto out = e_->exec(name_, "controller-0", "squeue -h -j " + std::to_string(job) + " -O BatchHost");
    return out.out.substr(0, out.out.find_first_of(" \n"));
  }

  // Slurm's state of an ended job (kept for MinJobAge after its end).
  std::string job_state(long long job) {
    auto out = e_->exec(name_, "controller-0", "scontrol show job -o " + std::to_string(job));
    auto at = out.out.find("JobState=");
    return at == std::string::npos ? "" : out.out.substr(at + 9, out.out.find(' ', at) - at - 9);
  }

  // A cluster of kRanks workers running the units job, every rank past its second unit.
  void start_running_job(int units, long long* job) {
    start(kRanks);
    *job = submit(units);
    ASSERT_GT(*job, 0);
    ASSERT_TRUE(wait_progress(2)) << job_output(*job);
  }

  // Waits until every rank has done at least `units` units.
  bool wait_progress(size_t units, std::chrono::seconds timeout = 60s) {
    return wait_until(
        [&] {
          for (int r = 0; r < kRanks; ++r) {
            if (done_units(fsx_ / "run", r).size() < units) return false;
          }
          return true;
        },
        timeout);
  }

  bool wait_job_end(long long job, std::chrono::seconds timeout = 180s) {
    return wait_until(
        [&] {
          auto out = e_->exec(name_, "controller-0", "squeue -h -j " + std::to_string(job) + " -o %T");
          return out.exit_code == 0 && out.out.empty();
        },
        timeout);
  }

  std::string job_output(long long job, const std::string& name = "units") {
    return read_text(fsx_ / (name + "-" + std::to_string(job) + ".out"));
  }

  json status(long long job) {
    auto r = e_->call("AutoResumeStatus", {{"ClusterName", name_}, {"JobId", job}});
    return r ? *r : json{{"error", r.error().message}};
  }

  // Every unit done, none more than twice, at most one redone unit per rank and fault.
  void expect_units_done_once_past_checkpoints(int units, int faults) {
    std::multiset<int> all;
    for (int r = 0; r < kRanks; ++r) {
      auto done = done_units(fsx_ / "run", r);
      std::set<int> distinct(done.begin(), done.end());
      EXPECT_LE(done.size() - distinct.size(), static_cast<size_t>(faults))
          << "rank " << r << " redid more than the unit in flight at the fault";
      all.insert(done.begin(), done.end());
    }
    for (int u = 0; u < units; ++u) {
      EXPECT_GE(all.count(u), 1u) << "unit " << u << " never done";
      EXPECT_LE(all.count(u), static_cast<size_t>(1 + faults)) << "unit " << u;
    }
  }

  std::filesystem::path fsx_;
};

struct ResumeCase {
  std::string kind;  // what inject-fault makes
  std::string node;  // where
  std::string action;
};
void PrintTo(const ResumeCase& c, std::ostream* os) { *os << c.kind << " on " << c.node; }

class AutoResumeFault : public AutoResume, public ::testing::WithParamInterface<ResumeCase> {};

TEST_P(AutoResumeFault, ReRunsTheStepInTheSameJobOnTheRepairedNode) {
  const auto& c = GetParam();
  const int units = kRanks * 12;
  long long job = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(units, &job));
  Endured& e = *e_;
  auto before = nodes_by_name(e, name_);
  long long mark = last_event_id(e, name_);
  auto injected = e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", c.node,
                         "--kind", c.kind});
  ASSERT_EQ(injected.exit_code, 0) << injected.out << injected.err;
  ASSERT_TRUE(wait_job_end(job)) << job_output(job) << status(job).dump();

  std::string output = job_output(job);
  EXPECT_NE(output.find("srun rc=0"), std::string::npos) << output;
  auto after = nodes_by_name(e, name_);
  if (c.action == "Replace") {
    EXPECT_NE(after[c.node].id, before[c.node].id) << "a new instance under the same hostname";
  } else {
    EXPECT_EQ(after[c.node].id, before[c.node].id) << "a reboot keeps the instance";
  }
  EXPECT_EQ(after[c.node].status, "Running");
  auto events = events_after(e, name_, mark);
  EXPECT_FALSE(find_event(events, c.node, "NodeUnhealthy").is_null()) << events.dump(2);

  // The same job ran the step twice: first with count 0, then every rank with count 1.
  auto starts = json_lines(fsx_ / "run" / "starts.log");
  std::map<int, int> by_count;
  for (const auto& s : starts) {
    EXPECT_EQ(s["job"], std::to_string(job));
    by_count[s["count"].get<int>()] += 1;
    if (s["count"] == 1) {
      EXPECT_NE(s["reason"].get<std::string>().find(c.node), std::string::npos) << s.dump();
    }
  }
  EXPECT_EQ(by_count[0], kRanks) << json(starts).dump(1);
  EXPECT_EQ(by_count[1], kRanks) << json(starts).dump(1) << output << events.dump(1);
  EXPECT_EQ(by_count.size(), 2u) << json(starts).dump(1);
  auto st = status(job);
  EXPECT_EQ(st["ResumeCount"], 1) << st.dump();
  EXPECT_EQ(st["State"], "Ready") << st.dump();
  expect_units_done_once_past_checkpoints(units, 1);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, AutoResumeFault,
    ::testing::Values(ResumeCase{"crash", "worker-2", "Replace"},
                      ResumeCase{"hang", "worker-2", "Reboot"},
                      ResumeCase{"xid", "worker-2", "Replace"},
                      // The first node: the batch host, where a rendezvous usually lives.
                      ResumeCase{"crash", "worker-0", "Replace"}),
    [](const auto& info) { return info.param.kind + "_" + info.param.node.substr(7); });

TEST_F(AutoResume, AnApplicationCrashOnHealthyNodesIsNotReRun) {
  start(kRanks);
  Endured& e = *e_;
  long long job = submit(kRanks * 6, "--fail-rank 1 --fail-at 5 --exit-code 3");
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_job_end(job, 90s)) << job_output(job);
  std::string output = job_output(job);
  EXPECT_NE(output.find("srun rc=3"), std::string::npos) << output;
  EXPECT_NE(output.find("not re-run"), std::string::npos) << output;
  for (const auto& s : json_lines(fsx_ / "run" / "starts.log")) EXPECT_EQ(s["count"], 0) << s.dump();
  EXPECT_EQ(status(job)["State"], "None");
  for (const auto& [name, node] : nodes_by_name(e, name_)) EXPECT_EQ(node.status, "Running") << name;
}

TEST_F(AutoResume, TheResumeBoundHolds) {
  start(kRanks, {{"AutoResumeMaxResumes", 1}});
  Endured& e = *e_;
  long long job = submit(kRanks * 30, "--unit-seconds 0.3");
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_progress(2));
  long long mark = last_event_id(e, name_);
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1", "--kind",
                   "crash"}).exit_code, 0);
  // The re-run starts, then the second fault finds the bound spent.
  ASSERT_TRUE(wait_until(
      [&] {
        for (const auto& s : json_lines(fsx_ / "run" / "starts.log")) {
          if (s["count"] == 1) return true;
        }
        return false;
      },
      60s))
      << job_output(job);
  ASSERT_TRUE(wait_returned(e, name_, "worker-1", mark));
  std::this_thread::sleep_for(2s);
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-3", "--kind",
                   "crash"}).exit_code, 0);
  ASSERT_TRUE(wait_job_end(job, 90s)) << job_output(job);
  std::string output = job_output(job);
  EXPECT_EQ(output.find("srun rc=0"), std::string::npos) << output;
  EXPECT_NE(output.find("AutoResumeMaxResumes"), std::string::npos) << output;
  int reruns = 0;
  for (const auto& s : json_lines(fsx_ / "run" / "starts.log")) reruns += s["count"] == 1;
  EXPECT_EQ(reruns, kRanks);
  EXPECT_EQ(status(job)["ResumeCount"], 1);
}

// The bound on the requeue path: the batch host dies, the job is requeued under its id
// (resume 1 of 1); its new batch host dies too, and the job is cancelled, not requeued.
TEST_F(AutoResume, TheResumeBoundHoldsOnTheRequeuePath) {
  start(2, {{"AutoResumeMaxResumes", 1}});
  Endured& e = *e_;
  long long job = submit(2 * 200, "--unit-seconds 0.5", 2);
  ASSERT_GT(job, 0);
  const auto run = fsx_ / "run";
  ASSERT_TRUE(wait_until([&] { return done_units(run, 0).size() >= 2; }, 60s)) << job_output(job);
  std::string first = batch_host(job);
  ASSERT_EQ(first, "worker-0");
  ASSERT_NO_FATAL_FAILURE(crash(first));
  auto restarted = [&] {
    int n = 0;
    for (const auto& s : json_lines(run / "starts.log")) n += s["restart"] == 1;
    return n;
  };
  ASSERT_TRUE(wait_until([&] { return restarted() == 2; }, 120s))
      << json(json_lines(run / "starts.log")).dump(1) << status(job).dump();
  EXPECT_EQ(status(job)["Mode"], "Requeue") << status(job).dump();
  std::string second = batch_host(job);
  ASSERT_FALSE(second.empty());
  long long mark = last_event_id(e, name_);
  ASSERT_NO_FATAL_FAILURE(crash(second));
  ASSERT_TRUE(wait_job_end(job, 120s)) << job_output(job) << status(job).dump();

  EXPECT_EQ(job_state(job), "CANCELLED");
  EXPECT_EQ(job_output(job).find("srun rc=0"), std::string::npos) << job_output(job);
  for (const auto& s : json_lines(run / "starts.log")) EXPECT_LE(s["restart"], 1) << s.dump();
  EXPECT_EQ(restarted(), 2);
  auto st = status(job);
  EXPECT_EQ(st["ResumeCount"], 1) << st.dump();
  EXPECT_EQ(st["State"], "Failed") << st.dump();
  auto exhausted = find_event(events_after(e, name_, mark), "", "AutoResumeExhausted");
  ASSERT_FALSE(exhausted.is_null()) << events_after(e, name_, mark).dump(1);
  EXPECT_NE(exhausted["Description"].get<std::string>().find("used its resumes"), std::string::npos)
      << exhausted.dump();
}

// AutoResumeMaxResumes 0: a fault never re-runs a step (job a: worker-1 dies under its step)
// nor requeues a job (job b: its batch host worker-2 dies); the nodes are repaired all the same.
TEST_F(AutoResume, AResumeBoundOfZeroNeverResumes) {
  start(3, {{"AutoResumeMaxResumes", 0}});
  Endured& e = *e_;
  long long a = submit_units("a", "run-a", 2, 2 * 200, "--unit-seconds 0.5", "-w worker-[0-1]");
  long long b = submit_units("b", "run-b", 1, 200, "--unit-seconds 0.5", "-w worker-2");
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  ASSERT_TRUE(wait_until(
      [&] {
        return done_units(fsx_ / "run-a", 1).size() >= 2 && done_units(fsx_ / "run-b", 0).size() >= 2;
      },
      60s))
      << job_output(a, "a") << job_output(b, "b");
  long long mark = last_event_id(e, name_);
  ASSERT_NO_FATAL_FAILURE(crash("worker-1"));
  ASSERT_NO_FATAL_FAILURE(crash("worker-2"));
  ASSERT_TRUE(wait_job_end(a, 120s)) << job_output(a, "a") << status(a).dump();
  ASSERT_TRUE(wait_job_end(b, 120s)) << job_output(b, "b") << status(b).dump();

  std::string out_a = job_output(a, "a");
  EXPECT_NE(out_a.find("srun rc="), std::string::npos) << out_a;
  EXPECT_EQ(out_a.find("srun rc=0"), std::string::npos) << out_a;
  EXPECT_NE(out_a.find("AutoResumeMaxResumes"), std::string::npos) << out_a;
  EXPECT_EQ(job_state(b), "CANCELLED");
  for (const char* dir : {"run-a", "run-b"}) {
    for (const auto& s : json_lines(fsx_ / dir / "starts.log")) {
      EXPECT_EQ(s["count"], 0) << dir << ": " << s.dump();
      EXPECT_EQ(s["restart"], 0) << dir << ": " << s.dump();
    }
  }
  for (long long job : {a, b}) {
    auto st = status(job);
    EXPECT_EQ(st["ResumeCount"], 0) << st.dump();
    EXPECT_EQ(st["State"], "Failed") << st.dump();
  }
  EXPECT_TRUE(wait_returned(e, name_, "worker-1", mark));
  EXPECT_TRUE(wait_returned(e, name_, "worker-2", mark));
}

TEST_F(AutoResume, TheOptionBelongsToSrun) {
  start(1);
  Endured& e = *e_;
  auto help = e.exec(name_, "controller-0", "srun --help");
  EXPECT_NE(help.out.find("--auto-resume=0|1"), std::string::npos) << help.out;
  auto sbatch = e.exec(name_, "controller-0", "sbatch --auto-resume=1 --wrap hostname");
  EXPECT_NE(sbatch.exit_code, 0);
  EXPECT_NE(sbatch.err.find("put it on the srun line"), std::string::npos) << sbatch.err;
  std::ofstream(fsx_ / "in-script.sbatch") << "#!/bin/bash\n#SBATCH --auto-resume=1\nhostname\n";
  auto in_script = e.exec(name_, "controller-0", "sbatch /fsx/in-script.sbatch");
  EXPECT_NE(in_script.exit_code, 0);
  EXPECT_NE(in_script.err.find("put it on the srun line"), std::string::npos) << in_script.err;
  auto bad = e.exec(name_, "controller-0", "srun --auto-resume=yes hostname");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("must be 0 or 1"), std::string::npos) << bad.err;
  auto outside = e.exec(name_, "controller-0", "srun --auto-resume=1 hostname");
  EXPECT_NE(outside.exit_code, 0);
  EXPECT_NE(outside.err.find("inside an allocation"), std::string::npos) << outside.err;
  auto plain = e.exec(name_, "controller-0", "srun --auto-resume=0 hostname");
  EXPECT_EQ(plain.out, "worker-0\n") << plain.err;
  // Only the cluster's token (or the operator's) may ask.
  HttpClient stranger(Endpoint{"127.0.0.1", e.port()}, "not-the-token");
  auto denied = stranger.post("/v1/AutoResumeStatus", {{"ClusterName", name_}, {"JobId", 1}});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, "Unauthorized");
}


// endured killed (kill -9) right after the fault and started again: the supervisor waits
// for it, and the stored records carry the resume through.
TEST_F(AutoResume, AControllerKilledDuringTheResumeStillResumesTheStep) {
  const int units = kRanks * 12;
  long long job = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(units, &job));
  Endured& e = *e_;
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-2", "--kind",
                   "crash"}).exit_code, 0);
  // Let the failure reach the supervisor, then take endured away for a while.
  ASSERT_TRUE(wait_until([&] { return job_output(job).find("auto_resume:") != std::string::npos; },
                         30s))
      << job_output(job);
  e.kill9();
  reap_orphan_instances();
  std::this_thread::sleep_for(3s);
  e.start();
  ASSERT_TRUE(wait_job_end(job)) << job_output(job) << status(job).dump();
  std::string output = job_output(job);
  EXPECT_NE(output.find("srun rc=0"), std::string::npos) << output;
  auto st = status(job);
  EXPECT_EQ(st["ResumeCount"], 1) << st.dump();
  int reruns = 0;
  for (const auto& s : json_lines(fsx_ / "run" / "starts.log")) reruns += s["count"] == 1;
  EXPECT_EQ(reruns, kRanks) << output;
  expect_units_done_once_past_checkpoints(units, 1);
}

// The PyTorch example (examples/pytorch/train_ddp.py, gloo, two ranks on two nodes) resumes
// through auto-resume: after a worker crash its loss goes on from the checkpointed step,
// the same loss, step for step, as the run before the crash.
TEST_F(AutoResume, ThePyTorchExampleContinuesFromItsCheckpoint) {
  start(2);
  Endured& e = *e_;
  std::filesystem::copy_file(source_dir() / "examples/pytorch/train_ddp.py", fsx_ / "train_ddp.py");
  long long job = submit_script("torch.sbatch",
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
                   "crash"}).exit_code, 0);
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
  ASSERT_GT(first_run_last, resumed_from) << "the crash came before any step was re-made: " << output;
  for (int step = resumed_from + 1; step <= first_run_last; ++step) {
    ASSERT_TRUE(first_run_loss.count(step) && resumed_loss.count(step)) << "step " << step << output;
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
  // Runs the trainer as the one task of a job of `nodes` nodes (on `node`), crashes that
  // node at step 25 and waits for the job's end. Fills starts_ and checks the losses.
  void run_through_a_crash(int nodes, const std::string& node) {
    start(2);
    const std::string data_bin = (bin_dir() / "endure-data").string();
    ASSERT_EQ(std::system((data_bin + " sample --out " + (fsx_ / "s.jsonl").string() +
                           " --bytes 300k --seed 2 >/dev/null").c_str()), 0);
    ASSERT_EQ(std::system((data_bin + " prepare --input " + (fsx_ / "s.jsonl").string() +
                           " --vocab-size 512 --out " + (fsx_ / "data").string() +
                           " --seed 2 >/dev/null").c_str()), 0);
    const std::string n = std::to_string(nodes);
    job_ = submit_script("train.sbatch",
                         "#!/bin/bash\n#SBATCH -N" + n + " --output=/fsx/train-%j.out --open-mode=append\n"
                         "srun --auto-resume=1 -N1 -w " + node + " /opt/endure/bin/endure-train "
                         "--data /fsx/data --model tiny "
                         "--dim 128 --n-heads 4 --n-kv-heads 4 --seq-len 128 --batch 8 --threads 1 --steps 400 "
                         "--warmup 10 --lr 1e-3 --min-lr 1e-4 --eval-every 100 --ckpt-dir /fsx/ckpt "
                         "--ckpt-every 10 --log /fsx/train.jsonl >/dev/null\n"
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
    ASSERT_TRUE(wait_until([&] { return last_step() >= 25; }, 120s)) << read_text(log_path);
    ASSERT_NO_FATAL_FAILURE(crash(node));
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

  long long job_ = 0;
  std::vector<json> starts_;
  std::string output_;
};

// A one-node job: its node is its batch host, so the job is requeued under its id.
TEST_F(LlamaAutoResume, OnTheBatchHostTheJobIsRequeuedAndResumes) {
  ASSERT_NO_FATAL_FAILURE(run_through_a_crash(1, "worker-0"));
  EXPECT_EQ(starts_[1]["slurm_restart_count"], 1) << starts_[1].dump();
  EXPECT_EQ(starts_[1]["auto_resume_count"], 1) << starts_[1].dump();
  auto st = status(job_);
  EXPECT_EQ(st["Mode"], "Requeue") << st.dump();
  EXPECT_EQ(st["ResumeCount"], 1) << st.dump();
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
}

}  // namespace
}  // namespace endure::test
