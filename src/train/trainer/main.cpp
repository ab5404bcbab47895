// endure-train: trains a Llama 2 model on an `endure-data prepare` folder, checkpointing
// through the checkpoint engine and resuming from its newest valid checkpoint on start (so
// `srun --auto-resume=1 endure-train ...` picks up where a failed step stopped).
//
// Settings come from --config FILE (a JSON object, see train_config.h) with any flag laid
// over it. Output: JSON lines on stdout (and appended to --log): a start line, one line a
// step (loss, lr, grad_norm, tokens_per_s), evaluations, checkpoints and a done line.
// SIGTERM or SIGINT: the step in flight finishes, a checkpoint is saved, exit 143.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "common/command_line.h"
#include "common/fs.h"
#include "train/trainer/trainer.h"

namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) { g_stop.store(true); }

int fail(const endure::Error& e) {
  std::fprintf(stderr, "endure-train: %s\n", e.message.c_str());
  return e.code == "ValidationException" ? 2 : 1;
}

// A flag laid over the config's key of the same name (dashes for underscores).
struct Flag {
  std::string key;
  bool number;
  std::string value;
};

std::string flag_name(std::string key) {
  for (auto& ch : key) ch = ch == '_' ? '-' : ch;
  return "--" + key;
}

// Lays the flags given on the command line over *target's keys of the same names.
endure::Status overlay(const CLI::App& app, const std::vector<Flag>& flags, endure::json* target) {
  for (const auto& f : flags) {
    if (app.count(flag_name(f.key)) == 0) continue;
    endure::json v =
        f.number ? endure::json::parse(f.value, nullptr, false) : endure::json(f.value);
    if (f.number && (v.is_discarded() || !v.is_number())) {
      return endure::make_error("ValidationException",
                                flag_name(f.key) + " \"" + f.value + "\" is not a number");
    }
    (*target)[f.key] = v;
  }
  return {};
}

// A file holding one JSON object, named by `flag` in errors.
endure::Result<endure::json> read_object(const std::string& flag, const std::string& path) {
  auto text = endure::fs::read_file(path);
  if (!text.ok()) {
    return endure::make_error("ValidationException",
                              flag + " " + path + ": " + text.error().message);
  }
  auto j = endure::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return endure::make_error("ValidationException", flag + " " + path + " is not a JSON object");
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  using endure::json;
  CLI::App app{"Train a Llama 2 model on endure-data's token shards, resumably"};
  app.name("endure-train");
  std::string config_file, model;
  std::vector<Flag> flags;  // one for each of the config's keys
  for (const auto& [key, number] : endure::train::TrainConfig::scalar_keys()) {
    flags.push_back({key, number, {}});
  }
  // Laid over the model config.
  std::vector<Flag> model_flags = {
      {"dim", true, {}},        {"n_layers", true, {}}, {"n_heads", true, {}},
      {"n_kv_heads", true, {}}, {"seq_len", true, {}},  {"hidden_dim", true, {}},
      {"vocab_size", true, {}},
  };
  app.add_option("--config", config_file, "a JSON file of settings; flags override it");
  app.add_option("--model", model, "a preset (stories15M, ...) or a model config JSON file");
  // A flag given twice: the last one counts (a wrapper script's defaults, then the user's).
  for (auto& f : flags) {
    app.add_option(flag_name(f.key), f.value, f.key)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  for (auto& f : model_flags) {
    app.add_option(flag_name(f.key), f.value, "model." + f.key)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;

  json j = json::object();
  if (!config_file.empty()) {
    auto file = read_object("--config", config_file);
    if (!file.ok()) return fail(file.error());
    j = *file;
  }
  if (auto s = overlay(app, flags, &j); !s.ok()) return fail(s.error());
  if (model.ends_with(".json")) {
    auto file = read_object("--model", model);
    if (!file.ok()) return fail(file.error());
    j["model"] = *file;
  } else if (!model.empty()) {
    j["model"] = json{{"preset", model}};
  }
  if (!j.contains("model")) j["model"] = endure::train::TrainConfig{}.model;
  if (j["model"].is_string()) j["model"] = json{{"preset", j["model"]}};
  if (j["model"].is_object()) {
    if (auto s = overlay(app, model_flags, &j["model"]); !s.ok()) return fail(s.error());
  }

  auto config = endure::train::TrainConfig::from_json(j);
  if (!config.ok()) return fail(config.error());
  auto trainer = endure::train::Trainer::open(*config);
  if (!trainer.ok()) return fail(trainer.error());

  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;  // a second signal ends the process at once
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  auto summary = (*trainer)->run(&g_stop);
  if (!summary.ok()) return fail(summary.error());
  return summary->stopped ? 143 : 0;
}
