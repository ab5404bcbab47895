// NVML's event API, against the stand-in library (same functions, same dlopen path): faults
// reach the sink as they are raised, each once with a name of its own; what is not a node
// fault, or a library without the API, reports nothing.
#include "agent/health/nvml_events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.h"

namespace endure::agent::health {
namespace {

using namespace std::chrono_literals;

constexpr unsigned long long kDoubleBitEcc = 0x2, kXid = 0x8, kPState = 0x4;

TEST(NvmlEventClassification, HardwareXidsAndUncorrectedEccAreFaults) {
  auto xid = classify_nvml_event({1, kXid, 79});
  ASSERT_TRUE(xid.has_value());
  EXPECT_STREQ(api::name(xid->kind), "xid");
  EXPECT_EQ(xid->detail, "GPU 1: Xid 79");
  auto ecc = classify_nvml_event({0, kDoubleBitEcc, 0});
  ASSERT_TRUE(ecc.has_value());
  EXPECT_STREQ(api::name(ecc->kind), "ecc");
  EXPECT_EQ(ecc->detail, "GPU 0: uncorrected (double-bit) ECC error");
}

TEST(NvmlEventClassification, ApplicationXidsUnknownXidsAndOtherEventsAreNot) {
  EXPECT_FALSE(classify_nvml_event({0, kXid, 13}).has_value());   // graphics engine exception
  EXPECT_FALSE(classify_nvml_event({0, kXid, 31}).has_value());   // MMU fault
  EXPECT_FALSE(classify_nvml_event({0, kXid, 999}).has_value());  // the driver's unknown Xid
  EXPECT_FALSE(classify_nvml_event({0, kPState, 0}).has_value());
}

class NvmlEventWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.str("nvml-state");
    events_ = dir_.str("nvml-events");
    ::setenv("ENDURE_FAKE_NVML_STATE", state_.c_str(), 1);
    ::setenv("ENDURE_FAKE_NVML_EVENTS", events_.c_str(), 1);
    std::ofstream(state_) << "count 2\n";
    std::ofstream(events_).close();
    expect_.gpus = 2;
    expect_.nvml_library = ENDURE_FAKE_NVML;
  }
  void TearDown() override {
    ::unsetenv("ENDURE_FAKE_NVML_STATE");
    ::unsetenv("ENDURE_FAKE_NVML_EVENTS");
  }

  void raise(unsigned gpu, unsigned long long type, unsigned long long data) {
    std::ofstream(events_, std::ios::app) << gpu << " " << type << " " << data << "\n";
  }
  std::function<void(std::vector<LoggedFault>)> sink() {
    return [this](std::vector<LoggedFault> faults) {
      std::lock_guard lock(mu_);
      for (auto& f : faults) got_.push_back(std::move(f));
      cv_.notify_all();
    };
  }
  // The faults seen once n have come, or after a generous bound.
  std::vector<LoggedFault> wait_for(std::size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 10s, [&] { return got_.size() >= n; });
    return got_;
  }

  endure::test::TempDir dir_{"endure-nvml-events-test"};
  std::string state_, events_;
  NodeExpectations expect_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LoggedFault> got_;
};

TEST_F(NvmlEventWatchTest, EachFaultComesOnceWithItsOwnName) {
  NvmlEventWatch watch(expect_, sink());
  raise(1, kXid, 79);
  raise(0, kXid, 13);  // an application's Xid: not sent
  raise(0, kDoubleBitEcc, 0);
  auto got = wait_for(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_STREQ(api::name(got[0].finding.kind), "xid");
  EXPECT_EQ(got[0].finding.detail, "GPU 1: Xid 79");
  EXPECT_STREQ(api::name(got[1].finding.kind), "ecc");
  EXPECT_EQ(got[0].record.rfind("nvml:", 0), 0u) << got[0].record;
  EXPECT_NE(got[0].record, got[1].record);
  // Nothing more comes: each event once.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(wait_for(2).size(), 2u);
}

TEST_F(NvmlEventWatchTest, GpusWithoutTheEventsLeaveItIdle) {
  std::ofstream(state_) << "count 2\nevents 4\n";  // PState changes only
  NvmlEventWatch watch(expect_, sink());
  raise(0, kXid, 79);
  std::this_thread::sleep_for(300ms);
  std::lock_guard lock(mu_);
  EXPECT_TRUE(got_.empty());
}

TEST_F(NvmlEventWatchTest, ALibraryWithoutTheEventApiOrNoGpuReportsNothing) {
  expect_.nvml_library = "libm.so.6";  // loads, has no NVML
  { NvmlEventWatch watch(expect_, sink()); }
  expect_.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  { NvmlEventWatch watch(expect_, sink()); }
  expect_.gpus = 0;  // not even loaded
  { NvmlEventWatch watch(expect_, sink()); }
  std::lock_guard lock(mu_);
  EXPECT_TRUE(got_.empty());
}

}  // namespace
}  // namespace endure::agent::health
