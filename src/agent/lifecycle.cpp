#include "agent/lifecycle.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "api/fields.h"
#include "api/node_contract.h"
#include "common/fs.h"

namespace endure::agent {

// The node's own record of the outcome, in the lifecycle report's field names.
json LifecycleResult::to_json() const {
  return {{api::field::kStatus, status},
          {api::field::kExitCode, exit_code},
          {api::field::kLastLines, last_lines}};
}

namespace {

std::vector<std::string> script_environment(const api::AgentConfig& c) {
  return {
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
      std::string("ENDURE_RESOURCE_CONFIG=") + node::kResourceConfigPath,
      std::string("ENDURE_PROVISIONING_PARAMETERS=") + node::kProvisioningPath,
      std::string("ENDURE_MUNGE_KEY=") + node::kMungeKeyPath,
      std::string("ENDURE_LIFECYCLE_DIR=") + node::kLifecycleDir,
      std::string("ENDURE_BOOT_SCRIPTS_DIR=") + node::kBootScriptsDir,
  };
}

// Starts `bash script` in cwd, in its own process group, output to the lifecycle log.
Result<int> start_script(const api::AgentConfig& c, const std::string& script, const char* cwd) {
  std::vector<std::string> env = script_environment(c);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/bash", script.c_str(), nullptr};
  int log_fd = ::open(node::kLifecycleLog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return make_error("LifecycleError", std::string("open log: ") + strerror(errno));
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (::chdir(cwd) != 0) ::_exit(126);
    ::execve(argv[0], const_cast<char* const*>(argv), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) return make_error("LifecycleError", std::string("fork: ") + strerror(errno));
  return static_cast<int>(pid);
}

}  // namespace

LifecycleResult run_boot_scripts(const api::AgentConfig& c) {
  std::vector<std::string> scripts;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(node::kBootScriptsDir, ec)) {
    if (entry.is_regular_file()) scripts.push_back(entry.path().string());
  }
  std::sort(scripts.begin(), scripts.end());
  for (const auto& script : scripts) {
    auto pid = start_script(c, script, "/");
    if (!pid) return {"Failed", -1, pid.error().message + "\n"};
    int status = 0;
    // The agent is pid 1 and reaps everything; here it waits for this one script only.
    while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      auto r = lifecycle_outcome(status, false, 0);
      r.last_lines = "boot script " + script + " failed\n" + r.last_lines;
      return r;
    }
  }
  return {"Succeeded", 0, fs::tail_lines(node::kLifecycleLog, kTailLines)};
}

Result<int> start_lifecycle(const api::AgentConfig& c) {
  return start_script(c, std::string(node::kLifecycleDir) + "/" + c.on_create, node::kLifecycleDir);
}

LifecycleResult lifecycle_outcome(int wait_status, bool timed_out, int timeout_seconds) {
  LifecycleResult r;
  if (timed_out) {
    r.status = "Failed";
    r.exit_code = -1;
    std::string note = "lifecycle script killed after " + std::to_string(timeout_seconds) + " s";
    r.last_lines = fs::tail_lines(node::kLifecycleLog, kTailLines) + note + "\n";
    return r;
  }
  if (WIFEXITED(wait_status))
    r.exit_code = WEXITSTATUS(wait_status);
  else if (WIFSIGNALED(wait_status))
    r.exit_code = 128 + WTERMSIG(wait_status);
  r.status = r.exit_code == 0 ? "Succeeded" : "Failed";
  r.last_lines = fs::tail_lines(node::kLifecycleLog, kTailLines);
  return r;
}

std::optional<LifecycleResult> saved_lifecycle_result() {
  auto text = fs::read_file(node::kLifecycleResult);
  if (!text) return std::nullopt;
  auto j = json::parse(*text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  LifecycleResult r;
  r.status = j.value(api::field::kStatus, "");
  r.exit_code = j.value(api::field::kExitCode, -1);
  r.last_lines = j.value(api::field::kLastLines, "");
  if (r.status != "Succeeded" && r.status != "Failed") return std::nullopt;
  return r;
}

Status save_lifecycle_result(const LifecycleResult& result) {
  return fs::atomic_write_file(node::kLifecycleResult, result.to_json().dump(2));
}

}  // namespace endure::agent
