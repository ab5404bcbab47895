// Deep health checks at small sizes: the CPU burn, memory patterns and bandwidth, a disk
// round trip in a temporary folder, and the bandwidth server and client over loopback.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include "agent/health/deep.h"
#include "support/temp_dir.h"

namespace endure::agent::health {
namespace {

namespace sfs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Each test's own folder, named for this suite.
class DeepTestDir : public test::TempDir {
 public:
  DeepTestDir() : test::TempDir("endure-deep-test") { EXPECT_TRUE(ok()); }
};

// Starts server on address at the first port from 15500 that binds; -1 when none does.
int start_on_free_port(BandwidthServer& server, const std::string& address) {
  for (int port = 15500; port < 15600; ++port) {
    if (server.start(address, port)) return port;
  }
  return -1;
}

long entries(const std::string& folder) {
  return std::distance(sfs::directory_iterator(folder), sfs::directory_iterator{});
}

// Each check's result, once, for the numbers that set default thresholds.
void print_metrics(const DeepResult& r) {
  std::printf("[   deep   ] %s\n", r.to_json().dump().c_str());
}

DeepCheckOptions fast_options() {
  DeepCheckOptions o;
  o.cpu_seconds = 0.3;
  o.cpu_threads = 2;
  o.memory_mib = 32;
  o.min_memory_gbps = 0.01;
  o.disk_mib = 16;
  o.min_disk_mbps = 0.1;
  o.network_seconds = 0.5;
  o.min_network_mbps = 1.0;
  return o;
}

TEST(DeepBlocks, Fnv1aMatchesPublishedValues) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
}

TEST(DeepBlocks, SplitMixMatchesTheReference) {
  std::uint64_t state = 0;  // the first outputs of the reference splitmix64.c from seed 0
  EXPECT_EQ(splitmix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(state), 0x6e789e6aa1b965f4ULL);
}

TEST(DeepBlocks, ResultJsonAndGuard) {
  DeepResult r;
  r.check = "cpu";
  r.passed = true;
  r.detail = "fine";
  r.metrics = {{"threads", 2}};
  EXPECT_EQ(r.to_json().dump(),
            R"({"Check":"cpu","Passed":true,"Detail":"fine","Metrics":{"threads":2}})");

  DeepResult thrown =
      guarded_check("disk", []() -> DeepResult { throw std::runtime_error("boom"); });
  EXPECT_EQ(thrown.check, "disk");
  EXPECT_FALSE(thrown.passed);
  EXPECT_NE(thrown.detail.find("boom"), std::string::npos);
}

TEST(DeepCpu, TwoThreadsPassAndReportIterations) {
  DeepResult r = cpu_check(fast_options());
  print_metrics(r);
  EXPECT_EQ(r.check, "cpu");
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_GT(r.metrics["iterations_per_second"].get<double>(), 0.0);
  EXPECT_EQ(r.metrics["threads"], 2);
  EXPECT_EQ(r.metrics["mismatches"], 0);
}

TEST(DeepCpu, ZeroSecondsStillRunsABatchPerThread) {
  DeepCheckOptions o = fast_options();
  o.cpu_seconds = 0;
  o.cpu_threads = 3;
  DeepResult r = cpu_check(o);
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_EQ(r.metrics["threads"], 3);
}

TEST(DeepMemory, PatternsVerifyAndBandwidthPasses) {
  DeepResult r = memory_check(fast_options());
  print_metrics(r);
  EXPECT_EQ(r.check, "memory");
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_EQ(r.metrics["errors"], 0);
  EXPECT_EQ(r.metrics["mib"], 32);
  EXPECT_GT(r.metrics["copy_gbps"].get<double>(), 0.01);
}

TEST(DeepMemory, FailsOnBandwidthBelowTheMinimum) {
  DeepCheckOptions o = fast_options();
  o.min_memory_gbps = 1e6;
  DeepResult r = memory_check(o);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.metrics["errors"], 0);
  EXPECT_NE(r.detail.find("bandwidth"), std::string::npos) << r.detail;
}

TEST(DeepDisk, RoundTripPassesAndRemovesItsFile) {
  DeepTestDir dir;
  DeepCheckOptions o = fast_options();
  o.local_path = dir.str();
  DeepResult r = disk_check(o);
  print_metrics(r);
  EXPECT_EQ(r.check, "disk");
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_EQ(r.metrics["mib"], 16);
  EXPECT_EQ(r.metrics["bad_blocks"], 0);
  EXPECT_GT(r.metrics["write_mbps"].get<double>(), 0.1);
  EXPECT_GT(r.metrics["read_mbps"].get<double>(), 0.1);
  EXPECT_FALSE(sfs::exists(dir.str() + "/.endure-deep-disk"));
}

TEST(DeepDisk, MissingFolderFailsWithTheReason) {
  DeepTestDir dir;
  DeepCheckOptions o = fast_options();
  o.local_path = dir.str() + "/absent";
  DeepResult r = disk_check(o);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("absent/.endure-deep-disk"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("No such file"), std::string::npos) << r.detail;
}

