#include "harness.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "common/ids.h"
#include "provider/local/namespace_processes.h"
#include "support/text_files.h"

namespace endure::test {

using namespace std::chrono_literals;

std::filesystem::path bin_dir() { return ENDURE_BIN_DIR; }
std::filesystem::path source_dir() { return ENDURE_SOURCE_DIR; }
std::filesystem::path base_lifecycle_dir() {
  return source_dir() / "examples/lifecycle/base-config";
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    reap_orphan_instances();
    std::this_thread::sleep_for(100ms);
  }
  return pred();
}

namespace {

// A port no one listens on now, away from the ones clusters use (16000-32767).
int pick_port() {
  static int next = 7300 + static_cast<int>(getpid() % 500);
  return next++;
}

}  // namespace

Endured::Endured(std::filesystem::path home) : home_(std::move(home)), port_(pick_port()) {}

Endured::~Endured() {
  if (!running()) start();
  delete_all_clusters();
  stop();
}

void Endured::start(const std::string& crash_at) {
  std::filesystem::create_directories(home_);
  std::filesystem::remove(home_ / "endpoint");
  std::string exe = (bin_dir() / "endured").string();
  std::string home_arg = "--home=" + home_.string();
  std::string port_arg = "--port=" + std::to_string(port_);
  std::string log = (home_ / "endured.log").string();
  crash_at_ = crash_at;
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (!crash_at.empty()) setenv("ENDURE_CRASH_AT", crash_at.c_str(), 1);
    execl(exe.c_str(), exe.c_str(), home_arg.c_str(), port_arg.c_str(), nullptr);
    _exit(127);
  }
  pid_ = pid;
  bool up = wait_until([&] { return std::filesystem::exists(home_ / "endpoint"); }, 10s);
  ASSERT_TRUE(up) << "endured did not start; its log:\n" << read_text(log);
}

bool Endured::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return true;
  int status = 0;
  bool gone = wait_until([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
  if (!gone) return false;
  pid_ = 0;
  // A crash point kills with SIGKILL (common/crash_point.cpp): an exit, or another signal
  // (an abort, a segfault), is endured ending somewhere else.
  const std::string log = read_text((home_ / "endured.log").string());
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
      (crash_at_.empty() || log.find("endure: crash point " + crash_at_ + "\n") != std::string::npos)) {
    return true;
  }
  ADD_FAILURE() << "endured ended, but not at its crash point " << crash_at_ << ": "
                << (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                      : std::string("signal ") + strsignal(WTERMSIG(status)))
                << "; its log:\n"
                << fs::tail_lines((home_ / "endured.log").string(), 40);
  return false;
}

void Endured::kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = 0;
}

void Endured::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  bool gone = wait_until([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, 15s);
  if (!gone) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = 0;
}

HttpClient Endured::client() const {
  std::string token = read_text(home_ / "token");
  while (!token.empty() && token.back() == '\n') token.pop_back();
  return HttpClient(Endpoint::loopback(port_), token, 30);
}

Result<json> Endured::call(const std::string& action, const json& body) const {
  return client().post("/v1/" + action, body);
}

