// Messages of training runs: endure-train's rank 0 reports its log lines
// (ReportTrainingMetrics, with the cluster's job credential, as the auto-resume supervisor
// calls), and the operator reads them back per Slurm job (ListTrainingRuns,
// GetTrainingMetrics) beside the jobs' auto-resume history (ListClusterJobs). Include
// messages.h, not this file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/messages_cluster.h"

namespace endure::api {

// Records are the trainer's own JSON lines ({"step": 12, "loss": 3.1, ...}, {"start": true,
// ...}, {"checkpoint": 10, "stall_ms": 4}), each with "time" (Unix seconds) added.
struct ReportTrainingMetricsRequest {
  static constexpr const char* kName = "ReportTrainingMetricsRequest";
  std::string cluster_name;
  long long job_id = 0;
  json records = json::array();
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kJobId, s.job_id);
    v(field::kRecords, s.records);
  }
  Status check() const;
  json to_json() const;
  static Result<ReportTrainingMetricsRequest> from_json(const json& in);
};

struct ReportTrainingMetricsReply {
  static constexpr const char* kName = "ReportTrainingMetricsReply";
  int accepted = 0;  // records stored (a record already stored counts once)
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kAccepted, s.accepted);
  }
  json to_json() const;
  static Result<ReportTrainingMetricsReply> from_json(const json& in);
};

// A Slurm job that trained: Status is Running (a step reported in the last minute),
// Done, Stopped or Idle (nothing reported for a minute, not done).
struct TrainingRunSummary {
  static constexpr const char* kName = "TrainingRunSummary";
  long long job_id = 0;
  double first_time = 0;
  double last_time = 0;
  long long last_step = 0;
  std::optional<double> loss;
  std::optional<double> tokens_per_second;
  std::optional<double> mfu;
  int resumes = 0;
  std::string status;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kJobId, s.job_id);
    v(field::kFirstTime, s.first_time);
    v(field::kLastTime, s.last_time);
    v(field::kLastStep, s.last_step);
    v(field::kLoss, s.loss);
    v(field::kTokensPerSecond, s.tokens_per_second);
    v(field::kMfu, s.mfu);
    v(field::kResumes, s.resumes);
    v(field::kStatus, s.status);
  }
  json to_json() const;
  static Result<TrainingRunSummary> from_json(const json& in);
};

using ListTrainingRunsRequest = ClusterRef;
struct ListTrainingRunsReply {
  static constexpr const char* kName = "ListTrainingRunsReply";
  std::vector<TrainingRunSummary> training_runs;  // newest job first
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kTrainingRuns, s.training_runs);
  }
  json to_json() const;
  static Result<ListTrainingRunsReply> from_json(const json& in);
};

struct GetTrainingMetricsRequest {
  static constexpr const char* kName = "GetTrainingMetricsRequest";
  std::string cluster_name;
  long long job_id = 0;
  std::optional<int> max_points;  // 2 to 10000, default 2000: longer runs are thinned evenly
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kJobId, s.job_id);
    v(field::kMaxPoints, s.max_points);
  }
  Status check() const;
  json to_json() const;
  static Result<GetTrainingMetricsRequest> from_json(const json& in);
};

// One optimizer step as the try that reached it last reported it. Resume is that try's
// auto-resume count (0: the first try).
struct TrainingPoint {
  static constexpr const char* kName = "TrainingPoint";
  long long step = 0;
  double time = 0;
  double loss = 0;
  double tokens_per_second = 0;
  double mfu = 0;
  int resume = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kStep, s.step);
    v(field::kTime, s.time);
    v(field::kLoss, s.loss);
    v(field::kTokensPerSecond, s.tokens_per_second);
    v(field::kMfu, s.mfu);
    v(field::kResume, s.resume);
  }
  json to_json() const;
  static Result<TrainingPoint> from_json(const json& in);
};

struct TrainingEval {
  static constexpr const char* kName = "TrainingEval";
  long long step = 0;
  double val_loss = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kStep, s.step);
    v(field::kValLoss, s.val_loss);
  }
  json to_json() const;
  static Result<TrainingEval> from_json(const json& in);
};

// A checkpoint saved: how long the step loop stood still for it.
struct TrainingCheckpoint {
  static constexpr const char* kName = "TrainingCheckpoint";
  long long step = 0;
  double time = 0;
  double stall_seconds = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kStep, s.step);
    v(field::kTime, s.time);
    v(field::kStallSeconds, s.stall_seconds);
  }
  json to_json() const;
  static Result<TrainingCheckpoint> from_json(const json& in);
};

// A try began: the first, or an auto-resume after a fault (Reason), from a checkpoint.
struct TrainingStart {
  static constexpr const char* kName = "TrainingStart";
  double time = 0;
  std::optional<long long> resumed_from;
  int resume = 0;
  std::string reason;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kTime, s.time);
    v(field::kResumedFrom, s.resumed_from);
    v(field::kResume, s.resume);
    v(field::kReason, s.reason);
  }
  json to_json() const;
  static Result<TrainingStart> from_json(const json& in);
};

struct GetTrainingMetricsReply {
  static constexpr const char* kName = "GetTrainingMetricsReply";
  long long job_id = 0;
  std::vector<TrainingPoint> points;
  std::vector<TrainingEval> evals;
  std::vector<TrainingCheckpoint> checkpoints;
  std::vector<TrainingStart> starts;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kJobId, s.job_id);
    v(field::kPoints, s.points);
    v(field::kEvals, s.evals);
    v(field::kCheckpoints, s.checkpoints);
    v(field::kStarts, s.starts);
  }
  json to_json() const;
  static Result<GetTrainingMetricsReply> from_json(const json& in);
};

// A job endure auto-resumed, as its record stands (see AutoResumeStatus).
struct ClusterJob {
  static constexpr const char* kName = "ClusterJob";
  long long job_id = 0;
  std::string state;  // Waiting, Ready, Failed
  std::string mode;   // Expand or Requeue
  int resumes = 0;
  std::string reason;
  std::vector<std::string> nodes;
  std::optional<double> fault_time;
  std::optional<double> ready_time;
  std::string message;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kJobId, s.job_id);
    v(field::kState, s.state);
    v(field::kMode, s.mode);
    v(field::kResumes, s.resumes);
    v(field::kReason, s.reason);
    v(field::kNodes, s.nodes);
    v(field::kFaultTime, s.fault_time);
    v(field::kReadyTime, s.ready_time);
    v(field::kMessage, s.message);
  }
  json to_json() const;
  static Result<ClusterJob> from_json(const json& in);
};

using ListClusterJobsRequest = ClusterRef;
struct ListClusterJobsReply {
  static constexpr const char* kName = "ListClusterJobsReply";
  std::vector<ClusterJob> jobs;  // newest job first
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kJobs, s.jobs);
  }
  json to_json() const;
  static Result<ListClusterJobsReply> from_json(const json& in);
};

}  // namespace endure::api
