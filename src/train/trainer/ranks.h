// Which rank of how many this endure-train is, and its communicator: srun's environment
// (SLURM_PROCID of SLURM_NTASKS) and a rendezvous in a folder every rank sees, keyed by the
// job, step and try, so that a re-run meets none of the last try's state even when the node
// of rank 0 is gone.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "endure/comm.h"

namespace endure::train {

struct Ranks {
  int rank = 0;
  int world = 1;
  std::string key;      // the rendezvous key (world > 1)
  std::string address;  // where this rank listens for its peers
};

// From the environment: SLURM_PROCID and SLURM_NTASKS (absent: one rank); the address is
// ENDURE_COMM_ADDRESS, else this node's Slurm name (SLURMD_NODENAME, which each node's
// /etc/hosts resolves to its own address), else 127.0.0.1. "ValidationException" names a
// variable that is not a number in range.
Result<Ranks> ranks_from(const std::map<std::string, std::string>& env);
std::map<std::string, std::string> environment();

// The node of every rank, by rank, as Slurm's default (block) distribution places them:
// the step's nodes (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST) in order, each with its
// count of SLURM_STEP_TASKS_PER_NODE ("2(x3),1"), else SLURM_TASKS_PER_NODE. Empty outside
// Slurm; "ValidationException" naming the variable when they do not place `world` ranks.
Result<std::vector<std::string>> rank_nodes_from(const std::map<std::string, std::string>& env,
                                                 int world);

// The communicator of these ranks, met in `folder` (made when missing). One rank: no
// rendezvous at all.
Result<std::unique_ptr<comm::Communicator>> connect_ranks(const Ranks& ranks,
                                                          const std::filesystem::path& folder,
                                                          std::chrono::milliseconds timeout);

}  // namespace endure::train
