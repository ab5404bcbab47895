#include "train/trainer/trainer.h"

#include <fmt/format.h>
#include <omp.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include "endure/checkpoint.h"
#include "endure/data.h"
#include "endure/model.h"
#include "endure/zero.h"
#include "train/trainer/metrics_reporter.h"
#include "train/trainer/ranks.h"
#include "train/trainer/sharded_checkpoint.h"

namespace endure::train {
namespace {

Error invalid(const std::string& message) { return make_error("ValidationException", message); }

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The model config with its vocabulary taken from the data unless the config sets one.
Result<model::LlamaConfig> resolve_model(const json& model_json, int data_vocab) {
  auto cfg = model::LlamaConfig::from_json(model_json);
  if (!cfg.ok()) return invalid("model: " + cfg.error().message);
  if (!model_json.contains("vocab_size")) {
    cfg->vocab_size = data_vocab;
  } else if (cfg->vocab_size < data_vocab) {
    return invalid("model.vocab_size " + std::to_string(cfg->vocab_size) +
                   " is smaller than the data's vocabulary of " + std::to_string(data_vocab));
  }
  if (auto s = cfg->validate(); !s.ok()) return invalid("model: " + s.error().message);
  return cfg;
}

// The loader of one split, sized by the model's sequence length.
Result<std::unique_ptr<data::TokenLoader>> open_split(const TrainConfig& c,
                                                      const std::string& split, int seq_len,
                                                      const Ranks& ranks) {
  data::LoaderOptions o;
  o.rank = ranks.rank;
  o.world = ranks.world;
  o.dir = c.data;
  o.split = split;
  o.batch = c.batch;
  o.seq_len = seq_len;
  o.seed = c.seed;
  auto loader = data::TokenLoader::open(o);
  if (!loader.ok()) {
    // A folder that is not there is a bad flag, not a failure of the machine.
    const std::string& code = loader.error().code;
    return make_error(code == "NotFound" ? "ValidationException" : code,
                      "data: " + loader.error().message);
  }
  return loader;
}

// Micro-batches per step: grad_accum, or what keeps global_batch on this world size.
Result<int> micro_batches(const TrainConfig& c, int world) {
  if (c.global_batch == 0) return c.grad_accum;
  if (c.grad_accum != 1) {
    return invalid("grad_accum " + std::to_string(c.grad_accum) +
                   " and global_batch both set: global_batch makes the micro-batches itself");
  }
  if (c.global_batch % world != 0) {
    return invalid("global_batch " + std::to_string(c.global_batch) + " does not divide among " +
                   std::to_string(world) + " ranks (SLURM_NTASKS)");
  }
  const int per_rank = c.global_batch / world;
  if (per_rank % c.batch != 0) {
    return invalid("global_batch " + std::to_string(c.global_batch) + " gives each of " +
                   std::to_string(world) + " ranks " + std::to_string(per_rank) +
                   " sequences a step: not a multiple of batch " + std::to_string(c.batch));
  }
  return per_rank / c.batch;
}

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

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
  bool in_place = false;  // the state lives in the checkpointer's slots (next_state())
  std::optional<ckpt::CheckpointInfo> latest;  // the newest checkpoint, checked at open
  std::vector<int32_t> inputs, targets;
  int64_t step = 0;                // optimizer steps done
  int64_t saved_step = -1;         // the step of the newest checkpoint saved or restored
  int64_t memory_only_since = -1;  // the first of the saves kept in the memory tier alone
  std::optional<int64_t> resumed_from;
  std::string resumed_tier;
  int threads = 1;
  FILE* log = nullptr;
  std::unique_ptr<MetricsReporter> reporter;  // rank 0 in a job on an endure cluster

  ~Impl() {
    if (log) std::fclose(log);
  }

