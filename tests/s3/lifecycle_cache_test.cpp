// Lifecycle sources in object storage as the node providers use them: a snapshot per
// source and listing, the cluster pinned to the snapshot its first node ran, the S3 errors
// passed on with the field, and the last snapshot serving while the endpoint is down.
#include "s3/lifecycle_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "provider/local/local_provider.h"
#include "s3/s3_error.h"
#include "spec/cluster_spec.h"
#include "support/s3_fixture.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace endure::s3 {
namespace {

namespace sfs = std::filesystem;
using test::ScopedEnv;
constexpr const char* kCacheBucket = "sagemaker-lifecycle";
constexpr const char* kCacheField = "InstanceGroups[1].LifeCycleConfig";

using test::contains;

TEST(LifecyclePin, KeepsTheFirstSnapshotUntilTheSourceChanges) {
  test::TempDir dir("endure-s3-pin");
  sfs::path cache = dir.path() / "lifecycle-s3";
  std::string a(64, 'a'), b(64, 'b'), c(64, 'c');
  sfs::path source = cache / "s3-0123456789abcdef";
  sfs::path other = cache / "s3-fedcba9876543210";
  for (const auto& p : {source / a, source / b, other / c}) ASSERT_TRUE(fs::make_dirs(p));
  sfs::path pins = dir.path() / "cluster/lifecycle-pins";

  auto first = pin_lifecycle_snapshot(pins, source / a);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, source / a);
  // The bucket changed (a new snapshot); the cluster keeps running the one it started with.
  auto later = pin_lifecycle_snapshot(pins, source / b);
  ASSERT_TRUE(later);
  EXPECT_EQ(*later, source / a);
  // The spec names another source: its snapshot.
  auto changed = pin_lifecycle_snapshot(pins, other / c);
  ASSERT_TRUE(changed);
  EXPECT_EQ(*changed, other / c);
  // A pinned snapshot that is gone is replaced by the current one.
  sfs::remove_all(source / a);
  auto repinned = pin_lifecycle_snapshot(pins, source / b);
  ASSERT_TRUE(repinned);
  EXPECT_EQ(*repinned, source / b);
  EXPECT_EQ(*pin_lifecycle_snapshot(pins, source / b), source / b);

  // A local folder is not a snapshot: returned as it is, nothing pinned.
  sfs::path pins2 = dir.path() / "cluster2/lifecycle-pins";
  auto local = pin_lifecycle_snapshot(pins2, dir.path() / "scripts");
  ASSERT_TRUE(local);
  EXPECT_EQ(*local, dir.path() / "scripts");
  EXPECT_FALSE(sfs::exists(pins2));
  EXPECT_FALSE(is_lifecycle_snapshot(dir.path() / "s3-0123456789abcdef" / "short"));
  EXPECT_TRUE(is_lifecycle_snapshot(source / a));
}

class LifecycleCacheTest : public test::S3ServerTest {
 protected:
  LifecycleCacheTest() : S3ServerTest(kCacheBucket) {}

  test::TempDir dir_{"endure-s3-lifecycle"};
};

TEST_F(LifecycleCacheTest, ResolvesPinsAndFallsBackWhileTheEndpointIsDown) {
  put("base-config/on_create.sh", "echo v1\n");
  put("base-config/provisioning_parameters.json", "{}\n");
  LifecycleSourceCache cache(dir_.path() / "lifecycle-s3", server_->config());
  const std::string uri = "s3://sagemaker-lifecycle/base-config";

  auto created = cache.resolve(kCacheField, uri, "on_create.sh");
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_TRUE(is_lifecycle_snapshot(*created));
  EXPECT_EQ(*fs::read_file(*created / "on_create.sh"), "echo v1\n");
  sfs::path pins = dir_.path() / "cluster/lifecycle-pins";
  ASSERT_TRUE(pin_lifecycle_snapshot(pins, *created));

  // The scripts change in the bucket; a replacement node of the cluster runs the first copy.
  put("base-config/on_create.sh", "echo v2\n");
  auto replaced = cache.resolve(kCacheField, uri, "on_create.sh");
  ASSERT_TRUE(replaced) << replaced.error().message;
  EXPECT_NE(*replaced, *created);
  auto runs = pin_lifecycle_snapshot(pins, *replaced);
  ASSERT_TRUE(runs);
  EXPECT_EQ(*runs, *created);
  EXPECT_EQ(*fs::read_file(*runs / "on_create.sh"), "echo v1\n");

  // The endpoint gone: the newest copy of the source serves; a source never copied fails.
  server_->kill();
  auto offline = cache.resolve(kCacheField, uri, "on_create.sh");
  ASSERT_TRUE(offline) << offline.error().message;
  EXPECT_EQ(*fs::read_file(*offline / "on_create.sh"), "echo v2\n");
  auto never = cache.resolve(kCacheField, "s3://sagemaker-lifecycle/other", "on_create.sh");
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().code, kUnreachable);
  EXPECT_PRED2(contains, never.error().message, std::string(kCacheField) + ".SourceS3Uri");
}

