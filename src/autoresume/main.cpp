// endure-auto-resume --srun SRUN -- ARGV...: started by auto_resume.so in place of an
// `srun --auto-resume=1`; see supervisor.h.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/node_contract.h"
#include "autoresume/supervisor.h"
#include "common/fs.h"
#include "slurm/hostlist.h"

using namespace endure;

int main(int argc, char** argv) {
  autoresume::SupervisedStep step;
  int i = 1;
  if (argc > 2 && std::strcmp(argv[1], "--srun") == 0) {
    step.srun_exe = argv[2];
    i = 3;
  }
  if (i >= argc || std::strcmp(argv[i], "--") != 0 || i + 1 >= argc || step.srun_exe.empty()) {
    std::fprintf(stderr, "usage: endure-auto-resume --srun SRUN -- SRUN-ARGV...\n"
                         "  (started by srun --auto-resume=1; not meant to be run by hand)\n");
    return 2;
  }
  step.srun_argv.assign(argv + i + 1, argv + argc);
  const char* job = std::getenv("SLURM_JOB_ID");
  step.job_id = job ? std::atoll(job) : 0;
  const char* nodelist = std::getenv("SLURM_JOB_NODELIST");
  if (nodelist) {
    if (auto hosts = slurm::expand_hostlist(nodelist); hosts) step.nodes = *hosts;
  }

  Result<autoresume::SupervisorConfig> config = autoresume::load_supervisor_config();
  if (!config || step.job_id <= 0 || step.nodes.empty()) {
    std::fprintf(stderr, "auto_resume: %s: running the step without auto-resume\n",
                 !config ? config.error().message.c_str() : "no SLURM_JOB_ID/SLURM_JOB_NODELIST");
    autoresume::SupervisorConfig none;
    none.endpoint = "";
    return autoresume::supervise(none, step);
  }
  return autoresume::supervise(*config, step);
}
