// The local provider's fault drills: each acts on the node the way the real fault does, so
// that detection sees it through its real sources.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>

#include "api/node_contract.h"
#include "provider/local/local_provider.h"
#include "provider/local/namespace_processes.h"

namespace endure::provider {

Status LocalProvider::freeze(const std::string& cluster_id, const std::string& instance_id) {
  int node_pid = pid(cluster_id, instance_id);
  if (node_pid <= 0) return make_error("ProviderError", instance_id + " is not running");
  // Twice: a process forked between the scan and the signal is caught the second time.
  for (int round = 0; round < 2; ++round) {
    for (int p : processes_in_namespace_of(node_pid)) ::kill(p, SIGSTOP);
  }
  return {};
}

Status LocalProvider::append_kernel_log(const std::string& cluster_id,
                                        const std::string& instance_id,
                                        const std::string& message) {
  auto path = instance_dir(cluster_id, instance_id) / "kmsg";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return local_io_error("open " + path.string());
  // The record format of /dev/kmsg: priority,sequence,microseconds,flags;text
  static std::atomic<long> seq{1000};
  auto usec = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count();
  std::string record =
      "3," + std::to_string(seq++) + "," + std::to_string(usec) + ",-;" + message + "\n";
  bool ok = ::write(fd, record.data(), record.size()) == static_cast<ssize_t>(record.size());
  ::close(fd);
  return ok ? Status{} : Status(local_io_error("write " + path.string()));
}

Status LocalProvider::fill_local_disk(const std::string& cluster_id,
                                      const std::string& instance_id) {
  auto path = instance_dir(cluster_id, instance_id) / "local/.fill";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return local_io_error("open " + path.string());
  // Write until the file system says no: what a runaway job does to a disk.
  std::string chunk(1 << 20, 'x');
  while (::write(fd, chunk.data(), chunk.size()) > 0) {
  }
  ::fsync(fd);
  ::close(fd);
  return {};
}

Status LocalProvider::hang_shared_fs(const std::string& cluster_id,
                                     const std::string& instance_id) {
  auto out =
      exec(cluster_id, instance_id,
           {"/bin/bash", "-c", std::string("kill -STOP \"$(cat ") + node::kFsxPidFile + ")\""},
           std::chrono::seconds(10));
  if (out.exit_code != 0)
    return make_error("ConflictException", "no /fsx server to stop: " + out.err);
  return {};
}

Status LocalProvider::kill_slurmd(const std::string& cluster_id, const std::string& instance_id) {
  auto out =
      exec(cluster_id, instance_id,
           {"/bin/bash", "-c", std::string("kill -9 \"$(cat ") + node::kSlurmdPidFile + ")\""},
           std::chrono::seconds(10));
  if (out.exit_code != 0) return make_error("ConflictException", "no slurmd to kill: " + out.err);
  return {};
}

}  // namespace endure::provider