TEST_F(LifecycleCacheTest, TheLocalProviderResolvesS3SourcesWithEnduredsEnvironment) {
  put("cluster/on_create.sh", "echo created\n");
  put("cluster/provisioning_parameters.json", "{}\n");
  ScopedEnv env({{"AWS_ENDPOINT_URL", server_->endpoint_url()},
                 {"AWS_ACCESS_KEY_ID", test::S3Server::kAccessKey},
                 {"AWS_SECRET_ACCESS_KEY", test::S3Server::kSecretKey},
                 {"AWS_REGION", "us-east-1"},
                 {"AWS_ENDPOINT_URL_S3", std::nullopt},
                 {"AWS_SESSION_TOKEN", std::nullopt}});
  provider::LocalProvider local(dir_.path() / "home/clusters", "/nonexistent/endure-agent",
                                dir_.path() / "indexes");
  auto dir = local.resolve_lifecycle_source(kCacheField, "s3://sagemaker-lifecycle/cluster",
                                            "on_create.sh");
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(dir->parent_path().parent_path(), dir_.path() / "home/lifecycle-s3");
  EXPECT_TRUE(sfs::is_regular_file(*dir / "provisioning_parameters.json"));

  // A missing script or bucket fails the creation with the S3 error and the field.
  auto no_script =
      local.resolve_lifecycle_source(kCacheField, "s3://sagemaker-lifecycle/cluster", "missing.sh");
  ASSERT_FALSE(no_script);
  EXPECT_PRED2(contains, no_script.error().message,
               std::string(kCacheField) + ".OnCreate: s3://sagemaker-lifecycle/cluster/missing.sh");
  auto no_bucket =
      local.resolve_lifecycle_source(kCacheField, "s3://no-such-bucket/cluster", "on_create.sh");
  ASSERT_FALSE(no_bucket);
  EXPECT_EQ(no_bucket.error().code, "NoSuchBucket");
  EXPECT_PRED2(contains, no_bucket.error().message, "s3://no-such-bucket/cluster/");
}

TEST(LifecycleSpec, AnS3SourceMustNameAValidBucket) {
  auto spec_with = [](const std::string& source) {
    return json::parse(
        R"({"ClusterName":"c","InstanceGroups":[{"InstanceGroupName":"w",)"
        R"("InstanceType":"local.c1","InstanceCount":1,"LifeCycleConfig":{"SourceS3Uri":")" +
        source + R"(","OnCreate":"on_create.sh"}}]})");
  };
  auto good = spec::parse_cluster_spec(spec_with("s3://sagemaker-lifecycle/base-config"));
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->groups[0].lifecycle.source_uri, "s3://sagemaker-lifecycle/base-config");
  auto bad = spec::parse_cluster_spec(spec_with("s3://Sagemaker_Lifecycle/base-config"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "ValidationException");
  EXPECT_PRED2(contains, bad.error().message, "InstanceGroups[0].LifeCycleConfig.SourceS3Uri");
  EXPECT_PRED2(contains, bad.error().message, "lowercase letters");
}

TEST_F(LifecycleCacheTest, TheLocalProviderTakesEnduredsS3Settings) {
  put("cluster/on_create.sh", "echo created\n");
  // The environment names no endpoint and keys the server refuses: what reaches the store
  // is endured's settings, an endpoint and a profile of a credentials file.
  ASSERT_TRUE(fs::atomic_write_file(
      dir_.path() / "credentials",
      std::string("[endure]\naws_access_key_id = ") + test::S3Server::kAccessKey +
          "\naws_secret_access_key = " + test::S3Server::kSecretKey + "\n"));
  ScopedEnv env({{"AWS_ENDPOINT_URL", std::nullopt},
                 {"AWS_ENDPOINT_URL_S3", std::nullopt},
                 {"AWS_ACCESS_KEY_ID", "WRONGKEY"},
                 {"AWS_SECRET_ACCESS_KEY", "wrong-secret"},
                 {"AWS_REGION", "us-east-1"},
                 {"AWS_SESSION_TOKEN", std::nullopt}});
  ConfigOverrides settings;
  settings.endpoint_url = server_->endpoint_url();
  settings.credentials_file = (dir_.path() / "credentials").string();
  settings.profile = "endure";
  provider::LocalProvider local(dir_.path() / "home/clusters", "/nonexistent/endure-agent",
                                dir_.path() / "indexes", settings);
  auto dir = local.resolve_lifecycle_source(kCacheField, "s3://sagemaker-lifecycle/cluster",
                                            "on_create.sh");
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(*fs::read_file(*dir / "on_create.sh"), "echo created\n");
}

TEST(LifecycleCacheConfig, AnEnduredWithoutS3SettingsSaysSo) {
  test::TempDir dir("endure-s3-noconfig");
  ScopedEnv env({{"HOME", dir.str()},
                 {"AWS_ACCESS_KEY_ID", std::nullopt},
                 {"AWS_SECRET_ACCESS_KEY", std::nullopt},
                 {"AWS_SHARED_CREDENTIALS_FILE", std::nullopt}});
  LifecycleSourceCache cache(dir.path() / "lifecycle-s3");
  auto r = cache.resolve(kCacheField, "s3://sagemaker-lifecycle/x", "on_create.sh");
  ASSERT_FALSE(r);
  EXPECT_PRED2(contains, r.error().message,
               std::string(kCacheField) + ".SourceS3Uri: object storage is not configured");
  EXPECT_PRED2(contains, r.error().message, "AWS_ACCESS_KEY_ID");
  EXPECT_FALSE(sfs::exists(dir.path() / "lifecycle-s3"));
}

}  // namespace
}  // namespace endure::s3
