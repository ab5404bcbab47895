// Every flag of every program says what it does in --help: each option, positional and
// subcommand line of each program's help (and of each subcommand's) has a description, and
// one that is more than the flag's own name.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/process.h"

namespace endure {
namespace {

struct Item {
  std::string name;         // as the help shows it: "--batch NUMBER (default: 8)" and the like
  std::string description;  // "" when none
};

struct Help {
  std::vector<Item> items;
  std::vector<std::string> subcommands;
};

std::string help_of(const std::vector<std::string>& argv) {
  std::vector<std::string> command = {std::string(ENDURE_BIN_DIR) + "/" + argv[0]};
  command.insert(command.end(), argv.begin() + 1, argv.end());
  command.push_back("--help");
  process::Options options;
  options.timeout = std::chrono::seconds(10);
  auto out = process::run(command, options);
  EXPECT_EQ(out.exit_code, 0) << command[0] << ": " << out.err;
  return out.out;
}

// CLI11's layout: a section title ("Options:") at the margin, then its items two spaces in,
// the name padded to column 30 and the description after it, or on the next line indented to
// column 30 when the name is longer. The footer's text ends the sections.
Help parse(const std::string& text) {
  static const std::regex section(R"(^[A-Z][A-Za-z ()-]*:$)");
  constexpr size_t kColumn = 30;
  Help help;
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string current;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (std::regex_match(line, section)) {
      current = line;
      continue;
    }
    if (line.empty() || current.empty()) continue;
    if (line[0] != ' ') {
      current.clear();  // the footer
      continue;
    }
    if (line.size() < 3 || line[2] == ' ') continue;  // a continued description
    Item item;
    if (line.size() > kColumn && line[kColumn - 1] == ' ') {
      item.name = line.substr(2, kColumn - 2);
      item.description = line.substr(kColumn);
    } else {
      item.name = line.substr(2);
      if (i + 1 < lines.size() && lines[i + 1].rfind(std::string(kColumn, ' '), 0) == 0) {
        item.description = lines[i + 1].substr(kColumn);
      }
    }
    item.name = item.name.substr(0, item.name.find_last_not_of(' ') + 1);
    if (current == "Subcommands:") help.subcommands.push_back(item.name);
    help.items.push_back(item);
  }
  return help;
}

// "--n-kv-heads NUMBER" → "n_kv_heads"; "-f,--foreground" → "foreground".
std::string key_of(const std::string& name) {
  std::string flag = name.substr(0, name.find(' '));
  if (auto comma = flag.rfind(','); comma != std::string::npos) flag = flag.substr(comma + 1);
  flag.erase(0, flag.find_first_not_of('-'));
  for (char& c : flag) c = c == '-' ? '_' : c;
  return flag;
}

// Checks the help of argv and of every subcommand under it; returns how many items it saw.
int check(const std::vector<std::string>& argv) {
  std::string where;
  for (const auto& a : argv) where += (where.empty() ? "" : " ") + a;
  Help help = parse(help_of(argv));
  EXPECT_FALSE(help.items.empty()) << where << ": no options in its help";
  int seen = 0;
  for (const Item& item : help.items) {
    ++seen;
    std::string text = std::regex_replace(item.description, std::regex(R"(^\s+|\s+$)"), "");
    std::string key = key_of(item.name);
    EXPECT_FALSE(text.empty()) << where << ": " << item.name << " has no description";
    EXPECT_NE(text, key) << where << ": " << item.name << " is described by its name alone";
    // "batch", "model.dim": a key alone, or with a word of prefix.
    EXPECT_FALSE(text.find(key) != std::string::npos && text.size() <= key.size() + 8)
        << where << ": " << item.name << " is described by its name alone: " << text;
  }
  for (const auto& sub : help.subcommands) {
    auto next = argv;
    next.push_back(sub);
    seen += check(next);
  }
  return seen;
}

TEST(HelpTextTest, EveryFlagOfEveryProgramIsDescribed) {
  for (const char* program :
       {"endure", "endured", "endure-agent", "endure-fsx", "endure-train", "endure-data"}) {
    SCOPED_TRACE(program);
    int seen = check({program});
    EXPECT_GT(seen, 1) << program;
    std::printf("%s: %d flags, positionals and subcommands described\n", program, seen);
  }
}

TEST(HelpTextTest, TheParserFindsADescriptionlessFlag) {
  Help help = parse(
      "Usage: x [OPTIONS]\n\nOptions:\n  -h,--help                   Print this help\n"
      "  --batch NUMBER\n  --a-very-long-flag-name NUMBER (default: 3)\n"
      "                              what it does\n\n"
      "Settings in config.json (name: default, what it does):\n  Port: 7117, a setting\n");
  ASSERT_EQ(help.items.size(), 3u);
  EXPECT_EQ(help.items[1].name, "--batch NUMBER");
  EXPECT_EQ(help.items[1].description, "");
  EXPECT_EQ(key_of(help.items[1].name), "batch");
  EXPECT_EQ(help.items[2].description, "what it does");
}

}  // namespace
}  // namespace endure
