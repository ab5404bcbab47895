// What endure does with registered hosts: every state change allowed or refused as the
// table says, which host a node gets, and a pool file registered again.
#include "provider/host/host_inventory.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace endure::provider {
namespace {

using S = HostState;

const std::vector<S> kAll = {S::kAvailable, S::kBootstrapping, S::kInUse, S::kQuarantined};

TEST(HostStates, EveryChangeIsAllowedOrRefusedAsTheDiagramSays) {
  const std::set<std::pair<S, S>> allowed = {
      {S::kAvailable, S::kBootstrapping},   {S::kBootstrapping, S::kInUse},
      {S::kBootstrapping, S::kQuarantined}, {S::kBootstrapping, S::kAvailable},
      {S::kInUse, S::kAvailable},
      {S::kInUse, S::kQuarantined},         {S::kQuarantined, S::kAvailable}};
  for (S from : kAll) {
    for (S to : kAll) {
      Status s = check_host_change(from, to);
      EXPECT_EQ(s.ok(), allowed.count({from, to}) == 1)
          << to_string(from) << " -> " << to_string(to);
      if (!s.ok()) {
        EXPECT_NE(s.error().message.find(std::string("from ") + to_string(from)), std::string::npos)
            << s.error().message;
      }
    }
  }
  // A quarantined host goes back only through Available (after its checks), never straight
  // into a node.
  EXPECT_EQ(check_host_change(S::kQuarantined, S::kBootstrapping).error().message,
            "a host cannot go from Quarantined to Bootstrapping (from Quarantined: Available)");
}

TEST(HostStates, NamesRoundTrip) {
  for (S s : kAll) EXPECT_EQ(host_state_from(to_string(s)), s);
  EXPECT_FALSE(host_state_from("Broken").has_value());
}

HostRecord record(const std::string& name, const std::string& pool, S state,
                  const std::string& instance = "") {
  HostRecord r;
  r.host.ssh.name = name;
  r.host.ssh.address = "127.0.61." + name.substr(name.size() - 1);
  r.pool = pool;
  r.state = state;
  r.instance_id = instance;
  return r;
}

TEST(PickHost, TheFirstAvailableOfThePoolNotTriedYet) {
  std::vector<HostRecord> hosts = {
      record("a1", "a", S::kInUse, "i-1"), record("b1", "b", S::kAvailable),
      record("a2", "a", S::kQuarantined), record("a3", "a", S::kAvailable),
      record("a4", "a", S::kAvailable)};
  EXPECT_EQ(pick_host(hosts, "a", {}), 3u);
  EXPECT_EQ(pick_host(hosts, "a", {"a3"}), 4u) << "a host that failed this node is not retried";
  EXPECT_EQ(pick_host(hosts, "a", {"a3", "a4"}), std::nullopt) << "none left: the pool is empty";
  EXPECT_EQ(pick_host(hosts, "b", {}), 1u);
  EXPECT_EQ(pick_host(hosts, "c", {}), std::nullopt);
}

HostPool pool(const std::string& name, const std::vector<std::string>& hosts) {
  HostPool p{name, {}};
  for (const auto& h : hosts) {
    PoolHost host;
    host.ssh.name = h;
    host.ssh.address = "127.0.62." + h.substr(h.size() - 1);
    p.hosts.push_back(host);
  }
  return p;
}

TEST(MergeRegistration, NewHostsAreAvailableAndKnownOnesKeepTheirStateWithTheNewRegistration) {
  std::vector<HostRecord> known = {record("a1", "a", S::kInUse, "i-1"),
                                   record("a2", "a", S::kQuarantined),
                                   record("a3", "a", S::kAvailable)};
  known[1].reason = "xid: Xid 79";
  auto merged = merge_registration(known, {pool("a", {"a1", "a2", "a4"})});
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  ASSERT_EQ(merged->size(), 3u) << "a3, no longer listed and free, is dropped";
  EXPECT_EQ((*merged)[0].state, S::kInUse);
  EXPECT_EQ((*merged)[0].instance_id, "i-1");
  EXPECT_EQ((*merged)[0].host.ssh.address, "127.0.62.1") << "the new registration is taken";
  EXPECT_EQ((*merged)[1].state, S::kQuarantined);
  EXPECT_EQ((*merged)[1].reason, "xid: Xid 79");
  EXPECT_EQ((*merged)[2].host.ssh.name, "a4");
  EXPECT_EQ((*merged)[2].state, S::kAvailable);
}

TEST(MergeRegistration, AHostServingANodeCannotLeaveOrChangePools) {
  std::vector<HostRecord> known = {record("a1", "a", S::kInUse, "i-1"),
                                   record("a2", "a", S::kBootstrapping, "i-2")};
  auto gone = merge_registration(known, {pool("a", {"a1"})});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, "ResourceInUse");
  EXPECT_NE(gone.error().message.find("a2"), std::string::npos) << gone.error().message;
  auto moved = merge_registration(known, {pool("a", {"a2"}), pool("b", {"a1"})});
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(moved.error().message.find("cannot move from pool a to b"), std::string::npos)
      << moved.error().message;
  // Free hosts may move.
  auto free = merge_registration({record("a3", "a", S::kAvailable)}, {pool("b", {"a3"})});
  ASSERT_TRUE(free.ok());
  EXPECT_EQ((*free)[0].pool, "b");
}

}  // namespace
}  // namespace endure::provider
