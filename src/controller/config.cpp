#include "controller/config.h"

#include "api/wire.h"

namespace endure::controller {

Status Config::apply_json(const json& j) {
  if (!j.is_object()) return make_error(api::kValidationException, "config.json: must be an object");
  for (const auto& [key, value] : j.items()) {
    auto bad = [&](const char* rule) {
      return Status(make_error(api::kValidationException, "config.json:" + key + ": " + rule));
    };
    // Integers are judged as 64-bit first: get<int>() would wrap a larger one into range.
    auto int_in = [&](long long lo, long long hi) {
      return value.is_number_integer() && value.get<long long>() >= lo && value.get<long long>() <= hi;
    };
    if (key == "Port") {
      if (!int_in(1, 65535)) {
        return bad("must be an integer from 1 to 65535");
      }
      port = value.get<int>();
    } else if (key == "ReconcileSeconds" || key == "HeartbeatSeconds" ||
               key == "HeartbeatTimeoutSeconds") {
      if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > 60) {
        return bad("must be a number of seconds above 0 and at most 60");
      }
      (key == "ReconcileSeconds"   ? reconcile_seconds
       : key == "HeartbeatSeconds" ? heartbeat_seconds
                                   : heartbeat_timeout_seconds) = value.get<double>();
    } else if (key == "LifecycleTimeoutSeconds" || key == "SlurmRegisterTimeoutSeconds" ||
               key == "RebootTimeoutSeconds" || key == "AutoResumeTimeoutSeconds") {
      if (!int_in(1, 1000000000)) {
        return bad("must be a positive integer");
      }
      (key == "LifecycleTimeoutSeconds"       ? lifecycle_timeout_seconds
       : key == "SlurmRegisterTimeoutSeconds" ? slurm_register_timeout_seconds
       : key == "RebootTimeoutSeconds"        ? reboot_timeout_seconds
                                              : auto_resume_timeout_seconds) = value.get<int>();
    } else if (key == "AutoResumeMaxResumes") {
      if (!int_in(0, 100)) {
        return bad("must be an integer from 0 to 100");
      }
      auto_resume_max_resumes = value.get<int>();
    } else {
      return bad("is not a known setting (Port, ReconcileSeconds, HeartbeatSeconds, "
                 "HeartbeatTimeoutSeconds, LifecycleTimeoutSeconds, "
                 "SlurmRegisterTimeoutSeconds, RebootTimeoutSeconds, "
                 "AutoResumeMaxResumes, AutoResumeTimeoutSeconds)");
    }
  }
  return {};
}

}  // namespace endure::controller
