// A test host made an endure node over SSH: software and files in place with their modes,
// the agent running under its boot service and talking to endured over TLS with the pinned
// CA; bootstrapping again changes nothing and starts no second agent; after a pulled plug
// the host's boot script starts the agent again.
#include "provider/host/host_bootstrap.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/fs.h"
#include "integration/harness.h"
#include "integration/test_hosts.h"
#include "provider/host/host_probe.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

// endured serving agents over TLS, one test host, and what bootstrapping it needs.
class HostNode : public ::testing::Test {
 protected:
  void SetUp() override {
    e_ = std::make_unique<Endured>(dir_.path() / "home");
    tls_port_ = e_->port() + 1000;
    std::filesystem::create_directories(e_->home());
    std::ofstream(e_->home() / "config.json") << json{{"AgentTlsPort", tls_port_}}.dump();
    e_->start();
    auto ca = fs::read_file(e_->home() / "tls" / "ca.pem");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    ASSERT_TRUE(hosts_.ok()) << hosts_.error();
    auto lifecycle = dir_.path() / "lifecycle";
    std::filesystem::create_directories(lifecycle);
    std::ofstream(lifecycle / "on_create.sh") << "#!/bin/sh\necho created on $(hostname)\n";
    std::filesystem::permissions(lifecycle / "on_create.sh", std::filesystem::perms::owner_all);

    api::AgentConfig config;
    config.endpoint = "https://127.0.0.1:" + std::to_string(tls_port_);
    config.ca_file = node::kEndureCaPath;
    config.instance_id = "i-00000000000000001";
    config.token = "a-token-endured-never-issued";
    config.node_name = "worker-0";
    config.group = config.role = "worker";
    config.on_create = "on_create.sh";
    request_.instance_id = config.instance_id;
    request_.node_name = config.node_name;
    request_.lifecycle_source = lifecycle;
    request_.files = {{node::kResourceConfigPath, "{}\n"}};
    request_.secret_files = {{node::kAgentConfigPath, config.to_json().dump(2)},
                             {node::kMungeKeyPath, "munge-key-bytes"}};
    ssh_ = std::make_unique<provider::SshClient>(
        provider::SshTarget{hosts_[0].name, hosts_[0].address, hosts_[0].port, "root",
                            hosts_.identity_file(), hosts_[0].host_key},
        dir_.path() / "ssh");
  }
  void TearDown() override {
    if (ssh_) ssh_->disconnect();
  }
  Status bootstrap() {
    return provider::bootstrap_host(*ssh_, {bin_dir(), bin_dir().parent_path() / "lib"}, request_,
                                    ca_);
  }
  std::string on_host(const std::string& command) { return hosts_.ssh(0, command).out; }
  bool agents_running(int n) {
    return wait_until(
        [&] {
          return on_host("pgrep -fc '[e]ndure-agent-service run'") == std::to_string(n) + "\n";
        },
        20s);
  }

  TempDir dir_;
  std::unique_ptr<Endured> e_;
  int tls_port_ = 0;
  std::string ca_;
  TestHosts hosts_{1};
  provider::LaunchRequest request_;
  std::unique_ptr<provider::SshClient> ssh_;
};

TEST_F(HostNode, BootstrapInstallsTheAgentOnceAndTheHostStartsItAgainAfterAPulledPlug) {
  for (int round = 0; round < 2; ++round) {
    auto done = bootstrap();
    ASSERT_TRUE(done.ok()) << done.error().message;
  }
  EXPECT_EQ(on_host(std::string("stat -c '%a %n' ") + node::kMungeKeyPath + " " +
                    node::kAgentConfigPath + " " + node::kBinDir + "/endure-agent; cat " +
                    node::kLifecycleDir + "/on_create.sh | tail -1"),
            std::string("400 ") + node::kMungeKeyPath + "\n400 " + node::kAgentConfigPath +
                "\n755 " + node::kBinDir + "/endure-agent\necho created on $(hostname)\n");
  EXPECT_TRUE(agents_running(1));
  // The agent reached endured through TLS with the pinned CA: endured answered, and refused
  // the token it never issued.
  EXPECT_TRUE(wait_until(
      [&] {
        return on_host("cat /var/log/endure-agent.log").find("lifecycle report not taken") !=
               std::string::npos;
      },
      20s));
  auto agent_log = on_host("cat /var/log/endure-agent.log");
  EXPECT_EQ(agent_log.find("cannot reach endured"), std::string::npos) << agent_log;
  EXPECT_EQ(agent_log.find("munge-key-bytes"), std::string::npos) << "a secret in a log";

  // A pulled plug: the boot script starts the agent again, once.
  ASSERT_EQ(hosts_.power(0, "reset").exit_code, 0);
  EXPECT_TRUE(agents_running(1)) << on_host("cat /var/log/boot.log; ps -ef");
}

TEST_F(HostNode, TheProbeSeesTheAgentStoppedRestartsItAndCannotTellAPulledPlugFromACutCable) {
  ASSERT_TRUE(bootstrap().ok());
  ASSERT_TRUE(agents_running(1));
  auto first = provider::probe_host(*ssh_, 5s);
  EXPECT_EQ(first.machine, provider::MachineState::kAlive) << first.detail;
  EXPECT_TRUE(first.agent == provider::AgentState::kSleeping ||
              first.agent == provider::AgentState::kRunnable)
      << first.detail;
  std::string before = on_host(std::string("cat ") + node::kAgentPidFile);
  on_host(std::string("kill -STOP $(cat ") + node::kAgentPidFile + ")");
  EXPECT_EQ(provider::probe_host(*ssh_, 5s).agent, provider::AgentState::kStopped);

  ASSERT_TRUE(provider::restart_host_agent(*ssh_, 5s).ok());
  EXPECT_TRUE(wait_until(
      [&] {
        auto p = provider::probe_host(*ssh_, 5s);
        return on_host(std::string("cat ") + node::kAgentPidFile) != before &&
               p.agent != provider::AgentState::kStopped && p.agent != provider::AgentState::kGone;
      },
      20s));

  ASSERT_EQ(hosts_.power(0, "off").exit_code, 0);
  auto gone = provider::probe_host(*ssh_, 3s);
  EXPECT_EQ(gone.machine, provider::MachineState::kUnknown) << gone.detail;
  EXPECT_EQ(gone.agent, provider::AgentState::kUnknown);
}

TEST_F(HostNode, CleaningLeavesNothingOfEndureAndTheHostCanBeBootstrappedAgain) {
  ASSERT_TRUE(bootstrap().ok());
  ASSERT_TRUE(agents_running(1));
  ASSERT_TRUE(provider::clean_host(*ssh_).ok());
  // The host's own boot script is as it was, its last line included.
  EXPECT_EQ(on_host("pgrep -fc '[/]opt/endure' || true; ls /opt; grep -c endure /etc/rc.local || "
                    "true; tail -1 /etc/rc.local; ls /var/log/endure-agent.log 2>/dev/null || "
                    "echo no-log"),
            "0\n0\nexit 0\nno-log\n");
  ASSERT_TRUE(bootstrap().ok());
  EXPECT_TRUE(agents_running(1));
}

}  // namespace
}  // namespace endure::test
