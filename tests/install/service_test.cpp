// The system service's contract: the CLI finds a system endured when nothing names another,
// and the units name the paths the programs use (the node contract's, the system home's).
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "api/node_contract.h"
#include "cli/home.h"
#include "common/system_paths.h"
#include "provider/host/agent_unit.h"

namespace endure {
namespace {

namespace sfs = std::filesystem;

struct Folders {
  sfs::path root = sfs::temp_directory_path() / ("endure-home-test-" + std::to_string(getpid()));
  sfs::path user = root / "user";
  sfs::path system = root / "system";
  Folders() {
    sfs::create_directories(user);
    sfs::create_directories(system);
  }
  ~Folders() { sfs::remove_all(root); }
  void write(const sfs::path& path, mode_t mode) {
    std::ofstream(path) << "x\n";
    ::chmod(path.c_str(), mode);
  }
};

TEST(ServiceTest, EndureHomeNamesTheEndpointTheCliUses) {
  Folders f;
  // Nothing anywhere: the user's own folder, whose missing token the CLI names.
  EXPECT_EQ(cli::find_endure_home("", f.user, f.system), f.user);
  // A system endured whose token this user may read.
  f.write(f.system / "token", 0600);
  EXPECT_EQ(cli::find_endure_home("", f.user, f.system), f.system);
  // An endured of the user's own has served: it wins.
  f.write(f.user / "endpoint", 0644);
  EXPECT_EQ(cli::find_endure_home("", f.user, f.system), f.user);
  // ENDURE_HOME wins over both.
  EXPECT_EQ(cli::find_endure_home("/elsewhere", f.user, f.system), sfs::path("/elsewhere"));
}

// What find_endure_home answers for a user who is not root: as root (CI runs as root, and
// root reads every file) it is asked in a child that first drops to nobody (65534), with no
// supplementary groups; the child's exit status carries the answer (0: the user's folder,
// 1: the system's, 2: another, 3: the drop failed).
int home_found_unprivileged(const Folders& f) {
  if (::geteuid() != 0) {
    const auto home = cli::find_endure_home("", f.user, f.system);
    return home == f.user ? 0 : home == f.system ? 1 : 2;
  }
  constexpr uid_t kNobody = 65534;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0 ||
        ::geteuid() != kNobody) {
      ::_exit(3);
    }
    const auto home = cli::find_endure_home("", f.user, f.system);
    ::_exit(home == f.user ? 0 : home == f.system ? 1 : 2);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ServiceTest, AnUnreadableSystemTokenIsPassedOver) {
  Folders f;
  // The system token as installed, 0600 root's, when the test runs as root; else one that
  // even its owner, this user, may not read.
  f.write(f.system / "token", ::geteuid() == 0 ? 0600 : 0000);
  for (const auto& dir : {f.root, f.user, f.system}) ::chmod(dir.c_str(), 0755);
  EXPECT_EQ(home_found_unprivileged(f), 0) << "0: the user's folder, 1: the system's, "
                                              "2: another, 3: dropping to nobody failed";
}

std::string read(const sfs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ServiceTest, TheHostsProviderInstallsThePackagedAgentUnit) {
  const auto packaged =
      read(sfs::path(ENDURE_SOURCE_DIR) / "packaging/systemd/endure-agent.service");
  EXPECT_EQ(std::string(provider::kAgentUnit), packaged);
  const std::string exec = std::string("ExecStart=") + node::kBinDir + "/endure-agent --config " +
                           node::kAgentConfigPath + "\n";
  EXPECT_NE(packaged.find(exec), std::string::npos) << packaged;
  EXPECT_NE(packaged.find(std::string("> ") + node::kAgentPidFile), std::string::npos);
}

TEST(ServiceTest, EnduredsUnitServesTheSystemHomeAndLeavesNodesRunning) {
  const auto unit = read(sfs::path(ENDURE_SOURCE_DIR) / "packaging/systemd/endured.service.in");
  EXPECT_NE(unit.find(std::string("--home ") + kSystemHome + " --config " + kSystemConfigFile),
            std::string::npos)
      << unit;
  EXPECT_NE(unit.find("\nKillMode=process\n"), std::string::npos) << unit;
  EXPECT_NE(unit.find("\nRestart=on-failure\n"), std::string::npos) << unit;
}

}  // namespace
}  // namespace endure
