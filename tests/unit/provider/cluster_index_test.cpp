// Cluster indexes are drawn host-wide: two controllers (two homes) on one host never get
// the same index, a released or stale claim is free again, and a stored cluster keeps its own.
#include <gtest/gtest.h>

#include "common/fs.h"
#include "provider/local/cluster_index_registry.h"
#include "support/temp_dir.h"

namespace endure::provider {
namespace {

using test::TempDir;

class ClusterIndexTest : public ::testing::Test {
 protected:
  std::filesystem::path cluster(const std::string& home, const std::string& id) {
    return dir_.path() / home / "clusters" / id;
  }
  TempDir dir_;
  ClusterIndexRegistry registry_{dir_.path() / "host", 3};
};

TEST_F(ClusterIndexTest, TwoHomesDrawFromOneHostWideSet) {
  auto a = registry_.claim(cluster("home-a", "c1"));
  auto b = registry_.claim(cluster("home-b", "c1"));  // the same cluster id, another home
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, 1);
  EXPECT_EQ(*b, 2);
  EXPECT_TRUE(std::filesystem::is_directory(cluster("home-a", "c1")))
      << "the claim makes its folder";
  // A retried claim gets the index it holds, not a new one.
  EXPECT_EQ(registry_.claim(cluster("home-a", "c1")).value(), 1);
  EXPECT_EQ(registry_.claim(cluster("home-a", "c2")).value(), 3);
  auto full = registry_.claim(cluster("home-b", "c2"));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().code, "ResourceInUse");
  EXPECT_NE(full.error().message.find("at most 3 clusters"), std::string::npos)
      << full.error().message;
}

TEST_F(ClusterIndexTest, ReleasedAndStaleClaimsAreFreeAgainTheSmallestFirst) {
  for (const char* id : {"c1", "c2", "c3"}) ASSERT_TRUE(registry_.claim(cluster("a", id)).ok());
  ASSERT_TRUE(registry_.release(cluster("a", "c2")).ok());
  EXPECT_EQ(registry_.claim(cluster("b", "x")).value(), 2);
  // A home removed without releasing (its folders gone): its claims are free.
  ASSERT_TRUE(fs::remove_tree(dir_.path() / "a").ok());
  EXPECT_EQ(registry_.claim(cluster("b", "y")).value(), 1);
  EXPECT_TRUE(registry_.release(cluster("nobody", "z")).ok()) << "nothing to release is no error";
}

TEST_F(ClusterIndexTest, AStoredClusterKeepsItsIndexUnlessAnotherHoldsIt) {
  EXPECT_EQ(registry_.claim(cluster("a", "c1"), 3).value(), 3);
  EXPECT_EQ(registry_.claim(cluster("a", "c1"), 3).value(), 3);
  auto taken = registry_.claim(cluster("b", "c9"), 3);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code, "ResourceInUse");
  EXPECT_NE(taken.error().message.find((dir_.path() / "a").string()), std::string::npos)
      << "names the holder: " << taken.error().message;
  EXPECT_EQ(registry_.claim(cluster("b", "c9")).value(), 1);
}

}  // namespace
}  // namespace endure::provider
