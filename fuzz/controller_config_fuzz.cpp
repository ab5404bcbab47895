// endured's $ENDURE_HOME/config.json: any bytes, parsed as JSON and applied to the defaults.
// A refusal must change nothing; what is applied must lie in each setting's range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <variant>

#include "controller/config.h"

namespace {

using endure::controller::Config;
using endure::controller::settings;

bool same(const Config& a, const Config& b) {
  for (const auto& s : settings()) {
    if (!std::visit([&](auto field) { return a.*field == b.*field; }, s.field)) return false;
  }
  return true;
}

bool in_range(const Config& c) {
  for (const auto& s : settings()) {
    bool ok = std::holds_alternative<int Config::*>(s.field)
                  ? c.*std::get<int Config::*>(s.field) >= s.min &&
                        c.*std::get<int Config::*>(s.field) <= s.max
                  : c.*std::get<double Config::*>(s.field) > s.min &&
                        c.*std::get<double Config::*>(s.field) <= s.max;
    if (!ok) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j =
      endure::json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  const Config defaults;
  Config config;
  if (!config.apply_json(j)) {
    if (!same(config, defaults)) std::abort();
    return 0;
  }
  if (!in_range(config)) std::abort();
  return 0;
}
