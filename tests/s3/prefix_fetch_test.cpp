// Lifecycle scripts from s3://bucket/prefix: the prefix copied into a snapshot folder
// whole or not at all, reused while unchanged, and refused with the S3 error (naming bucket,
// key and field) when the bucket, the OnCreate script or the permission is missing.
#include "s3/prefix_fetch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "s3/s3_error.h"
#include "support/s3_fixture.h"
#include "support/temp_dir.h"

namespace endure::s3 {
namespace {

namespace sfs = std::filesystem;
constexpr const char* kFetchBucket = "endure-lifecycle";
constexpr const char* kFetchField = "InstanceGroups[0].LifeCycleConfig";

using test::contains;

// Every entry below dir, as relative paths (the cache must hold nothing else).
std::vector<std::string> entries(const sfs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = sfs::recursive_directory_iterator(dir, ec);
       !ec && it != sfs::recursive_directory_iterator(); it.increment(ec)) {
    out.push_back(sfs::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PrefixFetch, RelativePathsStayInsideTheFolder) {
  EXPECT_EQ(relative_path_for("scripts/", "scripts/on_create.sh"), "on_create.sh");
  EXPECT_EQ(relative_path_for("scripts/", "scripts/utils/a.py"), "utils/a.py");
  EXPECT_EQ(relative_path_for("", "top.sh"), "top.sh");
  EXPECT_EQ(relative_path_for("scripts/", "scripts/"), "");
  EXPECT_EQ(relative_path_for("scripts/", "scripts/dir/"), "");
  EXPECT_EQ(relative_path_for("scripts/", "scripts/../x"), "");
  EXPECT_EQ(relative_path_for("scripts/", "scripts/a//b"), "");
  EXPECT_EQ(relative_path_for("scripts/", "scripts/./b"), "");
  EXPECT_EQ(relative_path_for("scripts/", "other/b"), "");
}

class PrefixFetchTest : public test::S3ServerTest {
 protected:
  PrefixFetchTest() : S3ServerTest(kFetchBucket) {}

  sfs::path cache_root() const { return cache_.path() / "lifecycle"; }

  test::TempDir cache_{"endure-s3-cache"};
};

TEST_F(PrefixFetchTest, CopiesThePrefixAndReusesAnUnchangedSnapshot) {
  put("cluster/scripts/on_create.sh", "#!/bin/bash\necho created\n");
  put("cluster/scripts/provisioning_parameters.json", "{\"version\": \"1.0.0\"}\n");
  put("cluster/scripts/utils/mount_fsx.sh", "echo mount\n");
  put("cluster/scripts/dir/", "");                   // a folder marker
  put("cluster/scripts-old/on_create.sh", "old\n");  // beside the prefix, not under it

  auto fetched = fetch_lifecycle_scripts(
      *client_, kFetchField, "s3://endure-lifecycle/cluster/scripts", "on_create.sh", cache_root());
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_FALSE(fetched->reused);
  EXPECT_EQ(fetched->files,
            (std::vector<std::string>{"on_create.sh", "provisioning_parameters.json",
                                      "utils/mount_fsx.sh"}));
  EXPECT_EQ(fetched->dir, cache_root() / fetched->digest);
  EXPECT_EQ(*fs::read_file(fetched->dir / "on_create.sh"), "#!/bin/bash\necho created\n");
  EXPECT_EQ(*fs::read_file(fetched->dir / "utils/mount_fsx.sh"), "echo mount\n");
  EXPECT_EQ(entries(cache_root()),
            (std::vector<std::string>{fetched->digest, fetched->digest + "/on_create.sh",
                                      fetched->digest + "/provisioning_parameters.json",
                                      fetched->digest + "/utils",
                                      fetched->digest + "/utils/mount_fsx.sh"}));

  // Unchanged: the same snapshot, nothing downloaded again.
  auto again =
      fetch_lifecycle_scripts(*client_, kFetchField, "s3://endure-lifecycle/cluster/scripts/",
                              "on_create.sh", cache_root());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->reused);
  EXPECT_EQ(again->dir, fetched->dir);

  // Changed: a new snapshot beside the old one, which stays as it was for its readers.
  put("cluster/scripts/on_create.sh", "#!/bin/bash\necho created v2\n");
  auto changed = fetch_lifecycle_scripts(
      *client_, kFetchField, "s3://endure-lifecycle/cluster/scripts", "on_create.sh", cache_root());
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_NE(changed->dir, fetched->dir);
  EXPECT_EQ(*fs::read_file(changed->dir / "on_create.sh"), "#!/bin/bash\necho created v2\n");
  EXPECT_EQ(*fs::read_file(fetched->dir / "on_create.sh"), "#!/bin/bash\necho created\n");
}

TEST_F(PrefixFetchTest, MissingBucketScriptOrPermissionFailsAndWritesNothing) {
  put("cluster/scripts/provisioning_parameters.json", "{}\n");

  auto no_bucket = fetch_lifecycle_scripts(*client_, kFetchField, "s3://no-such-bucket/scripts",
                                           "on_create.sh", cache_root());
  ASSERT_FALSE(no_bucket);
  EXPECT_EQ(no_bucket.error().code, "NoSuchBucket");
  EXPECT_PRED2(contains, no_bucket.error().message, std::string(kFetchField) + ".SourceS3Uri");
  EXPECT_PRED2(contains, no_bucket.error().message, "s3://no-such-bucket/scripts/");

  auto empty = fetch_lifecycle_scripts(*client_, kFetchField, "s3://endure-lifecycle/nothing-here",
                                       "on_create.sh", cache_root());
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, "NoSuchKey");
  EXPECT_PRED2(contains, empty.error().message, "s3://endure-lifecycle/nothing-here/");

