#include "simulated_slurm.h"

#include <sstream>

#include "common/json.h"

namespace endure::bench {
namespace {

process::Output ok(std::string out = "") { return {0, false, std::move(out), ""}; }

process::Output failed(std::string err) { return {1, false, "", std::move(err)}; }

// "key=value" -> value of key, or "" when argv has none.
std::string arg(const std::vector<std::string>& argv, const std::string& key) {
  for (const auto& a : argv) {
    if (a.size() > key.size() && a.compare(0, key.size(), key) == 0 && a[key.size()] == '=') {
      return a.substr(key.size() + 1);
    }
  }
  return "";
}

}  // namespace

void SimulatedSlurm::load_conf(const std::string& slurm_conf) {
  std::istringstream lines(slurm_conf);
  std::string line;
  std::vector<std::string> order;
  while (std::getline(lines, line)) {
    if (line.rfind("NodeName=", 0) != 0) continue;
    std::istringstream words(line);
    std::string word;
    std::vector<std::string> argv;
    while (words >> word) argv.push_back(word);
    std::string name = arg(argv, "NodeName");
    Node& node = nodes_[name];  // a known node keeps its state across a reconfigure
    node.address = arg(argv, "NodeAddr");
    node.hostname = arg(argv, "NodeHostname");
    if (auto cpus = arg(argv, "CPUs"); !cpus.empty()) node.cpus = std::stoi(cpus);
    order.push_back(name);
  }
  order_ = std::move(order);
  sinfo_.clear();
}

void SimulatedSlurm::registered(const std::string& node_name) {
  sinfo_.clear();
  if (auto it = nodes_.find(node_name); it != nodes_.end() && it->second.state == "down") {
    it->second.state = "idle";
  }
}

std::string SimulatedSlurm::sinfo_json(const Registered& registered) const {
  json nodes = json::array();
  for (const auto& name : order_) {
    const Node& n = nodes_.at(name);
    json flags = json::array();
    if (n.drain) flags.push_back("DRAIN");
    if (!registered(name)) flags.push_back("NOT_RESPONDING");
    nodes.push_back({{"name", name},
                     {"state", registered(name) || n.state == "down" ? n.state : "unknown"},
                     {"state_flags", flags},
                     {"reason", n.reason},
                     {"address", n.address},
                     {"hostname", n.hostname},
                     {"cpus", n.cpus},
                     {"alloc_cpus", 0}});
  }
  return json{{"nodes", nodes}}.dump();
}

process::Output SimulatedSlurm::update(const std::vector<std::string>& argv) {
  std::string name = arg(argv, "nodename");
  if (name.empty()) return ok();  // a job's update: no jobs run here
  sinfo_.clear();
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return failed("Invalid node name specified");
  Node& n = it->second;
  std::string state = arg(argv, "state");
  if (state == "down") {
    n.state = "down";
    n.reason = arg(argv, "reason");
  } else if (state == "drain") {
    n.drain = true;
    n.reason = arg(argv, "reason");
  } else if (state == "resume") {
    n.state = "idle";
    n.drain = false;
    n.reason.clear();
  }
  if (auto address = arg(argv, "nodeaddr"); !address.empty()) n.address = address;
  if (auto host = arg(argv, "nodehostname"); !host.empty()) n.hostname = host;
  return ok();
}

process::Output SimulatedSlurm::run(const std::vector<std::string>& argv, bool node_up,
                                    const Registered& registered) {
  if (!node_up) return {255, false, "", "the simulated machine is off"};
  if (argv.empty()) return failed("no command");
  const std::string& cmd = argv[0];
  const std::string sub = argv.size() > 1 ? argv[1] : "";
  if (cmd == "sinfo") {
    if (sinfo_.empty()) sinfo_ = sinfo_json(registered);
    return ok(sinfo_);
  }
  if (cmd == "squeue") return ok(sub == "--json" ? R"({"jobs":[]})" : "");
  if (cmd == "scontrol" && sub == "ping") return ok("Slurmctld(primary) at simulated is UP\n");
  if (cmd == "scontrol" && sub == "update") return update(argv);
  // show slurmd, reconfigure, shutdown, reservations, requeue; slurmctld's start; the
  // shell lines endured runs in a node (signal slurmd, wait for a pid): all succeed.
  if (cmd == "scontrol" || cmd == "scancel" || cmd == "slurmctld" || cmd == "sh" ||
      cmd == "/bin/bash" || cmd == "bash") {
    return ok();
  }
  return {127, false, "", cmd + ": not a command the simulated machine runs"};
}

}  // namespace endure::bench
