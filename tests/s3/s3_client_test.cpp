// The S3 client against a real S3-compatible server that checks signatures (s3rver on
// loopback, tests/support/s3_server.h): round trips, listings across pages, parallel
// multipart uploads read back with ranged parallel GETs, refused credentials, missing
// objects, a server killed in the middle of an upload, and retries that stop at their bound.
#include "s3/s3_client.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/fs.h"
#include "s3/s3_error.h"
#include "support/loopback_port.h"
#include "support/s3_fixture.h"
#include "support/temp_dir.h"

namespace endure::s3 {
namespace {

constexpr const char* kBucket = "endure-test";

using test::contains;

// size bytes of deterministic noise (incompressible, so every byte is checked).
std::string noise(size_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    std::uint64_t v = rng();
    std::memcpy(&out[i], &v, 8);
  }
  for (size_t i = size - size % 8; i < size; ++i) out[i] = static_cast<char>(rng());
  return out;
}

class S3ClientTest : public test::S3ServerTest {
 protected:
  S3ClientTest() : S3ServerTest(kBucket) {}

  // The server's configuration with 5 MiB parts (S3's smallest) and parallelism workers.
  S3Config multipart_config(int parallelism) const {
    S3Config config = server_->config();
    config.part_size = 5ull << 20;
    config.multipart_threshold = 5ull << 20;
    config.parallelism = parallelism;
    return config;
  }
};

TEST_F(S3ClientTest, PutGetHeadDeleteRoundTrip) {
  const std::string key = "dir/a file+with (odd) chars \xc3\xa9.bin";
  const std::string data = noise(100000, 1);
  Status put = client_->put_object(kBucket, key, data);
  ASSERT_TRUE(put) << put.error().message;

  auto got = client_->get_object(kBucket, key);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(*got == data);

  auto head = client_->head_object(kBucket, key);
  ASSERT_TRUE(head) << head.error().message;
  EXPECT_EQ(head->size, data.size());
  EXPECT_FALSE(head->etag.empty());

  auto range = client_->get_object_range(kBucket, key, 1000, 5000);
  ASSERT_TRUE(range) << range.error().message;
  EXPECT_TRUE(*range == data.substr(1000, 5000));

  Status empty = client_->put_object(kBucket, "empty", "");
  ASSERT_TRUE(empty) << empty.error().message;
  auto empty_back = client_->get_object(kBucket, "empty");
  ASSERT_TRUE(empty_back);
  EXPECT_EQ(*empty_back, "");

  Status del = client_->delete_object(kBucket, key);
  ASSERT_TRUE(del) << del.error().message;
  auto gone = client_->head_object(kBucket, key);
  ASSERT_FALSE(gone);
  EXPECT_TRUE(is_not_found(gone.error())) << gone.error().message;
  // Deleting what is gone succeeds, as S3 does.
  EXPECT_TRUE(client_->delete_object(kBucket, key));
}

TEST_F(S3ClientTest, ListsAcrossPagesAndPrefixes) {
  std::vector<std::string> keys;
  for (int i = 0; i < 25; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "ckpt/step-%02d/shard", i);
    keys.push_back(name);
    ASSERT_TRUE(client_->put_object(kBucket, name, "x" + std::to_string(i)));
  }
  ASSERT_TRUE(client_->put_object(kBucket, "other/one", "1"));
  ASSERT_TRUE(client_->put_object(kBucket, "ckpt-not-under-prefix", "1"));

  ListOptions options;
  options.prefix = "ckpt/";
  options.max_keys = 10;
  std::vector<std::string> seen;
  int pages = 0;
  for (;;) {
    auto page = client_->list_objects_page(kBucket, options);
    ASSERT_TRUE(page) << page.error().message;
    ++pages;
    for (const auto& o : page->objects) seen.push_back(o.key);
    if (!page->truncated) break;
    ASSERT_FALSE(page->next_continuation_token.empty());
    options.continuation_token = page->next_continuation_token;
    ASSERT_LT(pages, 10);
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, keys);

