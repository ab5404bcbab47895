// endured's settings table: config.json is read through it, its errors name the setting and
// change nothing, and the README lists exactly its rows.
#include "controller/core/config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "api/wire.h"
#include "support/temp_dir.h"
#include "support/text_files.h"

namespace endure::controller {
namespace {

using test::contains;

bool is_number(const Setting& s) {
  return std::holds_alternative<int Config::*>(s.field) ||
         std::holds_alternative<double Config::*>(s.field);
}

// A number setting's value.
double value_of(const Config& c, const Setting& s) {
  if (auto f = std::get_if<int Config::*>(&s.field)) return c.*(*f);
  return c.*std::get<double Config::*>(s.field);
}

TEST(ConfigTest, DefaultsComeFromTheTable) {
  Config c;
  for (const auto& s : settings()) {
    if (is_number(s)) {
      EXPECT_EQ(value_of(c, s), s.default_value) << s.name;
    }
    if (auto f = std::get_if<std::string Config::*>(&s.field)) {
      EXPECT_EQ(c.*(*f), "") << s.name;
    }
    if (auto f = std::get_if<std::optional<bool> Config::*>(&s.field)) {
      EXPECT_FALSE((c.*(*f)).has_value()) << s.name;
    }
  }
}

TEST(ConfigTest, EverySettingIsReadFromConfigJson) {
  Config c;
  json j = json::object();
  for (const auto& s : settings()) {
    if (is_number(s)) j[s.name] = static_cast<int>(s.min) + 1;
  }
  ASSERT_TRUE(c.apply_json(j).ok());
  for (const auto& s : settings()) {
    if (is_number(s)) {
      EXPECT_EQ(value_of(c, s), static_cast<int>(s.min) + 1) << s.name;
    }
  }
}

TEST(ConfigTest, TextAndFlagSettingsAreRead) {
  Config c;
  ASSERT_TRUE(c.apply_json({{"S3EndpointUrl", "http://127.0.0.1:9000"},
                            {"S3Region", "eu-west-1"},
                            {"S3PathStyle", false},
                            {"S3CredentialsFile", "/etc/endure/aws-credentials"},
                            {"S3Profile", "training"}})
                  .ok());
  EXPECT_EQ(c.s3_endpoint_url, "http://127.0.0.1:9000");
  EXPECT_EQ(c.s3_region, "eu-west-1");
  EXPECT_EQ(c.s3_path_style, std::optional<bool>(false));
  EXPECT_EQ(c.s3_credentials_file, "/etc/endure/aws-credentials");
  EXPECT_EQ(c.s3_profile, "training");
  // null unsets a flag; "" is a text's default.
  ASSERT_TRUE(c.apply_json({{"S3PathStyle", nullptr}, {"S3Region", ""}}).ok());
  EXPECT_FALSE(c.s3_path_style.has_value());
  EXPECT_EQ(c.s3_region, "");
  ASSERT_TRUE(c.apply_json({{"S3PathStyle", true}}).ok());
  EXPECT_EQ(c.s3_path_style, std::optional<bool>(true));
}

TEST(ConfigTest, TextAndFlagSettingsOfTheWrongTypeOrAgainstTheirRuleAreRefused) {
  struct Case {
    json file;
    std::string words;
  };
  const std::vector<Case> cases = {
      {{{"S3Region", 5}}, "config.json: S3Region: must be a string, empty or a region's name"},
      {{{"S3EndpointUrl", nullptr}}, "S3EndpointUrl: must be a string"},
      {{{"S3PathStyle", "true"}}, "config.json: S3PathStyle: must be true, false or null"},
      {{{"S3PathStyle", 1}}, "S3PathStyle: must be true, false or null"},
      {{{"S3EndpointUrl", "minio:9000"}},
       "S3EndpointUrl: must be empty or http(s)://HOST[:PORT], not 'minio:9000': must start "
       "with http:// or https://"},
      {{{"S3EndpointUrl", "http://minio:9000/bucket"}}, "with no path"},
      {{{"S3EndpointUrl", "http://minio:99999"}}, "port must be an integer from 1 to 65535"},
      {{{"S3Region", "EU-West-1"}},
       "S3Region: must be empty or a region's name, not 'EU-West-1': holds only lowercase"},
      {{{"S3CredentialsFile", "aws/credentials"}},
       "S3CredentialsFile: must be empty or an absolute path, not 'aws/credentials': is relative"},
      {{{"S3Profile", "[training]"}}, "S3Profile: must be empty or a profile's name"},
      {{{"S3Profile", "a\nb"}}, "holds a line break"},
      {{{"S3Profile", " training"}}, "has a space at an end"},
  };
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.file.dump());
    Config c;
    json file = bad.file;
    file["Port"] = 7200;  // applied whole or not at all
    auto s = c.apply_json(file);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, "ValidationException");
    EXPECT_PRED2(contains, s.error().message, bad.words);
    EXPECT_EQ(c.port, api::kDefaultPort) << "a refused file changes nothing";
    EXPECT_EQ(c.s3_endpoint_url, "");
    EXPECT_EQ(c.s3_region, "");
    EXPECT_FALSE(c.s3_path_style.has_value());
    EXPECT_EQ(c.s3_credentials_file, "");
    EXPECT_EQ(c.s3_profile, "");
  }
}