TEST(DeepDisk, FailsOnBandwidthBelowTheMinimumAndRemovesItsFile) {
  DeepTestDir dir;
  DeepCheckOptions o = fast_options();
  o.local_path = dir.str();
  o.min_disk_mbps = 1e9;
  DeepResult r = disk_check(o);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.metrics["bad_blocks"], 0);
  EXPECT_NE(r.detail.find("bandwidth"), std::string::npos) << r.detail;
  EXPECT_FALSE(sfs::exists(dir.str() + "/.endure-deep-disk"));
}

// A server on address, and a half-second send to it that passes.
void expect_send_passes(const std::string& address) {
  BandwidthServer server;
  int port = start_on_free_port(server, address);
  ASSERT_GT(port, 0) << "no port from 15500 binds on " << address;
  DeepResult r = network_check(address, port, fast_options());
  print_metrics(r);
  EXPECT_EQ(r.check, "network");
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_GT(r.metrics["bytes"].get<long long>(), 0);
  EXPECT_GT(r.metrics["mbps"].get<double>(), 1.0);
  EXPECT_EQ(r.metrics["peer"], address + ":" + std::to_string(port));
}

TEST(DeepNetwork, SendsToAServerOnLocalhost) { expect_send_passes("127.0.0.1"); }

// The local provider gives each node its own 127.x address.
TEST(DeepNetwork, SendsToAServerOnAnotherLoopbackAddress) { expect_send_passes("127.77.0.1"); }

TEST(DeepNetworkErrors, NoServerFailsNamingPeerAndPort) {
  BandwidthServer server;
  int port = start_on_free_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  server.stop();  // nothing listens there now
  DeepResult r = network_check("127.0.0.1", port, fast_options());
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("refused"), std::string::npos) << r.detail;
}

TEST(DeepNetworkErrors, NotAnAddressFails) {
  DeepResult r = network_check("node-1", 15500, fast_options());
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("node-1:15500"), std::string::npos) << r.detail;
}

TEST(DeepNetworkServer, StopReturnsPromptlyWithAClientConnected) {
  BandwidthServer server;
  int port = start_on_free_port(server, "127.0.0.1");
  ASSERT_GT(port, 0);
  long fds = entries("/proc/self/fd");
  int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(client, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  // The server has taken the connection once its descriptor is one more of ours.
  for (auto deadline = Clock::now() + std::chrono::seconds(10);
       entries("/proc/self/fd") < fds + 2 && Clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(entries("/proc/self/fd"), fds + 2) << "the server never took the connection";
  // A client that sends a byte now and then keeps the server inside the connection (only a
  // silent one is dropped); it gives up after 20 s, so that a stop() waiting for it ends.
  std::atomic<bool> stop_sending{false}, gave_up{false};
  std::thread sender([&] {
    for (auto deadline = Clock::now() + std::chrono::seconds(20);
         !stop_sending && Clock::now() < deadline;) {
      ::send(client, "x", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    gave_up = !stop_sending;
  });
  server.stop();
  bool client_still_there = !gave_up;
  stop_sending = true;
  sender.join();
  EXPECT_TRUE(client_still_there) << "stop() returned only once the client had gone";
  ::close(client);
  server.stop();  // a second stop does nothing
}

TEST(DeepNetworkServer, SamePortOnTwoLoopbackAddressesBothBind) {
  BandwidthServer first;
  int port = start_on_free_port(first, "127.0.0.1");
  ASSERT_GT(port, 0);
  BandwidthServer second;
  EXPECT_TRUE(second.start("127.77.0.2", port));
  BandwidthServer third;
  EXPECT_FALSE(third.start("127.0.0.1", port));      // that address and port are taken
  EXPECT_FALSE(first.start("127.0.0.1", port + 1));  // already listening
  EXPECT_TRUE(network_check("127.77.0.2", port, fast_options()).passed);
}

TEST(DeepNetworkServer, ChecksLeaveNoThreadsOrDescriptors) {
  long fds = entries("/proc/self/fd");
  long threads = entries("/proc/self/task");
  {
    DeepTestDir dir;
    DeepCheckOptions o = fast_options();
    o.local_path = dir.str();
    o.cpu_seconds = 0.05;
    o.network_seconds = 0.1;
    BandwidthServer server;
    int port = start_on_free_port(server, "127.0.0.1");
    ASSERT_GT(port, 0);
    EXPECT_TRUE(network_check("127.0.0.1", port, o).passed);
    EXPECT_TRUE(cpu_check(o).passed);
    EXPECT_TRUE(disk_check(o).passed);
    server.stop();
    EXPECT_FALSE(network_check("127.0.0.1", port, o).passed);
    EXPECT_TRUE(server.start("127.0.0.1", port));  // a stopped server starts again
  }
  EXPECT_EQ(entries("/proc/self/fd"), fds);
  EXPECT_EQ(entries("/proc/self/task"), threads);
}

}  // namespace
}  // namespace endure::agent::health
