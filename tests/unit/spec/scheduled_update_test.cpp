// An instance group's ScheduledUpdateConfig: every bound at its edge and one past it, unknown
// keys at each level, and the request shape given back.
#include "spec/scheduled_update.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spec/cluster_spec.h"

namespace endure::spec {
namespace {

const std::string kSuGroupPath = "InstanceGroups[2]";
const std::string kSuPath = "InstanceGroups[2].ScheduledUpdateConfig";
const std::string kSuDeployment = kSuPath + ".DeploymentConfig";
const std::string kSuMaxBatch = kSuDeployment + ".RollingUpdatePolicy.MaximumBatchSize";

// A valid config with every field.
json su_full() {
  return json::parse(R"json({
    "ScheduleExpression": "cron(0 3 ? * SUN *)",
    "DeploymentConfig": {
      "RollingUpdatePolicy": {
        "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 25},
        "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 1}
      },
      "WaitIntervalInSeconds": 300,
      "AutoRollbackConfiguration": [{"AlarmName": "gpu-errors"}, {"AlarmName": "nccl-hangs"}]
    }
  })json");
}

json su_group(const json& config) {
  return {{"InstanceGroupName", "workers"}, {"ScheduledUpdateConfig", config}};
}

// "" when the config is valid, else describe() of its errors.
std::string su_errors(const json& config) {
  std::vector<FieldError> errors;
  auto spec = read_scheduled_update(su_group(config), kSuGroupPath, errors);
  EXPECT_EQ(spec.has_value(), errors.empty()) << describe(errors);
  return describe(errors);
}

// su_full() with the value at a JSON pointer replaced.
json su_with(const std::string& pointer, const json& value) {
  json config = su_full();
  config[json::json_pointer(pointer)] = value;
  return config;
}

TEST(ScheduledUpdate, AbsentIsNoConfigAndNoError) {
  std::vector<FieldError> errors;
  EXPECT_EQ(read_scheduled_update(json{{"InstanceGroupName", "workers"}}, kSuGroupPath, errors),
            std::nullopt);
  EXPECT_TRUE(errors.empty());
}

TEST(ScheduledUpdate, ReadsEveryField) {
  std::vector<FieldError> errors;
  auto spec = read_scheduled_update(su_group(su_full()), kSuGroupPath, errors);
  ASSERT_TRUE(spec) << describe(errors);
  EXPECT_EQ(spec->schedule.text(), "cron(0 3 ? * SUN *)");
  EXPECT_EQ(spec->schedule.kind(), ScheduleExpression::Kind::kCron);
  ASSERT_TRUE(spec->deployment_config);
  const DeploymentConfigSpec& dc = *spec->deployment_config;
  ASSERT_TRUE(dc.rolling_update_policy);
  EXPECT_EQ(dc.rolling_update_policy->maximum_batch_size,
            (BatchSizeSpec{BatchSizeSpec::Type::kCapacityPercentage, 25}));
  EXPECT_EQ(dc.rolling_update_policy->rollback_maximum_batch_size,
            (BatchSizeSpec{BatchSizeSpec::Type::kInstanceCount, 1}));
  EXPECT_EQ(dc.wait_interval_seconds, 300);
  EXPECT_EQ(dc.rollback_alarms, (std::vector<std::string>{"gpu-errors", "nccl-hangs"}));
}

TEST(ScheduledUpdate, TheScheduleAloneIsEnough) {
  std::vector<FieldError> errors;
  auto spec = read_scheduled_update(su_group({{"ScheduleExpression", "rate(7 days)"}}),
                                    kSuGroupPath, errors);
  ASSERT_TRUE(spec) << describe(errors);
  EXPECT_EQ(spec->schedule.kind(), ScheduleExpression::Kind::kRate);
  EXPECT_EQ(spec->deployment_config, std::nullopt);
  EXPECT_EQ(spec->to_json(), json({{"ScheduleExpression", "rate(7 days)"}}));
  // So is an empty DeploymentConfig, and it stays as given.
  auto empty = read_scheduled_update(
      su_group({{"ScheduleExpression", "rate(7 days)"}, {"DeploymentConfig", json::object()}}),
      kSuGroupPath, errors);
  ASSERT_TRUE(empty) << describe(errors);
  EXPECT_EQ(empty->to_json()["DeploymentConfig"], json::object());
}

TEST(ScheduledUpdate, RoundTripsToTheRequestShape) {
  std::vector<FieldError> errors;
  auto spec = read_scheduled_update(su_group(su_full()), kSuGroupPath, errors);
  ASSERT_TRUE(spec) << describe(errors);
  EXPECT_EQ(spec->to_json(), su_full());
  auto again = read_scheduled_update(su_group(spec->to_json()), kSuGroupPath, errors);
  ASSERT_TRUE(again) << describe(errors);
  EXPECT_EQ(*again, *spec);
  // Only what was given comes back.
  json partial = su_full();
  partial["DeploymentConfig"].erase("AutoRollbackConfiguration");
  partial["DeploymentConfig"]["RollingUpdatePolicy"].erase("RollbackMaximumBatchSize");
  auto less = read_scheduled_update(su_group(partial), kSuGroupPath, errors);
  ASSERT_TRUE(less) << describe(errors);
  EXPECT_EQ(less->to_json(), partial);
}

TEST(ScheduledUpdate, RefusesAConfigThatIsNoObject) {
  for (const json& bad : {json("cron(0 3 ? * SUN *)"), json::array(), json(nullptr)}) {
    EXPECT_EQ(su_errors(bad),
              kSuPath + ": must be an object {ScheduleExpression, DeploymentConfig?}");
  }
}

TEST(ScheduledUpdate, ScheduleExpressionBounds) {
  const std::string path = kSuPath + ".ScheduleExpression: ";
  json config = su_full();
  config.erase("ScheduleExpression");
  EXPECT_EQ(su_errors(config), path + "is required");
  EXPECT_EQ(su_errors(su_with("/ScheduleExpression", 5)), path + "must be a string");
  EXPECT_EQ(su_errors(su_with("/ScheduleExpression", "")),
            path + "must be 1 to 256 characters long");
  // 256 characters pass the length bound and meet the form's rules; 257 do not.
  const std::string forms =
      "must be cron(minutes hours day-of-month month day-of-week year) or rate(value unit)";
  EXPECT_EQ(su_errors(su_with("/ScheduleExpression", std::string(256, 'x'))), path + forms);
  EXPECT_EQ(su_errors(su_with("/ScheduleExpression", std::string(257, 'x'))),
            path + "must be 1 to 256 characters long");
  EXPECT_EQ(su_errors(su_with("/ScheduleExpression", "cron(0 3 32 * ? *)")),
            path + "cron's day-of-month field: 32 is out of 1-31");
  EXPECT_EQ(su_errors(su_with("/ScheduleExpression", "rate(1 hours)")),
            path + "rate's unit: a value of 1 takes minute, hour or day (singular)");
}

TEST(ScheduledUpdate, BatchSizeValueBounds) {
  const std::string value = kSuMaxBatch + ".Value: ";
  auto batch = [](const char* type, const json& v) {
    return su_with("/DeploymentConfig/RollingUpdatePolicy/MaximumBatchSize",
                   {{"Type", type}, {"Value", v}});
  };
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", 1)), "");
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", 500)), "");  // more than the group: all at once
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", 0)), value + "must be an integer of at least 1");
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", -3)), value + "must be an integer of at least 1");
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", 1.5)), value + "must be an integer of at least 1");
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", "2")), value + "must be an integer of at least 1");
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", true)), value + "must be an integer of at least 1");
  EXPECT_EQ(su_errors(batch("INSTANCE_COUNT", 3000000000LL)),
            value + "must be an integer from 1 to 2147483647");
  EXPECT_EQ(su_errors(batch("CAPACITY_PERCENTAGE", 1)), "");
  EXPECT_EQ(su_errors(batch("CAPACITY_PERCENTAGE", 100)), "");
  EXPECT_EQ(su_errors(batch("CAPACITY_PERCENTAGE", 101)),
            value + "must be an integer from 1 to 100 (a percentage)");
  EXPECT_EQ(su_errors(batch("CAPACITY_PERCENTAGE", 0)),
            value + "must be an integer from 1 to 100 (a percentage)");
  EXPECT_EQ(su_errors(batch("CAPACITY_PERCENTAGE", 50.0)),
            value + "must be an integer from 1 to 100 (a percentage)");
  // The rollback batch follows the same rules at its own path.
  EXPECT_EQ(su_errors(su_with("/DeploymentConfig/RollingUpdatePolicy/RollbackMaximumBatchSize",
                              {{"Type", "CAPACITY_PERCENTAGE"}, {"Value", 101}})),
            kSuDeployment +
                ".RollingUpdatePolicy.RollbackMaximumBatchSize.Value: must be an integer from 1 "
                "to 100 (a percentage)");
}

TEST(ScheduledUpdate, BatchSizeTypeAndShape) {
  const std::string policy = "/DeploymentConfig/RollingUpdatePolicy";
  EXPECT_EQ(su_errors(su_with(policy + "/MaximumBatchSize/Type", "PERCENT")),
            kSuMaxBatch + ".Type: must be INSTANCE_COUNT or CAPACITY_PERCENTAGE");
  EXPECT_EQ(su_errors(su_with(policy + "/MaximumBatchSize/Type", 1)),
            kSuMaxBatch + ".Type: must be INSTANCE_COUNT or CAPACITY_PERCENTAGE");
  EXPECT_EQ(su_errors(su_with(policy + "/MaximumBatchSize", {{"Value", 2}})),
            kSuMaxBatch + ".Type: is required");
  EXPECT_EQ(su_errors(su_with(policy + "/MaximumBatchSize", {{"Type", "INSTANCE_COUNT"}})),
            kSuMaxBatch + ".Value: is required");
  EXPECT_EQ(su_errors(su_with(policy + "/MaximumBatchSize", 2)),
            kSuMaxBatch + ": must be an object {Type, Value}");
  EXPECT_EQ(su_errors(su_with(policy, {{"RollbackMaximumBatchSize",
                                        {{"Type", "INSTANCE_COUNT"}, {"Value", 1}}}})),
            kSuMaxBatch + ": is required");
  EXPECT_EQ(su_errors(su_with(policy, "one at a time")),
            kSuDeployment +
                ".RollingUpdatePolicy: must be an object {MaximumBatchSize, "
                "RollbackMaximumBatchSize?}");
}

TEST(ScheduledUpdate, WaitIntervalBounds) {
  const std::string rule =
      kSuDeployment + ".WaitIntervalInSeconds: must be an integer from 0 to 3600";
  const std::string pointer = "/DeploymentConfig/WaitIntervalInSeconds";
  EXPECT_EQ(su_errors(su_with(pointer, 0)), "");
  EXPECT_EQ(su_errors(su_with(pointer, 3600)), "");
  for (const json& bad : {json(-1), json(3601), json(1.5), json("10"), json(true), json(nullptr)}) {
    EXPECT_EQ(su_errors(su_with(pointer, bad)), rule) << bad.dump();
  }
}

TEST(ScheduledUpdate, RollbackAlarmBounds) {
  const std::string path = kSuDeployment + ".AutoRollbackConfiguration";
  const std::string count_rule = path + ": must be an array of 1 to 10 {AlarmName} objects";
  auto alarms = [](std::size_t n) {
    json list = json::array();
    for (std::size_t i = 0; i < n; ++i) list.push_back({{"AlarmName", "a" + std::to_string(i)}});
    return list;
  };
  const std::string pointer = "/DeploymentConfig/AutoRollbackConfiguration";
  EXPECT_EQ(su_errors(su_with(pointer, alarms(0))), count_rule);
  EXPECT_EQ(su_errors(su_with(pointer, alarms(1))), "");
  EXPECT_EQ(su_errors(su_with(pointer, alarms(10))), "");
  EXPECT_EQ(su_errors(su_with(pointer, alarms(11))), count_rule);
  EXPECT_EQ(su_errors(su_with(pointer, {{"AlarmName", "x"}})), count_rule);  // an object
  EXPECT_EQ(su_errors(su_with(pointer, json::array({"gpu-errors"}))),
            path + "[0]: must be an object {AlarmName}");
  EXPECT_EQ(su_errors(su_with(pointer, json::array({json::object()}))),
            path + "[0].AlarmName: is required");
  EXPECT_EQ(su_errors(su_with(pointer, json::array({{{"AlarmName", 7}}}))),
            path + "[0].AlarmName: must be a string");
  const std::string length_rule = path + "[1].AlarmName: must be 1 to 255 characters long";
  EXPECT_EQ(su_errors(su_with(pointer + "/1/AlarmName", "")), length_rule);
  EXPECT_EQ(su_errors(su_with(pointer + "/1/AlarmName", std::string(255, 'a'))), "");
  EXPECT_EQ(su_errors(su_with(pointer + "/1/AlarmName", std::string(256, 'a'))), length_rule);
  EXPECT_EQ(su_errors(su_with(pointer + "/1/AlarmName", " \t ")),
            path + "[1].AlarmName: must not be only white space");
}

TEST(ScheduledUpdate, RefusesUnknownKeysAtEveryLevel) {
  json config = su_full();
  config["Timezone"] = "UTC";
  config["DeploymentConfig"]["BlueGreenUpdatePolicy"] = json::object();
  config["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"] = 600;
  config["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"]["Unit"] = "nodes";
  config["DeploymentConfig"]["AutoRollbackConfiguration"][0]["Threshold"] = 1;
  EXPECT_EQ(
      su_errors(config),
      kSuPath + ".Timezone: is not a known field; known: ScheduleExpression, DeploymentConfig; " +
          kSuDeployment +
          ".BlueGreenUpdatePolicy: is not a known field; known: RollingUpdatePolicy, "
          "WaitIntervalInSeconds, AutoRollbackConfiguration; " +
          kSuDeployment +
          ".RollingUpdatePolicy.MaximumExecutionTimeoutInSeconds: is not a known field; known: "
          "MaximumBatchSize, RollbackMaximumBatchSize; " +
          kSuMaxBatch + ".Unit: is not a known field; known: Type, Value; " + kSuDeployment +
          ".AutoRollbackConfiguration[0].Threshold: is not a known field; known: AlarmName");
}

TEST(ScheduledUpdate, ReportsEveryProblemAtOnce) {
  json config = su_full();
  config["ScheduleExpression"] = "cron(0 3 * * MON *)";
  config["DeploymentConfig"]["WaitIntervalInSeconds"] = 3601;
  config["DeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"]["Value"] = 0;
  std::vector<FieldError> errors;
  EXPECT_EQ(read_scheduled_update(su_group(config), kSuGroupPath, errors), std::nullopt);
  ASSERT_EQ(errors.size(), 3u) << describe(errors);
  EXPECT_EQ(errors[0].path, kSuPath + ".ScheduleExpression");
  EXPECT_EQ(errors[1].path, kSuMaxBatch + ".Value");
  EXPECT_EQ(errors[2].path, kSuDeployment + ".WaitIntervalInSeconds");
}

TEST(ScheduledUpdate, DeploymentConfigReadsAloneAtItsOwnPath) {
  // As UpdateClusterSoftware's request holds it.
  std::vector<FieldError> errors;
  auto dc = read_deployment_config(su_full()["DeploymentConfig"], "DeploymentConfig", errors);
  ASSERT_TRUE(dc) << describe(errors);
  EXPECT_EQ(dc->to_json(), su_full()["DeploymentConfig"]);
  EXPECT_EQ(read_deployment_config(json{{"WaitIntervalInSeconds", -1}}, "DeploymentConfig", errors),
            std::nullopt);
  EXPECT_EQ(describe(errors),
            "DeploymentConfig.WaitIntervalInSeconds: must be an integer from 0 to 3600");
  errors.clear();
  EXPECT_EQ(read_deployment_config(json::array(), "DeploymentConfig", errors), std::nullopt);
  EXPECT_EQ(describe(errors), "DeploymentConfig: must be an object");
}

}  // namespace
}  // namespace endure::spec
