// Slurm's hostlist expressions ("worker-[0-3],controller-0") to and from host names.
// Needed where Slurm's own `scontrol show hostnames` is not at hand (srun's supervisor
// parses SLURM_JOB_NODELIST; endured reads squeue's "nodes").
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace endure::slurm {

// Every host of an expression, in order. Ranges keep their zero padding
// ("n[08-10]" gives n08, n09, n10). A malformed expression is an error naming it.
Result<std::vector<std::string>> expand_hostlist(const std::string& expression);

// A comma-separated list of the hosts (no bracket compression): Slurm accepts it anywhere
// a hostlist is expected.
std::string join_hostlist(const std::vector<std::string>& hosts);

}  // namespace endure::slurm
