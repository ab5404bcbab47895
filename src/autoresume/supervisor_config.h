// The node's job credential file (node::kAutoResumeConfigPath): where endured is and the
// cluster's auto-resume token. srun's supervisor reads it, and so does endure-train's
// rank 0 to report its lines (ReportTrainingMetrics).
#pragma once

#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure::autoresume {

// What the node tells the supervisor (api::AutoResumeConfig), and its own pace.
struct SupervisorConfig {
  std::string endpoint;
  std::string ca_file;  // with an https endpoint: endured's CA
  std::string cluster_name;
  std::string token;
  int max_resumes = 3;
  // Between questions to endured while a failure is judged and the job made whole: every
  // pause here is time the job stands still (one call costs endured well under a ms).
  double poll_seconds = 0.05;
  // Between `scontrol ping`s while slurmctld is away: each is a process and an RPC.
  double slurmctld_poll_seconds = 0.5;
  // How long endured may take to decide whether a failure was a node fault.
  double decide_timeout_seconds = 60;
  // How long to wait for the job to be whole again.
  double ready_timeout_seconds = 960;

  static Result<SupervisorConfig> from_json(const json& j);
};

// The file at $ENDURE_AUTO_RESUME_CONFIG, else node::kAutoResumeConfigPath.
Result<SupervisorConfig> load_supervisor_config();

}  // namespace endure::autoresume
