// endured killed in the middle of an auto-resume grant: started again, the failed step is
// re-run exactly once and the job ends well.
#include <gtest/gtest.h>

#include "auto_resume_fixture.h"

namespace endure::test {
namespace {

// endured kills itself (SIGKILL) right after it stored a grant (the supervisor's call gets
// no answer and asks again) or right after it grew the job back onto the repaired node
// (the Ready record is not written yet). The step is re-run once, the resume counted once.
class AutoResumeCrash : public AutoResume, public ::testing::WithParamInterface<std::string> {};

TEST_P(AutoResumeCrash, ControllerKilledMidGrantResumesTheStepOnce) {
  const int units = kRanks * 12;
  long long job = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(units, &job));
  Endured& e = *e_;
  e.stop();
  reap_orphan_instances();
  e.start(GetParam());
  long long mark = last_event_id(e, name_);
  ASSERT_EQ(e.cli({"debug", "inject-fault", "--cluster-name", name_, "--node", "worker-2", "--kind",
                   "crash"})
                .exit_code,
            0);
  ASSERT_TRUE(e.wait_exit(120s)) << "endured never reached " << GetParam();
  reap_orphan_instances();
  e.start();
  ASSERT_TRUE(wait_job_end(job)) << job_output(job) << status(job).dump();
  expect_ended_well(job, units, 1);
  EXPECT_EQ(status(job)["State"], "Ready") << status(job).dump();
  std::map<std::string, int> counts;
  for (const auto& ev : events_after(e, name_, mark)) counts[ev.value("EventType", "")] += 1;
  EXPECT_EQ(counts["AutoResumeRequested"], 1);
  EXPECT_EQ(counts["AutoResumeReady"], 1);
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, AutoResumeCrash,
                         ::testing::Values("autoresume.after_grant", "autoresume.after_expand"),
                         [](const auto& info) {
                           return info.param.substr(info.param.find('.') + 1);
                         });

}  // namespace
}  // namespace endure::test
