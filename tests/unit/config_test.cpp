// endured's settings table: config.json is read through it, its errors name the setting and
// change nothing, and the README lists exactly its rows.
#include "controller/config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace endure::controller {
namespace {

std::string allowed(const Setting& s) {
  return std::holds_alternative<int Config::*>(s.field)
             ? fmt::format("{:g} to {:g}", s.min, s.max)
             : fmt::format("above {:g}, at most {:g}", s.min, s.max);
}

double value_of(const Config& c, const Setting& s) {
  return std::visit([&](auto member) { return static_cast<double>(c.*member); }, s.field);
}

TEST(ConfigTest, DefaultsComeFromTheTable) {
  Config c;
  for (const auto& s : settings()) EXPECT_EQ(value_of(c, s), s.default_value) << s.name;
}

TEST(ConfigTest, EverySettingIsReadFromConfigJson) {
  Config c;
  json j = json::object();
  for (const auto& s : settings()) j[s.name] = static_cast<int>(s.min) + 1;
  ASSERT_TRUE(c.apply_json(j).ok());
  for (const auto& s : settings()) EXPECT_EQ(value_of(c, s), static_cast<int>(s.min) + 1) << s.name;
}

TEST(ConfigTest, AnUnknownSettingListsTheKnownOnesAndChangesNothing) {
  Config c;
  auto s = c.apply_json({{"HeartbeatSeconds", 3}, {"HeartbeatSecs", 3}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "ValidationException");
  EXPECT_NE(s.error().message.find("HeartbeatSecs: is not a known setting"), std::string::npos)
      << s.error().message;
  for (const auto& row : settings()) {
    EXPECT_NE(s.error().message.find(row.name), std::string::npos) << row.name;
  }
  EXPECT_EQ(c.heartbeat_seconds, 0.5) << "a refused file changes nothing";
}

TEST(ConfigTest, ValuesOutOfRangeOrOfTheWrongTypeAreRefusedNamingTheRule) {
  for (const auto& row : settings()) {
    SCOPED_TRACE(row.name);
    const bool integer = std::holds_alternative<int Config::*>(row.field);
    for (json bad :
         {json(row.max + 1), json(integer ? row.min - 1 : row.min), json("1"), json(nullptr)}) {
      Config c;
      auto s = c.apply_json({{row.name, bad}});
      ASSERT_FALSE(s.ok()) << bad.dump();
      EXPECT_NE(s.error().message.find(std::string(row.name) + ": must be"), std::string::npos)
          << s.error().message;
      EXPECT_EQ(value_of(c, row), row.default_value);
    }
  }
  Config c;
  EXPECT_FALSE(c.apply_json({{"Port", 2.5}}).ok()) << "an integer setting takes no fraction";
  EXPECT_FALSE(c.apply_json(json::array()).ok());
}

TEST(ConfigTest, TheReadmeListsExactlyTheTable) {
  std::ifstream in(std::string(ENDURE_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md";
  std::set<std::string> rows;
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("| `");
    if (at == 2 && line.rfind("  | `", 0) == 0) rows.insert(line.substr(2));
  }
  std::set<std::string> want;
  for (const auto& s : settings()) {
    want.insert(
        fmt::format("| `{}` | {:g} | {} | {} |", s.name, s.default_value, allowed(s), s.doc));
  }
  for (const auto& w : want) EXPECT_TRUE(rows.count(w)) << "README lacks or differs: " << w;
  // Every row of the README's settings table (indented, as no other table there is).
  for (const auto& r : rows) EXPECT_TRUE(want.count(r)) << "README row not in the table: " << r;
}

}  // namespace
}  // namespace endure::controller
