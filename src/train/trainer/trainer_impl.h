// The trainer's state, shared by its parts: the run (trainer.cpp) and its checkpoints
// (trainer_checkpoint.cpp). Internal to endure-train.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/ids.h"
#include "endure/checkpoint.h"
#include "endure/data.h"
#include "endure/model.h"
#include "endure/zero.h"
#include "train/trainer/metrics_reporter.h"
#include "train/trainer/ranks.h"
#include "train/trainer/sharded_checkpoint.h"
#include "train/trainer/train_config.h"
#include "train/trainer/trainer.h"

namespace endure::train {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Trainer::Impl {
  TrainConfig config;
  model::LlamaConfig model_config;
  std::unique_ptr<data::TokenLoader> train, val;
  data::LoaderPosition val_start;
  std::unique_ptr<model::Llama> model;
  Ranks ranks;
  int micro = 1;  // micro-batches per step on each rank
  std::unique_ptr<comm::Communicator> comm;
  std::unique_ptr<zero::Engine> engine;
  std::unique_ptr<ckpt::Checkpointer> ckpt;
  bool in_place = false;      // the state lives in the checkpointer's slots (next_state())
  bool cluster_tier = false;  // saves go to the cluster memory tier (cluster_tier_options())
  // The valid checkpoints in any tier, newest first, listed once at open (the newest one
  // checked then) for restore() to choose from.
  std::vector<ckpt::CheckpointInfo> valid_checkpoints;
  std::vector<int32_t> inputs, targets;
  int64_t step = 0;                // optimizer steps done
  int64_t saved_step = -1;         // the step of the newest checkpoint saved or restored
  int64_t memory_only_since = -1;  // the first of the saves kept in the memory tier alone
  std::optional<int64_t> resumed_from;
  std::string resumed_tier;
  std::vector<json> restore_lines;  // what restore() found, logged after the start line
  int threads = 1;
  FILE* log = nullptr;
  std::unique_ptr<MetricsReporter> reporter;  // rank 0 in a job on an endure cluster

  ~Impl() {
    if (log) std::fclose(log);
  }

  // Rank 0 speaks for the job.
  // Each line carries the wall-clock time it was written ("time", seconds since the epoch),
  // so that a reader of the log knows when a step ended without stamping it itself.
  void emit(json line) {
    if (ranks.rank != 0) return;
    line["time"] = ids::now_seconds();
    const std::string text = line.dump() + "\n";
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (log) {
      std::fputs(text.c_str(), log);
      std::fflush(log);
    }
    if (reporter) reporter->add(line);
  }

  // Model FLOPs utilisation: the model's FLOPs a second over every rank's peak.
  double mfu(double tokens_per_s) const {
    const double peak_tflops =
        config.peak_tflops > 0 ? config.peak_tflops : threads * kCpuThreadPeakTflops;
    return static_cast<double>(model_config.flops_per_token()) * tokens_per_s /
           (peak_tflops * 1e12 * ranks.world);
  }

  int seq_len() const { return model_config.seq_len; }

  int global_batch() const { return config.batch * micro * ranks.world; }

  json checkpoint_user() const {
    return json{{"step", step},
                {"adam_step", engine->adam_step()},
                {"loader", train->position().to_json()},
                {"model", model_config.to_json()},
                {"threads", threads},
                {"seed", config.seed},
                {"zero", config.zero},
                {"global_batch", global_batch()},
                {"layout", layout_json(engine->layout())}};
  }

  // The mean of a value over the ranks (each rank's loss is the mean of its rows).
  Result<float> mean_over_ranks(float value) {
    if (auto s = comm->all_reduce(&value, 1); !s) return s.error();
    return value / static_cast<float>(ranks.world);
  }

  Status check_checkpoint();
  Status restore();
  Result<ckpt::CheckpointInfo> restore_step(const ckpt::CheckpointInfo& info);
  Result<json> gather_restored(const ckpt::CheckpointInfo& read);
  Result<float> train_step();
  // The optimizer step, after waiting for the memory it writes; returns the seconds waited.
  Result<double> update(float lr);
  // Whether a checkpoint to every tier is due once `done` steps are.
  bool disk_due_after(int64_t done) const {
    return done % config.ckpt_every == 0 || done == config.steps;
  }
  // Whether any checkpoint is due: to every tier, or to the cluster memory tier alone.
  bool save_due_after(int64_t done) const {
    return disk_due_after(done) || (cluster_tier && done % config.ckpt_cluster_every == 0);
  }
  Result<float> evaluate();
  Status save_checkpoint();
  Status finish_checkpoints();
};

// The cluster memory tier's part of *o, from the config and Slurm's environment: whether
// the tier is on. Off with ckpt_cluster auto where the node has no memory_store.json (the
// cluster does not enable it) or the run is no Slurm step; "ValidationException" saying
// why with ckpt_cluster on.
Result<bool> cluster_tier_options(const TrainConfig& c, const Ranks& ranks,
                                  const std::map<std::string, std::string>& env, ckpt::Options* o);

}  // namespace endure::train
