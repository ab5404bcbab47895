#include "train/trainer/train_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <limits>
#include <map>

#include "s3/s3_uri.h"

namespace endure::train {
namespace {

// One key: how to read it into the config and how to write it back.
struct Field {
  std::function<Status(const json&, TrainConfig*)> read;
  std::function<json(const TrainConfig&)> write;
  bool number = false;
};

template <class T>
Field integer(T TrainConfig::*member, T min, T max = std::numeric_limits<T>::max()) {
  return {[member, min, max](const json& v, TrainConfig* c) -> Status {
            if (!v.is_number_integer()) return invalid("must be an integer");
            // Unsigned JSON numbers (every non-negative literal) compare as unsigned, so
            // a uint64 seed above INT64_MAX is in range.
            const bool out_of_range = v.is_number_unsigned()
                                          ? v.get<uint64_t>() < static_cast<uint64_t>(min) ||
                                                v.get<uint64_t>() > static_cast<uint64_t>(max)
                                          : v.get<int64_t>() < static_cast<int64_t>(min) ||
                                                v.get<int64_t>() > static_cast<int64_t>(max);
            if (out_of_range) {
              return invalid("must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                             "], got " + v.dump());
            }
            c->*member = v.get<T>();
            return Status::Ok();
          },
          [member](const TrainConfig& c) { return json(c.*member); }, true};
}

Field number(float TrainConfig::*member, float min, float max) {
  return {[member, min, max](const json& v, TrainConfig* c) -> Status {
            if (!v.is_number()) return invalid("must be a number");
            double x = v.get<double>();
            if (!(x >= min && x <= max)) {
              return invalid(fmt::format("must be in [{}, {}], got {}", min, max, v.dump()));
            }
            c->*member = static_cast<float>(x);
            return Status::Ok();
          },
          [member](const TrainConfig& c) { return json(c.*member); }, true};
}

Field path(std::filesystem::path TrainConfig::*member) {
  return {[member](const json& v, TrainConfig* c) -> Status {
            if (!v.is_string()) return invalid("must be a string (a path)");
            c->*member = v.get<std::string>();
            return Status::Ok();
          },
          [member](const TrainConfig& c) { return json((c.*member).string()); }};
}

Field choice(std::string TrainConfig::*member, std::vector<std::string> allowed) {
  return {[member, allowed](const json& v, TrainConfig* c) -> Status {
            if (v.is_string()) {
              for (const auto& a : allowed) {
                if (v.get<std::string>() == a) {
                  c->*member = a;
                  return Status::Ok();
                }
              }
            }
            return invalid(
                fmt::format("must be one of {}, got {}", fmt::join(allowed, ", "), v.dump()));
          },
          [member](const TrainConfig& c) { return json(c.*member); }};
}

const std::map<std::string, Field>& fields() {
  static const std::map<std::string, Field> table = {
      {"data", path(&TrainConfig::data)},
      {"model",
       {[](const json& v, TrainConfig* c) -> Status {
          if (v.is_string()) {
            c->model = json{{"preset", v}};
          } else if (v.is_object()) {
            c->model = v;
          } else {
            return invalid("must be a preset name or a model config object");
          }
          return Status::Ok();
        },
        [](const TrainConfig& c) { return c.model; }}},
      {"batch", integer(&TrainConfig::batch, 1, 1 << 16)},
      {"grad_accum", integer(&TrainConfig::grad_accum, 1, 1 << 16)},
      {"steps", integer<int64_t>(&TrainConfig::steps, 1)},
      {"lr", number(&TrainConfig::lr, 0, 10)},
      {"min_lr", number(&TrainConfig::min_lr, 0, 10)},
      {"warmup", integer<int64_t>(&TrainConfig::warmup, 0)},
      {"weight_decay", number(&TrainConfig::weight_decay, 0, 1)},
      {"clip", number(&TrainConfig::clip, 0, 1e9f)},
      {"seed", integer<uint64_t>(&TrainConfig::seed, 0)},
      {"threads", integer(&TrainConfig::threads, 0, 4096)},
      {"eval_every", integer<int64_t>(&TrainConfig::eval_every, 0)},
      {"eval_batches", integer(&TrainConfig::eval_batches, 1, 1 << 20)},
      {"ckpt_dir", path(&TrainConfig::ckpt_dir)},
      {"ckpt_every", integer<int64_t>(&TrainConfig::ckpt_every, 0)},
      {"keep_last", integer(&TrainConfig::keep_last, 0, 1 << 20)},
      {"keep_every", integer(&TrainConfig::keep_every, 0, 1 << 30)},
      {"ckpt_local", path(&TrainConfig::ckpt_local)},
      {"ckpt_memory", path(&TrainConfig::ckpt_memory)},
      {"ckpt_disk_duty", number(&TrainConfig::ckpt_disk_duty, 0.01f, 1)},
      {"ckpt_s3", path(&TrainConfig::ckpt_s3)},
      {"ckpt_cluster", choice(&TrainConfig::ckpt_cluster, {"auto", "on", "off"})},
      {"ckpt_cluster_every", integer<int64_t>(&TrainConfig::ckpt_cluster_every, 1)},
      {"ckpt_replicas", integer(&TrainConfig::ckpt_replicas, 0, 64)},
      {"ckpt_cluster_config", path(&TrainConfig::ckpt_cluster_config)},
      {"log", path(&TrainConfig::log)},
      {"zero", integer(&TrainConfig::zero, 0, 3)},
      {"global_batch", integer(&TrainConfig::global_batch, 0, 1 << 24)},
      {"bucket_mb", number(&TrainConfig::bucket_mb, 0.001f, 4096)},
      {"rendezvous", path(&TrainConfig::rendezvous)},
      {"comm_timeout", number(&TrainConfig::comm_timeout, 1, 86400)},
      {"peak_tflops", number(&TrainConfig::peak_tflops, 0, 1e6f)},
  };
  return table;
}

// One line of --help per key: what it sets, its unit and range.
const std::map<std::string, std::string>& docs() {
  static const std::map<std::string, std::string> table = {
      {"data", "an `endure-data prepare` folder to train on (required)"},
      {"batch", "sequences per micro-batch, 1 to 65536"},
      {"grad_accum", "micro-batches per optimizer step, 1 to 65536"},
      {"steps", "optimizer steps to train, at least 1"},
      {"lr", "peak learning rate after warmup, cosine-decayed to min_lr, 0 to 10"},
      {"min_lr", "learning rate at the last step, 0 to lr"},
      {"warmup", "steps of linear learning-rate warmup, below steps"},
      {"weight_decay", "AdamW's decoupled weight decay, 0 to 1"},
      {"clip", "gradients clipped to this global L2 norm (0: no clipping)"},
      {"seed", "seed of the weights' initialisation and the data order"},
      {"threads", "OpenMP threads of the model's kernels (0: OMP_NUM_THREADS, else every core)"},
      {"eval_every", "steps between validation losses (0: no evaluation)"},
      {"eval_batches", "micro-batches of validation data per evaluation"},
      {"ckpt_dir",
       "checkpoint folder, resumed from at start (empty: no checkpoints); s3://BUCKET/PREFIX "
       "keeps them in S3, staged in --ckpt-local (default: a folder under the temp dir)"},
      {"ckpt_every", "steps between checkpoints (with --ckpt-dir)"},
      {"keep_last", "checkpoints kept: the newest this many (0: every one)"},
      {"keep_every", "also keep each checkpoint whose step is a multiple of this (0: none)"},
      {"ckpt_local", "node-local disk tier in front of --ckpt-dir, a folder (empty: none)"},
      {"ckpt_memory", "memory tier in front of --ckpt-dir, a tmpfs folder (empty: none)"},
      {"ckpt_disk_duty",
       "with --ckpt-memory, the share of the time the disk tiers may spend writing, 0.01 to 1: "
       "saves due while they write or rest go to the memory tier alone"},
      {"ckpt_s3",
       "S3 tier behind --ckpt-dir, s3://BUCKET/PREFIX, uploaded in the background (empty: "
       "none; configured from AWS_* variables or the shared credentials file)"},
      {"ckpt_cluster",
       "cluster memory tier, each rank's shard in its node's memory store and its peers' "
       "(TieredStorageConfig): auto (where the node has one), on (required) or off"},
      {"ckpt_cluster_every",
       "with the cluster memory tier, steps between saves to it (ckpt_every's go to every tier)"},
      {"ckpt_replicas",
       "with the cluster memory tier, peer nodes holding a copy of each shard, 0 to 64"},
      {"ckpt_cluster_config",
       "folder of the node's memory_store.json and resource_config.json (empty: the node's own)"},
      {"log", "file the JSON step lines are appended to, besides stdout (empty: none)"},
      {"zero",
       "0: plain data parallel; 1, 2, 3: the ZeRO stage (moments, + gradients, + "
       "parameters sharded)"},
      {"global_batch",
       "sequences per optimizer step over every rank, the same on any world size "
       "(0: batch x grad_accum x ranks)"},
      {"bucket_mb", "MiB of gradients per all-reduce bucket (ZeRO 0 and 1)"},
      {"rendezvous", "folder every rank sees, where the ranks meet (empty: CKPT_DIR/rendezvous)"},
      {"comm_timeout", "seconds a collective waits for a rank before the step fails, 1 to 86400"},
      {"peak_tflops",
       "one rank's peak TFLOP/s, the denominator of the step lines' mfu (0: "
       "threads x 0.064)"},
  };
  return table;
}

}  // namespace

std::string TrainConfig::doc(const std::string& key) {
  auto it = docs().find(key);
  return it == docs().end() ? "" : it->second;
}

Result<TrainConfig> TrainConfig::from_json(const json& j) {
  if (!j.is_object()) return invalid("the training config must be a JSON object");
  TrainConfig c;
  for (const auto& [key, value] : j.items()) {
    auto it = fields().find(key);
    if (it == fields().end()) return invalid("unknown training config key \"" + key + "\"");
    if (auto s = it->second.read(value, &c); !s.ok()) {
      return invalid(key + " " + s.error().message);
    }
  }
  if (c.data.empty()) return invalid("data is required: an `endure-data prepare` folder");
  if (c.min_lr > c.lr) {
    return invalid(fmt::format("min_lr {} is above lr {}", c.min_lr, c.lr));
  }
  if (c.warmup >= c.steps) {
    return invalid("warmup " + std::to_string(c.warmup) + " must be below steps " +
                   std::to_string(c.steps));
  }
  const bool tiers = !c.ckpt_local.empty() || !c.ckpt_memory.empty();
  if (tiers && c.ckpt_dir.empty()) {
    return invalid("ckpt_local and ckpt_memory are tiers of ckpt_dir: give ckpt_dir too");
  }
  if (c.ckpt_cluster == "on" && c.ckpt_dir.empty()) {
    return invalid("ckpt_cluster on is a tier of ckpt_dir: give ckpt_dir too");
  }
  if (!c.ckpt_dir.empty() && c.ckpt_every == 0) {
    return invalid("ckpt_every must be positive when ckpt_dir is given");
  }
  if (c.ckpt_s3_uri()) {
    if (auto uri = s3::parse_s3_uri(c.ckpt_dir.string(), "ckpt_dir"); !uri) return uri.error();
  }
  if (!c.ckpt_s3.empty()) {
    if (c.ckpt_dir.empty()) return invalid("ckpt_s3 is a tier of ckpt_dir: give ckpt_dir too");
    if (c.ckpt_s3_uri()) {
      return invalid("ckpt_s3: ckpt_dir is an s3:// prefix already: give one of them");
    }
    if (auto uri = s3::parse_s3_uri(c.ckpt_s3.string(), "ckpt_s3"); !uri) return uri.error();
  }
  return c;
}

bool TrainConfig::ckpt_s3_uri() const { return ckpt_dir.string().rfind("s3://", 0) == 0; }

TrainConfig::CheckpointFolders TrainConfig::checkpoint_folders() const {
  if (!ckpt_s3_uri()) return {ckpt_dir, ckpt_local, ckpt_s3.string()};
  std::filesystem::path staging = ckpt_local;
  if (staging.empty()) {
    staging = std::filesystem::temp_directory_path() / "endure-ckpt" / ckpt_dir.string().substr(5);
  }
  return {staging, {}, ckpt_dir.string()};
}

std::vector<std::pair<std::string, bool>> TrainConfig::scalar_keys() {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& [key, field] : fields()) {
    if (key != "model") out.emplace_back(key, field.number);
  }
  return out;
}

json TrainConfig::to_json() const {
  json j = json::object();
  for (const auto& [key, field] : fields()) j[key] = field.write(*this);
  return j;
}

}  // namespace endure::train
