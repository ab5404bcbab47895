#include "train/trainer/trainer.h"

#include <omp.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>
#include <optional>

#include "endure/checkpoint.h"
#include "endure/data.h"
#include "endure/model.h"

namespace endure::train {
namespace {

Error invalid(const std::string& message) { return make_error("ValidationException", message); }

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
Result<std::unique_ptr<data::TokenLoader>> open_split(const TrainConfig& c, const std::string& split,
                                                      int seq_len) {
  data::LoaderOptions o;
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

}  // namespace

struct Trainer::Impl {
  TrainConfig config;
  model::LlamaConfig model_config;
  std::unique_ptr<data::TokenLoader> train, val;
  data::LoaderPosition val_start;
  std::unique_ptr<model::Llama> model;
  std::unique_ptr<model::AdamW> adam;
  std::unique_ptr<ckpt::Checkpointer> ckpt;
  std::vector<int32_t> inputs, targets;
  int64_t step = 0;         // optimizer steps done
  int64_t saved_step = -1;  // the step of the newest checkpoint saved or restored
  std::optional<int64_t> resumed_from;
  std::string resumed_tier;
  int threads = 1;
  FILE* log = nullptr;

  ~Impl() {
    if (log) std::fclose(log);
  }

  void emit(const json& line) {
    const std::string text = line.dump() + "\n";
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (log) {
      std::fputs(text.c_str(), log);
      std::fflush(log);
    }
  }

  int seq_len() const { return model_config.seq_len; }

  json checkpoint_user() const {
    return json{{"step", step},
                {"adam_step", adam->step},
                {"loader", train->position().to_json()},
                {"model", model_config.to_json()},
                {"threads", threads},
                {"seed", config.seed}};
  }

  // What a checkpoint holds besides its metadata: saved from and restored into the same
  // memory, each buffer the parameter buffer's size.
  std::vector<ckpt::MutableBuffer> checkpoint_state() {
    const size_t n = model->num_params() * sizeof(float);
    return {{"params", model->params(), n}, {"adam.m", adam->m(), n}, {"adam.v", adam->v(), n}};
  }

