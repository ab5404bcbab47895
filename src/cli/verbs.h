// The CLI's verbs: one subcommand per endured action, in the cloud cluster CLI's spelling.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "common/command_line.h"

namespace endure::cli {

// Exit statuses, the same for every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the call failed: server error, unreachable, timeout
using endure::kExitUsage;              // bad input; no request was sent

// Options that come before (or, through fallthrough, after) the verb.
struct GlobalOptions {
  std::string endpoint;  // --endpoint; empty: ENDURE_ENDPOINT, $ENDURE_HOME/endpoint, default
  std::string output;    // --output: "json", "table", or empty when not given
};

// Adds every verb to app as a subcommand. When parsing selects a verb, *selected becomes
// the function that runs it and returns the exit status. global must outlive app.
void add_verbs(CLI::App& app, const GlobalOptions& global, std::function<int()>* selected);
// endure ckpt ls|verify|prune DIR (local files; no call to endured).
void add_ckpt(CLI::App& app, std::function<int()>* selected);

}  // namespace endure::cli
