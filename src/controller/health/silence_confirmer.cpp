#include "controller/health/silence_confirmer.h"

#include "common/ids.h"
#include "common/log.h"
#include "controller/core/node_decisions.h"
#include "controller/core/transition.h"
#include "controller/slurm/slurm_in_node.h"

namespace endure::controller {

using namespace std::chrono_literals;

namespace {

// A daemon slower than this to answer counts as not answering: a live one answers in ms.
constexpr auto kDaemonTimeout = 1000ms;

}  // namespace

SilenceConfirmer::SilenceConfirmer(store::Store& store, provider::NodeProvider& provider,
                                   const Config& config, HealthMonitor& health)
    : store_(store), provider_(provider), config_(config), health_(health) {}

std::optional<Verdict> SilenceConfirmer::confirm(const store::InstanceRow& row,
                                                 bool is_controller_node) {
  const SilenceLimits limits = silence_limits(config_);
  SilenceObservation seen;
  seen.silent_for =
      health_.silent_for(row.instance_id, std::max(row.launch_time, row.recovery_since));
  if (!is_suspect(seen.silent_for, limits)) {
    suspects_.erase(row.instance_id);  // spoke again: a later silence is a new one
    return std::nullopt;
  }
  auto& suspect = suspects_[row.instance_id];
  seen.probe = provider_.probe(row.cluster_id, row.instance_id);
  if (seen.probe.machine == provider::MachineState::kAlive ||
      seen.probe.machine == provider::MachineState::kUnknown) {
    slurm::SlurmClient in_node = slurm_in_node(provider_, row.cluster_id, row.instance_id);
    seen.daemon_answers = is_controller_node ? in_node.controller_answers(kDaemonTimeout)
                                             : in_node.slurmd_answers(kDaemonTimeout);
  }
  double now = ids::now_seconds();
  if (suspect.agent_restarted > 0) seen.since_agent_restart = now - suspect.agent_restarted;

  SilenceDecision d = decide_silence(seen, limits);
  switch (d.step) {
    case SilenceStep::kQuiet:
      return std::nullopt;
    case SilenceStep::kVerdict:
      suspects_.erase(row.instance_id);
      return Verdict{*d.fault, d.text};
    case SilenceStep::kRestartAgent: {
      Status s = provider_.restart_agent(row.cluster_id, row.instance_id);
      if (!log::ok(s, row.node_name + ": restart the agent")) return std::nullopt;
      suspect.agent_restarted = now;
      suspect.told = true;
      (void)apply(store_, row, agent_restarted(d.text));
      return std::nullopt;
    }
    case SilenceStep::kWait:
      if (!suspect.told) {
        suspect.told = true;
        (void)apply(store_, row, controller::suspect(d.text));
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace endure::controller
