#include "agent/lifecycle.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/fs.h"

namespace endure::agent {

json LifecycleResult::to_json() const {
  return {{"Status", status}, {"ExitCode", exit_code}, {"LastLines", last_lines}};
}

Result<int> start_lifecycle(const AgentConfig& c) {
  std::string script = std::string(kLifecycleDir) + "/" + c.on_create;
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "HOME=/root",
      "LANG=C.UTF-8",
      "HOSTNAME=" + c.node_name,
      "ENDURE_NODE_NAME=" + c.node_name,
      "ENDURE_INSTANCE_ID=" + c.instance_id,
      "ENDURE_INSTANCE_GROUP=" + c.group,
      "ENDURE_NODE_ROLE=" + c.role,
      "ENDURE_PARTITION=" + c.partition,
      "ENDURE_CONTROLLER_NODE=" + c.controller_node,
      std::string("ENDURE_RESOURCE_CONFIG=") + kResourceConfigPath,
      std::string("ENDURE_PROVISIONING_PARAMETERS=") + kProvisioningPath,
      std::string("ENDURE_MUNGE_KEY=") + kMungeKeyPath,
      std::string("ENDURE_LIFECYCLE_DIR=") + kLifecycleDir,
  };
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/bash", script.c_str(), nullptr};

  int log_fd = ::open(kLifecycleLog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return make_error("LifecycleError", std::string("open log: ") + strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (::chdir(kLifecycleDir) != 0) ::_exit(126);
    ::execve(argv[0], const_cast<char* const*>(argv), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) return make_error("LifecycleError", std::string("fork: ") + strerror(errno));
  return static_cast<int>(pid);
}

LifecycleResult lifecycle_outcome(int wait_status, bool timed_out, int timeout_seconds) {
  LifecycleResult r;
  if (timed_out) {
    r.status = "Failed";
    r.exit_code = -1;
    std::string note = "lifecycle script killed after " + std::to_string(timeout_seconds) + " s";
    r.last_lines = fs::tail_lines(kLifecycleLog, kTailLines) + note + "\n";
    return r;
  }
  if (WIFEXITED(wait_status)) r.exit_code = WEXITSTATUS(wait_status);
  else if (WIFSIGNALED(wait_status)) r.exit_code = 128 + WTERMSIG(wait_status);
  r.status = r.exit_code == 0 ? "Succeeded" : "Failed";
  r.last_lines = fs::tail_lines(kLifecycleLog, kTailLines);
  return r;
}

std::optional<LifecycleResult> saved_lifecycle_result() {
  auto text = fs::read_file(kLifecycleResult);
  if (!text) return std::nullopt;
  auto j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  LifecycleResult r;
  r.status = j.value("Status", "");
  r.exit_code = j.value("ExitCode", -1);
  r.last_lines = j.value("LastLines", "");
  if (r.status != "Succeeded" && r.status != "Failed") return std::nullopt;
  return r;
}

Status save_lifecycle_result(const LifecycleResult& result) {
  return fs::atomic_write_file(kLifecycleResult, result.to_json().dump(2));
}

}  // namespace endure::agent
