// The host registry: a pool file registered and registered again, a node taking hosts in
// the file's order, state changes by the inventory's rules, and a repaired host returned
// only when its check passes, on a real store.
#include "provider/host/host_registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/store_fixture.h"

namespace endure::test {
namespace {

using provider::HostState;

json pool_file(const std::string& extra_host = "") {
  std::string hosts =
      R"({"HostName": "gpu-01", "Address": "127.0.63.1",
          "HostKey": "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s"},
         {"HostName": "gpu-02", "Address": "127.0.63.2",
          "HostKey": "SHA256:Q2hhbmdlIG1lIHRvIHlvdXIgaG9zdCdzIGZpbmdlcnA"})";
  if (!extra_host.empty()) hosts += "," + extra_host;
  return json::parse(R"({"Pools": [{"PoolName": "rack-a", "IdentityFile": "/etc/endure/id",
                                    "Hosts": [)" +
                     hosts + "]}]}");
}

class HostRegistryTest : public StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    registry_ = std::make_unique<provider::HostRegistry>(*store_, dir_.str("ssh"));
  }
  std::unique_ptr<provider::HostRegistry> registry_;
};

TEST_F(HostRegistryTest, RegistersListsAndRejectsABadFileWithoutChange) {
  auto registered = registry_->register_pools(pool_file());
  ASSERT_TRUE(registered.ok()) << registered.error().message;
  ASSERT_EQ(registered->size(), 2u);
  EXPECT_TRUE(registry_->has_pool("rack-a"));
  EXPECT_FALSE(registry_->has_pool("rack-b"));

  json bad = pool_file(R"({"HostName": "gpu-03", "Address": "127.0.63.3", "HostKey": "nope"})");
  auto refused = registry_->register_pools(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("Pools[0].Hosts[2].HostKey"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(registry_->list()->size(), 2u);
}

TEST_F(HostRegistryTest, ClaimsInFileOrderSkippingTriedAndRefusesToDropAServingHost) {
  ASSERT_TRUE(registry_->register_pools(pool_file()).ok());
  auto first = registry_->claim("rack-a", "c-1", "i-1", {});
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->host.ssh.name, "gpu-01");
  EXPECT_EQ((*first)->state, HostState::kBootstrapping);
  auto serving = registry_->host_of("c-1", "i-1");
  ASSERT_TRUE(serving.has_value());
  EXPECT_EQ(serving->host.ssh.name, "gpu-01");

  auto second = registry_->claim("rack-a", "c-1", "i-2", {"gpu-02"});
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->has_value()) << "gpu-02 was tried for i-2 and gpu-01 is taken";

  // gpu-01 serves i-1: a file without it is refused and nothing changes.
  json without = json::parse(R"({"Pools": [{"PoolName": "rack-a", "IdentityFile": "/id",
      "Hosts": [{"HostName": "gpu-02", "Address": "127.0.63.2",
                 "HostKey": "SHA256:Q2hhbmdlIG1lIHRvIHlvdXIgaG9zdCdzIGZpbmdlcnA"}]}]})");
  auto refused = registry_->register_pools(without);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "ResourceInUse");
  EXPECT_EQ(registry_->list()->size(), 2u);

  ASSERT_TRUE(registry_->change("gpu-01", HostState::kInUse).ok());
  ASSERT_TRUE(registry_->change("gpu-01", HostState::kAvailable).ok());
  EXPECT_FALSE(registry_->host_of("c-1", "i-1").has_value());
  EXPECT_TRUE(registry_->find("gpu-01")->cluster_id.empty());
}

TEST_F(HostRegistryTest, ReturnsAQuarantinedHostOnlyWhenItsCheckPasses) {
  ASSERT_TRUE(registry_->register_pools(pool_file()).ok());
  auto pass = [](const provider::HostRecord&) { return Status(); };
  auto fail = [](const provider::HostRecord&) {
    return Status(make_error("HostUnreachable", "no answer within 10 s"));
  };
  auto not_quarantined = registry_->return_host("gpu-01", pass);
  ASSERT_FALSE(not_quarantined.ok());
  EXPECT_EQ(not_quarantined.error().code, "ConflictException");
  EXPECT_EQ(registry_->return_host("gpu-09", pass).error().code, "ResourceNotFound");

  ASSERT_TRUE(registry_->claim("rack-a", "c-1", "i-1", {}).ok());
  ASSERT_TRUE(registry_->change("gpu-01", HostState::kQuarantined, "xid 79").ok());
  EXPECT_EQ(registry_->find("gpu-01")->reason, "xid 79");

  auto failed = registry_->return_host("gpu-01", fail);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("no answer within 10 s"), std::string::npos);
  EXPECT_EQ(registry_->find("gpu-01")->state, HostState::kQuarantined);
  EXPECT_NE(registry_->find("gpu-01")->reason.find("no answer"), std::string::npos);

  auto returned = registry_->return_host("gpu-01", pass);
  ASSERT_TRUE(returned.ok()) << returned.error().message;
  EXPECT_EQ(returned->state, HostState::kAvailable);
  EXPECT_TRUE(returned->reason.empty());
  EXPECT_TRUE(returned->instance_id.empty());
}

TEST(SshStateRoot, StaysShortEnoughForAConnectionSocket) {
  EXPECT_EQ(provider::ssh_state_root("/root/.endure"), "/root/.endure/ssh");
  auto long_home = std::filesystem::path("/tmp") / std::string(90, 'h');
  auto root = provider::ssh_state_root(long_home);
  EXPECT_EQ(root.string().rfind("/run/endure-ssh-", 0), 0u) << root;
  EXPECT_EQ(root, provider::ssh_state_root(long_home)) << "the same home, the same root";
}

}  // namespace
}  // namespace endure::test