process::Output Endured::cli(const std::vector<std::string>& args,
                             std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = {(bin_dir() / "endure").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  process::Options options;
  options.timeout = timeout;
  options.env = {{"ENDURE_HOME", home_.string()}};
  return process::run(argv, options);
}

std::string Endured::wait_status(const std::string& cluster, const std::set<std::string>& want,
                                 std::chrono::seconds timeout) {
  std::string status;
  wait_until(
      [&] {
        auto r = call("DescribeCluster", {{"ClusterName", cluster}});
        if (!r) {
          status = r.error().code;
        } else {
          status = (*r)["ClusterStatus"].get<std::string>();
        }
        return want.count(status) > 0 || status == "Failed";
      },
      timeout);
  return status;
}

process::Output Endured::exec(const std::string& cluster, const std::string& node,
                              const std::string& shell_command) const {
  return cli(
      {"exec", "--cluster-name", cluster, "--node", node, "--", "/bin/bash", "-c", shell_command});
}

std::string address_of(const Endured& e, const std::string& cluster, const std::string& node_name) {
  auto out = e.exec(cluster, node_name, "getent hosts " + node_name + " | cut -d' ' -f1 | head -1");
  std::string a = out.out;
  while (!a.empty() && a.back() == '\n') a.pop_back();
  return a;
}

json memory_store_of(const Endured& e, const std::string& cluster, const std::string& node_name) {
  auto out = e.exec(cluster, node_name, "cat /opt/endure/config/memory_store.json");
  return out.exit_code == 0 ? json::parse(out.out, nullptr, false) : json();
}

void Endured::delete_all_clusters() {
  auto list = call("ListClusters", json::object());
  if (!list) return;
  for (const auto& c : (*list)["ClusterSummaries"]) {
    (void)call("DeleteCluster", {{"ClusterName", c["ClusterName"]}});  // waited for below
  }
  wait_until(
      [&] {
        auto l = call("ListClusters", json::object());
        return l && (*l)["ClusterSummaries"].empty();
      },
      60s);
}

json make_spec(const std::string& name, int workers, const std::filesystem::path& lifecycle) {
  auto group = [&](const std::string& g, int count) {
    return json{
        {"InstanceGroupName", g},
        {"InstanceType", "local.c2"},
        {"InstanceCount", count},
        {"LifeCycleConfig", {{"SourceS3Uri", lifecycle.string()}, {"OnCreate", "on_create.sh"}}},
        {"ThreadsPerCore", 1}};
  };
  return {{"ClusterName", name},
          {"InstanceGroups", json::array({group("controller", 1), group("worker", workers)})},
          {"NodeRecovery", "Automatic"}};
}

int ready_warm_spares(const Endured& e, const std::string& cluster) {
  auto r = e.call("DescribeCluster", {{"ClusterName", cluster}});
  if (!r) return -1;
  for (const auto& g : (*r)["InstanceGroups"]) {
    if (g["InstanceGroupName"] == "worker") return g.value("CurrentWarmSpares", -1);
  }
  return -1;
}

std::string pid_namespace_of(int pid) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec);
  return ec ? "" : target.string();
}

namespace {

template <class Fn>
void for_each_process(Fn fn) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    fn(std::stoi(name));
  }
}

std::string cmdline_of(int pid) {
  std::string text = read_text("/proc/" + std::to_string(pid) + "/cmdline");
  for (auto& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

}  // namespace

std::vector<int> processes_in_pid_namespace(const std::string& ns) {
  std::vector<int> pids;
  for_each_process([&](int pid) {
    if (pid_namespace_of(pid) == ns && process::alive(pid)) pids.push_back(pid);
  });
  return pids;
}

std::vector<int> instance_processes(const std::filesystem::path& home,
                                    const std::string& cluster_id) {
  std::string marker = "--local-boot " + (home / "clusters" / cluster_id).string() + "/";
  std::vector<int> pids;
  for_each_process([&](int pid) {
    // The node's init only: the agent it runs as its child carries the same command line.
    if (process::alive(pid) && cmdline_of(pid).find(marker) != std::string::npos &&
        provider::pid_in_own_namespace(pid) == 1) {
      pids.push_back(pid);
    }
  });
  return pids;
}

namespace {

// True when the process lives in a pid namespace below ours (its NSpid lists two pids).
bool in_a_node(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) == 0) {
      std::istringstream pids(line.substr(6));
      int first = 0, second = 0;
      return static_cast<bool>(pids >> first >> second);
    }
  }
  return false;
}

}  // namespace

void reap_orphan_instances() {
  int self = getpid();
  for_each_process([&](int pid) {
    std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) return;
    char state = stat[close_paren + 2];
    int ppid = std::atoi(stat.c_str() + close_paren + 4);
    if (state != 'Z' || ppid != self) return;
    // Our own children run in our pid namespace; one from inside a node is an orphan.
    if (stat.find("(endure-agent)") != std::string::npos || in_a_node(pid)) {
      waitpid(pid, nullptr, WNOHANG);
    }
  });
}

}  // namespace endure::test

int main(int argc, char** argv) {
  // Instances outlive a killed endured; as a subreaper the test inherits (and reaps) them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGPIPE, SIG_IGN);
  ::testing::InitGoogleTest(&argc, argv);
  if (geteuid() != 0) {
    std::fprintf(stderr, "integration tests need root (namespaces, Slurm daemons)\n");
    return 1;
  }
  return RUN_ALL_TESTS();
}
