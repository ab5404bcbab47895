#include "controller/core/config.h"

#include <cctype>

#include <fmt/format.h>

#include "api/wire.h"

namespace endure::controller {

namespace {

Setting text_setting(const char* name, std::string Config::*field, TextRule rule, const char* doc) {
  return {name, field, 0, 0, 0, doc, rule};
}

Setting flag_setting(const char* name, std::optional<bool> Config::*field, const char* doc) {
  return {name, field, 0, 0, 0, doc};
}

const TextRule kEndpointUrl = {"empty or http(s)://HOST[:PORT]", [](const std::string& v) {
                                 return v.empty() ? std::string() : s3::endpoint_url_problem(v);
                               }};
const TextRule kRegion = {"empty or a region's name", [](const std::string& v) {
                            return v.empty() ? std::string() : s3::region_problem(v);
                          }};
// endured runs from any folder: a relative path would name a different file at each start.
const TextRule kAbsolutePath = {"empty or an absolute path", [](const std::string& v) {
                                  return v.empty() || v.front() == '/' ? std::string()
                                                                       : std::string("is relative");
                                }};
// The credentials file is INI: brackets or a line break would end the profile's name.
const TextRule kProfile = {
    "empty or a profile's name (no brackets, no line break, no space at either end)",
    [](const std::string& v) {
      if (v.find_first_of("[]") != std::string::npos) return std::string("holds a bracket");
      if (v.find_first_of("\r\n") != std::string::npos) return std::string("holds a line break");
      if (!v.empty() && (std::isspace(static_cast<unsigned char>(v.front())) ||
                         std::isspace(static_cast<unsigned char>(v.back())))) {
        return std::string("has a space at an end");
      }
      return std::string();
    }};

}  // namespace

const std::vector<Setting>& settings() {
  using C = Config;
  static const std::vector<Setting> table = {
      {"Port", &C::port, api::kDefaultPort, 1, 65535,
       "HTTP port on 127.0.0.1 (two controllers on one host need two homes and two ports)"},
      {"AgentTlsPort", &C::agent_tls_port, 0, 0, 65535,
       "0: off. Otherwise agents and auto-resume on other machines reach endured at this port "
       "on every address, over TLS only (its CA in ENDURE_HOME/tls, made at first start)"},
      {"ReconcileSeconds", &C::reconcile_seconds, 1, 0, 60,
       "how often the reconcile loop runs when nothing wakes it"},
      {"HeartbeatSeconds", &C::heartbeat_seconds, 0.5, 0, 60, "agents heartbeat this often"},
      {"SuspectAfterSeconds", &C::suspect_after_seconds, 1, 0, 60,
       "a node silent this long is a suspect: the provider and Slurm are asked whether it is "
       "dead, hung or only its agent is silent (at least HeartbeatSeconds)"},
      {"HeartbeatTimeoutSeconds", &C::heartbeat_timeout_seconds, 5, 0, 60,
       "a silent node that neither its provider nor Slurm confirms alive is hung after this "
       "long (at least SuspectAfterSeconds)"},
      {"HealthCheckSeconds", &C::health_check_seconds, 2, 0, 60,
       "agents run their continuous health checks this often (a fault shows in a heartbeat at "
       "most this long after it happened)"},
      {"LifecycleTimeoutSeconds", &C::lifecycle_timeout_seconds, 900, 1, 1e9,
       "a lifecycle script running longer than this fails its instance"},
      {"SlurmRegisterTimeoutSeconds", &C::slurm_register_timeout_seconds, 120, 1, 1e9,
       "a node whose lifecycle succeeded but whose slurmd has not registered after this long "
       "fails"},
      {"RebootTimeoutSeconds", &C::reboot_timeout_seconds, 120, 1, 1e9,
       "a rebooted node not back in service after this long is replaced"},
      {"DeepHealthCheckTimeoutSeconds", &C::deep_check_timeout_seconds, 180, 1, 1e9,
       "a deep health check whose node has not reported after this long has failed"},
      {"AutoResumeMaxResumes", &C::auto_resume_max_resumes, 3, 0, 100,
       "re-runs of a job's steps granted at most (srun --auto-resume=1)"},
      {"AutoResumeTimeoutSeconds", &C::auto_resume_timeout_seconds, 900, 1, 1e9,
       "a job whose faulty nodes are not back in service after this long is not resumed"},
      text_setting("S3EndpointUrl", &C::s3_endpoint_url, kEndpointUrl,
                   "the S3-compatible store s3:// lifecycle sources are fetched from (MinIO, "
                   "Ceph's gateway); \"\": AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS"),
      text_setting("S3Region", &C::s3_region, kRegion,
                   "the region S3 requests are signed for; \"\": AWS_REGION, else "
                   "AWS_DEFAULT_REGION, else us-east-1"),
      flag_setting("S3PathStyle", &C::s3_path_style,
                   "true: the bucket in the URL's path (ENDPOINT/BUCKET/KEY), as a local server "
                   "needs; false: in its host name; null: path-style when there is an endpoint"),
      text_setting("S3CredentialsFile", &C::s3_credentials_file, kAbsolutePath,
                   "the shared credentials file (INI, as aws configure writes it) to sign with; "
                   "set, or S3Profile set, it wins over AWS_ACCESS_KEY_ID. \"\": "
                   "AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials. Keys are never settings"),
      text_setting("S3Profile", &C::s3_profile, kProfile,
                   "the credentials file's profile; \"\": AWS_PROFILE, else default"),
  };
  return table;
}

Config::Config() {
  // Texts and flags start empty and unset by their own constructors.
  for (const auto& s : settings()) {
    if (auto f = std::get_if<int Config::*>(&s.field)) this->*(*f) = s.default_value;
    if (auto f = std::get_if<double Config::*>(&s.field)) this->*(*f) = s.default_value;
  }
}

s3::ConfigOverrides Config::s3_overrides() const {
  return {s3_endpoint_url, s3_region, s3_path_style, s3_credentials_file, s3_profile};
}

std::string default_text(const Setting& s) {
  if (std::holds_alternative<std::string Config::*>(s.field)) return "\"\"";
  if (std::holds_alternative<std::optional<bool> Config::*>(s.field)) return "null";
  return fmt::format("{:g}", s.default_value);
}

std::string allowed_text(const Setting& s) {
  if (std::holds_alternative<int Config::*>(s.field)) {
    return fmt::format("{:g} to {:g}", s.min, s.max);
  }
  if (std::holds_alternative<double Config::*>(s.field)) {
    return fmt::format("above {:g}, at most {:g}", s.min, s.max);
  }
  if (std::holds_alternative<std::string Config::*>(s.field)) return s.text.allowed;
  return "true, false or null";
}

namespace {

Status set(Config& c, const Setting& s, const json& value) {
  auto bad = [&](const std::string& rule) {
    return Status(
        make_error(api::kValidationException, fmt::format("config.json: {}: {}", s.name, rule)));
  };
  if (std::holds_alternative<int Config::*>(s.field)) {
    // Judged as 64-bit first: get<int>() would wrap a larger integer into range.
    if (!value.is_number_integer() || value.get<long long>() < s.min ||
        value.get<long long>() > s.max) {
      return bad(fmt::format("must be an integer from {:g} to {:g}", s.min, s.max));
    }
    c.*std::get<int Config::*>(s.field) = value.get<int>();
    return {};
  }
  if (std::holds_alternative<double Config::*>(s.field)) {
    if (!value.is_number() || !(value.get<double>() > s.min) || value.get<double>() > s.max) {
      return bad(
          fmt::format("must be a number of seconds above {:g} and at most {:g}", s.min, s.max));
    }
    c.*std::get<double Config::*>(s.field) = value.get<double>();
    return {};
  }
  if (std::holds_alternative<std::string Config::*>(s.field)) {
    if (!value.is_string()) return bad(fmt::format("must be a string, {}", s.text.allowed));
    const auto& text = value.get_ref<const std::string&>();
    if (auto problem = s.text.problem(text); !problem.empty()) {
      return bad(fmt::format("must be {}, not '{}': {}", s.text.allowed, text, problem));
    }
    c.*std::get<std::string Config::*>(s.field) = text;
    return {};
  }
  if (!value.is_boolean() && !value.is_null()) return bad("must be true, false or null");
  c.*std::get<std::optional<bool> Config::*>(s.field) =
      value.is_null() ? std::nullopt : std::optional<bool>(value.get<bool>());
  return {};
}

}  // namespace

Status Config::apply_json(const json& j) {
  if (!j.is_object())
    return make_error(api::kValidationException, "config.json: must be an object");
  Config next = *this;  // applied whole or not at all
  for (const auto& [key, value] : j.items()) {
    const Setting* found = nullptr;
    std::string known;
    for (const auto& s : settings()) {
      if (key == s.name) found = &s;
      known += (known.empty() ? "" : ", ") + std::string(s.name);
    }
    if (!found) {
      return make_error(api::kValidationException,
                        "config.json: " + key + ": is not a known setting (" + known + ")");
    }
    if (auto s = set(next, *found, value); !s) return s;
  }
  auto order = [](const char* name, double value, const char* floor_name, double floor) {
    return Status(make_error(api::kValidationException,
                             fmt::format("config.json: {}: must be at least {} ({:g}), not {:g}",
                                         name, floor_name, floor, value)));
  };
  if (next.suspect_after_seconds < next.heartbeat_seconds) {
    return order("SuspectAfterSeconds", next.suspect_after_seconds, "HeartbeatSeconds",
                 next.heartbeat_seconds);
  }
  if (next.heartbeat_timeout_seconds < next.suspect_after_seconds) {
    return order("HeartbeatTimeoutSeconds", next.heartbeat_timeout_seconds, "SuspectAfterSeconds",
                 next.suspect_after_seconds);
  }
  *this = next;
  return {};
}

}  // namespace endure::controller
