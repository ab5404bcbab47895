// auto_resume.so: adds --auto-resume[=0|1] to srun. With --auto-resume=1 the srun (local
// context) hands itself to endure's supervisor (endure-auto-resume), which runs the same
// srun command line, asks endured when it fails whether a node fault explains it, and runs
// it again in the same job once the faulty nodes are replaced. sbatch and salloc refuse
// the option: the step, not the allocation, is what is re-run.
//
// Every SPANK hook is here; the decisions are plain functions in auto_resume_option.cpp.
// Slurm calls in with C linkage and no exception may cross back into it.
extern "C" {
#include <slurm/spank.h>
}

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "spank/auto_resume_option.h"

// SPANK_PLUGIN's symbols are const and so get internal linkage in C++: defined by hand.
extern "C" {
extern const char plugin_name[] = "auto_resume";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

using endure::spank::PluginArgs;

int g_auto_resume = 0;
PluginArgs g_args;

int on_option(int, const char* optarg, int) {
  try {
    std::string error;
    int value = endure::spank::parse_auto_resume(optarg, &error);
    if (value < 0) {
      slurm_error("auto_resume: %s", error.c_str());
      return -1;
    }
    if (value == 1 && spank_context() == S_CTX_ALLOCATOR) {
      slurm_error(
          "auto_resume: --auto-resume is an srun option: put it on the srun line inside the "
          "batch script (srun --auto-resume=1 ...), not on sbatch or salloc");
      return -1;
    }
    g_auto_resume = value;
    return 0;
  } catch (...) {
    return -1;
  }
}

struct spank_option g_option = {
    const_cast<char*>("auto-resume"), const_cast<char*>("0|1"),
    const_cast<char*>("Re-run this step in the same job when a node fault kills it, once "
                      "endure has replaced the node (default 0). See ENDURE_AUTO_RESUME_COUNT."),
    2, 0, on_option};

std::string read_all(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Replaces this srun with the supervisor; returns only on failure.
int become_supervisor() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) {
    slurm_error("auto_resume: cannot read /proc/self/exe");
    return -1;
  }
  exe[n] = '\0';
  auto srun_argv = endure::spank::split_cmdline(read_all("/proc/self/cmdline"));
  auto argv = endure::spank::supervisor_argv(g_args.supervisor, exe, srun_argv);
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  execv(raw[0], raw.data());
  slurm_error("auto_resume: cannot start the supervisor %s: %m (is endure installed on this "
              "node?)",
              g_args.supervisor.c_str());
  return -1;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    std::string error;
    if (!endure::spank::parse_plugin_args(std::vector<std::string>(av, av + ac), &g_args, &error)) {
      slurm_error("auto_resume: %s", error.c_str());
      return -1;
    }
    spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE) return 0;
    if (spank_option_register(sp, &g_option) != ESPANK_SUCCESS) {
      slurm_error("auto_resume: cannot register --auto-resume");
      return -1;
    }
    return 0;
  } catch (...) {
    return -1;
  }
}

extern "C" int slurm_spank_init_post_opt(spank_t, int, char**) {
  if (spank_context() != S_CTX_LOCAL || g_auto_resume != 1) return 0;
  if (getenv(endure::spank::kSupervisedEnv) != nullptr) return 0;  // a run of the supervisor
  if (getenv("SLURM_JOB_ID") == nullptr) {
    slurm_error(
        "auto_resume: srun --auto-resume=1 re-runs a step inside its job: run it inside an "
        "allocation (an sbatch script or salloc), not as a job of its own");
    return -1;
  }
  try {
    return become_supervisor();
  } catch (...) {
    return -1;
  }
}