  // Rank 0 speaks for the job.
  void emit(const json& line) {
    if (ranks.rank != 0) return;
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
  Result<float> train_step();
  // The optimizer step, after waiting for the memory it writes; returns the seconds waited.
  Result<double> update(float lr);
  // Whether a checkpoint is due once `done` steps are.
  bool save_due_after(int64_t done) const {
    return done % config.ckpt_every == 0 || done == config.steps;
  }
  Result<float> evaluate();
  Status save_checkpoint();
  Status finish_checkpoints();
};

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

Result<float> Trainer::Impl::train_step() {
  const int B = config.batch, T = seq_len();
  const float scale = 1.0f / static_cast<float>(micro * ranks.world);
  double loss = 0;
  for (int k = 0; k < micro; ++k) {
    train->next(inputs.data(), targets.data());
    auto l = engine->micro_batch(inputs.data(), targets.data(), B, T, scale, k == micro - 1);
    if (!l.ok()) return l.error();
    if (!std::isfinite(*l)) {
      return make_error("Internal", "the loss is " + std::to_string(*l) + " at step " +
                                        std::to_string(step + 1) + ", micro-batch " +
                                        std::to_string(k) + " of rank " +
                                        std::to_string(ranks.rank));
    }
    loss += *l;
  }
  return mean_over_ranks(static_cast<float>(loss / micro));
}

// The mean loss over the first eval_batches batches of the val split (each rank its rows of
// them): the same batches every time, so evaluations compare.
Result<float> Trainer::Impl::evaluate() {
  (void)val->restore(val_start);  // the loader's own position: never refused
  double sum = 0;
  for (int i = 0; i < config.eval_batches; ++i) {
    val->next(inputs.data(), targets.data());
    auto l = engine->forward(inputs.data(), targets.data(), config.batch, seq_len());
    if (!l.ok()) return l.error();
    sum += *l;
  }
  return mean_over_ranks(static_cast<float>(sum / config.eval_batches));
}

// Saves the current step unless it is saved already, its copy overlapped with the next
// step's forward and backward (which only read the state; update() waits for the copy
// before it writes), and logs the stall: how long training waited for the save to start.
// With a memory tier, a save due while the disk tiers still write an earlier one goes to
// the memory tier alone (on every rank alike: rank 0 commits only steps all ranks wrote),
// so the disk falls behind rather than training waiting for it.
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
               "step; step {} goes to every tier",
               memory_only_since, step - 1, step)}});
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

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::open(const TrainConfig& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  if (config.threads > 0) omp_set_num_threads(config.threads);
  impl->threads = omp_get_max_threads();
  auto ranks = ranks_from(environment());
  if (!ranks.ok()) return ranks.error();
  impl->ranks = *ranks;
  auto micro = micro_batches(config, ranks->world);
  if (!micro.ok()) return micro.error();
  impl->micro = *micro;
  std::filesystem::path rendezvous = config.rendezvous;
  if (rendezvous.empty() && !config.ckpt_dir.empty()) rendezvous = config.ckpt_dir / "rendezvous";
  if (ranks->world > 1 && rendezvous.empty()) {
    return invalid("rendezvous: " + std::to_string(ranks->world) +
                   " ranks meet in a folder they all see: give ckpt_dir or rendezvous");
  }

  // The model's sequence length sizes the loader, whose data gives the vocabulary.
  json probe = config.model;
  if (!probe.contains("vocab_size") && !probe.contains("preset")) probe["vocab_size"] = 32000;
  auto shape = model::LlamaConfig::from_json(probe);
  if (!shape.ok()) return invalid("model: " + shape.error().message);
  auto train = open_split(config, "train", shape->seq_len, *ranks);
  if (!train.ok()) return train.error();
  impl->train = std::move(*train);
  auto cfg = resolve_model(config.model, impl->train->vocab_size());
  if (!cfg.ok()) return cfg.error();
  impl->model_config = *cfg;
  if (config.eval_every > 0) {
    auto val = open_split(config, "val", cfg->seq_len, *ranks);
    if (!val.ok()) {
      return make_error(val.error().code, val.error().message +
                                              " (evaluation reads the val split; eval_every 0 "
                                              "turns it off)");
    }
    impl->val = std::move(*val);
    impl->val_start = impl->val->position();
  }
  if (!config.ckpt_dir.empty()) {
    ckpt::Options o;
    o.dir = config.ckpt_dir;
    o.rank = ranks->rank;
    o.world = ranks->world;
    o.keep_last = config.keep_last;
    o.keep_every = config.keep_every;
    o.local_dir = config.ckpt_local;
    o.memory_dir = config.ckpt_memory;
    auto ckpt = ckpt::Checkpointer::open(o);
    if (!ckpt.ok()) return make_error(ckpt.error().code, "ckpt_dir: " + ckpt.error().message);
    impl->ckpt = std::move(*ckpt);
    if (auto s = impl->check_checkpoint(); !s.ok()) return s.error();
  }

  auto model = model::Llama::create(*cfg, config.batch);
  if (!model.ok()) return model.error();
  impl->model = std::move(*model);
  impl->model->init(config.seed);
  impl->inputs.resize(static_cast<size_t>(config.batch) * cfg->seq_len);
  impl->targets.resize(impl->inputs.size());

  // Checked and ready: now the ranks meet.
  auto comm =
      connect_ranks(*ranks, rendezvous,
                    std::chrono::milliseconds(static_cast<int64_t>(config.comm_timeout * 1e3)));
  if (!comm.ok()) return comm.error();
  impl->comm = std::move(*comm);
  zero::EngineOptions eo;
  eo.stage = config.zero;
  eo.bucket_floats = static_cast<size_t>(config.bucket_mb * (1 << 20) / sizeof(float));
  eo.adam.lr = config.lr;
  eo.adam.weight_decay = config.weight_decay;
  auto engine = zero::Engine::create(*impl->comm, *impl->model, eo);
  if (!engine.ok()) return engine.error();
  impl->engine = std::move(*engine);
  if (impl->ckpt) {
    if (auto s = impl->restore(); !s.ok()) return s.error();
    if (impl->engine->state_movable()) {
      // The state moves into the checkpointer's slots: a checkpoint is then the state itself.
      auto slot = next_state(*impl->ckpt, *impl->engine);
      if (!slot.ok()) return make_error(slot.error().code, "ckpt: " + slot.error().message);
      if (auto s = impl->engine->move_state(*slot); !s.ok()) return s.error();
      impl->in_place = true;
    } else {
      // The staging memory is made ready now, not in the first checkpoint's stall.
      size_t bytes = 0;
      for (const auto& b : state_buffers(*impl->engine)) bytes += b.size;
      impl->ckpt->reserve(bytes);
    }
  }
  if (!config.log.empty() && ranks->rank == 0) {
    impl->log = std::fopen(config.log.c_str(), "a");
    if (!impl->log) {
      return invalid("log " + config.log.string() +
                     " cannot be opened for appending: " + std::strerror(errno));
    }
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

Result<RunSummary> Trainer::run(const std::atomic<bool>* stop) {
  Impl& t = *impl_;
  const TrainConfig& c = t.config;
  const int64_t tokens_per_step = static_cast<int64_t>(t.global_batch()) * t.seq_len();
  const char* resume_count = std::getenv("ENDURE_AUTO_RESUME_COUNT");
  const char* resume_reason = std::getenv("ENDURE_AUTO_RESUME_REASON");
  const char* restart_count = std::getenv("SLURM_RESTART_COUNT");  // a requeued job
  if (t.ranks.rank == 0) t.reporter = MetricsReporter::from_environment();
  t.emit({{"start", true},
          {"resumed_from", t.resumed_from ? json(*t.resumed_from) : json()},
          {"resumed_tier", t.resumed_from ? json(t.resumed_tier) : json()},
          {"auto_resume_count", resume_count ? std::atoll(resume_count) : 0},
          {"auto_resume_reason", resume_reason ? resume_reason : ""},
          {"slurm_restart_count", restart_count ? std::atoll(restart_count) : 0},
          {"steps", c.steps},
          {"params", t.model_config.num_parameters()},
          {"flops_per_token", t.model_config.flops_per_token()},
          {"threads", t.threads},
          {"world", t.ranks.world},
          {"zero", c.zero},
          {"global_batch", t.global_batch()},
          {"micro_batches", t.micro},
          {"tokens_per_step", tokens_per_step},
          {"train_tokens", t.train->tokens()},
          {"model", t.model_config.to_json()}});

  RunSummary summary;
  const double start = now_seconds();
  int64_t tokens = 0;
  double step_seconds = 0, comm_seconds = 0, exposed_seconds = 0;
  while (t.step < c.steps) {
    // Every rank stops at the same step: a stop request anywhere counts for all.
    float stopping = stop && stop->load() ? 1.0f : 0.0f;
    if (t.ranks.world > 1) {
      if (auto s = t.comm->all_reduce(&stopping, 1); !s) return s.error();
    }
    if (stopping > 0) {
      summary.stopped = true;
      break;
    }
    const float lr = model::cosine_lr(t.step, c.warmup, c.steps, c.lr, c.min_lr);
    const double t0 = now_seconds();
    auto loss = t.train_step();
    if (!loss.ok()) return loss.error();
    const float max_norm = c.clip > 0 ? c.clip : std::numeric_limits<float>::infinity();
    auto norm = t.engine->clip(max_norm);
    if (!norm.ok()) return norm.error();
    auto copy_wait = t.update(lr);
    if (!copy_wait.ok()) return copy_wait.error();
    ++t.step;
    const double dt = now_seconds() - t0;
    tokens += tokens_per_step;
    step_seconds += dt;
    comm_seconds += t.engine->comm_seconds();
    exposed_seconds += t.engine->exposed_seconds();
    t.emit({{"step", t.step},
            {"loss", *loss},
            {"lr", lr},
            {"grad_norm", *norm},
            {"step_ms", dt * 1e3},
            {"tokens_per_s", tokens_per_step / dt},
            {"mfu", t.mfu(tokens_per_step / dt)},
            {"comm_ms", t.engine->comm_seconds() * 1e3},
            {"comm_exposed_ms", t.engine->exposed_seconds() * 1e3},
            {"ckpt_copy_wait_ms", *copy_wait * 1e3},
            {"elapsed_s", now_seconds() - start}});

    if (t.val && (t.step % c.eval_every == 0 || t.step == c.steps)) {
      auto val_loss = t.evaluate();
      if (!val_loss.ok()) return val_loss.error();
      t.emit({{"eval", true}, {"step", t.step}, {"val_loss", *val_loss}});
    }
    if (t.ckpt && t.save_due_after(t.step)) {
      if (auto s = t.save_checkpoint(); !s.ok()) return s.error();
    }
  }
  if (t.ckpt) {
    // A stop between checkpoints saves where it stopped.
    if (auto s = t.finish_checkpoints(); !s.ok()) return s.error();
  }
  summary.last_step = t.step;
  t.emit({{summary.stopped ? "stopped" : "done", true},
          {"final_step", t.step},
          {"seconds", now_seconds() - start},
          {"tokens_per_s", step_seconds > 0 ? tokens / step_seconds : 0.0},
          {"comm_s", comm_seconds},
          {"comm_exposed_s", exposed_seconds},
          {"state_bytes", t.engine->state_bytes()},
          {"peak_rss_bytes", peak_rss_bytes()}});
  return summary;
}

}  // namespace endure::train