  auto all = client_->list_objects(kBucket, "ckpt/");
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 25u);
  EXPECT_EQ((*all)[3].key, "ckpt/step-03/shard");
  EXPECT_EQ((*all)[3].size, 2u);

  // The steps under a checkpoint prefix, as "ls" shows them.
  ListOptions grouped;
  grouped.prefix = "ckpt/";
  grouped.delimiter = "/";
  auto steps = client_->list_objects_page(kBucket, grouped);
  ASSERT_TRUE(steps) << steps.error().message;
  EXPECT_TRUE(steps->objects.empty());
  ASSERT_EQ(steps->common_prefixes.size(), 25u);
  EXPECT_EQ(steps->common_prefixes[0], "ckpt/step-00/");
  EXPECT_EQ(steps->common_prefixes[24], "ckpt/step-24/");

  Status del = client_->delete_objects(kBucket, keys);
  ASSERT_TRUE(del) << del.error().message;
  auto after = client_->list_objects(kBucket, "ckpt/");
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
}

TEST_F(S3ClientTest, MultipartInParallelReadBackWithRangedParallelGets) {
  auto client = make_client(multipart_config(4));
  ASSERT_TRUE(client);
  const std::string data = noise((28ull << 20) + 12345, 2);  // 6 parts, the last short
  std::atomic<int> parts{0};
  UploadOptions options;
  options.on_part_uploaded = [&](int, std::uint64_t) { ++parts; };
  Status up = client->upload(kBucket, "big/object", data, options);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(parts.load(), 6);
  auto head = client->head_object(kBucket, "big/object");
  ASSERT_TRUE(head) << head.error().message;
  EXPECT_EQ(head->size, data.size());

  std::string buffer(data.size() + 100, '\0');
  auto n = client->download_to_buffer(kBucket, "big/object", buffer.data(), buffer.size());
  ASSERT_TRUE(n) << n.error().message;
  ASSERT_EQ(*n, data.size());
  EXPECT_TRUE(std::string_view(buffer).substr(0, data.size()) == data);

  test::TempDir dir("endure-s3-get");
  auto path = dir.path() / "object.bin";
  Status file = client->download_to_file(kBucket, "big/object", path);
  ASSERT_TRUE(file) << file.error().message;
  auto back = fs::read_file(path);
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back == data);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);  // no temp file left beside it

  // A buffer too small is refused before any byte is written past it.
  auto small = client->download_to_buffer(kBucket, "big/object", buffer.data(), 10);
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().code, "BufferTooSmall");

  // A file uploads the same way.
  ASSERT_TRUE(fs::atomic_write_file(dir.path() / "in.bin", data.substr(0, 11u << 20)));
  Status from_file = client->upload_file(kBucket, "big/from-file", dir.path() / "in.bin");
  ASSERT_TRUE(from_file) << from_file.error().message;
  auto file_head = client->head_object(kBucket, "big/from-file");
  ASSERT_TRUE(file_head);
  EXPECT_EQ(file_head->size, 11u << 20);
}

TEST_F(S3ClientTest, WrongCredentialsAreRefusedNamingBucketAndKey) {
  S3Config wrong_secret = server_->config();
  wrong_secret.credentials.secret_access_key = "not-the-secret";
  auto client = make_client(wrong_secret);
  ASSERT_TRUE(client);
  Status put = client->put_object(kBucket, "secret/key", "data");
  ASSERT_FALSE(put);
  EXPECT_EQ(put.error().code, "SignatureDoesNotMatch");
  EXPECT_TRUE(is_access_denied(put.error()));
  EXPECT_PRED2(contains, put.error().message, "PutObject s3://endure-test/secret/key");
  EXPECT_PRED2(contains, put.error().message, "access denied (403 SignatureDoesNotMatch");
  // A refusal is final: not retried.
  EXPECT_FALSE(contains(put.error().message, "attempts"));

  auto get = client->get_object(kBucket, "secret/key");
  ASSERT_FALSE(get);
  EXPECT_PRED2(contains, get.error().message, "s3://endure-test/secret/key");

  S3Config unknown_key = server_->config();
  unknown_key.credentials.access_key_id = "NOSUCHKEYID";
  auto other = make_client(unknown_key);
  ASSERT_TRUE(other);
  auto list = other->list_objects(kBucket, "");
  ASSERT_FALSE(list);
  EXPECT_EQ(list.error().code, "InvalidAccessKeyId");
  EXPECT_TRUE(is_access_denied(list.error()));

  // Nothing was written by the refused requests.
  auto head = client_->head_object(kBucket, "secret/key");
  ASSERT_FALSE(head);
  EXPECT_TRUE(is_not_found(head.error()));
}

