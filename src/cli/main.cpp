// endure: the operator CLI. Parses the command line and runs one verb (see verbs.h).
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "cli/verbs.h"

int main(int argc, char** argv) {
  using namespace endure::cli;

  GlobalOptions global;
  std::function<int()> selected;
  CLI::App app{"endure: create and run resilient training clusters on endured."};
  app.name("endure");
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the verb, as in the cloud CLI
  app.add_option("--endpoint", global.endpoint,
                 "endured's URL, e.g. http://127.0.0.1:7117 (default: $ENDURE_ENDPOINT, "
                 "$ENDURE_HOME/endpoint, then http://127.0.0.1:7117)");
  app.add_option("--output", global.output, "json (the default) or table")
      ->check(CLI::IsMember({"json", "table"}));
  app.footer(
      "The token comes from $ENDURE_TOKEN, else $ENDURE_HOME/token (ENDURE_HOME defaults to\n"
      "~/.endure; endured writes it at start). Every verb takes --cli-input-json file://PATH\n"
      "with the request as JSON; its flags override fields from that file.\n"
      "Exit status: 0 ok, 1 the call failed, 2 bad input (nothing sent).");
  add_verbs(app, global, &selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
      std::string what = app.remaining().empty() ? std::string("a verb is required")
                                                 : "unknown verb '" + app.remaining().front() + "'";
      std::cerr << "endure: error: " << what << " (see 'endure --help')\n";
      return kExitUsage;
    }
    std::string hint = "endure --help";
    for (const CLI::App* verb : app.get_subcommands())
      hint = "endure " + verb->get_name() + " --help";
    std::cerr << "endure: error: " << e.what() << " (see '" << hint << "')\n";
    return kExitUsage;
  }
  return selected ? selected() : kExitUsage;
}
