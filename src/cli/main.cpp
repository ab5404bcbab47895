// endure: the operator CLI. Parses the command line and runs one verb (see verbs.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <string_view>

#include "cli/completion.h"
#include "cli/verbs.h"
#include "common/command_line.h"

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
                 "then the endpoint file of endured's home, see below, then "
                 "http://127.0.0.1:7117)");
  app.add_option("--output", global.output, "json (the default) or table")
      ->check(CLI::IsMember({"json", "table"}));
  app.footer(
      "The token comes from $ENDURE_TOKEN, else $ENDURE_HOME/token (endured writes it at\n"
      "start). Without ENDURE_HOME: ~/.endure when an endured has served from it, else the\n"
      "system service's /var/lib/endure when you may read its token, else ~/.endure.\n"
      "Every verb takes --cli-input-json file://PATH\n"
      "with the request as JSON; its flags override fields from that file.\n"
      "Exit status: 0 ok, 1 the call failed, 2 bad input (nothing sent).");
  add_verbs(app, global, &selected);
  // The installed bash completion is this output, made at build time (cmake/install.cmake).
  if (argc == 2 && std::string_view(argv[1]) == "--bash-completion") {
    std::fputs(bash_completion(app).c_str(), stdout);
    return kExitOk;
  }

  if (auto exit = endure::parse_command_line(app, argc, argv, "verb")) return *exit;
  return selected ? selected() : kExitUsage;
}
