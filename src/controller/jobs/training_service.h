// Training runs as endured sees them: endure-train's rank 0 reports its lines
// (ReportTrainingMetrics, with the cluster's job credential), the operator reads them back
// per Slurm job (ListTrainingRuns, GetTrainingMetrics) beside the auto-resume history of the
// cluster's jobs (ListClusterJobs). The console and /metrics read the same store.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "store/store.h"

namespace endure::controller {

// A run with no line for this long, and not ended, is Idle rather than Running.
inline constexpr double kTrainingIdleSeconds = 60;

// A number of a trainer line ({"loss": 3.1, ...}); 0 when the line has none.
double record_number(const json& record, const char* key);

enum class TrainingStatus { kRunning, kIdle, kDone, kStopped };
const char* name(TrainingStatus status);  // as ListTrainingRuns words it: "Running", ...

// The run's status at time now.
TrainingStatus training_status(const store::TrainingRun& run, double now);

class TrainingService {
 public:
  explicit TrainingService(store::Store& store) : store_(store) {}

  Result<json> report(const store::ClusterRow& cluster, const json& request);
  Result<json> list_runs(const json& request);
  Result<json> get_metrics(const json& request);
  Result<json> list_jobs(const json& request);

 private:
  store::Store& store_;
};

}  // namespace endure::controller
