// How every endure program reports a bad command line: one line on stderr that names the
// problem and where help is, and exit status 2, before anything is done.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>

namespace endure {

inline constexpr int kExitUsage = 2;

// Parses argv into app. Returns nullopt when the program should go on, else the status to
// exit with: 0 after --help (printed), kExitUsage after a one-line error. `noun` names
// what app's subcommands are ("verb", "subcommand"), for a missing or unknown one.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                             const std::string& noun = "subcommand") {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::string program = app.get_name();
    std::string what = e.what();
    std::string hint = program + " --help";
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
      auto rest = app.remaining();
      what = rest.empty() || rest.front().starts_with("-")
                 ? "a " + noun + " is required"
                 : "unknown " + noun + " '" + rest.front() + "'";
    }
    for (const CLI::App* sub : app.get_subcommands())
      hint = program + " " + sub->get_name() + " --help";
    std::fprintf(stderr, "%s: error: %s (see '%s')\n", program.c_str(), what.c_str(), hint.c_str());
    return kExitUsage;
  }
}

}  // namespace endure
