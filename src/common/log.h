// The one logger: spdlog's default logger (stdout, unless a program's main sends it to
// stderr, as endure-train does: its stdout is its JSON lines).
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "common/result.h"

namespace endure::log {
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;

// For an effect whose failure the caller can do no more about than report (a reconcile
// pass tries it again): logs what failed and why; true when it succeeded.
inline bool ok(const Status& s, std::string_view what) {
  if (!s) spdlog::error("{}: {}", what, s.error().message);
  return s.ok();
}
}  // namespace endure::log
