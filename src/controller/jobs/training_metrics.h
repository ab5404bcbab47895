// endure-train's step metrics on endured's /metrics: the newest loss, tokens/s, MFU,
// checkpoint stall and tries of every training run that is live or ended in the last hour,
// labelled by cluster and Slurm job, from the lines the trainers reported
// (TrainingService). Nothing to run beside the job.
#pragma once

#include "controller/metrics/collector.h"
#include "store/store.h"

namespace endure::controller {

// A run ended longer ago than this drops out of /metrics (its series would never change).
inline constexpr double kTrainingMetricsKeepSeconds = 3600;

metrics::Collector::FamilyWriter training_families(store::Store& store);

}  // namespace endure::controller
