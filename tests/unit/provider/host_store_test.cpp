// The hosts table: a pool file's hosts stored in its order with what endure does with them,
// replaced at once, changed one at a time, and read back as the same records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "provider/host/host_inventory.h"
#include "support/store_fixture.h"

namespace endure::test {
namespace {

using provider::HostState;

std::vector<provider::HostPool> pools() {
  auto parsed = provider::parse_host_pools(json::parse(R"({"Pools": [
      {"PoolName": "rack-a", "IdentityFile": "/etc/endure/id",
       "PowerCommand": "power {host} {action}",
       "Hosts": [
         {"HostName": "gpu-02", "Address": "127.0.63.2",
          "HostKey": "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"},
         {"HostName": "gpu-01", "Address": "127.0.63.1", "Port": 2222,
          "HostKey": "SHA256:Q2hhbmdlIG1lIHRvIHlvdXIgaG9zdCdzIGZpbmdlcnA"}]}]})"));
  EXPECT_TRUE(parsed.ok());
  return *parsed;
}

class HostStore : public StoreFixture {
 protected:
  std::vector<provider::HostRecord> read() {
    std::vector<provider::HostRecord> out;
    for (const auto& row : store_->hosts()) {
      auto r = provider::from_row(row);
      EXPECT_TRUE(r.ok()) << r.error().message;
      if (r) out.push_back(*r);
    }
    return out;
  }
  void write(const std::vector<provider::HostRecord>& records) {
    std::vector<store::HostRow> rows;
    for (std::size_t i = 0; i < records.size(); ++i) {
      rows.push_back(provider::to_row(records[i], static_cast<int>(i)));
    }
    ASSERT_TRUE(store_->replace_hosts(rows).ok());
  }
};

TEST_F(HostStore, KeepsThePoolFilesOrderAndEveryFieldAcrossARestart) {
  auto merged = provider::merge_registration({}, pools());
  ASSERT_TRUE(merged.ok());
  write(*merged);
  reopen();
  auto back = read();
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].host.ssh.name, "gpu-02") << "the pool file's order, not the names'";
  EXPECT_EQ(back[1].host.ssh.port, 2222);
  EXPECT_EQ(back[1].host.ssh.identity_file, "/etc/endure/id");
  EXPECT_EQ(provider::power_command_for(back[1].host, "on"), "power gpu-01 on");
  EXPECT_EQ(back[0].state, HostState::kAvailable);
}

TEST_F(HostStore, AChangeIsOneHostsAndARegistrationAgainKeepsStates) {
  write(*provider::merge_registration({}, pools()));
  ASSERT_TRUE(store_
                  ->mutate_host("gpu-01",
                                [](store::HostRow& r) -> Status {
                                  r.state = "InUse";
                                  r.cluster_id = "c1";
                                  r.instance_id = "i-1";
                                  return {};
                                })
                  .ok());
  EXPECT_EQ(store_->mutate_host("gpu-09", [](store::HostRow&) { return Status{}; }).error().code,
            "ResourceNotFound");
  // The same file registered again: gpu-01 still serves i-1.
  auto merged = provider::merge_registration(read(), pools());
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  write(*merged);
  auto back = read();
  EXPECT_EQ(back[1].state, HostState::kInUse);
  EXPECT_EQ(back[1].instance_id, "i-1");
  EXPECT_EQ(back[0].state, HostState::kAvailable);
}

}  // namespace
}  // namespace endure::test
