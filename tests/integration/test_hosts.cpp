#include "integration/test_hosts.h"

#include <fstream>
#include <sstream>

#include "common/fs.h"
#include "integration/harness.h"

namespace endure::test {

namespace {

std::string host_tool() { return (bin_dir() / "endure-test-host").string(); }

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TestHosts::TestHosts(int n, int set) {
  auto key = identity_file().string();
  auto keygen = process::run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key});
  if (keygen.exit_code != 0) {
    error_ = "ssh-keygen: " + keygen.err;
    return;
  }
  for (int i = 1; i <= n; ++i) {
    TestHost h;
    h.name = "host-" + std::to_string(i);
    h.address = "127.0." + std::to_string(50 + set) + "." + std::to_string(i);
    h.dir = dir_.path() / h.name;
    auto built = process::run({host_tool(), "build", h.dir.string(), "--name", h.name, "--address",
                               h.address, "--port", std::to_string(h.port), "--authorized-key",
                               key + ".pub"});
    if (built.exit_code != 0) {
      error_ = "build " + h.name + ": " + built.err;
      return;
    }
    auto pub = fs::read_file(h.dir / "etc/ssh/ssh_host_ed25519_key.pub");
    if (!pub) {
      error_ = pub.error().message;
      return;
    }
    std::istringstream parts(*pub);
    std::string type, blob;
    parts >> type >> blob;
    h.host_key = type + " " + blob;
    hosts_.push_back(h);
    auto up = power(hosts_.size() - 1, "on");
    if (up.exit_code != 0) {
      error_ = "power on " + h.name + ": " + up.err;
      return;
    }
  }
}

TestHosts::~TestHosts() {
  for (std::size_t i = 0; i < hosts_.size(); ++i) (void)power(i, "off");
}

std::string TestHosts::power_command() const {
  return host_tool() + " {action} " + dir_.str() + "/{host}";
}

json TestHosts::pool_file(const std::string& pool_name) const {
  json hosts = json::array();
  for (const auto& h : hosts_) {
    hosts.push_back(
        {{"HostName", h.name}, {"Address", h.address}, {"Port", h.port}, {"HostKey", h.host_key}});
  }
  return {{"Pools",
           {{{"PoolName", pool_name},
             {"IdentityFile", identity_file().string()},
             {"PowerCommand", power_command()},
             {"Hosts", hosts}}}}};
}

json TestHosts::shared_file_system(std::size_t i, const std::string& folder) const {
  const TestHost& h = hosts_[i];
  return {{"DnsName", h.address},
          {"Port", h.port},
          {"MountName", folder},
          {"HostKey", h.host_key},
          {"IdentityFile", identity_file().string()}};
}

process::Output TestHosts::power(std::size_t i, const std::string& verb) const {
  process::Options o;
  o.timeout = std::chrono::seconds(30);
  return process::run({host_tool(), verb, hosts_[i].dir.string()}, o);
}

bool TestHosts::on(std::size_t i) const { return first_line(power(i, "state").out) == "on"; }

process::Output TestHosts::ssh(std::size_t i, const std::string& command,
                               std::chrono::seconds timeout) const {
  const TestHost& h = hosts_[i];
  std::string known = (dir_.path() / (h.name + ".known")).string();
  std::ofstream(known) << "[" << h.address << "]:" << h.port << " " << h.host_key << "\n";
  process::Options o;
  o.timeout = timeout;
  return process::run(
      {"ssh", "-F", "/dev/null", "-p", std::to_string(h.port), "-i", identity_file().string(), "-o",
       "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + known,
       "-o", "LogLevel=ERROR", "root@" + h.address, "--", command},
      o);
}

}  // namespace endure::test
