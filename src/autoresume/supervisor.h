// endure-auto-resume: the supervisor that srun's auto_resume.so plugin turns an
// `srun --auto-resume=1 ...` into. It runs the same srun command line, and when it fails
// asks endured whether a node fault explains it; if so it waits until endured has made the
// job whole again (the faulty nodes replaced and back in the job) and runs it once more,
// in the same job, with ENDURE_AUTO_RESUME_COUNT and ENDURE_AUTO_RESUME_REASON set. An
// application failure on healthy nodes is not re-run: it exits with srun's status.
#pragma once

#include <string>
#include <vector>

#include "api/node_contract.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::autoresume {

inline constexpr const char* kCountEnv = "ENDURE_AUTO_RESUME_COUNT";
inline constexpr const char* kReasonEnv = "ENDURE_AUTO_RESUME_REASON";

// What the node tells the supervisor (node::kAutoResumeConfigPath).
struct SupervisorConfig {
  std::string endpoint;
  std::string ca_file;  // with an https endpoint: endured's CA
  std::string cluster_name;
  std::string token;
  int max_resumes = 3;
  double poll_seconds = 0.25;
  // How long endured may take to decide whether a failure was a node fault.
  double decide_timeout_seconds = 60;
  // How long to wait for the job to be whole again.
  double ready_timeout_seconds = 960;

  static Result<SupervisorConfig> from_json(const json& j);
};

struct SupervisedStep {
  std::string srun_exe;               // the srun binary
  std::vector<std::string> srun_argv;  // its argv, argv[0] included
  long long job_id = 0;
  std::vector<std::string> nodes;  // the job's nodes
};

// Runs the step until it succeeds, fails on its own, or runs out of resumes; returns the
// exit status for the supervisor to exit with (srun's, or 128+signal).
int supervise(const SupervisorConfig& config, SupervisedStep step);

}  // namespace endure::autoresume