  auto no_script = fetch_lifecycle_scripts(
      *client_, kFetchField, "s3://endure-lifecycle/cluster/scripts", "on_create.sh", cache_root());
  ASSERT_FALSE(no_script);
  EXPECT_EQ(no_script.error().code, "ValidationException");
  EXPECT_PRED2(
      contains, no_script.error().message,
      std::string(kFetchField) + ".OnCreate: s3://endure-lifecycle/cluster/scripts/on_create.sh");

  put("cluster/scripts/on_create.sh", "echo\n");
  S3Config wrong = server_->config();
  wrong.credentials.secret_access_key = "wrong";
  auto denied_client = S3Client::create(wrong);
  ASSERT_TRUE(denied_client);
  auto denied =
      fetch_lifecycle_scripts(**denied_client, kFetchField, "s3://endure-lifecycle/cluster/scripts",
                              "on_create.sh", cache_root());
  ASSERT_FALSE(denied);
  EXPECT_TRUE(is_access_denied(denied.error())) << denied.error().message;
  EXPECT_PRED2(contains, denied.error().message, "s3://endure-lifecycle/cluster/scripts/");

  auto bad_uri = fetch_lifecycle_scripts(*client_, kFetchField, "s3://Bad_Bucket/x", "on_create.sh",
                                         cache_root());
  ASSERT_FALSE(bad_uri);
  EXPECT_EQ(bad_uri.error().code, "ValidationException");

  // None of the failures left anything behind.
  EXPECT_TRUE(entries(cache_root()).empty());
}

// The server dies once the fetch has stored its first object whole in its temp folder, and
// before it has the rest: one object at a time (parallelism 1), 40 of them, so the fetch is
// still under way when the first lands.
TEST_F(PrefixFetchTest, AServerGoneMidFetchLeavesNoSnapshot) {
  constexpr int kObjects = 40;
  for (int i = 0; i < kObjects; ++i) {
    put("big/part-" + std::to_string(i), std::string(300000, static_cast<char>('a' + i % 26)));
  }
  S3Config one_at_a_time = server_->config();
  one_at_a_time.parallelism = 1;
  auto client = make_client(one_at_a_time);
  ASSERT_TRUE(client);
  auto listing = list_prefix(*client, S3Uri{kFetchBucket, "big"});
  ASSERT_TRUE(listing) << listing.error().message;
  ASSERT_EQ(listing->objects.size(), static_cast<size_t>(kObjects));

  // Watches the fetch's temp folder (cache_root/.fetch-*) for objects stored under their own
  // names (a download in progress has a ".s3-" temp name), and kills the server at the first.
  std::atomic<bool> done{false};
  std::atomic<int> stored_at_kill{-1};
  std::thread watcher([&] {
    while (!done) {
      std::error_code ec;
      for (auto it = sfs::directory_iterator(cache_root(), ec);
           !ec && it != sfs::directory_iterator(); it.increment(ec)) {
        if (it->path().filename().string().rfind(".fetch-", 0) != 0) continue;
        int stored = 0;
        std::error_code inner;
        for (auto f = sfs::directory_iterator(it->path(), inner);
             !inner && f != sfs::directory_iterator(); f.increment(inner)) {
          if (f->path().filename().string().find(".s3-") == std::string::npos) ++stored;
        }
        if (stored > 0) {
          server_->kill();
          stored_at_kill = stored;
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  auto fetched = fetch_listing(*client, *listing, cache_root());
  done = true;
  watcher.join();
  // The fetch was under way: some objects stored, not all, when the server died.
  ASSERT_GT(stored_at_kill.load(), 0) << "the server was not killed during the fetch";
  EXPECT_LT(stored_at_kill.load(), kObjects);
  ASSERT_FALSE(fetched) << "the fetch ended before the server died";
  EXPECT_EQ(fetched.error().code, kUnreachable) << fetched.error().message;
  EXPECT_PRED2(contains, fetched.error().message, "s3://endure-lifecycle/big/part-");
  // The temp folder went with the failure; no half snapshot under the listing's name.
  EXPECT_TRUE(entries(cache_root()).empty());
  Status back = server_->start();
  ASSERT_TRUE(back) << back.error().message;
  auto retried = fetch_listing(*client, *listing, cache_root());
  ASSERT_TRUE(retried) << retried.error().message;
  EXPECT_EQ(*fs::read_file(retried->dir / "part-5"), std::string(300000, 'f'));
}

}  // namespace
}  // namespace endure::s3
