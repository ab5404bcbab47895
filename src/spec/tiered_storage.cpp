#include "spec/tiered_storage.h"

#include <string_view>

#include "spec/cluster_spec.h"

namespace endure::spec {

namespace {

namespace F = api::field;

std::string tier_field_path(std::string_view key) { return join_path(F::kTieredStorageConfig, key); }

}  // namespace

api::TieredStorageConfig TieredStorageSpec::to_api() const { return {mode, memory_percent}; }

std::optional<TieredStorageSpec> read_tiered_storage(const json& request,
                                                     std::vector<FieldError>& errors) {
  auto it = request.find(F::kTieredStorageConfig);
  if (it == request.end()) return std::nullopt;
  if (!it->is_object()) {
    errors.push_back({F::kTieredStorageConfig, "must be an object"});
    return std::nullopt;
  }
  const json& obj = *it;
  const size_t before = errors.size();
  check_known_keys(obj, F::kTieredStorageConfig, keys_of<api::TieredStorageConfig>(), errors);
  TieredStorageSpec tier;
  if (auto mode = obj.find(F::kMode); mode == obj.end()) {
    errors.push_back({tier_field_path(F::kMode), "is required"});
  } else if (!mode->is_string() || !parse_value(mode->get<std::string>(), tier.mode)) {
    errors.push_back(
        {tier_field_path(F::kMode), "must be one of " + value_names(api::TieredStorageMode{})});
  }
  // Floats, strings and bools are refused rather than converted, as InstanceCount is.
  if (auto percent = obj.find(F::kInstanceMemoryAllocationPercentage); percent != obj.end()) {
    bool ok = percent->is_number_unsigned() ? percent->get<unsigned long long>() <= 100
              : percent->is_number_integer()
                  ? percent->get<long long>() >= 0 && percent->get<long long>() <= 100
                  : false;
    if (ok) {
      tier.memory_percent = percent->get<int>();
    } else {
      errors.push_back({tier_field_path(F::kInstanceMemoryAllocationPercentage),
                        "must be an integer from 0 to 100"});
    }
  }
  if (errors.size() != before) return std::nullopt;
  if (tier.enabled() && tier.memory_percent.value_or(0) == 0) {
    tier.memory_percent = kDefaultMemoryPercent;
  }
  return tier;
}

std::string memory_store_setting(const std::optional<TieredStorageSpec>& tier) {
  if (!memory_tier_on(tier)) return "";
  return "Enable, " + std::to_string(tier->memory_percent.value_or(kDefaultMemoryPercent)) + " %";
}

}  // namespace endure::spec
