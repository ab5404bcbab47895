#include "controller/config.h"

#include <fmt/format.h>

#include "api/wire.h"

namespace endure::controller {

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
  };
  return table;
}

Config::Config() {
  for (const auto& s : settings()) {
    std::visit([&](auto member) { this->*member = s.default_value; }, s.field);
  }
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
  if (!value.is_number() || !(value.get<double>() > s.min) || value.get<double>() > s.max) {
    return bad(
        fmt::format("must be a number of seconds above {:g} and at most {:g}", s.min, s.max));
  }
  c.*std::get<double Config::*>(s.field) = value.get<double>();
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