TEST(ConfigTest, S3KeysAreNotSettings) {
  for (const auto& s : settings()) {
    EXPECT_FALSE(contains(s.name, "Secret") || contains(s.name, "AccessKey") ||
                 contains(s.name, "Token"))
        << s.name << ": keys stay in the environment or a credentials file";
  }
  Config c;
  auto s = c.apply_json({{"S3SecretAccessKey", "x"}});
  ASSERT_FALSE(s.ok());
  EXPECT_PRED2(contains, s.error().message, "S3SecretAccessKey: is not a known setting");
}

TEST(ConfigTest, TheS3ConfigIsTheEnvironmentWithTheSettingsLaidOverIt) {
  const s3::Environment env = {{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"},
                               {"AWS_REGION", "us-east-1"},
                               {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                               {"AWS_SECRET_ACCESS_KEY", "envsecret"}};
  // No S3 setting: the environment's configuration, as without settings.
  auto plain = s3::config_from_environment(env, Config().s3_overrides());
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->endpoint_url, "http://127.0.0.1:9000");
  EXPECT_TRUE(plain->path_style);
  EXPECT_EQ(plain->region, "us-east-1");
  EXPECT_EQ(plain->credentials.access_key_id, "ENVKEY");

  test::TempDir dir("endure-config-s3");
  ASSERT_TRUE(dir.ok());
  std::ofstream(dir.str("credentials")) << "[default]\naws_access_key_id = DEFAULTKEY\n"
                                           "aws_secret_access_key = defaultsecret\n"
                                           "[training]\naws_access_key_id = TRAINKEY\n"
                                           "aws_secret_access_key = trainsecret\n";
  Config c;
  ASSERT_TRUE(c.apply_json({{"S3EndpointUrl", "https://objects.example:8443"},
                            {"S3Region", "eu-west-1"},
                            {"S3PathStyle", false},
                            {"S3CredentialsFile", dir.str("credentials")},
                            {"S3Profile", "training"}})
                  .ok());
  auto laid = s3::config_from_environment(env, c.s3_overrides());
  ASSERT_TRUE(laid) << laid.error().message;
  EXPECT_EQ(laid->endpoint_url, "https://objects.example:8443");
  EXPECT_FALSE(laid->path_style);
  EXPECT_EQ(laid->region, "eu-west-1");
  EXPECT_EQ(laid->credentials.access_key_id, "TRAINKEY") << "the file the settings name wins";
  EXPECT_EQ(laid->credentials.secret_access_key, "trainsecret");

  // The file alone: its default profile. An endpoint alone: path-style, as the environment's.
  Config file_only;
  ASSERT_TRUE(file_only.apply_json({{"S3CredentialsFile", dir.str("credentials")}}).ok());
  auto from_file = s3::config_from_environment(env, file_only.s3_overrides());
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_EQ(from_file->credentials.access_key_id, "DEFAULTKEY");
  Config endpoint_only;
  ASSERT_TRUE(endpoint_only.apply_json({{"S3EndpointUrl", "http://127.0.0.5:9000"}}).ok());
  auto endpoint = s3::config_from_environment(env, endpoint_only.s3_overrides());
  ASSERT_TRUE(endpoint) << endpoint.error().message;
  EXPECT_EQ(endpoint->endpoint_url, "http://127.0.0.5:9000");
  EXPECT_TRUE(endpoint->path_style);
  EXPECT_EQ(endpoint->credentials.access_key_id, "ENVKEY");

  // A profile the file lacks, a file that is not there: the error names them.
  Config no_profile;
  ASSERT_TRUE(
      no_profile.apply_json({{"S3CredentialsFile", dir.str("credentials")}, {"S3Profile", "nope"}})
          .ok());
  auto missing_profile = s3::config_from_environment(env, no_profile.s3_overrides());
  ASSERT_FALSE(missing_profile);
  EXPECT_PRED2(contains, missing_profile.error().message, "no profile [nope]");
  Config no_file;
  ASSERT_TRUE(no_file.apply_json({{"S3CredentialsFile", dir.str("absent")}}).ok());
  auto missing_file = s3::config_from_environment(env, no_file.s3_overrides());
  ASSERT_FALSE(missing_file);
  EXPECT_PRED2(contains, missing_file.error().message, dir.str("absent"));
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
    if (!is_number(row)) continue;  // texts and flags: the test above
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
        fmt::format("| `{}` | {} | {} | {} |", s.name, default_text(s), allowed_text(s), s.doc));
  }
  for (const auto& w : want) EXPECT_TRUE(rows.count(w)) << "README lacks or differs: " << w;
  // Every row of the README's settings table (indented, as no other table there is).
  for (const auto& r : rows) EXPECT_TRUE(want.count(r)) << "README row not in the table: " << r;
}

}  // namespace
}  // namespace endure::controller
