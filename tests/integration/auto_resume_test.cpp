// srun --auto-resume=1 end to end on a real cluster: a batch job's step is killed by a real
// fault (made on the node through the sources detection reads), endured replaces or
// reboots the node, and the same step runs again in the same job from its checkpoint.
#include <gtest/gtest.h>

#include "auto_resume_fixture.h"

namespace endure::test {
namespace {

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
  auto injected =
      e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", c.node, "--kind", c.kind});
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
  for (const auto& s : json_lines(fsx_ / "run" / "starts.log"))
    EXPECT_EQ(s["count"], 0) << s.dump();
  EXPECT_EQ(status(job)["State"], "None");
  for (const auto& [name, node] : nodes_by_name(e, name_))
    EXPECT_EQ(node.status, "Running") << name;
  // Why it was not re-run is in the timeline (and on /metrics).
  auto declined = find_event(events_after(e, name_, 0), "", "AutoResumeDeclined");
  ASSERT_FALSE(declined.is_null());
  EXPECT_NE(declined["Description"].get<std::string>().find("exit status 3"), std::string::npos)
      << declined.dump();
}

// slurmctld stops (as it would after a crash, but with its state saved: a slurmctld killed
// within a second of a job's start may come back without that start, which is Slurm's own
// recovery, not endure's) while a job is about to start its step: endured starts slurmctld
// again within a pass, and the step runs, with no resume counted: no node failed.
TEST_F(AutoResume, AStoppedSlurmctldIsStartedAgainAndTheStepRuns) {
  start(1);
  Endured& e = *e_;
  long long job = submit_script("ctld.sbatch",
                                "#!/bin/bash\n#SBATCH -N1 --output=/fsx/ctld-%j.out\n"
                                "touch /fsx/waiting; while [ ! -e /fsx/go ]; do sleep 0.1; done\n"
                                "srun --auto-resume=1 -N1 bash -c 'echo the step ran'\n"
                                "echo \"srun rc=$?\"\n");
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(fsx_ / "waiting"); }, 60s));
  long long mark = last_event_id(e, name_);
  auto stop = e.exec(name_, "controller-0", "scontrol shutdown slurmctld");
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  std::ofstream(fsx_ / "go") << "";
  ASSERT_TRUE(wait_until(
      [&] {
        return !find_event(events_after(e, name_, mark), "controller-0", "SlurmctldRestarted")
                    .is_null();
      },
      60s));
  ASSERT_TRUE(wait_job_end(job, 120s)) << job_output(job, "ctld");
  const std::string output = job_output(job, "ctld");
  EXPECT_NE(output.find("the step ran"), std::string::npos) << output;
  EXPECT_NE(output.find("srun rc=0"), std::string::npos) << output;
  EXPECT_EQ(status(job)["State"], "None") << output;
}

TEST_F(AutoResume, TheResumeBoundHolds) {
  start(kRanks, {{"AutoResumeMaxResumes", 1}});
  Endured& e = *e_;
  long long job = submit(kRanks * 30, "--unit-seconds 0.3");
  ASSERT_GT(job, 0);
  ASSERT_TRUE(wait_progress(2));
  long long mark = last_event_id(e, name_);
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-1", "--kind",
                   "crash"})
                .exit_code,
            0);
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
                   "crash"})
                .exit_code,
            0);
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
        return done_units(fsx_ / "run-a", 1).size() >= 2 &&
               done_units(fsx_ / "run-b", 0).size() >= 2;
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
  HttpClient stranger(Endpoint::loopback(e.port()), "not-the-token");
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
                   "crash"})
                .exit_code,
            0);
  // Let the failure reach the supervisor, then take endured away for a while.
  ASSERT_TRUE(
      wait_until([&] { return job_output(job).find("auto_resume:") != std::string::npos; }, 30s))
      << job_output(job);
  e.kill9();
  reap_orphan_instances();
  std::this_thread::sleep_for(3s);
  e.start();
  ASSERT_TRUE(wait_job_end(job)) << job_output(job) << status(job).dump();
  expect_ended_well(job, units, 1);
}

}  // namespace
}  // namespace endure::test
