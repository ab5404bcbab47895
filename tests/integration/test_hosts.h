// Test hosts for the host provider, made by the tests with endure-test-host (see
// tests/support/test_host): each a separate machine with its own sshd on its own loopback
// address. endure learns of them only through what a pool file says.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/process.h"
#include "support/temp_dir.h"

namespace endure::test {

struct TestHost {
  std::string name;     // its hostname: host-1, host-2, ...
  std::string address;  // 127.0.<50+set>.<i>
  int port = 2222;
  std::filesystem::path dir;
  std::string host_key;  // its public SSH host key, "ssh-ed25519 AAAA..."
};

// n hosts, built and powered on; all powered off (every process of theirs killed) and
// removed at the end.
class TestHosts {
 public:
  explicit TestHosts(int n, int set = 0);
  ~TestHosts();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::vector<TestHost>& hosts() const { return hosts_; }
  const TestHost& operator[](std::size_t i) const { return hosts_[i]; }
  // The private key the hosts let in as root.
  std::filesystem::path identity_file() const { return dir_.path() / "id_ed25519"; }
  // The command a pool registers to power a host on, off or reset.
  std::string power_command() const;

  // A pool file registering every host in one pool, as a user writes one: each host's
  // address, port, host key, the identity file and the power command.
  json pool_file(const std::string& pool_name) const;
  // A spec's SharedFileSystem served by host i from its folder `folder` (under one of the
  // host's own folders: the rest of its tree is the machine's).
  json shared_file_system(std::size_t i, const std::string& folder) const;

  // endure-test-host's verbs for host i: "on", "off" (a pulled plug), "reset", "state".
  process::Output power(std::size_t i, const std::string& verb) const;
  bool on(std::size_t i) const;
  // Runs a command on host i as root over SSH (the test's own way in, not endure's).
  process::Output ssh(std::size_t i, const std::string& command,
                      std::chrono::seconds timeout = std::chrono::seconds(30)) const;

 private:
  TempDir dir_{"endure-hosts"};
  std::vector<TestHost> hosts_;
  std::string error_;
};

}  // namespace endure::test
