// endure-train: trains a Llama 2 model on an `endure-data prepare` folder, checkpointing
// through the checkpoint engine and resuming from its newest valid checkpoint on start (so
// `srun --auto-resume=1 endure-train ...` picks up where a failed step stopped).
//
// Settings come from --config FILE (a JSON object, see train_config.h) with any flag laid
// over it. Output: JSON lines on stdout (and appended to --log): a start line, one line a
// step (loss, lr, grad_norm, tokens_per_s), evaluations, checkpoints and a done line.
// SIGTERM or SIGINT: the step in flight finishes, a checkpoint is saved, exit 143.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>

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

// " (default: X)" for --help; nothing for an empty path (its description says what empty
// means).
std::string shown_default(const endure::json& value) {
  if (value.is_number_float()) return fmt::format(" (default: {:g})", value.get<double>());
  if (value.is_number()) return " (default: " + value.dump() + ")";
  if (value.is_string() && !value.get<std::string>().empty()) {
    return " (default: " + value.get<std::string>() + ")";
  }
  return "";
}

// What each model flag sets (LlamaConfig's fields, include/endure/model.h).
std::string model_doc(const std::string& key) {
  static const std::map<std::string, std::string> docs = {
      {"dim", "model width: the embedding size"},
      {"n_layers", "transformer blocks"},
      {"n_heads", "attention heads; must divide dim"},
      {"n_kv_heads", "key/value heads, grouped-query attention below n_heads (must divide it)"},
      {"seq_len", "training sequence length, in tokens"},
      {"hidden_dim", "SwiGLU feed-forward width (0: 8 x dim / 3, rounded up)"},
      {"vocab_size", "vocabulary size in pieces (the data's when the model has none)"},
  };
  auto it = docs.find(key);
  return it == docs.end() ? "" : it->second;
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
  // stdout is the run's JSON lines: the log (a tier's refusal, a copy passed over in a
  // restore) goes to stderr, which srun keeps in the job's output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("endure-train"));
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
  app.add_option("--config", config_file,
                 "a JSON file of settings, the flags' names with underscores; flags override it")
      ->type_name("FILE");
  app.add_option("--model", model,
                 "a preset (stories15M, ...) or a model config JSON file (default: stories15M); "
                 "the model flags below override its fields")
      ->type_name("PRESET|FILE");
  // A flag given twice: the last one counts (a wrapper script's defaults, then the user's).
  const endure::json defaults = endure::train::TrainConfig{}.to_json();
  for (auto& f : flags) {
    app.add_option(flag_name(f.key), f.value,
                   endure::train::TrainConfig::doc(f.key) + shown_default(defaults[f.key]))
        ->type_name(f.number ? "NUMBER" : "PATH")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  for (auto& f : model_flags) {
    app.add_option(flag_name(f.key), f.value, model_doc(f.key) + " (default: the model's)")
        ->type_name("NUMBER")
        ->group("Model (over --model)")
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
