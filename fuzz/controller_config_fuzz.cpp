// endured's $ENDURE_HOME/config.json: any bytes, parsed as JSON and applied to the defaults.
// A refusal must change nothing; what is applied must lie in each setting's range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <variant>

#include "controller/core/config.h"

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
    bool ok = true;  // a flag takes any of its values
    if (auto f = std::get_if<int Config::*>(&s.field)) {
      ok = c.*(*f) >= s.min && c.*(*f) <= s.max;
    } else if (auto f = std::get_if<double Config::*>(&s.field)) {
      ok = c.*(*f) > s.min && c.*(*f) <= s.max;
    } else if (auto f = std::get_if<std::string Config::*>(&s.field)) {
      ok = s.text.problem(c.*(*f)).empty();
    }
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
