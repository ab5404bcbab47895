// Messages of the agent's actions (AgentReportLifecycle, AgentHeartbeat,
// AgentReportFindings, AgentReportDeepHealthCheck), of srun's auto-resume supervisor
// (AutoResumeStepFailed, AutoResumeStatus), and the error reply. Include messages.h, not this file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/fault_kind.h"
#include "api/messages_cluster.h"

namespace endure::api {

struct AgentReportLifecycleRequest {
  static constexpr const char* kName = "AgentReportLifecycleRequest";
  std::string status;  // one of kLifecycleStatuses
  int exit_code = -1;  // -1 while running or when killed
  std::string last_lines;
  std::string instance_id;  // the node's own; the header names it too
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kStatus, s.status);
    v(field::kExitCode, s.exit_code);
    v(field::kLastLines, s.last_lines);
    v(field::kInstanceId, s.instance_id);
  }
  Status check() const;
  json to_json() const;
  static Result<AgentReportLifecycleRequest> from_json(const json& in);
};
using AgentReportLifecycleReply = Empty;

// A health check's finding: Kind names the fault (the verdict's reason).
struct Finding {
  static constexpr const char* kName = "Finding";
  FaultKind kind = FaultKind::kCrash;
  std::string check;
  std::string detail;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kKind, s.kind);
    v(field::kCheck, s.check);
    v(field::kDetail, s.detail);
  }
  json to_json() const;
  static Result<Finding> from_json(const json& in);
};

struct AgentHeartbeatRequest {
  static constexpr const char* kName = "AgentHeartbeatRequest";
  std::string instance_id;
  std::vector<Finding> findings;  // of the latest continuous health-check round
  // The node's gauges of that round ({"load1": 0.5, "mem_available_bytes": ...}): what
  // endured's /metrics shows per node.
  json metrics = json::object();
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceId, s.instance_id);
    v(field::kFindings, s.findings);
    v(field::kMetrics, s.metrics);
  }
  json to_json() const;
  static Result<AgentHeartbeatRequest> from_json(const json& in);
};

// A fault the agent saw happen (a kernel log record, an NVML event), sent the moment it is
// seen and again until endured takes it. RecordId names the record ("kmsg:<sequence>",
// "nvml:<gpu>:<event>:<n>") so that endured counts each once.
struct LoggedFinding {
  static constexpr const char* kName = "LoggedFinding";
  std::string record_id;
  FaultKind kind = FaultKind::kCrash;
  std::string check;
  std::string detail;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kRecordId, s.record_id);
    v(field::kKind, s.kind);
    v(field::kCheck, s.check);
    v(field::kDetail, s.detail);
  }
  json to_json() const;
  static Result<LoggedFinding> from_json(const json& in);
};

struct AgentReportFindingsRequest {
  static constexpr const char* kName = "AgentReportFindingsRequest";
  std::string instance_id;
  std::vector<LoggedFinding> findings;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceId, s.instance_id);
    v(field::kFindings, s.findings);
  }
  json to_json() const;
  static Result<AgentReportFindingsRequest> from_json(const json& in);
};
using AgentReportFindingsReply = Empty;

// An order to run the deep health check, repeated in every heartbeat's reply while open.
struct DeepCheckOrder {
  static constexpr const char* kName = "DeepCheckOrder";
  std::string id;
  std::string reservation;
  std::string address;  // where this node serves the network test
  int port = kDeepCheckNetworkPort;
  double started = 0;               // seconds since the epoch
  std::optional<std::string> peer;  // the next node in the ring, to measure the link to
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kId, s.id);
    v(field::kReservation, s.reservation);
    v(field::kAddress, s.address);
    v(field::kPort, s.port);
    v(field::kStarted, s.started);
    v(field::kPeer, s.peer);
  }
  json to_json() const;
  static Result<DeepCheckOrder> from_json(const json& in);
};

struct AgentHeartbeatReply {
  static constexpr const char* kName = "AgentHeartbeatReply";
  std::optional<DeepCheckOrder> deep_health_check;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kDeepHealthCheck, s.deep_health_check);
  }
  json to_json() const;
  static Result<AgentHeartbeatReply> from_json(const json& in);
};

struct DeepCheckResult {
  static constexpr const char* kName = "DeepCheckResult";
  std::string check;  // cpu, memory, disk, network
  bool passed = false;
  std::string detail;
  json metrics = json::object();  // the check's own measurements
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kCheck, s.check);
    v(field::kPassed, s.passed);
    v(field::kDetail, s.detail);
    v(field::kMetrics, s.metrics);
  }
  json to_json() const;
  static Result<DeepCheckResult> from_json(const json& in);
};

