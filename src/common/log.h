// The one logger: spdlog's default logger, to stderr.
#pragma once

#include <spdlog/spdlog.h>

namespace endure::log {
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;
}  // namespace endure::log
