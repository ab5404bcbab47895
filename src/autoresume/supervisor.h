// endure-auto-resume: the supervisor that srun's auto_resume.so plugin turns an
// `srun --auto-resume=1 ...` into. It runs the same srun command line, and when it fails
// asks endured whether a node fault explains it; if so it waits until endured has made the
// job whole again (the faulty nodes replaced and back in the job) and runs it once more,
// in the same job, with ENDURE_AUTO_RESUME_COUNT and ENDURE_AUTO_RESUME_REASON set. An
// application failure on healthy nodes is not re-run: it exits with srun's status. A step
// that failed while slurmctld did not answer is run again once it does, not as a resume.
#pragma once

#include <string>
#include <vector>

#include "api/node_contract.h"
#include "autoresume/supervisor_config.h"
#include "common/json.h"
#include "common/result.h"

namespace endure::autoresume {

inline constexpr const char* kCountEnv = "ENDURE_AUTO_RESUME_COUNT";
inline constexpr const char* kReasonEnv = "ENDURE_AUTO_RESUME_REASON";

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
