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

#include "train/trainer/trainer_impl.h"

namespace endure::train {
namespace {

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
  const auto folders = config.checkpoint_folders();
  if (rendezvous.empty() && !folders.dir.empty()) rendezvous = folders.dir / "rendezvous";
  // A temp folder of one node cannot stage the checkpoints of ranks on several.
  if (ranks->world > 1 && config.ckpt_s3_uri() && config.ckpt_local.empty()) {
    return invalid(
        "ckpt_dir " + config.ckpt_dir.string() + " with " + std::to_string(ranks->world) +
        " ranks: give ckpt_local, a folder every rank sees, to stage the checkpoints in");
  }
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
    o.dir = folders.dir;
    o.rank = ranks->rank;
    o.world = ranks->world;
    o.keep_last = config.keep_last;
    o.keep_every = config.keep_every;
    o.local_dir = folders.local;
    o.memory_dir = config.ckpt_memory;
    o.disk_duty = config.ckpt_disk_duty;
    o.s3 = folders.s3;
    auto cluster = cluster_tier_options(config, *ranks, environment(), &o);
    if (!cluster) return cluster.error();
    impl->cluster_tier = *cluster;
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
          {"cluster_memory_tier", t.cluster_tier},
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
  for (const auto& line : t.restore_lines) t.emit(line);

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
    const double update_start = now_seconds();
    auto copy_wait = t.update(lr);
    if (!copy_wait.ok()) return copy_wait.error();
    const double update_seconds = now_seconds() - update_start;
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
            {"update_ms", update_seconds * 1e3},  // the optimizer step, its wait included
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
