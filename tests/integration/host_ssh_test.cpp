// Test hosts are machines of their own, and endured's SSH client reaches them only as the
// host registered: the key or its fingerprint checked, a changed key refused, secrets
// written with their mode and never in an argument list.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "integration/harness.h"
#include "integration/test_hosts.h"
#include "provider/host/host_pool.h"
#include "provider/host/ssh_client.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

provider::SshTarget target_of(const TestHosts& hosts, std::size_t i) {
  return {hosts[i].name, hosts[i].address,      hosts[i].port,
          "root",        hosts.identity_file(), hosts[i].host_key};
}

std::string fingerprint_of(const std::string& public_key) {
  process::Options o;
  o.stdin_data = public_key + "\n";
  auto out = process::run({"ssh-keygen", "-l", "-E", "sha256", "-f", "-"}, o);
  std::string fp = out.out.substr(out.out.find(' ') + 1);
  return fp.substr(0, fp.find(' '));
}

TEST(TestHosts, EachIsAMachineOfItsOwn) {
  TestHosts hosts(2);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  auto one = hosts.ssh(0,
                       "hostname; cat /proc/1/cmdline | tr '\\0' ' '; echo; "
                       "echo mine > /etc/endure-test-mark; ls /run");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.substr(0, one.out.find('\n')), "host-1");
  EXPECT_NE(one.out.find("sshd"), std::string::npos) << "sshd is its first process: " << one.out;
  auto two = hosts.ssh(1, "hostname; cat /etc/endure-test-mark 2>/dev/null || echo none");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, "host-2\nnone\n");
  EXPECT_FALSE(std::filesystem::exists("/etc/endure-test-mark"))
      << "a host wrote the machine's /etc";
}

TEST(TestHosts, APulledPlugEndsEveryProcessAndPowerOnBringsTheHostBackWithItsDisk) {
  TestHosts hosts(1);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  ASSERT_EQ(hosts
                .ssh(0,
                     "echo kept > /local/file; echo gone > /run/file; "
                     "setsid sleep 300 >/dev/null 2>&1 < /dev/null &")
                .exit_code,
            0);
  ASSERT_EQ(hosts.power(0, "off").exit_code, 0);
  EXPECT_FALSE(hosts.on(0));
  provider::SshClient client(target_of(hosts, 0), hosts.identity_file().parent_path() / "c0");
  auto down = client.connect(3s);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, "HostUnreachable") << down.error().message;

  // Powered on again as endured will: the pool's power command, filled in.
  provider::PoolHost registered{target_of(hosts, 0), hosts.power_command()};
  auto on = process::run({"sh", "-c", provider::power_command_for(registered, "on")});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  auto back = hosts.ssh(0,
                        "cat /local/file; ls /run/file 2>/dev/null || echo no-run-file; "
                        "pgrep -c sleep || true");
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out, "kept\nno-run-file\n0\n");
}

TEST(HostSsh, TheRegisteredKeyOrItsFingerprintLetsEndureIn) {
  TestHosts hosts(1);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  auto dir = hosts.identity_file().parent_path();
  provider::SshClient by_key(target_of(hosts, 0), dir / "k");
  ASSERT_TRUE(by_key.connect().ok());
  auto name = by_key.run("hostname", 10s);
  EXPECT_EQ(name.out, "host-1\n");

  auto t = target_of(hosts, 0);
  t.host_key = fingerprint_of(hosts[0].host_key);
  ASSERT_EQ(t.host_key.rfind("SHA256:", 0), 0u) << t.host_key;
  provider::SshClient by_fingerprint(t, dir / "f");
  auto in = by_fingerprint.connect();
  ASSERT_TRUE(in.ok()) << in.error().message;

  // A secret: its mode as asked, its content never on a command line.
  ASSERT_TRUE(by_key.write_file("/etc/munge/munge.key", "secret-bytes", 0400).ok());
  auto st = by_key.run("stat -c '%a %U' /etc/munge/munge.key; cat /etc/munge/munge.key", 10s);
  EXPECT_EQ(st.out, "400 root\nsecret-bytes");
  by_key.disconnect();
  by_fingerprint.disconnect();
}

TEST(HostSsh, AHostWithAnotherKeyIsRefusedAndNothingRuns) {
  TestHosts hosts(2);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  auto dir = hosts.identity_file().parent_path();
  // Host 1 registered with host 2's key: as if host 1 had been reinstalled or replaced.
  auto t = target_of(hosts, 0);
  t.host_key = hosts[1].host_key;
  provider::SshClient wrong_key(t, dir / "w");
  auto refused = wrong_key.connect();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "HostKeyMismatch") << refused.error().message;
  EXPECT_NE(refused.error().message.find("host-1"), std::string::npos);
  EXPECT_FALSE(wrong_key.write_file("/etc/endure-should-not-exist", "x", 0644).ok());

  t.host_key = fingerprint_of(hosts[1].host_key);
  provider::SshClient wrong_fingerprint(t, dir / "wf");
  auto also = wrong_fingerprint.connect();
  ASSERT_FALSE(also.ok());
  EXPECT_EQ(also.error().code, "HostKeyMismatch") << also.error().message;

  EXPECT_EQ(trimmed(hosts.ssh(0, "ls /etc/endure-should-not-exist 2>/dev/null || echo absent").out),
            "absent");
}

}  // namespace
}  // namespace endure::test
