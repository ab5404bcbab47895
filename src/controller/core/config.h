// endured's settings: every one is one row of the table in config.cpp (name in config.json,
// type, default, allowed range, one line of doc). $ENDURE_HOME/config.json is read through
// it, command-line flags override it, and the README's list is checked against it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "s3/s3_config.h"

namespace endure::controller {

struct Config {
  Config();  // every setting at its default

  std::filesystem::path home;     // ENDURE_HOME: state, token, endpoint, cluster files
  std::filesystem::path bin_dir;  // folder of the endure-agent binary (default: beside endured)

  // The settings, in the table's order (see the table for what each means).
  int port;
  int agent_tls_port;
  double reconcile_seconds;
  double heartbeat_seconds;
  double suspect_after_seconds;
  double heartbeat_timeout_seconds;
  double health_check_seconds;
  int lifecycle_timeout_seconds;
  int slurm_register_timeout_seconds;
  int reboot_timeout_seconds;
  int deep_check_timeout_seconds;
  int auto_resume_max_resumes;
  int auto_resume_timeout_seconds;
  std::string s3_endpoint_url;
  std::string s3_region;
  std::optional<bool> s3_path_style;
  std::string s3_credentials_file;
  std::string s3_profile;

  std::filesystem::path db_path() const { return home / "endured.db"; }
  std::filesystem::path token_path() const { return home / "token"; }
  std::filesystem::path endpoint_path() const { return home / "endpoint"; }
  std::filesystem::path clusters_dir() const { return home / "clusters"; }
  std::filesystem::path secrets_dir() const { return home / "secrets"; }
  std::filesystem::path tls_dir() const { return home / "tls"; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }
  // The S3 settings, to be laid over the environment (s3::config_from_environment).
  s3::ConfigOverrides s3_overrides() const;

  // Applies the settings config.json names. An unknown name, a wrong type or a value out of
  // range is an error naming the setting and its rule, and changes nothing.
  Status apply_json(const json& j);
};

// What a text setting allows: in words ("empty or an absolute path"), and the check, which
// says what is wrong with a value ("" when nothing is).
struct TextRule {
  const char* allowed;
  std::string (*problem)(const std::string& value);
};

// One setting: an integer, a number (seconds), a text, or a flag that may be unset (JSON
// null); its default and what it allows.
struct Setting {
  const char* name;  // as config.json spells it
  std::variant<int Config::*, double Config::*, std::string Config::*,
               std::optional<bool> Config::*>
      field;
  // Numbers only: a text's default is "" and a flag's is unset.
  double default_value;
  double min;  // integers: the least allowed; numbers: the value must be above it
  double max;
  const char* doc;
  TextRule text{};  // texts only
};

// Every setting, in the order the README lists them.
const std::vector<Setting>& settings();

// A setting's default as config.json spells it, and what it allows in words: the README's
// columns and endured --help's.
std::string default_text(const Setting& s);
std::string allowed_text(const Setting& s);

}  // namespace endure::controller
