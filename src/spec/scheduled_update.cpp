#include "spec/scheduled_update.h"

#include <climits>
#include <cstdint>
#include <string_view>

#include "spec/cluster_spec.h"

namespace endure::spec {

namespace {

// The wire's names for these fields (api/fields.h has only DeploymentConfig so far).
constexpr const char* kSuScheduledUpdateConfig = "ScheduledUpdateConfig";
constexpr const char* kSuScheduleExpression = "ScheduleExpression";
constexpr const char* kSuDeploymentConfig = "DeploymentConfig";
constexpr const char* kSuRollingUpdatePolicy = "RollingUpdatePolicy";
constexpr const char* kSuMaximumBatchSize = "MaximumBatchSize";
constexpr const char* kSuRollbackMaximumBatchSize = "RollbackMaximumBatchSize";
constexpr const char* kSuWaitIntervalInSeconds = "WaitIntervalInSeconds";
constexpr const char* kSuAutoRollbackConfiguration = "AutoRollbackConfiguration";
constexpr const char* kSuAlarmName = "AlarmName";
constexpr const char* kSuType = "Type";
constexpr const char* kSuValue = "Value";
constexpr const char* kSuInstanceCount = "INSTANCE_COUNT";
constexpr const char* kSuCapacityPercentage = "CAPACITY_PERCENTAGE";

using SuErrors = std::vector<FieldError>;

// v as an integer: JSON integers only (floats, strings and bools are refused, not converted).
std::optional<std::int64_t> scheduled_update_int(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(u);
    return std::nullopt;
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

const char* batch_type_name(BatchSizeSpec::Type type) {
  return type == BatchSizeSpec::Type::kCapacityPercentage ? kSuCapacityPercentage
                                                          : kSuInstanceCount;
}

// A CapacitySizeConfig at path: {Type, Value}, both required.
std::optional<BatchSizeSpec> read_batch_size(const json& size, const std::string& path,
                                             SuErrors& errors) {
  if (!size.is_object()) {
    errors.push_back({path, "must be an object {Type, Value}"});
    return std::nullopt;
  }
  const std::size_t before = errors.size();
  check_known_keys(size, path, {kSuType, kSuValue}, errors);
  BatchSizeSpec out;
  const std::string type_path = join_path(path, kSuType);
  if (auto type = size.find(kSuType); type == size.end()) {
    errors.push_back({type_path, "is required"});
  } else if (*type == kSuInstanceCount) {
    out.type = BatchSizeSpec::Type::kInstanceCount;
  } else if (*type == kSuCapacityPercentage) {
    out.type = BatchSizeSpec::Type::kCapacityPercentage;
  } else {
    errors.push_back({type_path, "must be INSTANCE_COUNT or CAPACITY_PERCENTAGE"});
  }
  const std::string value_path = join_path(path, kSuValue);
  if (auto value = size.find(kSuValue); value == size.end()) {
    errors.push_back({value_path, "is required"});
  } else {
    const auto n = scheduled_update_int(*value);
    if (out.type == BatchSizeSpec::Type::kCapacityPercentage) {
      if (!n || *n < 1 || *n > 100) {
        errors.push_back({value_path, "must be an integer from 1 to 100 (a percentage)"});
      } else {
        out.value = static_cast<int>(*n);
      }
    } else if (!n || *n < 1) {
      errors.push_back({value_path, "must be an integer of at least 1"});
    } else if (*n > INT_MAX) {
      errors.push_back({value_path, "must be an integer from 1 to " + std::to_string(INT_MAX)});
    } else {
      out.value = static_cast<int>(*n);
    }
  }
  if (errors.size() != before) return std::nullopt;
  return out;
}

std::optional<RollingUpdatePolicySpec> read_rolling_update_policy(const json& policy,
                                                                  const std::string& path,
                                                                  SuErrors& errors) {
  if (!policy.is_object()) {
    errors.push_back({path, "must be an object {MaximumBatchSize, RollbackMaximumBatchSize?}"});
    return std::nullopt;
  }
  const std::size_t before = errors.size();
  check_known_keys(policy, path, {kSuMaximumBatchSize, kSuRollbackMaximumBatchSize}, errors);
  RollingUpdatePolicySpec out;
  const std::string max_path = join_path(path, kSuMaximumBatchSize);
  if (auto max = policy.find(kSuMaximumBatchSize); max == policy.end()) {
    errors.push_back({max_path, "is required"});
  } else if (auto size = read_batch_size(*max, max_path, errors)) {
    out.maximum_batch_size = *size;
  }
  if (auto rollback = policy.find(kSuRollbackMaximumBatchSize); rollback != policy.end()) {
    out.rollback_maximum_batch_size =
        read_batch_size(*rollback, join_path(path, kSuRollbackMaximumBatchSize), errors);
  }
  if (errors.size() != before) return std::nullopt;
  return out;
}

// AutoRollbackConfiguration: [{AlarmName}], 1 to kMaxRollbackAlarms of them.
std::vector<std::string> read_rollback_alarms(const json& alarms, const std::string& path,
                                              SuErrors& errors) {
  std::vector<std::string> out;
  const std::string count_rule =
      "must be an array of 1 to " + std::to_string(kMaxRollbackAlarms) + " {AlarmName} objects";
  if (!alarms.is_array() || alarms.empty() || alarms.size() > kMaxRollbackAlarms) {
    errors.push_back({path, count_rule});
    return out;
  }
  for (std::size_t i = 0; i < alarms.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    const json& alarm = alarms[i];
    if (!alarm.is_object()) {
      errors.push_back({item_path, "must be an object {AlarmName}"});
      continue;
    }
    check_known_keys(alarm, item_path, {kSuAlarmName}, errors);
    const std::string name_path = join_path(item_path, kSuAlarmName);
    auto name = alarm.find(kSuAlarmName);
    if (name == alarm.end()) {
      errors.push_back({name_path, "is required"});
    } else if (!name->is_string()) {
      errors.push_back({name_path, "must be a string"});
    } else {
      const std::string& text = name->get_ref<const std::string&>();
      if (text.empty() || text.size() > kMaxAlarmNameLength) {
        errors.push_back({name_path, "must be 1 to " + std::to_string(kMaxAlarmNameLength) +
                                         " characters long"});
      } else if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
        // The cloud's pattern (?!\s*$).+ : a name of white space alone names no alarm.
        errors.push_back({name_path, "must not be only white space"});
      } else {
        out.push_back(text);
      }
    }
  }
  return out;
}

}  // namespace

json BatchSizeSpec::to_json() const {
  return {{kSuType, batch_type_name(type)}, {kSuValue, value}};
}

json DeploymentConfigSpec::to_json() const {
  json out = json::object();
  if (rolling_update_policy) {
    json policy = {{kSuMaximumBatchSize, rolling_update_policy->maximum_batch_size.to_json()}};
    if (rolling_update_policy->rollback_maximum_batch_size) {
      policy[kSuRollbackMaximumBatchSize] =
          rolling_update_policy->rollback_maximum_batch_size->to_json();
    }
    out[kSuRollingUpdatePolicy] = std::move(policy);
  }
  if (wait_interval_seconds) out[kSuWaitIntervalInSeconds] = *wait_interval_seconds;
  if (!rollback_alarms.empty()) {
    json alarms = json::array();
    for (const std::string& name : rollback_alarms) alarms.push_back({{kSuAlarmName, name}});
    out[kSuAutoRollbackConfiguration] = std::move(alarms);
  }
  return out;
}

json ScheduledUpdateSpec::to_json() const {
  json out = {{kSuScheduleExpression, schedule.text()}};
  if (deployment_config) out[kSuDeploymentConfig] = deployment_config->to_json();
  return out;
}

std::optional<DeploymentConfigSpec> read_deployment_config(const json& config,
                                                           const std::string& path,
                                                           std::vector<FieldError>& errors) {
  if (!config.is_object()) {
    errors.push_back({path, "must be an object"});
    return std::nullopt;
  }
  const std::size_t before = errors.size();
  check_known_keys(config, path,
                   {kSuRollingUpdatePolicy, kSuWaitIntervalInSeconds, kSuAutoRollbackConfiguration},
                   errors);
  DeploymentConfigSpec out;
  if (auto policy = config.find(kSuRollingUpdatePolicy); policy != config.end()) {
    out.rolling_update_policy =
        read_rolling_update_policy(*policy, join_path(path, kSuRollingUpdatePolicy), errors);
  }
  if (auto wait = config.find(kSuWaitIntervalInSeconds); wait != config.end()) {
    const auto seconds = scheduled_update_int(*wait);
    if (!seconds || *seconds < 0 || *seconds > kMaxDeploymentWaitSeconds) {
      errors.push_back(
          {join_path(path, kSuWaitIntervalInSeconds),
           "must be an integer from 0 to " + std::to_string(kMaxDeploymentWaitSeconds)});
    } else {
      out.wait_interval_seconds = static_cast<int>(*seconds);
    }
  }
  if (auto alarms = config.find(kSuAutoRollbackConfiguration); alarms != config.end()) {
    out.rollback_alarms =
        read_rollback_alarms(*alarms, join_path(path, kSuAutoRollbackConfiguration), errors);
  }
  if (errors.size() != before) return std::nullopt;
  return out;
}

std::optional<ScheduledUpdateSpec> read_scheduled_update(const json& group,
                                                         const std::string& group_path,
                                                         std::vector<FieldError>& errors) {
  if (!group.is_object()) return std::nullopt;
  auto it = group.find(kSuScheduledUpdateConfig);
  if (it == group.end()) return std::nullopt;
  const std::string path = join_path(group_path, kSuScheduledUpdateConfig);
  if (!it->is_object()) {
    errors.push_back({path, "must be an object {ScheduleExpression, DeploymentConfig?}"});
    return std::nullopt;
  }
  const json& config = *it;
  const std::size_t before = errors.size();
  check_known_keys(config, path, {kSuScheduleExpression, kSuDeploymentConfig}, errors);

  std::optional<ScheduleExpression> schedule;
  const std::string expression_path = join_path(path, kSuScheduleExpression);
  if (auto expression = config.find(kSuScheduleExpression); expression == config.end()) {
    errors.push_back({expression_path, "is required"});
  } else if (!expression->is_string()) {
    errors.push_back({expression_path, "must be a string"});
  } else {
    const std::string& text = expression->get_ref<const std::string&>();
    if (text.empty() || text.size() > kMaxScheduleExpressionLength) {
      errors.push_back(
          {expression_path,
           "must be 1 to " + std::to_string(kMaxScheduleExpressionLength) + " characters long"});
    } else if (Result<ScheduleExpression> parsed = parse_schedule_expression(text); !parsed) {
      errors.push_back({expression_path, parsed.error().message});
    } else {
      schedule = *parsed;
    }
  }

  std::optional<DeploymentConfigSpec> deployment;
  if (auto dc = config.find(kSuDeploymentConfig); dc != config.end()) {
    deployment = read_deployment_config(*dc, join_path(path, kSuDeploymentConfig), errors);
  }
  if (errors.size() != before || !schedule) return std::nullopt;
  return ScheduledUpdateSpec{*schedule, deployment};
}

}  // namespace endure::spec
