// The pool file: what it registers, its defaults, and every rule it can break named by its
// field path.
#include "provider/host/host_pool.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace endure::provider {
namespace {

const char* kKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINJCV+7ncd7CbuXndV6zryBJE8cBvwtZn3/265wjVSuy";
const char* kFingerprint = "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s";

json pool_file() {
  return json::parse(R"({"Pools": [{
      "PoolName": "rack-a", "IdentityFile": "/etc/endure/ssh/id_ed25519",
      "PowerCommand": "ipmitool -H {host}-bmc chassis power {action}",
      "Hosts": [
        {"HostName": "gpu-01", "Address": "127.0.60.11", "HostKey": ")" +
                     std::string(kKey) + R"("},
        {"HostName": "gpu-02", "Address": "127.0.60.12", "Port": 2222, "User": "ops",
         "IdentityFile": "/root/.ssh/other", "HostKey": ")" +
                     kFingerprint + R"(",
         "PowerCommand": "redfish-power {address} {action}"}]}]})");
}

std::vector<std::string> paths(const json& file) {
  std::vector<std::string> out;
  for (const auto& e : validate_host_pools(file)) out.push_back(e.path);
  return out;
}

TEST(HostPoolFile, ReadsHostsWithTheirPoolsDefaults) {
  auto pools = parse_host_pools(pool_file());
  ASSERT_TRUE(pools.ok()) << pools.error().message;
  ASSERT_EQ(pools->size(), 1u);
  const HostPool& p = (*pools)[0];
  EXPECT_EQ(p.name, "rack-a");
  ASSERT_EQ(p.hosts.size(), 2u);
  const PoolHost& a = p.hosts[0];
  EXPECT_EQ(a.ssh.name, "gpu-01");
  EXPECT_EQ(a.ssh.port, 22);
  EXPECT_EQ(a.ssh.user, "root");
  EXPECT_EQ(a.ssh.identity_file, "/etc/endure/ssh/id_ed25519");
  EXPECT_EQ(power_command_for(a, "reset"), "ipmitool -H gpu-01-bmc chassis power reset");
  const PoolHost& b = p.hosts[1];
  EXPECT_EQ(b.ssh.port, 2222);
  EXPECT_EQ(b.ssh.user, "ops");
  EXPECT_EQ(b.ssh.identity_file, "/root/.ssh/other");
  EXPECT_TRUE(is_fingerprint(b.ssh.host_key));
  EXPECT_EQ(power_command_for(b, "on"), "redfish-power 127.0.60.12 on");
}

TEST(HostPoolFile, NoPowerCommandMeansRebootOverSsh) {
  json f = pool_file();
  f["Pools"][0].erase("PowerCommand");
  auto pools = parse_host_pools(f);
  ASSERT_TRUE(pools.ok()) << pools.error().message;
  EXPECT_EQ((*pools)[0].hosts[0].power_command, "");
}

TEST(HostPoolFile, EveryBrokenRuleIsNamedByItsField) {
  json f = pool_file();
  auto& hosts = f["Pools"][0]["Hosts"];
  hosts[0]["HostName"] = "-gpu";                // not a hostname
  hosts[0]["Address"] = "-oProxyCommand=evil";  // an option to ssh, not an address
  hosts[1]["HostKey"] = "SHA256:short";
  hosts[1]["Port"] = 70000;
  hosts[1]["PowerCommand"] = "power {what}";
  hosts[1]["Colour"] = "blue";
  EXPECT_EQ(paths(f),
            (std::vector<std::string>{"Pools[0].Hosts[0].HostName", "Pools[0].Hosts[0].Address",
                                      "Pools[0].Hosts[1].Colour", "Pools[0].Hosts[1].PowerCommand",
                                      "Pools[0].Hosts[1].Port", "Pools[0].Hosts[1].HostKey"}));
  auto parsed = parse_host_pools(f);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code, "ValidationException");
  EXPECT_NE(parsed.error().message.find("Pools[0].Hosts[1].PowerCommand: uses {what}; "
                                        "placeholders: {host}, {address}, {action}"),
            std::string::npos)
      << parsed.error().message;
}

TEST(HostPoolFile, HostsAndPoolsAreUniqueAndKeysAndIdentitiesRequired) {
  json f = pool_file();
  json second = f["Pools"][0];
  second["Hosts"] = json::array({second["Hosts"][0]});
  second["Hosts"][0]["HostName"] = "GPU-02";      // gpu-02 in another case: the same host
  second["Hosts"][0]["Address"] = "127.0.60.11";  // and gpu-01's address and port
  second.erase("IdentityFile");
  second["Hosts"][0].erase("HostKey");
  f["Pools"].push_back(second);  // and the same pool name
  EXPECT_EQ(paths(f),
            (std::vector<std::string>{"Pools[1].PoolName", "Pools[1].Hosts[0].HostName",
                                      "Pools[1].Hosts[0].IdentityFile", "Pools[1].Hosts[0].HostKey",
                                      "Pools[1].Hosts[0].Address"}));
}

TEST(HostPoolFile, TheShapeIsChecked) {
  EXPECT_EQ(paths(json::array()), std::vector<std::string>{""});
  EXPECT_EQ(paths(json::object()), std::vector<std::string>{"Pools"});
  EXPECT_EQ(paths({{"Pools", json::array()}}), std::vector<std::string>{"Pools"});
  json f = pool_file();
  f["Pools"][0]["Hosts"] = json::array();
  f["Pools"][0]["IdentityFile"] = "relative/key";
  f["Pools"][0]["PowerCommand"] = "reboot-it {host}";  // no {action}
  EXPECT_EQ(paths(f), (std::vector<std::string>{"Pools[0].IdentityFile", "Pools[0].PowerCommand",
                                                "Pools[0].Hosts"}));
}

TEST(HostPoolFile, TheExampleIsValid) {
  std::ifstream in(std::string(ENDURE_SOURCE_DIR) + "/examples/hosts/pools.json");
  auto pools = parse_host_pools(json::parse(in));
  ASSERT_TRUE(pools.ok()) << pools.error().message;
  EXPECT_EQ((*pools)[0].hosts.size(), 3u);
}

}  // namespace
}  // namespace endure::provider
