#include "controller/jobs/training_service.h"

#include <algorithm>

#include "api/messages.h"
#include "common/ids.h"
#include "controller/core/lookup.h"

namespace endure::controller {
namespace {

constexpr int kDefaultMaxPoints = 2000;

}  // namespace

double record_number(const json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : 0;
}

const char* name(TrainingStatus status) {
  switch (status) {
    case TrainingStatus::kRunning:
      return "Running";
    case TrainingStatus::kIdle:
      return "Idle";
    case TrainingStatus::kDone:
      return "Done";
    case TrainingStatus::kStopped:
      return "Stopped";
  }
  return "?";
}

TrainingStatus training_status(const store::TrainingRun& run, double now) {
  if (run.end_kind == "done") return TrainingStatus::kDone;
  if (run.end_kind == "stopped") return TrainingStatus::kStopped;
  return now - run.last_time <= kTrainingIdleSeconds ? TrainingStatus::kRunning
                                                     : TrainingStatus::kIdle;
}

Result<json> TrainingService::report(const store::ClusterRow& cluster, const json& request) {
  auto req = api::ReportTrainingMetricsRequest::from_json(request);
  if (!req) return req.error();
  auto added = store_.put_training_records(cluster.id, req->job_id, req->records);
  if (!added) return added.error();
  return api::ReportTrainingMetricsReply{*added}.to_json();
}

Result<json> TrainingService::list_runs(const json& request) {
  auto req = api::ListTrainingRunsRequest::from_json(request);
  if (!req) return req.error();
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  api::ListTrainingRunsReply reply;
  const double now = ids::now_seconds();
  for (const auto& run : store_.training_runs(cluster->id)) {
    api::TrainingRunSummary s;
    s.job_id = run.job_id;
    s.first_time = run.first_time;
    s.last_time = run.last_time;
    s.resumes = run.resumes;
    s.status = name(training_status(run, now));
    if (run.last_step) {
      const json& r = run.last_step->record;
      s.last_step = run.last_step->step;
      s.loss = record_number(r, "loss");
      s.tokens_per_second = record_number(r, "tokens_per_s");
      s.mfu = record_number(r, "mfu");
    }
    reply.training_runs.push_back(std::move(s));
  }
  return reply.to_json();
}

Result<json> TrainingService::get_metrics(const json& request) {
  auto req = api::GetTrainingMetricsRequest::from_json(request);
  if (!req) return req.error();
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  const long long steps = store_.training_steps(cluster->id, req->job_id);
  const long long max_points = req->max_points.value_or(kDefaultMaxPoints);
  const long long stride = std::max<long long>(1, (steps + max_points - 1) / max_points);
  api::GetTrainingMetricsReply reply;
  reply.job_id = req->job_id;
  for (const auto& r : store_.training_records(cluster->id, req->job_id, "step", stride)) {
    reply.points.push_back({r.step, r.time, record_number(r.record, "loss"),
                            record_number(r.record, "tokens_per_s"), record_number(r.record, "mfu"),
                            r.resume});
  }
  for (const auto& r : store_.training_records(cluster->id, req->job_id, "eval")) {
    reply.evals.push_back({r.step, record_number(r.record, "val_loss")});
  }
  for (const auto& r : store_.training_records(cluster->id, req->job_id, "checkpoint")) {
    reply.checkpoints.push_back({r.step, r.time, record_number(r.record, "stall_ms") / 1e3});
  }
  for (const auto& r : store_.training_records(cluster->id, req->job_id, "start")) {
    api::TrainingStart start;
    start.time = r.time;
    auto from = r.record.find("resumed_from");
    if (from != r.record.end() && from->is_number_integer())
      start.resumed_from = from->get<long long>();
    start.resume = r.resume;
    start.reason = r.record.value("auto_resume_reason", "");
    reply.starts.push_back(std::move(start));
  }
  if (steps == 0 && reply.starts.empty()) {
    return make_error(api::kResourceNotFound,
                      "JobId: job " + std::to_string(req->job_id) + " reported no training");
  }
  return reply.to_json();
}

Result<json> TrainingService::list_jobs(const json& request) {
  auto req = api::ListClusterJobsRequest::from_json(request);
  if (!req) return req.error();
  auto cluster = find_cluster(store_, request);
  if (!cluster) return cluster.error();
  std::vector<store::AutoResumeRow> rows;
  for (const char* state : {"Waiting", "Ready", "Failed"}) {
    auto some = store_.auto_resumes(cluster->id, state);
    rows.insert(rows.end(), some.begin(), some.end());
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.job_id > b.job_id; });
  api::ListClusterJobsReply reply;
  for (const auto& row : rows) {
    api::ClusterJob job;
    job.job_id = row.job_id;
    job.state = row.state;
    job.mode = row.mode;
    job.resumes = row.resumes;
    job.reason = row.reason;
    for (const auto& n : row.nodes) {
      if (n.is_string()) job.nodes.push_back(n);
    }
    if (row.fault_time > 0) job.fault_time = row.fault_time;
    if (row.ready_time > 0) job.ready_time = row.ready_time;
    job.message = row.message;
    reply.jobs.push_back(std::move(job));
  }
  return reply.to_json();
}

}  // namespace endure::controller
