// The agent's side of the node gauges: the checks hand over what they measured, under the
// keys endured reads (api/node_gauges.h).
#include "api/node_gauges.h"

#include <gtest/gtest.h>

#include "agent/health/disk.h"
#include "agent/health/fsx.h"
#include "agent/health/health_check.h"
#include "support/temp_dir.h"

namespace endure::metrics {
namespace {

using namespace agent::health;

TEST(NodeGauges, ChecksReportWhatTheyMeasured) {
  test::TempDir dir;
  NodeExpectations expect;
  expect.local_path = dir.str();
  expect.fsx_path = dir.str();
  expect.fsx_timeout_ms = 2000;
  std::vector<std::unique_ptr<HealthCheck>> checks;
  checks.push_back(std::make_unique<DiskCheck>(expect));
  checks.push_back(std::make_unique<FsxCheck>(expect));
  json before = gather_gauges(checks);
  EXPECT_FALSE(before.contains(api::gauge::kLocalDiskFreeBytes));  // nothing run yet
  EXPECT_TRUE(run_all(checks).empty());
  json g = gather_gauges(checks);
  EXPECT_GT(g.value(api::gauge::kLocalDiskSizeBytes, 0.0), 0);
  EXPECT_GE(g.value(api::gauge::kLocalDiskFreeBytes, -1.0), 0);
  EXPECT_LE(g.value(api::gauge::kLocalDiskFreeBytes, 0.0),
            g.value(api::gauge::kLocalDiskSizeBytes, 0.0));
  double probe = g.value(api::gauge::kFsxProbeSeconds, -1.0);
  EXPECT_GE(probe, 0);
  EXPECT_LT(probe, 2);
  EXPECT_GE(g.value(api::gauge::kLoad1, -1.0), 0);
  EXPECT_GT(g.value(api::gauge::kMemTotalBytes, 0.0), 0);
  EXPECT_GT(g.value(api::gauge::kMemAvailableBytes, 0.0), 0);
}

TEST(NodeGauges, AHungFsxProbeReportsItsBound) {
  test::TempDir dir;
  NodeExpectations expect;
  expect.fsx_path = dir.str();
  expect.fsx_timeout_ms = 100;
  auto release = std::make_shared<std::atomic<bool>>(false);
  FsxCheck check(expect, false, [release](const NodeExpectations&) -> std::optional<Finding> {
    while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return std::nullopt;
  });
  auto found = check.run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_STREQ(api::name(found[0].kind), "fsx-hang");
  json g = json::object();
  check.gauges(g);
  EXPECT_DOUBLE_EQ(g.value(api::gauge::kFsxProbeSeconds, -1.0), 0.1);
  *release = true;
}

}  // namespace
}  // namespace endure::metrics
