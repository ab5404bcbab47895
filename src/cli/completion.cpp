#include "cli/completion.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace endure::cli {
namespace {

struct Words {
  std::map<std::string, std::string> subcommands;  // command path → its subcommands
  std::map<std::string, std::string> flags;        // command path → its flags
  std::map<std::string, std::string> values;       // flag → the values it allows
};

std::string joined(const std::set<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// CLI::IsMember shows the allowed values in the type's name: "TEXT:{json,table}".
std::string allowed_values(const CLI::Option& option) {
  std::string type = option.get_type_name();
  auto open = type.find('{');
  auto close = type.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  std::string values = type.substr(open + 1, close - open - 1);
  for (char& c : values) {
    if (c == ',') c = ' ';
  }
  return values;
}

void collect(const CLI::App& app, const std::string& path, Words* words) {
  std::set<std::string> subcommands, flags;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty()) continue;  // hidden
    subcommands.insert(sub->get_name());
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), words);
  }
  // Options before the verb hold after it too (the CLI falls through to its parents).
  for (const CLI::App* at = &app; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option* option : at->get_options()) {
      if (option->get_group().empty() || option->get_positional()) continue;
      for (const auto& name : option->get_lnames()) {
        flags.insert("--" + name);
        if (auto values = allowed_values(*option); !values.empty()) {
          words->values["--" + name] = values;
        }
      }
    }
  }
  if (!subcommands.empty()) words->subcommands[path] = joined(subcommands);
  words->flags[path] = joined(flags);
}

std::string cases(const std::map<std::string, std::string>& table) {
  std::string out;
  for (const auto& [key, words] : table) out += fmt::format("    '{}') echo '{}' ;;\n", key, words);
  return out;
}

}  // namespace

std::string bash_completion(const CLI::App& app) {
  Words words;
  collect(app, "", &words);
  return fmt::format(
      R"bash(# bash completion for endure, written by `endure --bash-completion` from the CLI's
# own definition of its verbs and flags.

_endure_subcommands() {{
  case "$1" in
{}  esac
}}

_endure_flags() {{
  case "$1" in
{}  esac
}}

_endure_values() {{
  case "$1" in
{}  esac
}}

_endure() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local path="" i word values
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    # exec's command after --: bash's own completion.
    [[ $word == -- ]] && return 1
    [[ $word == -* ]] && continue
    if [[ " $(_endure_subcommands "$path") " == *" $word "* ]]; then
      path=${{path:+$path }}$word
    fi
  done
  values=$(_endure_values "$prev")
  if [[ -n $values ]]; then
    COMPREPLY=($(compgen -W "$values" -- "$cur"))
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_endure_flags "$path")" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_endure_subcommands "$path")" -- "$cur"))
  fi
}}

complete -o default -F _endure endure
)bash",
      cases(words.subcommands), cases(words.flags), cases(words.values));
}

}  // namespace endure::cli
