#include "controller/jobs/training_metrics.h"

#include <string>
#include <vector>

#include "common/ids.h"
#include "controller/jobs/training_service.h"

namespace endure::controller {
namespace {

struct Shown {
  std::string cluster;
  std::string job;
  TrainingStatus status;
  store::TrainingRun run;
};

double field(const std::optional<store::TrainingRecord>& r, const char* key) {
  return r ? record_number(r->record, key) : 0;
}

}  // namespace

metrics::Collector::FamilyWriter training_families(store::Store& store) {
  return [&store](metrics::TextWriter& out) {
    const double now = ids::now_seconds();
    std::vector<Shown> shown;
    for (const auto& cluster : store.clusters()) {
      for (auto& run : store.training_runs(cluster.id)) {
        TrainingStatus status = training_status(run, now);
        bool live = status == TrainingStatus::kRunning || status == TrainingStatus::kIdle;
        if (!live && now - run.last_time > kTrainingMetricsKeepSeconds) continue;
        shown.push_back({cluster.name, std::to_string(run.job_id), status, std::move(run)});
      }
    }
    struct Gauge {
      const char* name;
      const char* type;
      const char* help;
      double (*value)(const store::TrainingRun&);
    };
    static const Gauge gauges[] = {
        {"endure_train_step", "gauge", "The newest optimizer step a training job reported.",
         [](const store::TrainingRun& r) { return r.last_step ? double(r.last_step->step) : 0; }},
        {"endure_train_loss", "gauge", "The training loss of the newest step.",
         [](const store::TrainingRun& r) { return field(r.last_step, "loss"); }},
        {"endure_train_tokens_per_second", "gauge", "Tokens a second over every rank, newest step.",
         [](const store::TrainingRun& r) { return field(r.last_step, "tokens_per_s"); }},
        {"endure_train_mfu_ratio", "gauge",
         "Model FLOPs utilisation of the newest step (0 to 1, against the ranks' peak).",
         [](const store::TrainingRun& r) { return field(r.last_step, "mfu"); }},
        {"endure_train_checkpoint_stall_seconds", "gauge",
         "How long the step loop stood still for the newest checkpoint.",
         [](const store::TrainingRun& r) { return field(r.last_checkpoint, "stall_ms") / 1e3; }},
        {"endure_train_resumes_total", "counter",
         "Auto-resumes of a training job: tries after the first.",
         [](const store::TrainingRun& r) { return double(r.resumes); }},
        {"endure_train_last_report_timestamp_seconds", "gauge",
         "When the job's trainer last reported a line (Unix time).",
         [](const store::TrainingRun& r) { return r.last_time; }},
    };
    for (const auto& g : gauges) {
      out.family(g.name, g.type, g.help);
      for (const auto& s : shown) {
        out.sample(g.name, {{"cluster", s.cluster}, {"job", s.job}}, g.value(s.run));
      }
    }
    out.family("endure_train_running", "gauge",
               "1 while a training job reports steps (a line in the last minute), else 0.");
    for (const auto& s : shown) {
      out.sample("endure_train_running", {{"cluster", s.cluster}, {"job", s.job}},
                 s.status == TrainingStatus::kRunning ? 1 : 0);
    }
  };
}

}  // namespace endure::controller
