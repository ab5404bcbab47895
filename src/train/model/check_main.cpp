// endure-model-check: dumps what tests/train/llama_reference.py --check compares against
// PyTorch, into --out DIR:
//   meta.json      config, shapes, the parameter index (name, offset, shape), the loss of
//                  the gradient batch, and the training run (settings, per-step losses,
//                  gradient norms, learning rates)
//   params.bin     the initial parameters, float32, flat in index order
//   grads.bin      d(loss)/d(params) of the gradient batch, same layout
//   tokens.bin     int32 inputs (B,T) then targets (B,T) of the gradient batch
//   train_tokens.bin  int32, per step, per micro-batch: inputs (b,T) then targets (b,T)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/command_line.h"
#include "endure/model.h"

using namespace endure;
using namespace endure::model;

namespace {

uint64_t next_random(uint64_t* state) {
  uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool write_file(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), bytes);
  return f.good();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Dump a tiny Llama's loss, gradients and training run for the PyTorch check"};
  app.name("endure-model-check");
  std::string out, preset = "tiny";
  bool tie = false;
  int batch = 4, steps = 50, micro_batches = 2;
  uint64_t seed = 1337;
  float max_lr = 3e-3f, min_lr = 3e-4f, clip = 1.0f;
  int warmup = 5;
  app.add_option("--out", out, "folder to write")->required();
  app.add_option("--preset", preset, "model preset");
  app.add_flag("--tie", tie, "tie the output head to the embedding");
  app.add_option("--batch", batch, "sequences per step (all micro-batches together)");
  app.add_option("--micro-batches", micro_batches, "gradient accumulation steps");
  app.add_option("--steps", steps, "training steps");
  app.add_option("--seed", seed, "initialisation seed");
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;

  auto cfg = LlamaConfig::preset(preset);
  if (!cfg.ok()) {
    std::cerr << cfg.error().message << "\n";
    return 2;
  }
  cfg->tie_embeddings = tie;
  if (batch % micro_batches != 0) {
    std::cerr << "batch must be a multiple of micro-batches\n";
    return 2;
  }
  const int T = cfg->seq_len, V = cfg->vocab_size, micro = batch / micro_batches;
  auto created = Llama::create(*cfg, batch);
  if (!created.ok()) {
    std::cerr << created.error().message << "\n";
    return 1;
  }
  Llama& model = **created;
  model.init(seed);
  std::filesystem::create_directories(out);
  const std::filesystem::path dir(out);
  const size_t P = model.num_params();
  write_file(dir / "params.bin", model.params(), P * sizeof(float));

  // The gradient batch: random tokens, targets the next token, one target ignored (-1).
  uint64_t rng = seed * 31 + 7;
  std::vector<int32_t> tokens(2 * (size_t)batch * T);
  int32_t* inputs = tokens.data();
  int32_t* targets = tokens.data() + (size_t)batch * T;
  for (int b = 0; b < batch; b++) {
    std::vector<int32_t> seq(T + 1);
    for (auto& t : seq) t = next_random(&rng) % V;
    for (int t = 0; t < T; t++) {
      inputs[b * T + t] = seq[t];
      targets[b * T + t] = seq[t + 1];
    }
  }
  targets[T / 2] = -1;
  write_file(dir / "tokens.bin", tokens.data(), tokens.size() * sizeof(int32_t));
  model.zero_grad();
  const float loss = model.forward(inputs, targets, batch, T);
  model.backward();
  write_file(dir / "grads.bin", model.grads(), P * sizeof(float));

  // Training: a pool of 8 sequences, so the loss falls as the model learns them.
  const int pool_size = 8;
  std::vector<std::vector<int32_t>> pool(pool_size, std::vector<int32_t>(T + 1));
  for (auto& seq : pool) {
    for (auto& t : seq) t = next_random(&rng) % V;
  }
  AdamW opt(AdamWConfig{}, P, model.named_parameters());
  std::vector<int32_t> train_tokens;
  json losses = json::array(), norms = json::array(), lrs = json::array();
  std::vector<int32_t> in(micro * T), tg(micro * T);
  model.zero_grad();
  for (int step = 0; step < steps; step++) {
    double step_loss = 0;
    for (int mb = 0; mb < micro_batches; mb++) {
      for (int b = 0; b < micro; b++) {
        const auto& seq = pool[next_random(&rng) % pool_size];
        for (int t = 0; t < T; t++) {
          in[b * T + t] = seq[t];
          tg[b * T + t] = seq[t + 1];
        }
      }
      train_tokens.insert(train_tokens.end(), in.begin(), in.end());
      train_tokens.insert(train_tokens.end(), tg.begin(), tg.end());
      step_loss += model.forward(in.data(), tg.data(), micro, T) / micro_batches;
      model.backward(1.0f / micro_batches);
    }
    const float norm = clip_grad_norm(model.grads(), P, clip);
    const float lr = cosine_lr(step, warmup, steps, max_lr, min_lr);
    opt.update(model.params(), model.grads(), lr);
    model.zero_grad();
    losses.push_back(step_loss);
    norms.push_back(norm);
    lrs.push_back(lr);
  }
  write_file(dir / "train_tokens.bin", train_tokens.data(), train_tokens.size() * sizeof(int32_t));

  json index = json::array();
  for (const auto& p : model.named_parameters()) {
    index.push_back({{"name", p.name}, {"offset", p.offset}, {"shape", p.shape}});
  }
  json meta = {{"config", cfg->to_json()},
               {"num_params", P},
               {"batch", batch},
               {"seq", T},
               {"loss", loss},
               {"params", index},
               {"train",
                {{"steps", steps},
                 {"micro_batches", micro_batches},
                 {"micro_batch", micro},
                 {"warmup", warmup},
                 {"max_lr", max_lr},
                 {"min_lr", min_lr},
                 {"clip", clip},
                 {"adamw",
                  {{"beta1", opt.config().beta1},
                   {"beta2", opt.config().beta2},
                   {"eps", opt.config().eps},
                   {"weight_decay", opt.config().weight_decay}}},
                 {"losses", losses},
                 {"grad_norms", norms},
                 {"lrs", lrs}}}};
  std::ofstream(dir / "meta.json") << meta.dump(1) << "\n";
  std::printf("loss %.6f, %zu parameters, final training loss %.6f -> %s\n", loss, P,
              losses.empty() ? 0.0 : losses.back().get<double>(), out.c_str());
  return 0;
}
