// A test host made an endure node over SSH: software and files in place with their modes,
// the agent running under its boot service and talking to endured over TLS with the pinned
// CA; bootstrapping again changes nothing and starts no second agent; after a pulled plug
// the host's boot script starts the agent again.
#include "provider/host/host_bootstrap.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "agent/agent_config.h"
#include "api/node_contract.h"
#include "common/fs.h"
#include "integration/harness.h"
#include "integration/test_hosts.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

TEST(HostBootstrap, InstallsTheAgentOnceAndTheHostStartsItAgainAfterAPulledPlug) {
  TempDir dir;
  Endured e(dir.path() / "home");
  int tls_port = e.port() + 1000;
  std::filesystem::create_directories(e.home());
  std::ofstream(e.home() / "config.json") << json{{"AgentTlsPort", tls_port}}.dump();
  e.start();
  auto ca = fs::read_file(e.home() / "tls" / "ca.pem");
  ASSERT_TRUE(ca.ok());

  TestHosts hosts(1);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  auto lifecycle = dir.path() / "lifecycle";
  std::filesystem::create_directories(lifecycle);
  std::ofstream(lifecycle / "on_create.sh") << "#!/bin/sh\necho created on $(hostname)\n";
  std::filesystem::permissions(lifecycle / "on_create.sh", std::filesystem::perms::owner_all);

  agent::AgentConfig config;
  config.endpoint = "https://127.0.0.1:" + std::to_string(tls_port);
  config.ca_file = node::kEndureCaPath;
  config.instance_id = "i-00000000000000001";
  config.token = "a-token-endured-never-issued";
  config.node_name = "worker-0";
  config.group = config.role = "worker";
  config.on_create = "on_create.sh";
  provider::LaunchRequest request;
  request.instance_id = config.instance_id;
  request.node_name = config.node_name;
  request.lifecycle_source = lifecycle;
  request.files = {{node::kResourceConfigPath, "{}\n"}};
  request.secret_files = {{node::kAgentConfigPath, config.to_json().dump(2)},
                          {node::kMungeKeyPath, "munge-key-bytes"}};
  provider::NodeSoftware software{bin_dir(), bin_dir().parent_path() / "lib"};
  provider::SshClient ssh({hosts[0].name, hosts[0].address, hosts[0].port, "root",
                           hosts.identity_file(), hosts[0].host_key},
                          dir.path() / "ssh");
  for (int round = 0; round < 2; ++round) {
    auto done = provider::bootstrap_host(ssh, software, request, *ca);
    ASSERT_TRUE(done.ok()) << done.error().message;
  }
  auto look = [&] {
    return hosts
        .ssh(0, std::string("stat -c '%a %n' ") + node::kMungeKeyPath + " " +
                    node::kAgentConfigPath + " " + node::kBinDir + "/endure-agent; " +
                    "pgrep -fc '[e]ndure-agent-service run'; cat " + node::kLifecycleDir +
                    "/on_create.sh | tail -1")
        .out;
  };
  EXPECT_EQ(look(), std::string("400 ") + node::kMungeKeyPath + "\n400 " + node::kAgentConfigPath +
                        "\n755 " + node::kBinDir +
                        "/endure-agent\n1\necho created on $(hostname)\n");
  // The agent reached endured through TLS with the pinned CA: endured answered, and refused
  // the token it never issued.
  auto log_says = [&](const std::string& what) {
    return wait_until(
        [&] {
          return hosts.ssh(0, "cat /var/log/endure-agent.log").out.find(what) != std::string::npos;
        },
        20s);
  };
  EXPECT_TRUE(log_says("lifecycle report not taken"));
  auto agent_log = hosts.ssh(0, "cat /var/log/endure-agent.log").out;
  EXPECT_EQ(agent_log.find("cannot reach endured"), std::string::npos) << agent_log;
  EXPECT_EQ(agent_log.find("munge-key-bytes"), std::string::npos) << "a secret in a log";

  // A pulled plug: the boot script starts the agent again, once.
  ASSERT_EQ(hosts.power(0, "reset").exit_code, 0);
  EXPECT_TRUE(wait_until(
      [&] { return hosts.ssh(0, "pgrep -fc '[e]ndure-agent-service run'").out == "1\n"; }, 20s))
      << hosts.ssh(0, "cat /var/log/boot.log; ps -ef").out;
  ssh.disconnect();
}

}  // namespace
}  // namespace endure::test
