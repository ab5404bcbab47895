// The Slurm of a simulated cluster, for bench/scale only: answers the few Slurm commands
// endured runs inside a cluster's nodes (sinfo, squeue, scontrol) from a table of node
// states, instantly. It stands in for slurmctld where this machine cannot hold 10,000
// slurmds; Slurm's own cost is therefore not part of what bench/scale measures.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/process.h"

namespace endure::bench {

class SimulatedSlurm {
 public:
  // Whether a node name has a booted machine: its slurmd "registered".
  using Registered = std::function<bool(const std::string& node_name)>;

  // Takes the node list of a slurm.conf endured wrote (its NodeName lines).
  void load_conf(const std::string& slurm_conf);

  // A node's slurmd registered (its machine booted): a node set down comes back, as
  // endured's slurm.conf has ReturnToService=2; a drain stays.
  void registered(const std::string& node_name);

  // A machine of the cluster stopped: sinfo's answer must be made again.
  void machine_stopped() { sinfo_.clear(); }

  // Runs one Slurm command as if on a node of the cluster. node_up: the node it runs on
  // is booted and powered on (its own slurmd answers).
  process::Output run(const std::vector<std::string>& argv, bool node_up,
                      const Registered& registered);

 private:
  struct Node {
    std::string address;
    std::string hostname;
    int cpus = 1;
    std::string state = "idle";  // idle or down, as scontrol set it
    bool drain = false;
    std::string reason;
  };

  std::string sinfo_json(const Registered& registered) const;
  process::Output update(const std::vector<std::string>& argv);

  std::vector<std::string> order_;  // node names in the conf's order
  // sinfo's last answer, "" once a state changed: made once, not at every pass, so that
  // this stand-in's cost does not count as endured's (a real sinfo runs in another process).
  std::string sinfo_;
  std::map<std::string, Node> nodes_;
};

}  // namespace endure::bench