struct AgentReportDeepHealthCheckRequest {
  static constexpr const char* kName = "AgentReportDeepHealthCheckRequest";
  std::string instance_id;
  std::string id;  // the order's Id
  std::vector<DeepCheckResult> results;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kInstanceId, s.instance_id);
    v(field::kId, s.id);
    v(field::kResults, s.results);
  }
  json to_json() const;
  static Result<AgentReportDeepHealthCheckRequest> from_json(const json& in);
};
using AgentReportDeepHealthCheckReply = Empty;

// Times are seconds since the epoch.
struct AutoResumeStepFailedRequest {
  static constexpr const char* kName = "AutoResumeStepFailedRequest";
  std::string cluster_name;
  long long job_id = 0;                           // positive
  std::optional<std::vector<std::string>> nodes;  // the step's nodes; or else
  std::optional<std::string> node_list;           //   the same as a Slurm hostlist
  double step_start_time = 0;
  double failed_at = 0;
  int resumes = 0;                 // re-runs the supervisor has made so far
  std::optional<int> exit_status;  // srun's
  std::optional<bool> succeeded;   // srun exited 0: a fault endured knows of still counts
  // Nodes of the step the job did not hold again when its last resume was ready (two
  // nodes that failed at once, judged as one fault): at fault, whatever they report now.
  std::optional<std::vector<std::string>> lacking_nodes;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kJobId, s.job_id);
    v(field::kNodes, s.nodes);
    v(field::kNodeList, s.node_list);
    v(field::kStepStartTime, s.step_start_time);
    v(field::kFailedAt, s.failed_at);
    v(field::kResumes, s.resumes);
    v(field::kExitStatus, s.exit_status);
    v(field::kSucceeded, s.succeeded);
    v(field::kLackingNodes, s.lacking_nodes);
  }
  Status check() const;
  json to_json() const;
  static Result<AutoResumeStepFailedRequest> from_json(const json& in);
};

struct AutoResumeStepFailedReply {
  static constexpr const char* kName = "AutoResumeStepFailedReply";
  std::string decision;  // Fault, Healthy or Pending
  std::string reason;
  std::vector<std::string> faulty_nodes;
  bool resume = false;  // a re-run is granted (the job's count went up by one)
  int max_resumes = 0;
  int resume_count = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kDecision, s.decision);
    v(field::kReason, s.reason);
    v(field::kFaultyNodes, s.faulty_nodes);
    v(field::kResume, s.resume);
    v(field::kMaxResumes, s.max_resumes);
    v(field::kResumeCount, s.resume_count);
  }
  json to_json() const;
  static Result<AutoResumeStepFailedReply> from_json(const json& in);
};

struct AutoResumeStatusRequest {
  static constexpr const char* kName = "AutoResumeStatusRequest";
  std::string cluster_name;
  long long job_id = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kClusterName, s.cluster_name);
    v(field::kJobId, s.job_id);
  }
  Status check() const;
  json to_json() const;
  static Result<AutoResumeStatusRequest> from_json(const json& in);
};

// State None (the job was never resumed) carries only State, ResumeCount, Reason, Message
// and MaxResumes; the optional fields come with a job's record.
struct AutoResumeStatusReply {
  static constexpr const char* kName = "AutoResumeStatusReply";
  std::optional<long long> job_id;
  std::string state;                // None, Waiting, Ready or Failed
  std::optional<std::string> mode;  // Expand or Requeue
  int resume_count = 0;
  std::string reason;
  std::string message;
  std::optional<std::vector<std::string>> nodes;  // the faulty nodes the job waits for
  std::optional<double> fault_time;
  std::optional<double> ready_time;
  std::optional<bool> overlap;  // the re-run must overlap a stale step of the failed run
  int max_resumes = 0;
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kJobId, s.job_id);
    v(field::kState, s.state);
    v(field::kMode, s.mode);
    v(field::kResumeCount, s.resume_count);
    v(field::kReason, s.reason);
    v(field::kMessage, s.message);
    v(field::kNodes, s.nodes);
    v(field::kFaultTime, s.fault_time);
    v(field::kReadyTime, s.ready_time);
    v(field::kOverlap, s.overlap);
    v(field::kMaxResumes, s.max_resumes);
  }
  json to_json() const;
  static Result<AutoResumeStatusReply> from_json(const json& in);
};

// Any action's failure: a non-2xx status with this body.
struct ErrorReply {
  static constexpr const char* kName = "ErrorReply";
  std::string type;     // the error code: kValidationException, kResourceNotFound, ...
  std::string message;  // names the field or resource and the rule
  template <class S, class V>
  static void fields(S& s, V&& v) {
    v(field::kErrorType, s.type);
    v(field::kErrorMessage, s.message);
  }
  json to_json() const;
  static Result<ErrorReply> from_json(const json& in);
};

}  // namespace endure::api
