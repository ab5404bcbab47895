// endured's tunables, one line each: read from $ENDURE_HOME/config.json (same names) and
// overridden by command-line flags.
#pragma once

#include <filesystem>
#include <string>

#include "common/json.h"
#include "common/result.h"

namespace endure::controller {

struct Config {
  std::filesystem::path home;  // ENDURE_HOME: state, token, endpoint, cluster files
  // HTTP port on 127.0.0.1 (documented default; two controllers need two homes and ports).
  int port = 7117;
  // How often the reconcile loop runs when nothing wakes it.
  double reconcile_seconds = 1.0;
  // Agents heartbeat this often.
  double heartbeat_seconds = 1.0;
  // A lifecycle script running longer than this fails its instance.
  int lifecycle_timeout_seconds = 900;
  // A Pending instance whose lifecycle succeeded but whose slurmd has not registered
  // after this long fails.
  int slurm_register_timeout_seconds = 120;
  // A node silent this long while its processes exist is hung.
  double heartbeat_timeout_seconds = 5.0;
  // A rebooted node not back in service after this long is replaced.
  int reboot_timeout_seconds = 120;
  // A deep health check whose node has not reported after this long has failed.
  int deep_check_timeout_seconds = 180;
  // Agents run their continuous health checks this often (a fault shows in a heartbeat
  // at most this long after it happened).
  double health_check_seconds = 2.0;
  // Auto-resume: re-runs of a job's steps granted at most (srun --auto-resume=1).
  int auto_resume_max_resumes = 3;
  // Auto-resume: a job whose faulty nodes are not back in service after this long is not
  // resumed (its srun exits with the step's status).
  int auto_resume_timeout_seconds = 900;
  // Folder of the endure-agent binary (default: beside endured).
  std::filesystem::path bin_dir;

  std::filesystem::path db_path() const { return home / "endured.db"; }
  std::filesystem::path token_path() const { return home / "token"; }
  std::filesystem::path endpoint_path() const { return home / "endpoint"; }
  std::filesystem::path clusters_dir() const { return home / "clusters"; }
  std::filesystem::path secrets_dir() const { return home / "secrets"; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }

  // Applies the fields present in config.json; unknown fields and bad types are errors.
  Status apply_json(const json& j);
};

}  // namespace endure::controller