TEST_F(S3ClientTest, MissingObjectsAndBucketsAreNamed) {
  auto get = client_->get_object(kBucket, "no/such/key");
  ASSERT_FALSE(get);
  EXPECT_EQ(get.error().code, "NoSuchKey");
  EXPECT_PRED2(contains, get.error().message,
               "GetObject s3://endure-test/no/such/key: not found (404 NoSuchKey");

  auto head = client_->head_object(kBucket, "no/such/key");
  ASSERT_FALSE(head);
  EXPECT_TRUE(is_not_found(head.error()));
  EXPECT_PRED2(contains, head.error().message, "s3://endure-test/no/such/key: not found");

  auto bucket = client_->get_object("no-such-bucket", "key");
  ASSERT_FALSE(bucket);
  EXPECT_EQ(bucket.error().code, "NoSuchBucket");
  EXPECT_PRED2(contains, bucket.error().message, "s3://no-such-bucket/key");

  auto list = client_->list_objects("no-such-bucket", "p/");
  ASSERT_FALSE(list);
  EXPECT_EQ(list.error().code, "NoSuchBucket");
  EXPECT_PRED2(contains, list.error().message, "s3://no-such-bucket/p/");
}

TEST_F(S3ClientTest, BadNamesAreRefusedBeforeAnyRequest) {
  Status empty_bucket = client_->put_object("", "key", "x");
  ASSERT_FALSE(empty_bucket);
  EXPECT_EQ(empty_bucket.error().code, "ValidationException");
  EXPECT_PRED2(contains, empty_bucket.error().message, "the bucket name is empty");
  Status empty_key = client_->put_object(kBucket, "", "x");
  ASSERT_FALSE(empty_key);
  EXPECT_PRED2(contains, empty_key.error().message, "the object key is empty");
  S3Config bad = server_->config();
  bad.endpoint_url = "127.0.0.1:9000";
  auto client = S3Client::create(bad);
  ASSERT_FALSE(client);
  EXPECT_PRED2(contains, client.error().message, "S3 endpoint URL '127.0.0.1:9000'");
}

TEST_F(S3ClientTest, ServerKilledMidUploadLeavesNoObjectAndTheNextUploadSucceeds) {
  auto client = make_client(multipart_config(2));
  ASSERT_TRUE(client);
  const std::string data = noise(40ull << 20, 3);  // 8 parts
  std::atomic<int> parts{0};
  UploadOptions options;
  options.on_part_uploaded = [&](int, std::uint64_t) {
    if (++parts == 1) server_->kill();  // after the first part is stored
  };
  Status up = client->upload(kBucket, "ckpt/step-7/shard-0", data, options);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().code, kUnreachable) << up.error().message;
  EXPECT_PRED2(contains, up.error().message, "s3://endure-test/ckpt/step-7/shard-0");
  EXPECT_PRED2(contains, up.error().message, "no object is visible under the key");
  EXPECT_LT(parts.load(), 8);

  Status restarted = server_->start();
  ASSERT_TRUE(restarted) << restarted.error().message;
  auto head = client->head_object(kBucket, "ckpt/step-7/shard-0");
  ASSERT_FALSE(head) << "a half-written object is visible";
  EXPECT_TRUE(is_not_found(head.error())) << head.error().message;
  auto listed = client->list_objects(kBucket, "ckpt/");
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_TRUE(listed->empty());

  Status again = client->upload(kBucket, "ckpt/step-7/shard-0", data);
  ASSERT_TRUE(again) << again.error().message;
  std::string buffer(data.size(), '\0');
  auto n = client->download_to_buffer(kBucket, "ckpt/step-7/shard-0", buffer.data(), buffer.size());
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_TRUE(buffer == data);
}

