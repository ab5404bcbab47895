// A test with an S3-compatible server of its own (s3_server.h) and a client for it: the
// server is started before each test and stopped after. When the server is not installed
// the test skips, saying why and how to install it; under CI it fails (support/ci.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "s3/s3_client.h"
#include "support/ci.h"
#include "support/s3_server.h"
#include "support/text_files.h"

namespace endure::test {

class S3ServerTest : public ::testing::Test {
 protected:
  // The one bucket the server creates at each start.
  explicit S3ServerTest(std::string bucket) : bucket_(std::move(bucket)) {}

  void SetUp() override {
    if (auto why = S3Server::unavailable_reason(); !why.empty()) SKIP_UNLESS_CI(why);
    server_ = std::make_unique<S3Server>(std::vector<std::string>{bucket_});
    Status st = server_->start();
    ASSERT_TRUE(st) << st.error().message;
    client_ = make_client(server_->config());
    ASSERT_TRUE(client_);
  }

  // A client with another configuration (wrong credentials, other part sizes); null, with
  // the test failed, when the configuration is refused.
  static std::unique_ptr<s3::S3Client> make_client(const s3::S3Config& config) {
    auto client = s3::S3Client::create(config);
    EXPECT_TRUE(client) << client.error().message;
    return client ? std::move(*client) : nullptr;
  }

  void put(const std::string& key, const std::string& data) {
    Status st = client_->put_object(bucket_, key, data);
    ASSERT_TRUE(st) << st.error().message;
  }

  std::string bucket_;
  std::unique_ptr<S3Server> server_;
  std::unique_ptr<s3::S3Client> client_;
};

}  // namespace endure::test
