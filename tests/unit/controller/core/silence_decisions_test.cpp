// decide_silence under a fake clock: every combination of (heartbeat silent or not,
// provider says alive / stopped / gone, Slurm's daemon answers or not), and the rules
// around them (a starved agent, the restart gap, unconfirmed silence, an unknown probe).
#include <gtest/gtest.h>

#include <tuple>

#include "controller/core/node_decisions.h"

namespace endure::controller {
namespace {

using provider::AgentState;
using provider::MachineState;

const SilenceLimits kSilenceLimits{1.0, 5.0, 5.0};

SilenceObservation seen(double silent_for, MachineState machine, std::optional<bool> answers,
                        AgentState agent = AgentState::kSleeping) {
  SilenceObservation s;
  s.silent_for = silent_for;
  s.probe.machine = machine;
  s.probe.agent = agent;
  s.probe.detail = "probe";
  s.daemon_answers = answers;
  return s;
}

struct Case {
  bool silent;
  MachineState machine;
  bool answers;
  SilenceStep step;
  const char* fault;
};

class EveryCombination : public ::testing::TestWithParam<Case> {};

TEST_P(EveryCombination, DecidesAsTheTableSays) {
  const Case& c = GetParam();
  auto d = decide_silence(seen(c.silent ? 1.2 : 0.6, c.machine, c.answers), kSilenceLimits);
  EXPECT_EQ(d.step, c.step) << d.text;
  EXPECT_STREQ(d.fault ? api::name(*d.fault) : "", c.fault);
  if (c.step != SilenceStep::kQuiet) {
    EXPECT_NE(d.text.find("probe"), std::string::npos) << d.text;
  }
}

// Silence of 1.2 s: past the suspect threshold (1 s), short of the hang limit (5 s).
INSTANTIATE_TEST_SUITE_P(
    SilenceDecisions, EveryCombination,
    ::testing::Values(
        // Not silent: nothing is asked, whatever the rest would say.
        Case{false, MachineState::kAlive, true, SilenceStep::kQuiet, ""},
        Case{false, MachineState::kAlive, false, SilenceStep::kQuiet, ""},
        Case{false, MachineState::kStopped, true, SilenceStep::kQuiet, ""},
        Case{false, MachineState::kStopped, false, SilenceStep::kQuiet, ""},
        Case{false, MachineState::kGone, true, SilenceStep::kQuiet, ""},
        Case{false, MachineState::kGone, false, SilenceStep::kQuiet, ""},
        // Silent, alive and slurmd answers: the agent alone is silent.
        Case{true, MachineState::kAlive, true, SilenceStep::kRestartAgent, ""},
        // Silent, alive, slurmd silent too: unconfirmed; the agent is restarted meanwhile.
        Case{true, MachineState::kAlive, false, SilenceStep::kRestartAgent, ""},
        // Every process stopped: hung, whatever a daemon's socket says.
        Case{true, MachineState::kStopped, true, SilenceStep::kVerdict, "hang"},
        Case{true, MachineState::kStopped, false, SilenceStep::kVerdict, "hang"},
        // Nothing left: a crash.
        Case{true, MachineState::kGone, true, SilenceStep::kVerdict, "crash"},
        Case{true, MachineState::kGone, false, SilenceStep::kVerdict, "crash"}),
    [](const auto& info) {
      const Case& c = info.param;
      return std::string(c.silent ? "Silent" : "Speaking") + "_" + to_string(c.machine) + "_" +
             (c.answers ? "DaemonAnswers" : "DaemonSilent");
    });

TEST(SilenceDecisions, TheSuspectThresholdIsInclusive) {
  EXPECT_FALSE(is_suspect(0.999, kSilenceLimits));
  EXPECT_TRUE(is_suspect(1.0, kSilenceLimits));
}

TEST(SilenceDecisions, AStarvedAgentIsNeverJudged) {
  for (double silent : {1.2, 5.0, 60.0, 3600.0}) {
    for (auto answers :
         {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()}) {
      auto d = decide_silence(seen(silent, MachineState::kAlive, answers, AgentState::kRunnable),
                              kSilenceLimits);
      EXPECT_EQ(d.step, SilenceStep::kWait) << silent << " s: " << d.text;
      EXPECT_NE(d.text.find("starved"), std::string::npos);
    }
  }
}

TEST(SilenceDecisions, AnAgentRestartedIsGivenTimeBeforeTheNext) {
  auto s = seen(3.0, MachineState::kAlive, true, AgentState::kStopped);
  s.since_agent_restart = 2.0;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kWait);
  s.since_agent_restart = 5.0;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kRestartAgent);
}

TEST(SilenceDecisions, ALiveNodeWhoseDaemonAnswersIsNeverJudgedHowEverLongItsAgentIsSilent) {
  auto s = seen(600.0, MachineState::kAlive, true, AgentState::kGone);
  s.since_agent_restart = 1.0;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kWait);
}

TEST(SilenceDecisions, NothingAnsweringIsAHangOnlyAfterTheHangLimit) {
  auto s = seen(4.9, MachineState::kAlive, false, AgentState::kSleeping);
  s.since_agent_restart = 1.0;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kWait);
  s.silent_for = 5.0;
  auto d = decide_silence(s, kSilenceLimits);
  EXPECT_EQ(d.step, SilenceStep::kVerdict);
  EXPECT_EQ(d.fault, api::FaultKind::kHang);
  EXPECT_NE(d.text.find("no heartbeat for 5.0 s"), std::string::npos) << d.text;
}

TEST(SilenceDecisions, AnUnknownProbeNeverRestartsAndWaitsForTheHangLimit) {
  // A host the provider cannot reach: no restart through it; Slurm decides, or time does.
  auto s = seen(2.0, MachineState::kUnknown, true, AgentState::kUnknown);
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kWait);
  s.daemon_answers = false;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kWait);
  s.silent_for = 5.5;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).fault, api::FaultKind::kHang);
  s.daemon_answers = true;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kWait) << "slurmd answers: alive";
}

TEST(SilenceDecisions, ANodeWithoutADaemonIsJudgedByItsAgentAndTime) {
  auto s = seen(1.5, MachineState::kAlive, std::nullopt, AgentState::kStopped);
  EXPECT_EQ(decide_silence(s, kSilenceLimits).step, SilenceStep::kRestartAgent);
  s.since_agent_restart = 1.0;
  s.silent_for = 6.0;
  EXPECT_EQ(decide_silence(s, kSilenceLimits).fault, api::FaultKind::kHang);
}

TEST(SilenceDecisions, LimitsComeFromTheSettings) {
  Config config;
  auto limits = silence_limits(config);
  EXPECT_EQ(limits.suspect_after, config.suspect_after_seconds);
  EXPECT_EQ(limits.hang_after, config.heartbeat_timeout_seconds);
  EXPECT_GE(limits.suspect_after, 2 * config.heartbeat_seconds) << "about two heartbeats";
}

}  // namespace
}  // namespace endure::controller
