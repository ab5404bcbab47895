// The trainer's checkpoints: the newest one checked before the ranks meet and restored by
// every rank, saves overlapped with the next step (or, the state kept in place, written by
// the optimizer step itself), and the run's last save made durable.
#include <fmt/format.h>

#include <cstdio>

#include "train/ckpt/cluster_tier_config.h"
#include "train/trainer/trainer_impl.h"

namespace endure::train {

// Before any rank meets the others: the newest checkpoint must be of this model and this
// data, or the run is refused with nothing written.
Status Trainer::Impl::check_checkpoint() {
  for (auto& info : ckpt->list()) {
    if (info.valid) valid_checkpoints.push_back(std::move(info));
  }
  if (valid_checkpoints.empty()) return Status::Ok();
  const ckpt::CheckpointInfo* latest = &valid_checkpoints.front();
  const json& user = latest->user;
  if (!user.contains("model") || user["model"] != model_config.to_json()) {
    return invalid("ckpt_dir " + config.ckpt_dir.string() + " holds step " +
                   std::to_string(latest->step) + " of another model (" +
                   user.value("model", json()).dump() + "): give a new ckpt_dir");
  }
  auto position = data::LoaderPosition::from_json(user.value("loader", json()));
  if (!position.ok())
    return invalid("ckpt_dir step " + std::to_string(latest->step) + ": " +
                   position.error().message);
  if (auto s = train->restore(*position); !s.ok()) {
    return invalid("ckpt_dir " + config.ckpt_dir.string() + " step " +
                   std::to_string(latest->step) + " was made on other data: " + s.error().message);
  }
  return Status::Ok();
}

Result<bool> cluster_tier_options(const TrainConfig& c, const Ranks& ranks,
                                  const std::map<std::string, std::string>& env, ckpt::Options* o) {
  if (c.ckpt_cluster == "off" || c.ckpt_dir.empty()) return false;
  const auto files = ckpt::ClusterTierFiles::node();
  const std::filesystem::path store_file =
      c.ckpt_cluster_config.empty() ? files.memory_store
                                    : c.ckpt_cluster_config / files.memory_store.filename();
  auto nodes = rank_nodes_from(env, ranks.world);
  if (!nodes) return make_error(nodes.error().code, "ckpt_cluster: " + nodes.error().message);
  auto node = env.find("SLURMD_NODENAME");
  std::string off;
  if (!std::filesystem::exists(store_file)) {
    off = store_file.string() +
          " is not there: the cluster's TieredStorageConfig does not enable the tier";
  } else if (node == env.end() || node->second.empty() || nodes->empty()) {
    off = "SLURMD_NODENAME and SLURM_STEP_NODELIST name no nodes: not a Slurm step";
  }
  if (!off.empty()) {
    if (c.ckpt_cluster == "on") return invalid("ckpt_cluster on: " + off);
    return false;
  }
  o->cluster_node = node->second;
  o->cluster_rank_nodes = std::move(*nodes);
  o->cluster_replicas = c.ckpt_replicas;
  o->cluster_config_dir = c.ckpt_cluster_config;
  return true;
}

// One step's restore on this rank, from its nearest copy that verifies; what it read.
Result<ckpt::CheckpointInfo> Trainer::Impl::restore_step(const ckpt::CheckpointInfo& info) {
  const json& user = info.user;
  if (!user.contains("model") || user["model"] != model_config.to_json()) {
    return invalid("step " + std::to_string(info.step) + " is of another model");
  }
  auto read = read_state(*ckpt, info, ranks.rank, *engine);
  if (!read) return read.error();
  auto position = data::LoaderPosition::from_json(user.value("loader", json()));
  if (!position) return position.error();
  if (auto s = train->restore(*position); !s) return s.error();
  return read;
}

// Every rank restores the same step: the newest that every rank can read, each rank from
// its nearest tier. Rank 0 names the candidates (the valid steps it sees, newest first);
// a step that any rank cannot read whole (its copies lost with two nodes, or damaged in
// every tier) gives way to the next older one, and the log says so. A rank never mixes
// steps: the engine holds one step's state once every rank has read that step.
Status Trainer::Impl::restore() {
  std::vector<int64_t> steps;
  std::map<int64_t, ckpt::CheckpointInfo> mine;
  for (const auto& info : valid_checkpoints) {
    if (ranks.rank == 0) steps.push_back(info.step);
    mine[info.step] = info;
  }
  int64_t count = static_cast<int64_t>(steps.size());
  if (auto s = comm->broadcast(&count, sizeof count, 0); !s) return s;
  steps.resize(static_cast<size_t>(count));
  if (count > 0) {
    if (auto s = comm->broadcast(steps.data(), steps.size() * sizeof(int64_t), 0); !s) return s;
  }
  for (int64_t candidate : steps) {
    const double t0 = now_seconds();
    auto it = mine.find(candidate);
    Result<ckpt::CheckpointInfo> read =
        it == mine.end() ? Result<ckpt::CheckpointInfo>(make_error(
                               "NoCheckpoint", "this rank sees no step " +
                                                   std::to_string(candidate) + " in any tier"))
                         : restore_step(it->second);
    float failed = read ? 0.0f : 1.0f;
    if (!read) {
      std::fprintf(stderr, "endure-train rank %d: step %lld: %s\n", ranks.rank,
                   static_cast<long long>(candidate), read.error().message.c_str());
    }
    if (ranks.world > 1) {
      if (auto s = comm->all_reduce(&failed, 1); !s) return s;
    }
    if (failed > 0) {
      restore_lines.push_back(
          json{{"restore_fell_back", candidate},
               {"ranks_failed", static_cast<int>(failed)},
               {"reason", read ? "another rank could not read it (its stderr says why)"
                               : read.error().message}});
      continue;
    }
    const json& u = it->second.user;
    if (auto s = engine->restored(u.value("adam_step", int64_t{0})); !s) return s;
    auto from = gather_restored(*read);
    if (!from) return from.error();
    step = candidate;
    saved_step = candidate;
    resumed_from = candidate;
    resumed_tier = read->tiers.empty() ? "" : read->tiers.front();
    restore_lines.push_back(
        json{{"restored", candidate}, {"restore_ms", (now_seconds() - t0) * 1e3}, {"from", *from}});
    if (u.value("threads", threads) != threads) {
      restore_lines.push_back(
          json{{"warning", "the checkpoint was made with " + std::to_string(u.value("threads", 0)) +
                               " threads and this run has " + std::to_string(threads) +
                               ": results are deterministic for one thread count, so they will "
                               "differ in the last bits from a run that kept its threads"}});
    }
    if (u.value("layout", json()).value("world", ranks.world) != ranks.world ||
        u.value("zero", config.zero) != config.zero) {
      restore_lines.push_back(json{{"resharded", true},
                                   {"from_world", u["layout"]["world"]},
                                   {"from_zero", u.value("zero", 0)},
                                   {"world", ranks.world},
                                   {"zero", config.zero}});
    }
    return Status::Ok();
  }
  if (steps.empty()) return Status::Ok();
  return make_error("CorruptCheckpoint", "no step of " + config.ckpt_dir.string() +
                                             " that every rank can read (" +
                                             std::to_string(steps.size()) +
                                             " tried, newest first; each rank's stderr says why)");
}

// Where each rank's restore read from, by rank: each rank's tier and bytes sent to all in
// turn, so that every rank has the whole list (rank 0 logs it).
Result<json> Trainer::Impl::gather_restored(const ckpt::CheckpointInfo& read) {
  struct Record {
    char tier[120];
    uint64_t bytes;
  };
  json out = json::array();
  for (int r = 0; r < ranks.world; ++r) {
    Record record{};
    if (r == ranks.rank) {
      const std::string tier = read.tiers.empty() ? "" : read.tiers.front();
      std::snprintf(record.tier, sizeof record.tier, "%s", tier.c_str());
      record.bytes = read.bytes_read;
    }
    if (ranks.world > 1) {
      if (auto s = comm->broadcast(&record, sizeof record, r); !s) return s.error();
    }
    out.push_back({{"rank", r}, {"tier", std::string(record.tier)}, {"bytes", record.bytes}});
  }
  return out;
}

// Saves the current step unless it is saved already, its copy overlapped with the next
// step's forward and backward (which only read the state; update() waits for the copy
// before it writes), and logs the stall: how long training waited for the save to start.
// Steps between ckpt_every's go to the cluster memory tier alone. With a memory tier, a
// save to every tier due while the disk tiers still write an earlier one, or rest
// after it (ckpt_disk_duty), goes to the memory tier alone (on every rank alike: rank 0
// commits only steps all ranks wrote), so the disk falls behind rather than training
// waiting for it or sharing the cores with it.
Status Trainer::Impl::save_checkpoint() {
  if (saved_step == step) return Status::Ok();
  // A save between ckpt_every's (the cluster tier's, or a stop's) goes to the memory tiers
  // alone, when there are any; a stop's is made durable by finish_checkpoints().
  const bool memory_tier = !config.ckpt_memory.empty() || cluster_tier;
  const bool disk_due = disk_due_after(step) || !memory_tier;
  auto tiers = disk_due ? ckpt::Tiers::all : ckpt::Tiers::memory;
  if (disk_due && memory_tier) {
    float busy = ckpt->disk_busy() ? 1.0f : 0.0f;
    if (ranks.world > 1) {
      if (auto s = comm->all_reduce(&busy, 1); !s) return s;
    }
    if (busy > 0) tiers = ckpt::Tiers::memory;
  }
  const double t0 = now_seconds();
  Status saved =
      in_place ? ckpt->save_in_place(step, checkpoint_user(), tiers, threads)
               : ckpt->save_overlapped(step, state_buffers(*engine), checkpoint_user(), tiers);
  if (!saved.ok()) return saved;
  saved_step = step;
  emit({{"checkpoint", step},
        {"stall_ms", (now_seconds() - t0) * 1e3},
        {"tiers", tiers == ckpt::Tiers::all ? "all" : "memory"}});
  if (tiers == ckpt::Tiers::memory) {
    if (disk_due && memory_only_since < 0) memory_only_since = step;
  } else if (memory_only_since >= 0) {
    emit({{"checkpoint_disk_behind",
           fmt::format(
               "steps {} to {} kept in the memory tier alone while the disk tiers wrote an earlier "
               "step or rested (ckpt_disk_duty {}); step {} goes to every tier",
               memory_only_since, step - 1, config.ckpt_disk_duty, step)}});
    memory_only_since = -1;
  }
  return Status::Ok();
}

// A run's end: its last step saved (to every tier, even when its periodic save went to the
// memory tier alone), and every save durable.
Status Trainer::Impl::finish_checkpoints() {
  if (step > 0) {
    if (auto s = save_checkpoint(); !s.ok()) return s;
  }
  if (memory_only_since >= 0) {
    emit({{"checkpoint_disk_behind", fmt::format("steps {} to {} kept in the memory tier alone; "
                                                 "the run's last, {}, now goes to every tier",
                                                 memory_only_since, step, step)}});
    memory_only_since = -1;
  }
  if (auto s = ckpt->flush(); !s.ok()) {
    return make_error(s.error().code, "a checkpoint failed: " + s.error().message);
  }
  return Status::Ok();
}

// The optimizer step, after waiting for the memory it writes: the last checkpoint's copy
// must be done, or (the state kept in place) the new state goes to a slot of its own, which
// a disk write may still be reading. Returns the seconds waited.
Result<double> Trainer::Impl::update(float lr) {
  const double t0 = now_seconds();
  if (!in_place) {
    if (ckpt) ckpt->wait_copied();  // at once when no copy runs
    const double waited = now_seconds() - t0;
    if (auto s = engine->update(lr); !s.ok()) return s.error();
    return waited;
  }
  auto next = next_state(*ckpt, *engine);
  if (!next.ok()) return next.error();
  const double waited = now_seconds() - t0;
  // The state a save is due for has its checksums taken piece by piece as the update
  // writes it (a save at an unplanned step, on a stop, takes them itself).
  const model::AdamWSlice out = *next;
  auto written = [this, out](int thread, size_t begin, size_t end, model::AdamWSlice values) {
    const size_t bytes = (end - begin) * sizeof(float);
    ckpt->state_written(thread, out.p + begin, bytes, values.p);
    ckpt->state_written(thread, out.m + begin, bytes, values.m);
    ckpt->state_written(thread, out.v + begin, bytes, values.v);
  };
  const bool save_due = save_due_after(step + 1);
  if (auto s = engine->update_into(lr, out, save_due ? written : model::AdamW::Written());
      !s.ok()) {
    return s.error();
  }
  return waited;
}

}  // namespace endure::train
