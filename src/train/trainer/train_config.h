// endure-train's settings: one JSON object (a --config file, with flags laid over it), read
// and checked in one place so every rule names its field.
//
//   {"data": "DIR", "model": "stories15M" | {"preset": ..., "dim": ..., ...},
//    "batch": 8, "grad_accum": 1, "steps": 1000, "lr": 5e-4, "min_lr": 5e-5,
//    "warmup": 100, "weight_decay": 0.1, "clip": 1.0, "seed": 0, "threads": 0,
//    "eval_every": 100, "eval_batches": 8,
//    "ckpt_dir": "DIR", "ckpt_every": 100, "keep_last": 3, "keep_every": 0,
//    "ckpt_local": "", "ckpt_memory": "", "ckpt_disk_duty": 0.25, "ckpt_s3": "",
//    "ckpt_cluster": "auto", "ckpt_cluster_every": 1, "ckpt_replicas": 1,
//    "ckpt_cluster_config": "", "log": "",
//    "zero": 0, "global_batch": 0, "bucket_mb": 8, "rendezvous": "", "comm_timeout": 120,
//    "peak_tflops": 0}
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::train {

// A core's fp32 peak assumed when peak_tflops is not given: two AVX2 FMA units (32 FLOP a
// cycle) at 2 GHz. An estimate: give peak_tflops for the machine's real figure.
inline constexpr double kCpuThreadPeakTflops = 0.064;

struct TrainConfig {
  std::filesystem::path data;  // an `endure-data prepare` folder
  // The model as LlamaConfig::from_json reads it ({"preset": NAME} for a name alone). Its
  // vocab_size, when not given, is the data's; seq_len is the training sequence length.
  json model = json{{"preset", "stories15M"}};
  int batch = 8;       // sequences per micro-batch
  int grad_accum = 1;  // micro-batches per optimizer step
  int64_t steps = 1000;
  float lr = 5e-4f;
  float min_lr = 5e-5f;
  int64_t warmup = 100;
  float weight_decay = 0.1f;
  float clip = 1.0f;         // 0: no clipping
  uint64_t seed = 0;         // the weights' initialisation and the data order
  int threads = 0;           // OpenMP threads; 0: OpenMP's default (OMP_NUM_THREADS or every core)
  int64_t eval_every = 100;  // 0: no evaluation
  int eval_batches = 8;
  std::filesystem::path ckpt_dir;  // empty: no checkpoints (and no resume)
  int64_t ckpt_every = 100;
  int keep_last = 3;
  int keep_every = 0;
  std::filesystem::path ckpt_local;   // node-local disk tier (optional)
  std::filesystem::path ckpt_memory;  // memory tier, a tmpfs folder (optional)
  // With a memory tier, the share of the time the disk tiers may spend writing: a save due
  // while they write or rest goes to the memory tier alone (ckpt::Options::disk_duty).
  float ckpt_disk_duty = 0.25f;
  // The S3 tier behind ckpt_dir, s3://BUCKET/PREFIX (optional). ckpt_dir may itself be an
  // s3:// prefix: the checkpoints are then staged in ckpt_local (a temp folder when not
  // given), which every rank must see, and kept in S3.
  std::filesystem::path ckpt_s3;
  // The cluster memory tier (endure/checkpoint.h, Options::cluster_node), on a cluster
  // whose TieredStorageConfig enables it (the node has memory_store.json): "auto" uses it
  // where the node has it, "on" requires it, "off" never. With it, a save every
  // ckpt_cluster_every steps goes to it alone and every ckpt_every steps to every tier.
  std::string ckpt_cluster = "auto";
  int64_t ckpt_cluster_every = 1;
  int ckpt_replicas = 1;  // peers holding a copy of each rank's shard (K)
  // Where memory_store.json and resource_config.json are (empty: the node's own folder).
  std::filesystem::path ckpt_cluster_config;
  std::filesystem::path log;  // JSON lines appended here as well as to stdout
  // Across ranks (srun's tasks: SLURM_PROCID of SLURM_NTASKS). global_batch: sequences per
  // optimizer step over every rank, kept on any world size through micro-batches of
  // `batch` (0: batch x grad_accum x world).
  int zero = 0;  // 0 plain data parallel, 1..3 the ZeRO stage (include/endure/zero.h)
  int global_batch = 0;
  float bucket_mb = 8;               // stages 0, 1: gradient all-reduce buckets
  std::filesystem::path rendezvous;  // a folder every rank sees; "": ckpt_dir/rendezvous
  float comm_timeout = 120;          // seconds: a rank gone longer fails the step
  // One rank's peak dense FLOP/s in TFLOP/s, the denominator of model FLOPs utilisation
  // (the step lines' "mfu"). 0: threads x kCpuThreadPeakTflops.
  float peak_tflops = 0;

  // Every key above; unknown keys and wrong types fail with "ValidationException" naming
  // the key, as does any rule broken (positive sizes, warmup < steps, min_lr <= lr, ...).
  static Result<TrainConfig> from_json(const json& j);
  json to_json() const;

  // Whether ckpt_dir is an s3:// prefix.
  bool ckpt_s3_uri() const;
  // The checkpoint engine's folders: its shared folder, its local disk tier and its S3
  // tier, from ckpt_dir, ckpt_local and ckpt_s3 (see ckpt_s3).
  struct CheckpointFolders {
    std::filesystem::path dir;
    std::filesystem::path local;
    std::string s3;
  };
  CheckpointFolders checkpoint_folders() const;

  // Every key above but "model", and whether its value is a number (else a string): what
  // a command line can set one flag each.
  static std::vector<std::pair<std::string, bool>> scalar_keys();

  // What a scalar key sets, in its unit, for --help (the default is shown beside it); "" for
  // a key with no description, which the help-text test refuses.
  static std::string doc(const std::string& key);
};

}  // namespace endure::train
