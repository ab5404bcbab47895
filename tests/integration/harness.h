// Test harness for integration tests: a real endured on a private ENDURE_HOME and port,
// the real CLI, and helpers to look at the machine's processes.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/http_client.h"
#include "common/json.h"
#include "common/process.h"
#include "support/temp_dir.h"

namespace endure::test {

std::filesystem::path bin_dir();
std::filesystem::path source_dir();
std::filesystem::path base_lifecycle_dir();


// Polls pred every 100 ms until it holds or the timeout passes.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// endured as a child process of the test.
class Endured {
 public:
  explicit Endured(std::filesystem::path home);
  ~Endured();  // stops endured; clusters it left behind are deleted first

  // crash_at: a crash point (see common/crash_point.h) at which endured kills itself.
  void start(const std::string& crash_at = "");
  void kill9();  // SIGKILL, as a crash
  // Waits for endured to end at its crash point: true when it was killed by SIGKILL after
  // saying it reached that point, as crash_point() does; an exit, another signal or a
  // SIGKILL without the line fails the test, saying which, and false.
  bool wait_exit(std::chrono::milliseconds timeout);
  void stop();   // SIGTERM and wait
  bool running() const { return pid_ > 0; }

  const std::filesystem::path& home() const { return home_; }
  int port() const { return port_; }
  HttpClient client() const;
  // POSTs an action with the operator token.
  Result<json> call(const std::string& action, const json& body) const;
  // Runs the endure CLI against this endured.
  process::Output cli(const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120)) const;

  // Waits until the cluster's status is one of want (or it fails); returns the last status.
  std::string wait_status(const std::string& cluster, const std::set<std::string>& want,
                          std::chrono::seconds timeout);
  // Runs a shell command inside a node through `endure exec`.
  process::Output exec(const std::string& cluster, const std::string& node,
                       const std::string& shell_command) const;
  // Deletes every cluster this endured has and waits until they are gone.
  void delete_all_clusters();

 private:
  std::filesystem::path home_;
  int port_;
  int pid_ = 0;
  std::string crash_at_;  // the crash point start() set, if any
};

// A CreateCluster request: one controller and `workers` workers of local.c2 with the
// given lifecycle folder.
json make_spec(const std::string& name, int workers,
               const std::filesystem::path& lifecycle = base_lifecycle_dir());

// Host pids of live (not zombie) processes whose pid namespace is ns (from readlink
// /proc/PID/ns/pid, e.g. "pid:[4026532291]").
std::vector<int> processes_in_pid_namespace(const std::string& ns);
// The worker group's ready warm spares (DescribeCluster's CurrentWarmSpares); -1 when the
// cluster or the count cannot be read.
int ready_warm_spares(const Endured& e, const std::string& cluster);

// A node's address as its cluster's /etc/hosts has it.
std::string address_of(const Endured& e, const std::string& cluster, const std::string& node_name);
// The node's memory_store.json, null when it has none.
json memory_store_of(const Endured& e, const std::string& cluster, const std::string& node_name);

std::string pid_namespace_of(int pid);

// Live endure-agent local-boot processes of a cluster that are pid 1 of their node: one per
// running instance.
std::vector<int> instance_processes(const std::filesystem::path& home,
                                    const std::string& cluster_id);

// Reaps zombie orphans: after a kill -9 of endured its instances are re-parented to the
// test process (a child subreaper), and so is a command endured ran inside a node when it
// killed the command's nsenter at a deadline. Unreaped, such a zombie keeps its node's pid
// namespace from ending.
void reap_orphan_instances();

}  // namespace endure::test
