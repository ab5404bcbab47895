// The training verbs: list-training-runs, get-training-metrics, list-cluster-jobs.
#include <ostream>

#include "api/messages.h"
#include "api/wire.h"
#include "cli/session.h"
#include "cli/table.h"

namespace endure::cli {

namespace f = api::field;

namespace {

void print_runs(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, f::kTrainingRuns);
  out << format_json_table(list ? *list : json(),
                           {same(f::kJobId), same(f::kStatus), same(f::kLastStep), same(f::kLoss),
                            same(f::kTokensPerSecond), same(f::kMfu), same(f::kResumes)});
}

// The curve as a table: a row per point, then the tries' starts.
void print_metrics(const json& reply, std::ostream& out) {
  const json* points = find_path(reply, f::kPoints);
  out << format_json_table(
      points ? *points : json(),
      {same(f::kStep), same(f::kLoss), same(f::kTokensPerSecond), same(f::kMfu), same(f::kResume)});
  const json* starts = find_path(reply, f::kStarts);
  out << "\n"
      << format_json_table(starts ? *starts : json(), {same(f::kResume), same(f::kResumedFrom),
                                                       same(f::kTime), same(f::kReason)});
}

void print_jobs(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, f::kJobs);
  out << format_json_table(list ? *list : json(),
                           {same(f::kJobId), same(f::kState), same(f::kMode), same(f::kResumes),
                            same(f::kReason), same(f::kMessage)});
}

}  // namespace

void add_training_verbs(CLI::App& app, SessionPtr s, Selected selected) {
  CLI::App* runs = app.add_subcommand(
      "list-training-runs", "List the cluster's jobs that trained, with their newest step");
  auto runs_request = std::make_shared<RequestBuilder>(runs);
  runs_request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster",
                    true);
  on_run(runs, selected, [s, runs_request] {
    return s->run(api::kListTrainingRuns, runs_request->build(), {print_runs});
  });

  CLI::App* metrics = app.add_subcommand(
      "get-training-metrics", "Print a training job's curve: loss, tokens/s and MFU by step");
  auto metrics_request = std::make_shared<RequestBuilder>(metrics);
  metrics_request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster",
                       true);
  metrics_request->add(Kind::kInteger, "--job-id", f::kJobId, "the Slurm job id", true);
  metrics_request->add(Kind::kInteger, "--max-points", f::kMaxPoints,
                       "thin the curve to this many steps (2 to 10000, default 2000)");
  on_run(metrics, selected, [s, metrics_request] {
    return s->run(api::kGetTrainingMetrics, metrics_request->build(), {print_metrics});
  });

  CLI::App* jobs = app.add_subcommand("list-cluster-jobs",
                                      "List the jobs endure auto-resumed and how their last "
                                      "fault was repaired");
  auto jobs_request = std::make_shared<RequestBuilder>(jobs);
  jobs_request->add(Kind::kText, "--cluster-name", f::kClusterName, "name or ARN of the cluster",
                    true);
  on_run(jobs, selected, [s, jobs_request] {
    return s->run(api::kListClusterJobs, jobs_request->build(), {print_jobs});
  });
}

}  // namespace endure::cli