TEST_F(S3ClientTest, RetriesRideOutAServerRestart) {
  put("survives/restart", "kept");
  S3Config config = server_->config();
  config.retry.max_attempts = 12;
  config.retry.base_delay = std::chrono::milliseconds(200);
  config.retry.max_delay = std::chrono::milliseconds(1000);
  auto client = make_client(config);
  ASSERT_TRUE(client);
  server_->kill();
  // The read runs while the server is down, and the server comes back on the same port
  // while the client is between its retries.
  Result<std::string> got = make_error("NotRun", "the read did not run");
  std::thread reader([&] { got = client->get_object(kBucket, "survives/restart"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Status restarted = server_->start();
  reader.join();
  ASSERT_TRUE(restarted) << restarted.error().message;
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, "kept");
}

TEST_F(S3ClientTest, ServerErrorsAreRetriedToTheirBound) {
  put("flaky", "bytes");
  // A damaged metadata file makes the server answer every read 500 InternalError.
  auto metadata = server_->data_dir() / kBucket / "flaky._S3rver_metadata.json";
  auto intact = fs::read_file(metadata);
  ASSERT_TRUE(intact) << intact.error().message;
  ASSERT_TRUE(fs::atomic_write_file(metadata, "{damaged"));

  auto got = client_->get_object(kBucket, "flaky");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, "InternalError");
  EXPECT_PRED2(contains, got.error().message,
               "GetObject s3://endure-test/flaky: failed (500 InternalError");
  EXPECT_PRED2(contains, got.error().message, "after 3 attempts");

  // Mended while the client waits between its retries: the read succeeds.
  S3Config patient = server_->config();
  patient.retry.max_attempts = 12;
  patient.retry.base_delay = std::chrono::milliseconds(100);
  patient.retry.max_delay = std::chrono::milliseconds(400);
  auto client = make_client(patient);
  ASSERT_TRUE(client);
  ASSERT_TRUE(fs::atomic_write_file(metadata, "{damaged"));
  std::thread mender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)fs::atomic_write_file(metadata, *intact);
  });
  auto mended = client->get_object(kBucket, "flaky");
  mender.join();
  ASSERT_TRUE(mended) << mended.error().message;
  EXPECT_EQ(*mended, "bytes");
}

TEST(S3ClientRetries, StopAfterTheirBound) {
  S3Config config;
  config.endpoint_url = "http://127.0.0.1:" + std::to_string(test::unused_loopback_port());
  config.path_style = true;
  config.credentials = {"AKID", "SECRET", ""};
  config.retry.max_attempts = 4;
  config.retry.base_delay = std::chrono::milliseconds(50);
  config.retry.max_delay = std::chrono::milliseconds(100);
  auto client = S3Client::create(config);
  ASSERT_TRUE(client) << client.error().message;
  auto got = (*client)->get_object("bucket", "key");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, kUnreachable);
  EXPECT_PRED2(contains, got.error().message, "GetObject s3://bucket/key: no reply");
  EXPECT_PRED2(contains, got.error().message, "after 4 attempts");

  config.retry.max_attempts = 1;
  auto once = S3Client::create(config);
  ASSERT_TRUE(once);
  auto single = (*once)->put_object("bucket", "key", "x");
  ASSERT_FALSE(single);
  EXPECT_FALSE(contains(single.error().message, "attempts"));
}

}  // namespace
}  // namespace endure::s3
