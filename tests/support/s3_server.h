// The S3-compatible server the S3 tests run against: s3rver (tools/s3rver, installed by
// scripts/setup.sh), which checks SigV4 signatures, on 127.0.0.1, a free port, a folder of
// its own. Started and stopped by its pid, never by name.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "s3/s3_config.h"
#include "support/temp_dir.h"

namespace endure::test {

class S3Server {
 public:
  static constexpr const char* kAccessKey = "endure-test-key";
  static constexpr const char* kSecretKey = "endure-test-secret";

  // "" when the server is installed and node runs, else why not and how to install it
  // (for SKIP_UNLESS_CI: scripts/setup.sh installs it, so CI fails without it).
  static std::string unavailable_reason();

  // Creates buckets at every start. Starts nothing yet.
  explicit S3Server(std::vector<std::string> buckets);
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  // Starts the server and waits (up to 20 s) until it answers. The first start picks a free
  // port; a restart after kill() takes the same port and folder, so stored objects remain.
  // REQUIRES: the calling thread outlives the server (the test's own thread): the server is
  // killed when the thread that started it ends (PR_SET_PDEATHSIG), so that it never
  // outlives a test process that dies.
  Status start();
  // SIGKILL, as a crash would, and reaps it.
  void kill();
  // SIGTERM, then SIGKILL after 5 s; reaps it. Nothing when not running.
  void stop();

  int port() const { return port_; }
  std::string endpoint_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A client configuration for this server: its endpoint, path style, its key pair, and
  // retries short enough for a test (3 attempts, 20-200 ms apart).
  s3::S3Config config() const;
  // Where the server keeps its buckets (s3rver's layout: BUCKET/KEY._S3rver_object and
  // BUCKET/KEY._S3rver_metadata.json), for tests that damage what it stored.
  std::filesystem::path data_dir() const { return dir_.path() / "data"; }
  // The server's own log (for a failing test's message).
  std::string log_tail() const;

 private:
  std::vector<std::string> buckets_;
  TempDir dir_{"endure-s3-server"};
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace endure::test
