// The trainer's checkpoints: the newest one checked before the ranks meet and restored by
// every rank, saves overlapped with the next step (or, the state kept in place, written by
// the optimizer step itself), and the run's last save made durable.
#include <fmt/format.h>

#include "train/trainer/trainer_impl.h"

namespace endure::train {

// Before any rank meets the others: the newest checkpoint must be of this model and this
// data, or the run is refused with nothing written.
Status Trainer::Impl::check_checkpoint() {
  latest = ckpt->latest();
  if (!latest) return Status::Ok();
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

// Every rank restores rank 0's newest step, resharded when another world size saved it.
Status Trainer::Impl::restore() {
  int64_t agreed = latest ? latest->step : -1;
  if (auto s = comm->broadcast(&agreed, sizeof agreed, 0); !s) return s;
  if (agreed != (latest ? latest->step : -1)) {
    return make_error("CorruptCheckpoint", "rank " + std::to_string(ranks.rank) + " sees step " +
                                               std::to_string(latest ? latest->step : -1) +
                                               " as the newest checkpoint in " +
                                               config.ckpt_dir.string() + " and rank 0 step " +
                                               std::to_string(agreed));
  }
  if (!latest) return Status::Ok();
  if (auto s = restore_state(*ckpt, *latest, ranks.rank, *engine); !s) {
    return make_error(s.error().code,
                      "restoring from " + config.ckpt_dir.string() + ": " + s.error().message);
  }
  const json& u = latest->user;
  step = latest->step;
  saved_step = latest->step;
  resumed_from = latest->step;
  resumed_tier = latest->tiers.empty() ? "" : latest->tiers.front();
  if (u.value("threads", threads) != threads) {
    emit({{"warning", "the checkpoint was made with " + std::to_string(u.value("threads", 0)) +
                          " threads and this run has " + std::to_string(threads) +
                          ": results are deterministic for one thread count, so they will "
                          "differ in the last bits from a run that kept its threads"}});
  }
  if (u.value("layout", json()).value("world", ranks.world) != ranks.world ||
      u.value("zero", config.zero) != config.zero) {
    emit({{"resharded", true},
          {"from_world", u["layout"]["world"]},
          {"from_zero", u.value("zero", 0)},
          {"world", ranks.world},
          {"zero", config.zero}});
  }
  return Status::Ok();
}

// Saves the current step unless it is saved already, its copy overlapped with the next
// step's forward and backward (which only read the state; update() waits for the copy
// before it writes), and logs the stall: how long training waited for the save to start.
// With a memory tier, a save due while the disk tiers still write an earlier one, or rest
// after it (ckpt_disk_duty), goes to the memory tier alone (on every rank alike: rank 0
// commits only steps all ranks wrote), so the disk falls behind rather than training
// waiting for it or sharing the cores with it.
Status Trainer::Impl::save_checkpoint() {
  if (saved_step == step) return Status::Ok();
  auto tiers = ckpt::Tiers::all;
  if (!config.ckpt_memory.empty()) {
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
    if (memory_only_since < 0) memory_only_since = step;
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
