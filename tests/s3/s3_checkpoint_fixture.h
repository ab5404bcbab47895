// A test of the checkpoint engine's S3 tier: a server of its own (s3_fixture.h) and the AWS
// environment variables pointing at it, which is where the engine, the CLI and
// endure-train take their S3 configuration from.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "endure/checkpoint.h"
#include "support/s3_fixture.h"
#include "support/temp_dir.h"

namespace endure::test {

inline constexpr const char* kCkptBucket = "endure-ckpt";

class S3CheckpointTest : public S3ServerTest {
 protected:
  S3CheckpointTest() : S3ServerTest(kCkptBucket) {}

  void SetUp() override {
    S3ServerTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ::setenv("AWS_ENDPOINT_URL", server_->endpoint_url().c_str(), 1);
    ::setenv("AWS_ACCESS_KEY_ID", S3Server::kAccessKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", S3Server::kSecretKey, 1);
    ::setenv("AWS_REGION", server_->config().region.c_str(), 1);
    for (const char* unset : {"AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"})
      ::unsetenv(unset);
  }

  // s3://BUCKET/PREFIX
  static std::string uri(const std::string& prefix) {
    return std::string("s3://") + kCkptBucket + "/" + prefix;
  }

  // A checkpointer over a folder of this test with the S3 tier under `prefix`.
  ckpt::Options options(const std::string& prefix) const {
    ckpt::Options o;
    o.dir = root_.path() / prefix;
    o.s3 = uri(prefix);
    o.chunk_bytes = 64 << 10;
    return o;
  }

  // size bytes of deterministic noise.
  static std::vector<uint8_t> noise(size_t size, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> out(size);
    for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(rng());
    return out;
  }

  // The bytes of an object as the server stores them (s3rver's layout), for tests that
  // damage them.
  std::filesystem::path stored(const std::string& key) const {
    return server_->data_dir() / kCkptBucket / (key + "._S3rver_object");
  }

  TempDir root_{"endure-s3-ckpt"};
};

}  // namespace endure::test
