// endure's bash completion, written from the CLI's own definition (its verbs, their flags and
// the values a flag allows), so it lists what the program accepts and nothing else.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace endure::cli {

// A bash script defining _endure and `complete -F _endure endure`: verbs (and the
// subcommands of ckpt and debug) by position, each command's flags after a '-', a flag's
// allowed values after it; after exec's `--`, bash's own completion.
std::string bash_completion(const CLI::App& app);

}  // namespace endure::cli
