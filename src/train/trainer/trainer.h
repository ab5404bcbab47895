// The training loop of endure-train: data -> Llama -> AdamW, checkpointed through the
// checkpoint engine and resumed from its newest valid checkpoint.
//
// A checkpoint holds everything the next step depends on: the weights, AdamW's moments and
// step count, and the loader's position (the data order is the only randomness after the
// seeded initialisation). Saved after step s it resumes at step s + 1, and with the same
// thread count the resumed run computes exactly what the uninterrupted one would have: the
// model's kernels are deterministic for a thread count (see endure/model.h).
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>

#include "common/result.h"
#include "train/trainer/train_config.h"

namespace endure::train {

// What run() ended with.
struct RunSummary {
  int64_t last_step = 0;
  bool stopped = false;  // by a stop request, before the configured steps
};

class Trainer {
 public:
  // Opens the data, builds the model and optimizer, and, when config.ckpt_dir holds a valid
  // checkpoint, restores it. Fails with "ValidationException" naming the field on a bad
  // config (a model that does not validate, a vocabulary smaller than the data's, a
  // checkpoint made for another model or data) and "CorruptData" on damaged data.
  static Result<std::unique_ptr<Trainer>> open(const TrainConfig& config);
  ~Trainer();

  // Trains up to config.steps, logging one JSON line per step, evaluation and checkpoint,
  // and checkpointing every ckpt_every steps and at the end. Returns early, after saving a
  // checkpoint, once *stop becomes true (a signal handler sets it).
  Result<RunSummary> run(const std::atomic<bool>* stop);

 private:
  struct Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace endure::train
