#include "controller/jobs/auto_resume_manager.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "api/codec.h"
#include "api/wire.h"
#include "common/crash_point.h"
#include "common/ids.h"
#include "common/log.h"
#include "controller/core/node_state.h"
#include "controller/nodes/node_launcher.h"
#include "slurm/hostlist.h"

namespace endure::controller {
namespace {

Result<long long> job_id_of(const json& request) {
  if (!request.contains("JobId") || !request["JobId"].is_number_integer() ||
      request["JobId"].get<long long>() <= 0) {
    return invalid("JobId: must be a positive integer");
  }
  return request["JobId"].get<long long>();
}

bool job_ended(const std::string& state) {
  return state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" &&
         state != "REQUEUED" && state != "REQUEUE_HOLD" && state != "REQUEUE_FED" &&
         state != "COMPLETING" && state != "SUSPENDED" && state != "RESIZING";
}

// Slurm keeps a step whose node died after its other tasks had ended: it holds the
// repaired node's CPUs and scancel cannot end it. Cancelled anyway, and reported so that
// the re-run overlaps it.
bool has_stale_steps(const store::ClusterRow& cluster, const slurm::SlurmClient& client,
                     long long job_id, const std::vector<std::string>& nodes) {
  auto steps = client.steps_on(job_id, nodes);
  if (!steps || steps->empty()) return false;
  for (const auto& step : *steps) {
    log::ok(client.cancel_job_step(step), cluster.name + ": cancel step " + step);
    log::info("{}: job {}: step {} of the failed run is still listed on {}", cluster.name, job_id,
              step, slurm::join_hostlist(nodes));
  }
  return true;
}

}  // namespace

json auto_resume_status_json(const std::optional<store::AutoResumeRow>& row, int max_resumes) {
  if (!row) {
    return {{"State", "None"},
            {"ResumeCount", 0},
            {"Reason", ""},
            {"Message", ""},
            {"MaxResumes", max_resumes}};
  }
  return {
      {"JobId", row->job_id},        {"State", row->state},          {"Mode", row->mode},
      {"ResumeCount", row->resumes}, {"Reason", row->reason},        {"Message", row->message},
      {"Nodes", row->nodes},         {"FaultTime", row->fault_time}, {"ReadyTime", row->ready_time},
      {"Overlap", row->overlap},     {"MaxResumes", max_resumes}};
}

AutoResumeManager::AutoResumeManager(store::Store& store, const Config& config,
                                     HealthMonitor& health)
    : store_(store), config_(config), health_(health) {}

Status AutoResumeManager::record(const store::ClusterRow& cluster, const store::AutoResumeRow& row,
                                 const std::string& type, const std::string& text) {
  std::string description = "job " + std::to_string(row.job_id) + ": " + text;
  Status s = store_.transaction([&]() -> Status {
    if (auto put = store_.put_auto_resume(row); !put) return put;
    auto ev = store_.append_event({0, cluster.id, 0, "Job", "", "", "", type, description});
    return ev ? Status{} : Status(ev.error());
  });
  if (log::ok(s, cluster.name + ": " + type))
    log::info("{}: {}: {}", cluster.name, type, description);
  return s;
}

StepNode AutoResumeManager::step_node(const std::vector<store::InstanceRow>& instances,
                                      const std::vector<store::InstanceRow>& all_rows,
                                      const std::string& name) {
  StepNode n;
  n.name = name;
  for (const auto& row : instances) {
    if (row.node_name != name) continue;
    n.known = true;
    n.status = row.status;
    n.recovery = row.recovery;
    n.launch_time = row.launch_time;
    double age = health_.heartbeat_age(row.instance_id);
    n.last_heartbeat = age < 0 ? 0 : ids::now_seconds() - age;
  }
  if (!n.known) return n;
  // A replaced node's verdict is on its earlier instance's row: every row of the slot counts.
  for (const auto& row : all_rows) {
    if (row.node_name == name && row.verdict_time > n.last_fault_time) {
      n.last_fault_time = row.verdict_time;
      n.last_fault = row.last_verdict;
    }
  }
  return n;
}

Result<StepFailure> read_step_failed(const json& request) {
  auto job = job_id_of(request);
  if (!job) return job.error();
  StepFailure f;
  f.job_id = *job;
  if (request.contains("Nodes") && request["Nodes"].is_array() && !request["Nodes"].empty()) {
    for (const auto& n : request["Nodes"]) {
      if (!n.is_string()) return invalid("Nodes: must be an array of node names");
      f.nodes.push_back(n.get<std::string>());
    }
  } else if (request.contains("NodeList") && request["NodeList"].is_string()) {
    auto hosts = slurm::expand_hostlist(request["NodeList"].get<std::string>());
    if (!hosts) return invalid("NodeList: " + hosts.error().message);
    f.nodes = *hosts;
  } else {
    return invalid("Nodes: must be a non-empty array of node names (or NodeList a hostlist)");
  }
  for (const char* field : {"StepStartTime", "FailedAt"}) {
    if (!request.contains(field) || !request[field].is_number()) {
      return invalid(std::string(field) + ": must be a time in seconds since the epoch");
    }
  }
  f.step_start = request["StepStartTime"].get<double>();
  f.failed_at = request["FailedAt"].get<double>();
  // Optional, with their types (an older supervisor sends no Resumes).
  for (auto error : {api::codec::decode_if_present(request, api::field::kResumes, f.resumes),
                     api::codec::decode_if_present(request, api::field::kSucceeded, f.succeeded),
                     api::codec::decode_if_present(request, api::field::kLackingNodes, f.lacking)}) {
    if (error) return invalid(*error);
  }
  f.exit_status = request.contains("ExitStatus") ? request["ExitStatus"].dump() : "?";
  return f;
}

Result<json> AutoResumeManager::step_failed(const store::ClusterRow& cluster, const json& request) {
  auto failure = read_step_failed(request);
  if (!failure) return failure.error();
  const long long job_id = failure->job_id;
  const std::vector<std::string>& names = failure->nodes;
  const int supervisor_resumes = failure->resumes;
  const double step_start = failure->step_start;
  const double failed_at = failure->failed_at;

  std::vector<StepNode> nodes;
  auto instances = store_.instances(cluster.id, true);
  auto all_rows = store_.instances(cluster.id, false);
  for (const auto& name : names) nodes.push_back(step_node(instances, all_rows, name));
  double settle = config_.health_check_seconds + config_.heartbeat_seconds + 0.5;
  auto row = store_.auto_resume(cluster.id, job_id);
  const double handled_until = row && row->state == "Ready" ? row->ready_time : 0;
  auto judgement = judge_step(nodes, step_start, failed_at, settle, handled_until, failure->lacking);
  json reply = {{"Decision", decision_name(judgement.decision)},
                {"Reason", judgement.reason},
                {"FaultyNodes", judgement.faulty},
                {"Resume", false},
                {"MaxResumes", config_.auto_resume_max_resumes}};
  reply["ResumeCount"] = row ? row->resumes : 0;
  if (judgement.decision != StepDecision::kFault) {
    // A step srun called successful is not held back waiting for heartbeats.
    if (failure->succeeded) {
      reply["Decision"] = decision_name(StepDecision::kHealthy);
    } else if (judgement.decision == StepDecision::kHealthy) {
      // The answer "not a node fault" is the end of this failure: said once in the event log,
      // so that the timeline and /metrics show why a job was not re-run.
      const std::string& exit = failure->exit_status;
      auto ev = store_.append_event(
          {0, cluster.id, 0, "Job", "", "", "", "AutoResumeDeclined",
           "job " + std::to_string(job_id) + ": the step failed (exit status " + exit +
               ") on healthy nodes: not a node fault, so it is not re-run"});
      (void)log::ok(ev ? Status{} : Status(ev.error()), cluster.name + ": AutoResumeDeclined");
    }
    return reply;
  }

  // The same failure asked twice (a retried call) gets the same answer.
  if (row && row->resumes > supervisor_resumes && row->state != "Failed") {
    reply["Resume"] = true;
    reply["ResumeCount"] = row->resumes;
    return reply;
  }
  store::AutoResumeRow r = row ? *row : store::AutoResumeRow{};
  r.cluster_id = cluster.id;
  r.job_id = job_id;
  if (r.resumes >= config_.auto_resume_max_resumes) {
    reply["Reason"] = judgement.reason + "; the job has used its " +
                      std::to_string(config_.auto_resume_max_resumes) +
                      " resumes (AutoResumeMaxResumes)";
    r.state = "Failed";
    r.message = "resume bound reached";
    (void)record(cluster, r, "AutoResumeExhausted", judgement.reason);
    return reply;
  }
  r.resumes += 1;
  r.state = "Waiting";
  r.mode = "Expand";
  r.reason = judgement.reason;
  r.nodes = judgement.faulty;
  r.fault_time = failed_at;
  r.ready_time = 0;
  r.message = "waiting for " + slurm::join_hostlist(judgement.faulty) + " to be back in service";
  if (auto s = record(cluster, r, "AutoResumeRequested",
                      "step failed on a node fault (" + judgement.reason + "); resume " +
                          std::to_string(r.resumes) + " of " +
                          std::to_string(config_.auto_resume_max_resumes));
      !s) {
    return s.error();
  }
  crash_point("autoresume.after_grant");
  reply["Resume"] = true;
  reply["ResumeCount"] = r.resumes;
  return reply;
}

Result<json> AutoResumeManager::status(const store::ClusterRow& cluster, const json& request) {
  auto job = job_id_of(request);
  if (!job) return job.error();
  return auto_resume_status_json(store_.auto_resume(cluster.id, *job),
                                 config_.auto_resume_max_resumes);
}

void AutoResumeManager::node_lost(const store::ClusterRow& cluster, const std::string& node,
                                  const std::string& reason, const SlurmView& slurm,
                                  const std::vector<slurm::JobState>& jobs_before) {
  if (!slurm.client) return;
  auto jobs = slurm.client->jobs();
  if (!jobs) {
    log::warn("{}: {}", cluster.name, jobs.error().message);
    return;
  }
  for (const auto& was : jobs_before) {
    if (!was.batch || was.batch_host != node || was.state != "RUNNING") continue;
    auto now = std::find_if(jobs->begin(), jobs->end(), [&](auto& j) { return j.id == was.id; });
    if (now == jobs->end() || job_ended(now->state)) continue;
    const auto& job = *now;
    // Its only node went down: Slurm failed the job (NODE_FAIL) and requeued it itself.
    const bool requeued_by_slurm = job.state == "PENDING" || job.state.rfind("REQUEUE", 0) == 0;
    auto row = store_.auto_resume(cluster.id, job.id);
    store::AutoResumeRow r = row ? *row : store::AutoResumeRow{};
    r.cluster_id = cluster.id;
    r.job_id = job.id;
    if (!job.requeue || r.resumes >= config_.auto_resume_max_resumes) {
      std::string why = !job.requeue ? "the job may not be requeued (--no-requeue)"
                                     : "the job has used its resumes";
      log::ok(slurm.client->cancel_job(job.id, why),
              cluster.name + ": cancel job " + std::to_string(job.id));
      r.state = "Failed";
      r.message = "batch host " + node + " lost; " + why + ": cancelled";
      (void)record(cluster, r, "AutoResumeExhausted", r.message);
      continue;
    }
    r.resumes += 1;
    r.state = "Waiting";
    r.mode = "Requeue";
    r.reason = node + ": " + reason;
    r.nodes = json::array({node});
    r.fault_time = ids::now_seconds();
    r.ready_time = 0;
    r.message = "batch host " + node + " lost: requeued";
    Status requeued = requeued_by_slurm ? Status{} : slurm.client->requeue_job(job.id);
    for (int attempt = 0; !requeued && attempt < 10; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      requeued = slurm.client->requeue_job(job.id);
    }
    if (!requeued) {
      log::warn("{}: {}", cluster.name, requeued.error().message);
      r.message = "batch host " + node + " lost: requeue failed: " + requeued.error().message;
    }
    (void)record(cluster, r, "AutoResumeRequested",
                 "batch host " + node + " lost (" + reason + "): job requeued; resume " +
                     std::to_string(r.resumes) + " of " +
                     std::to_string(config_.auto_resume_max_resumes));
  }
}

// Slurm sends the job's end to the node it lost, and retries while that node does not
// answer; once a replacement under the same name registers, the message reaches it. A
// requeued job (the same id) started there before that would be killed by it ("CANCELLED
// DUE TO NODE FAILURE" seconds into the new run). That is why Slurm holds a requeued job
// back; endured holds it until its lost nodes have answered for a few seconds, long enough
// for the stale message to arrive and find nothing to kill.
constexpr double kRequeueSettleSeconds = 3;

bool AutoResumeManager::requeue_settled(const store::ClusterRow& cluster,
                                        const store::AutoResumeRow& row, const SlurmView& slurm,
                                        double now) {
  const auto key = std::make_pair(cluster.id, row.job_id);
  for (const auto& name : row.nodes.get<std::vector<std::string>>()) {
    auto n = slurm.nodes.find(name);
    if (n == slurm.nodes.end() || !n->second.registered()) {
      nodes_back_since_.erase(key);
      return false;
    }
  }
  auto since = nodes_back_since_.try_emplace(key, now).first->second;
  return now - since >= kRequeueSettleSeconds;
}

void AutoResumeManager::finish(const store::ClusterRow& cluster, store::AutoResumeRow row,
                               const std::string& state, const std::string& message) {
  nodes_back_since_.erase({cluster.id, row.job_id});
  row.state = state;
  row.message = message;
  if (state == "Ready") row.ready_time = ids::now_seconds();
  (void)record(cluster, row, state == "Ready" ? "AutoResumeReady" : "AutoResumeFailed",
               state == "Ready" ? message + fmt::format(" ({:.1f} s after the failure)",
                                                        row.ready_time - row.fault_time)
                                : message);
}

std::string AutoResumeManager::still_waiting(const store::ClusterRow& cluster,
                                             const store::AutoResumeRow& row) {
  std::string out;
  auto faulty = row.nodes.get<std::vector<std::string>>();
  for (const auto& r : store_.instances(cluster.id, true)) {
    bool named = std::find(faulty.begin(), faulty.end(), r.node_name) != faulty.end();
    // A replacement with no host to go to says so (NodeLauncher::claim_hosts).
    if (named && r.status == NodeStatus::kPending && r.message.rfind(kWaitingForHost, 0) == 0) {
      out += "; " + r.node_name + ": " + r.message;
    }
  }
  return out;
}

void AutoResumeManager::reconcile(const store::ClusterRow& cluster, const SlurmView& slurm) {
  auto waiting = store_.auto_resumes(cluster.id, "Waiting");
  if (waiting.empty() || !slurm.client) return;
  auto jobs = slurm.client->jobs();
  if (!jobs) {
    log::warn("{}: {}", cluster.name, jobs.error().message);
    return;
  }
  double now = ids::now_seconds();
  for (auto& row : waiting) {
    auto job =
        std::find_if(jobs->begin(), jobs->end(), [&](auto& j) { return j.id == row.job_id; });
    if (job == jobs->end() || job_ended(job->state)) {
      finish(cluster, row, "Failed",
             "the job ended (" + (job == jobs->end() ? std::string("gone") : job->state) +
                 ") before its nodes were back");
      continue;
    }
    if (now - row.fault_time > config_.auto_resume_timeout_seconds) {
      finish(cluster, row, "Failed",
             "nodes not back in service within " +
                 std::to_string(config_.auto_resume_timeout_seconds) +
                 " s (AutoResumeTimeoutSeconds)" + still_waiting(cluster, row));
      continue;
    }
    if (row.mode == "Requeue") {
      if (job->state == "RUNNING" && job->restart_count > 0) {
        finish(cluster, row, "Ready", "requeued job runs again");
      } else if (job->state == "PENDING" && requeue_settled(cluster, row, slurm, now)) {
        // Slurm holds a requeued job back for two minutes; it need not wait that long.
        log::ok(slurm.client->start_job_now(job->id),
                cluster.name + ": start job " + std::to_string(job->id));
      }
      continue;
    }
    // Expand: every faulty node back in service and idle, then grow the job onto them.
    auto faulty = row.nodes.get<std::vector<std::string>>();
    std::vector<std::string> missing;
    for (const auto& name : faulty) {
      if (std::find(job->nodes.begin(), job->nodes.end(), name) == job->nodes.end()) {
        missing.push_back(name);
      }
    }
    if (missing.empty()) {
      row.overlap = has_stale_steps(cluster, *slurm.client, row.job_id, faulty);
      finish(cluster, row, "Ready", "job holds " + slurm::join_hostlist(faulty) + " again");
      continue;
    }
    bool back = std::all_of(missing.begin(), missing.end(), [&](const std::string& name) {
      auto it = slurm.nodes.find(name);
      return it != slurm.nodes.end() && it->second.in_service() && it->second.state == "idle";
    });
    if (!back) continue;
    if (auto s = slurm.client->expand_job(*job, missing); !s) {
      log::warn("{}: expand job {}: {}", cluster.name, job->id, s.error().message);
      continue;  // tried again next pass
    }
    crash_point("autoresume.after_expand");
    row.overlap = has_stale_steps(cluster, *slurm.client, row.job_id, faulty);
    finish(cluster, row, "Ready", "job grown back onto " + slurm::join_hostlist(missing));
  }
}

}  // namespace endure::controller
