// Host pools through endured and the CLI: a pool file of real test hosts registered and
// listed, a bad file refused naming its field, and a repaired host returned only when it
// passes basic checks over SSH (a powered-off host stays Quarantined with the reason).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>

#include "integration/harness.h"
#include "integration/test_hosts.h"
#include "provider/host/host_probe.h"
#include "provider/host/host_registry.h"
#include "store/store.h"

namespace endure::test {
namespace {

using namespace std::chrono_literals;

TEST(HostPools, RegisteredListedAndABadFileRefusedThroughTheCli) {
  TempDir dir;
  TestHosts hosts(2, 4);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  Endured e(dir.path() / "home");
  e.start();
  auto file = dir.path() / "pools.json";
  std::ofstream(file) << hosts.pool_file("rack-a").dump(2);

  auto registered = e.cli({"register-host-pools", "--cli-input-json", "file://" + file.string()});
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  EXPECT_NE(registered.out.find("host-1"), std::string::npos) << registered.out;
  EXPECT_NE(registered.out.find("Available"), std::string::npos) << registered.out;

  auto listed = e.cli({"list-hosts", "--pool-name", "rack-a", "--output", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto summaries = json::parse(listed.out)["HostSummaries"];
  ASSERT_EQ(summaries.size(), 2u) << listed.out;
  EXPECT_EQ(summaries[0]["HostName"], "host-1");
  EXPECT_EQ(summaries[1]["Address"], hosts[1].address);
  EXPECT_EQ(summaries[1]["State"], "Available");

  auto no_pool = e.cli({"list-hosts", "--pool-name", "rack-z"});
  EXPECT_EQ(no_pool.exit_code, 1);
  EXPECT_NE(no_pool.err.find("no pool named rack-z"), std::string::npos) << no_pool.err;

  json bad = hosts.pool_file("rack-a");
  bad["Pools"][0]["Hosts"][1]["Port"] = 70000;
  std::ofstream(file) << bad.dump(2);
  auto refused = e.cli({"register-host-pools", "--cli-input-json", "file://" + file.string()});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("Pools[0].Hosts[1].Port"), std::string::npos) << refused.err;
  EXPECT_EQ(json::parse(e.cli({"list-hosts", "--output", "json"}).out)["HostSummaries"].size(), 2u);

  auto not_quarantined = e.cli({"return-host", "--host-name", "host-1"});
  EXPECT_EQ(not_quarantined.exit_code, 1);
  EXPECT_NE(not_quarantined.err.find("only a Quarantined host"), std::string::npos)
      << not_quarantined.err;
}

TEST(HostPools, ARepairedHostReturnsOnlyWhenItPassesBasicChecksOverSsh) {
  TempDir dir;
  TestHosts hosts(1, 4);
  ASSERT_TRUE(hosts.ok()) << hosts.error();
  auto store = store::Store::open(dir.str("endured.db"));
  ASSERT_TRUE(store.ok());
  provider::HostRegistry registry(**store, dir.path() / "ssh");
  ASSERT_TRUE(registry.register_pools(hosts.pool_file("rack-a")).ok());
  ASSERT_TRUE(registry.claim("rack-a", "c-1", "i-1", {}).ok());
  ASSERT_TRUE(registry.change("host-1", provider::HostState::kQuarantined, "xid 79").ok());
  auto check = [&](const provider::HostRecord& r) {
    auto ssh = registry.ssh(r);
    Status s = provider::check_host_basics(ssh, 5s);
    ssh.disconnect();
    return s;
  };

  ASSERT_EQ(hosts.power(0, "off").exit_code, 0);
  auto failed = registry.return_host("host-1", check);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("stays Quarantined"), std::string::npos);
  EXPECT_EQ(registry.find("host-1")->state, provider::HostState::kQuarantined);
  EXPECT_NE(registry.find("host-1")->reason.find("failed basic checks"), std::string::npos);

  ASSERT_EQ(hosts.power(0, "on").exit_code, 0);
  auto returned = registry.return_host("host-1", check);
  ASSERT_TRUE(returned.ok()) << returned.error().message;
  EXPECT_EQ(returned->state, provider::HostState::kAvailable);
}

}  // namespace
}  // namespace endure::test