  Status restore();
  Result<float> train_step();
  float evaluate();
  Status save_checkpoint();
};

Status Trainer::Impl::restore() {
  auto latest = ckpt->latest();
  if (!latest) return Status::Ok();
  const json& user = latest->user;
  if (!user.contains("model") || user["model"] != model_config.to_json()) {
    return invalid("ckpt_dir " + config.ckpt_dir.string() + " holds step " +
                   std::to_string(latest->step) + " of another model (" +
                   user.value("model", json()).dump() + "): give a new ckpt_dir");
  }
  auto loaded = ckpt->load_into(-1, checkpoint_state());
  if (!loaded.ok()) {
    return make_error(loaded.error().code, "restoring from " + config.ckpt_dir.string() + ": " +
                                               loaded.error().message);
  }
  const json& u = loaded->user;
  auto position = data::LoaderPosition::from_json(u.at("loader"));
  if (!position.ok()) return position.error();
  if (auto s = train->restore(*position); !s.ok()) {
    return invalid("ckpt_dir " + config.ckpt_dir.string() + " step " +
                   std::to_string(loaded->step) + " was made on other data: " +
                   s.error().message);
  }
  adam->step = u.at("adam_step").get<int64_t>();
  step = loaded->step;
  saved_step = loaded->step;
  resumed_from = loaded->step;
  resumed_tier = loaded->tiers.empty() ? "" : loaded->tiers.front();
  if (u.value("threads", threads) != threads) {
    emit({{"warning", "the checkpoint was made with " + std::to_string(u.value("threads", 0)) +
                          " threads and this run has " + std::to_string(threads) +
                          ": results are deterministic for one thread count, so they will "
                          "differ in the last bits from a run that kept its threads"}});
  }
  return Status::Ok();
}

Result<float> Trainer::Impl::train_step() {
  const int B = config.batch, T = seq_len();
  model->zero_grad();
  double loss = 0;
  for (int micro = 0; micro < config.grad_accum; ++micro) {
    train->next(inputs.data(), targets.data());
    const float l = model->forward(inputs.data(), targets.data(), B, T);
    if (!std::isfinite(l)) {
      return make_error("Internal", "the loss is " + std::to_string(l) + " at step " +
                                        std::to_string(step + 1) + ", micro-batch " +
                                        std::to_string(micro));
    }
    loss += l;
    model->backward(1.0f / static_cast<float>(config.grad_accum));
  }
  return static_cast<float>(loss / config.grad_accum);
}

// The mean loss over the first eval_batches batches of the val split: the same batches
// every time, so evaluations compare.
float Trainer::Impl::evaluate() {
  (void)val->restore(val_start);  // the loader's own position: never refused
  double sum = 0;
  for (int i = 0; i < config.eval_batches; ++i) {
    val->next(inputs.data(), targets.data());
    sum += model->forward(inputs.data(), targets.data(), config.batch, seq_len());
  }
  return static_cast<float>(sum / config.eval_batches);
}

// Saves the current step unless it is saved already, and logs the stall: how long training
// waited for the copy.
Status Trainer::Impl::save_checkpoint() {
  if (saved_step == step) return Status::Ok();
  std::vector<ckpt::Buffer> buffers;
  for (const auto& b : checkpoint_state()) buffers.push_back({b.name, b.data, b.size});
  const double t0 = now_seconds();
  if (auto s = ckpt->save(step, buffers, checkpoint_user()); !s.ok()) return s;
  saved_step = step;
  emit({{"checkpoint", step}, {"stall_ms", (now_seconds() - t0) * 1e3}});
  return Status::Ok();
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

Result<std::unique_ptr<Trainer>> Trainer::open(const TrainConfig& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  if (config.threads > 0) omp_set_num_threads(config.threads);
  impl->threads = omp_get_max_threads();

  // The model's sequence length sizes the loader, whose data gives the vocabulary.
  json probe = config.model;
  if (!probe.contains("vocab_size") && !probe.contains("preset")) probe["vocab_size"] = 32000;
  auto shape = model::LlamaConfig::from_json(probe);
  if (!shape.ok()) return invalid("model: " + shape.error().message);
  auto train = open_split(config, "train", shape->seq_len);
  if (!train.ok()) return train.error();
  impl->train = std::move(*train);
  auto cfg = resolve_model(config.model, impl->train->vocab_size());
  if (!cfg.ok()) return cfg.error();
  impl->model_config = *cfg;
  if (config.eval_every > 0) {
    auto val = open_split(config, "val", cfg->seq_len);
    if (!val.ok()) {
      return make_error(val.error().code, val.error().message +
                                              " (evaluation reads the val split; eval_every 0 "
                                              "turns it off)");
    }
    impl->val = std::move(*val);
    impl->val_start = impl->val->position();
  }

  auto model = model::Llama::create(*cfg, config.batch);
  if (!model.ok()) return model.error();
  impl->model = std::move(*model);
  impl->model->init(config.seed);
  model::AdamWConfig adam;
  adam.lr = config.lr;
  adam.weight_decay = config.weight_decay;
  impl->adam = std::make_unique<model::AdamW>(adam, impl->model->num_params(),
                                              impl->model->named_parameters());
  impl->inputs.resize(static_cast<size_t>(config.batch) * cfg->seq_len);
  impl->targets.resize(impl->inputs.size());

  if (!config.log.empty()) {
    impl->log = std::fopen(config.log.c_str(), "a");
    if (!impl->log) {
      return invalid("log " + config.log.string() + " cannot be opened for appending: " +
                     std::strerror(errno));
    }
  }
  if (!config.ckpt_dir.empty()) {
    ckpt::Options o;
    o.dir = config.ckpt_dir;
    o.keep_last = config.keep_last;
    o.keep_every = config.keep_every;
    o.local_dir = config.ckpt_local;
    o.memory_dir = config.ckpt_memory;
    auto ckpt = ckpt::Checkpointer::open(o);
    if (!ckpt.ok()) return make_error(ckpt.error().code, "ckpt_dir: " + ckpt.error().message);
    impl->ckpt = std::move(*ckpt);
    if (auto s = impl->restore(); !s.ok()) return s.error();
    // The staging memory is made ready now, not in the first checkpoint's stall.
    size_t bytes = 0;
    for (const auto& b : impl->checkpoint_state()) bytes += b.size;
    impl->ckpt->reserve(bytes);
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

Result<RunSummary> Trainer::run(const std::atomic<bool>* stop) {
  Impl& t = *impl_;
  const TrainConfig& c = t.config;
  const int64_t tokens_per_step =
      static_cast<int64_t>(c.batch) * c.grad_accum * t.seq_len();
  const char* resume_count = std::getenv("ENDURE_AUTO_RESUME_COUNT");
  const char* resume_reason = std::getenv("ENDURE_AUTO_RESUME_REASON");
  const char* restart_count = std::getenv("SLURM_RESTART_COUNT");  // a requeued job
  t.emit({{"start", true},
          {"resumed_from", t.resumed_from ? json(*t.resumed_from) : json()},
          {"resumed_tier", t.resumed_from ? json(t.resumed_tier) : json()},
          {"auto_resume_count", resume_count ? std::atoi(resume_count) : 0},
          {"auto_resume_reason", resume_reason ? resume_reason : ""},
          {"slurm_restart_count", restart_count ? std::atoi(restart_count) : 0},
          {"steps", c.steps},
          {"params", t.model_config.num_parameters()},
          {"flops_per_token", t.model_config.flops_per_token()},
          {"threads", t.threads},
          {"tokens_per_step", tokens_per_step},
          {"train_tokens", t.train->tokens()},
          {"model", t.model_config.to_json()}});

  RunSummary summary;
  const double start = now_seconds();
  int64_t tokens = 0;
  double step_seconds = 0;
  while (t.step < c.steps) {
    if (stop && stop->load()) {
      summary.stopped = true;
      break;
    }
    const float lr = model::cosine_lr(t.step, c.warmup, c.steps, c.lr, c.min_lr);
    const double t0 = now_seconds();
    auto loss = t.train_step();
    if (!loss.ok()) return loss.error();
    const float max_norm = c.clip > 0 ? c.clip : std::numeric_limits<float>::infinity();
    const float norm = model::clip_grad_norm(t.model->grads(), t.model->num_params(), max_norm);
    t.adam->update(t.model->params(), t.model->grads(), lr);
    ++t.step;
    const double dt = now_seconds() - t0;
    tokens += tokens_per_step;
    step_seconds += dt;
    t.emit({{"step", t.step},
            {"loss", *loss},
            {"lr", lr},
            {"grad_norm", norm},
            {"step_ms", dt * 1e3},
            {"tokens_per_s", tokens_per_step / dt},
            {"elapsed_s", now_seconds() - start}});

    if (t.val && (t.step % c.eval_every == 0 || t.step == c.steps)) {
      t.emit({{"eval", true}, {"step", t.step}, {"val_loss", t.evaluate()}});
    }
    if (t.ckpt && (t.step % c.ckpt_every == 0 || t.step == c.steps)) {
      if (auto s = t.save_checkpoint(); !s.ok()) return s.error();
    }
  }
  if (t.ckpt) {
    // A stop between checkpoints saves where it stopped.
    if (t.step > 0) {
      if (auto s = t.save_checkpoint(); !s.ok()) return s.error();
    }
    if (auto s = t.ckpt->wait(); !s.ok()) {
      return make_error(s.error().code, "a checkpoint failed: " + s.error().message);
    }
  }
  summary.last_step = t.step;
  t.emit({{summary.stopped ? "stopped" : "done", true},
          {"final_step", t.step},
          {"seconds", now_seconds() - start},
          {"tokens_per_s", step_seconds > 0 ? tokens / step_seconds : 0.0}});
  return summary;
}

}  // namespace endure::train
