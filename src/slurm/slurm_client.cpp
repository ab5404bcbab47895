#include "slurm/slurm_client.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "api/codec.h"
#include "common/json.h"
#include "slurm/hostlist.h"

namespace endure::slurm {
namespace {

using namespace std::chrono_literals;

Error command_error(const std::string& what, const process::Output& out) {
  std::string detail = out.timed_out ? "timed out" : "exit " + std::to_string(out.exit_code);
  std::string text = out.err.empty() ? out.out : out.err;
  if (text.size() > 400) text = text.substr(text.size() - 400);
  return make_error("SlurmError", what + " failed (" + detail + "): " + text);
}

// The entries of a list in Slurm's JSON output ("nodes", "jobs"), each an object: another
// shape (another Slurm's) is an error naming it, never a guess.
Result<const json*> entries(const json& doc, const std::string& command, const char* list) {
  auto all = doc.find(list);
  if (all == doc.end() || !all->is_array()) {
    return make_error("SlurmError", command + ": " + list + ": must be an array");
  }
  for (size_t i = 0; i < all->size(); ++i) {
    if (!(*all)[i].is_object()) {
      return make_error("SlurmError",
                        command + ": " + list + "[" + std::to_string(i) + "]: must be an object");
    }
  }
  return &*all;
}

// Reads entry[key] into out when present (out keeps its default when absent), or an error
// naming the entry's field and the type it must have.
template <class T>
Status field(const json& entry, const char* key, const std::string& where, T& out) {
  if (auto e = api::codec::decode_if_present(entry, key, out, where)) return make_error("SlurmError", *e);
  return {};
}

}  // namespace

bool NodeState::in_service() const {
  static const char* kBad[] = {"NOT_RESPONDING", "DRAIN", "FAIL", "POWERED_DOWN", "REBOOT_REQUESTED"};
  if (state != "idle" && state != "allocated" && state != "mixed") return false;
  for (const auto& f : flags) {
    for (const char* bad : kBad) {
      if (f == bad) return false;
    }
  }
  return true;
}

bool NodeState::has_flag(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool NodeState::registered() const {
  return state != "down" && state != "unknown" && state != "future" && !has_flag("NOT_RESPONDING");
}

Status SlurmClient::down_and_drain(const std::string& node, const std::string& reason) const {
  auto down = run_({"scontrol", "update", "nodename=" + node, "state=down", "reason=" + reason}, 15s);
  if (down.exit_code != 0) return command_error("scontrol update state=down " + node, down);
  return drain(node, reason);
}

Status SlurmClient::drain(const std::string& node, const std::string& reason) const {
  auto out = run_({"scontrol", "update", "nodename=" + node, "state=drain", "reason=" + reason}, 15s);
  if (out.exit_code != 0) return command_error("scontrol update state=drain " + node, out);
  return {};
}

Status SlurmClient::resume(const std::string& node) const {
  auto out = run_({"scontrol", "update", "nodename=" + node, "state=resume"}, 15s);
  if (out.exit_code != 0) return command_error("scontrol update state=resume " + node, out);
  return {};
}

Status SlurmClient::move_node(const std::string& node, const std::string& address,
                              const std::string& hostname) const {
  auto out = run_({"scontrol", "update", "nodename=" + node, "nodeaddr=" + address,
                   "nodehostname=" + hostname},
                  15s);
  if (out.exit_code != 0) return command_error("scontrol update nodeaddr " + node, out);
  return {};
}

Status SlurmClient::create_maintenance_reservation(const std::string& name,
                                                   const std::vector<std::string>& nodes) const {
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  auto out = run_({"scontrol", "create", "reservation", "ReservationName=" + name, "Nodes=" + list,
                   "StartTime=now", "Duration=UNLIMITED", "Users=root", "Flags=MAINT,IGNORE_JOBS"},
                  15s);
  if (out.exit_code != 0) return command_error("scontrol create reservation " + name, out);
  return {};
}

Status SlurmClient::delete_reservation(const std::string& name) const {
  auto out = run_({"scontrol", "delete", "reservation=" + name}, 15s);
  if (out.exit_code != 0 && out.err.find("not found") == std::string::npos &&
      out.err.find("Invalid") == std::string::npos) {
    return command_error("scontrol delete reservation " + name, out);
  }
  return {};
}

Result<std::vector<NodeState>> SlurmClient::nodes() const {
  auto out = run_({"sinfo", "--json"}, 15s);
  if (out.exit_code != 0) return command_error("sinfo --json", out);
  auto doc = json::parse(out.out, nullptr, false);
  if (!doc.is_object() || !doc.contains("nodes")) {
    return make_error("SlurmError", "sinfo --json: unexpected output");
  }
  auto list = entries(doc, "sinfo --json", "nodes");
  if (!list) return list.error();
  std::vector<NodeState> nodes;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const json& n = (**list)[i];
    const std::string where = "sinfo --json: nodes[" + std::to_string(i) + "]";
    NodeState s;
    for (Status read :
         {field(n, "name", where, s.name), field(n, "state", where, s.state),
          field(n, "state_flags", where, s.flags), field(n, "reason", where, s.reason),
          field(n, "address", where, s.address), field(n, "hostname", where, s.hostname),
          field(n, "cpus", where, s.cpus), field(n, "alloc_cpus", where, s.alloc_cpus)}) {
      if (!read) return read.error();
    }
    // sinfo lists a node once per partition it is in.
    if (std::none_of(nodes.begin(), nodes.end(), [&](auto& x) { return x.name == s.name; })) {
      nodes.push_back(std::move(s));
    }
  }
  return nodes;
}

bool SlurmClient::controller_up() const { return controller_answers(15s); }

bool SlurmClient::controller_answers(std::chrono::milliseconds timeout) const {
  auto out = run_({"scontrol", "ping"}, timeout);
  return out.exit_code == 0 && out.out.find("is UP") != std::string::npos;
}

bool SlurmClient::slurmd_answers(std::chrono::milliseconds timeout) const {
  return run_({"scontrol", "show", "slurmd"}, timeout).exit_code == 0;
}

Status SlurmClient::reconfigure() const {
  auto out = run_({"scontrol", "reconfigure"}, 30s);
  if (out.exit_code != 0) return command_error("scontrol reconfigure", out);
  return {};
}

Status SlurmClient::restart_controller() const {
  // Stop: ask it to save state and exit, then wait until its process is gone.
  run_({"scontrol", "shutdown", "slurmctld"}, 30s);
  auto gone = run_({"/bin/bash", "-c",
                    "for i in $(seq 200); do "
                    "p=$(cat /run/slurm/slurmctld.pid 2>/dev/null) || exit 0; "
                    "[ -n \"$p\" ] && [ -d /proc/$p ] || exit 0; sleep 0.1; done; exit 1"},
                   30s);
  if (gone.exit_code != 0) return command_error("waiting for slurmctld to stop", gone);
  return start_controller();
}

bool SlurmClient::controller_running() const {
  auto out = run_({"/bin/bash", "-c",
                   "p=$(cat /run/slurm/slurmctld.pid 2>/dev/null) && [ -n \"$p\" ] && "
                   "[ \"$(cat /proc/$p/comm 2>/dev/null)\" = slurmctld ] && "
                   "! grep -q '^State:.*zombie' /proc/$p/status"},
                  10s);
  return out.exit_code == 0;
}

Status SlurmClient::start_controller() const {
  auto start = run_({"slurmctld"}, 30s);
  if (start.exit_code != 0) return command_error("slurmctld", start);
  for (int i = 0; i < 100; ++i) {
    if (controller_up()) return {};
    std::this_thread::sleep_for(200ms);
  }
  return make_error("SlurmError", "slurmctld did not answer within 20 s of its start");
}

Result<std::vector<JobState>> SlurmClient::jobs() const {
  auto out = run_({"squeue", "--json"}, 15s);
  if (out.exit_code != 0) return command_error("squeue --json", out);
  auto doc = json::parse(out.out, nullptr, false);
  if (!doc.is_object() || !doc.contains("jobs")) {
    return make_error("SlurmError", "squeue --json: unexpected output");
  }
  auto list = entries(doc, "squeue --json", "jobs");
  if (!list) return list.error();
  std::vector<JobState> jobs;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const json& j = (**list)[i];
    const std::string where = "squeue --json: jobs[" + std::to_string(i) + "]";
    JobState job;
    std::string nodes;
    for (Status read :
         {field(j, "job_id", where, job.id), field(j, "job_state", where, job.state),
          field(j, "batch_host", where, job.batch_host),
          field(j, "partition", where, job.partition), field(j, "user_id", where, job.user_id),
          field(j, "requeue", where, job.requeue),
          field(j, "restart_cnt", where, job.restart_count),
          field(j, "batch_flag", where, job.batch), field(j, "nodes", where, nodes)}) {
      if (!read) return read.error();
    }
    if (auto hosts = expand_hostlist(nodes); hosts && !nodes.empty()) job.nodes = *hosts;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Status SlurmClient::expand_job(const JobState& job, const std::vector<std::string>& nodes) const {
  std::string id = std::to_string(job.id);
  std::vector<std::string> salloc = {"salloc", "-N", std::to_string(nodes.size()), "-w",
                                     join_hostlist(nodes), "--dependency=expand:" + id,
                                     "--no-shell", "--immediate=10", "--job-name=expand-" + id,
                                     "--uid=" + std::to_string(job.user_id)};
  if (!job.partition.empty()) salloc.push_back("--partition=" + job.partition);
  auto alloc = run_(salloc, 20s);
  // salloc says "Granted job allocation N" on stderr.
  const std::string granted = "Granted job allocation ";
  std::string text = alloc.err + alloc.out;
  size_t at = text.find(granted);
  if (alloc.exit_code != 0 || at == std::string::npos) {
    return command_error("salloc of " + join_hostlist(nodes) + " to expand job " + id, alloc);
  }
  std::string expander = std::to_string(std::atoll(text.c_str() + at + granted.size()));
  auto give = run_({"scontrol", "update", "jobid=" + expander, "NumNodes=0"}, 15s);
  if (give.exit_code != 0) {
    run_({"scancel", expander}, 15s);
    return command_error("scontrol update jobid=" + expander + " NumNodes=0", give);
  }
  // Without accounting, scontrol answers "the DB index is being set", retries after a
  // fixed 5 s and fails again, although its first request has merged the nodes: it is cut
  // short once its request is out, then the job's node list is the judge. The cut is time
  // a job waiting on its nodes loses, so it starts at 80 ms and doubles up to a second while
  // the job has not taken them (on a slow, loaded machine a cut may come before scontrol
  // sent its request: it is simply made again).
  auto cut = 80ms;
  for (int attempt = 0; attempt < 20; ++attempt, cut = std::min(cut * 2, 1000ms)) {
    run_({"scontrol", "update", "jobid=" + id, "NumNodes=ALL"}, cut);
    auto now = jobs();
    if (now) {
      for (const auto& j : *now) {
        if (j.id != job.id) continue;
        bool all = std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) {
          return std::find(j.nodes.begin(), j.nodes.end(), n) != j.nodes.end();
        });
        if (all) return {};
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  run_({"scancel", expander}, 15s);
  return make_error("SlurmError", "job " + id + " did not take " + join_hostlist(nodes) +
                                      " from allocation " + expander);
}

Result<std::vector<std::string>> SlurmClient::steps_on(long long job_id,
                                                       const std::vector<std::string>& nodes) const {
  // squeue has no --json for steps in 22.05: one "ID|NODES" line per step.
  auto out = run_({"squeue", "-s", "-h", "-j", std::to_string(job_id), "-o", "%i|%N"}, 15s);
  if (out.exit_code != 0) return command_error("squeue -s -j " + std::to_string(job_id), out);
  std::vector<std::string> steps;
  size_t start = 0;
  while (start < out.out.size()) {
    size_t end = out.out.find('\n', start);
    std::string line = out.out.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? out.out.size() : end + 1;
    size_t bar = line.find('|');
    size_t dot = line.find('.');
    if (bar == std::string::npos || dot == std::string::npos || dot > bar) continue;
    std::string step = line.substr(dot + 1, bar - dot - 1);
    if (step.empty() || !std::isdigit(static_cast<unsigned char>(step[0]))) continue;
    auto hosts = expand_hostlist(line.substr(bar + 1));
    if (!hosts) continue;
    if (std::any_of(hosts->begin(), hosts->end(), [&](const std::string& h) {
          return std::find(nodes.begin(), nodes.end(), h) != nodes.end();
        })) {
      steps.push_back(line.substr(0, bar));
    }
  }
  return steps;
}

Status SlurmClient::requeue_job(long long job_id) const {
  auto out = run_({"scontrol", "requeue", std::to_string(job_id)}, 15s);
  if (out.exit_code != 0) return command_error("scontrol requeue " + std::to_string(job_id), out);
  return {};
}

Status SlurmClient::start_job_now(long long job_id) const {
  auto out = run_({"scontrol", "update", "jobid=" + std::to_string(job_id), "StartTime=now"}, 15s);
  if (out.exit_code != 0) {
    return command_error("scontrol update StartTime=now " + std::to_string(job_id), out);
  }
  return {};
}

Status SlurmClient::cancel_job_step(const std::string& step_id) const {
  auto out = run_({"scancel", step_id}, 15s);
  if (out.exit_code != 0) return command_error("scancel " + step_id, out);
  return {};
}

Status SlurmClient::cancel_job(long long job_id, const std::string& why) const {
  auto out = run_({"scancel", "--full", std::to_string(job_id)}, 15s);
  if (out.exit_code != 0) return command_error("scancel " + std::to_string(job_id) + " (" + why + ")", out);
  return {};
}

}  // namespace endure::slurm
