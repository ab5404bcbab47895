// The system service's contract: the CLI finds a system endured when nothing names another,
// and the units name the paths the programs use (the node contract's, the system home's).
#include <gtest/gtest.h>
#include <sys/stat.h>

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

TEST(ServiceTest, AnUnreadableSystemTokenIsPassedOver) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads every file";
  Folders f;
  f.write(f.system / "token", 0000);
  EXPECT_EQ(cli::find_endure_home("", f.user, f.system), f.user);
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
