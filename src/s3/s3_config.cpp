#include "s3/s3_config.h"

#include <unistd.h>

#include <cctype>
#include <sstream>

#include "common/error_codes.h"
#include "common/fs.h"

extern char** environ;

namespace endure::s3 {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string get(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

// The host of a valid endpoint URL: after "://", before the port, path or end.
std::string endpoint_host(const std::string& url) {
  std::string rest = url.substr(url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') return rest.substr(0, rest.find(']') + 1);
  return rest.substr(0, rest.find(':'));
}

}  // namespace

std::string S3Config::bucket_url(const std::string& bucket) const {
  std::string base =
      endpoint_url.empty() ? "https://s3." + region + ".amazonaws.com" : endpoint_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (path_style) return base + "/" + bucket;
  auto scheme_end = base.find("://") + 3;
  return base.substr(0, scheme_end) + bucket + "." + base.substr(scheme_end);
}

Environment current_environment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

// scheme://HOST[:PORT] split; the answer says which part is wrong.
std::string endpoint_url_problem(const std::string& url) {
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
  } else {
    return "must start with http:// or https://";
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty()) return "names no host";
  if (rest.find_first_of("/?#@ ") != std::string::npos) {
    return "is scheme://HOST[:PORT] alone, with no path, query or user";
  }
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']') == std::string::npos) {
    std::string port = rest.substr(colon + 1);
    if (colon == 0) return "names no host";
    if (port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535) {
      return "port must be an integer from 1 to 65535";
    }
  }
  return "";
}

std::string region_problem(const std::string& region) {
  if (region.empty()) return "must not be empty (for example us-east-1)";
  for (char ch : region) {
    if (!std::islower(static_cast<unsigned char>(ch)) &&
        !std::isdigit(static_cast<unsigned char>(ch)) && ch != '-') {
      return "holds only lowercase letters, digits and '-'";
    }
  }
  return "";
}

Status validate_config(const S3Config& c) {
  if (!c.endpoint_url.empty()) {
    if (auto problem = endpoint_url_problem(c.endpoint_url); !problem.empty()) {
      return invalid("S3 endpoint URL '" + c.endpoint_url + "': " + problem);
    }
    // Virtual-hosted addressing puts the bucket in the host name, which an address has none of.
    std::string host = endpoint_host(c.endpoint_url);
    bool address = host == "localhost" || host.front() == '[' ||
                   host.find_first_not_of("0123456789.") == std::string::npos;
    if (address && !c.path_style) {
      return invalid("S3 path_style: the endpoint " + c.endpoint_url +
                     " is an address, not a name, so it needs path-style addressing");
    }
  }
  if (auto problem = region_problem(c.region); !problem.empty()) {
    return invalid(c.region.empty() ? "S3 region: " + problem
                                    : "S3 region '" + c.region + "': " + problem);
  }
  if (c.credentials.access_key_id.empty() || c.credentials.secret_access_key.empty()) {
    return invalid("S3 credentials: both the access key id and the secret access key are needed");
  }
  if (c.credentials.access_key_id.find(':') != std::string::npos) {
    return invalid("S3 credentials: the access key id holds no ':'");
  }
  if (c.retry.max_attempts < 1 || c.retry.max_attempts > 20) {
    return invalid("S3 retry max_attempts: must be from 1 to 20, not " +
                   std::to_string(c.retry.max_attempts));
  }
  if (c.retry.base_delay.count() < 0 || c.retry.max_delay < c.retry.base_delay) {
    return invalid("S3 retry delays: base_delay must be >= 0 and <= max_delay");
  }
  if (c.parallelism < 1 || c.parallelism > 64) {
    return invalid("S3 parallelism: must be from 1 to 64, not " + std::to_string(c.parallelism));
  }
  if (c.part_size < (5ull << 20) || c.part_size > (5ull << 30)) {
    return invalid("S3 part_size: must be from 5 MiB to 5 GiB (S3's part limits), not " +
                   std::to_string(c.part_size));
  }
  if (c.multipart_threshold < c.part_size) {
    return invalid("S3 multipart_threshold: must be at least part_size");
  }
  if (c.connect_timeout.count() <= 0 || c.stall_timeout.count() <= 0) {
    return invalid("S3 timeouts: connect_timeout and stall_timeout must be positive");
  }
  return Status::Ok();
}

Result<Credentials> parse_credentials_file(const std::string& text, const std::string& profile) {
  std::istringstream in(text);
  std::string line, section;
  bool found = false;
  Credentials c;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return invalid("credentials file line " + std::to_string(number) +
                       ": a section header is [NAME]");
      }
      section = trim(line.substr(1, line.size() - 2));
      // The config file's spelling "[profile NAME]" is accepted too.
      if (section.rfind("profile ", 0) == 0) section = trim(section.substr(8));
      if (section == profile) found = true;
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      return invalid("credentials file line " + std::to_string(number) + ": expected key = value");
    }
    if (section != profile) continue;
    std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  if (!found) return invalid("credentials file: no profile [" + profile + "]");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return invalid("credentials file profile [" + profile +
                   "]: needs both aws_access_key_id and aws_secret_access_key");
  }
  return c;
}

Result<S3Config> config_from_environment(const Environment& env, const ConfigOverrides& overrides) {
  S3Config config;
  config.endpoint_url = overrides.endpoint_url;
  if (config.endpoint_url.empty()) config.endpoint_url = get(env, "AWS_ENDPOINT_URL_S3");
  if (config.endpoint_url.empty()) config.endpoint_url = get(env, "AWS_ENDPOINT_URL");
  config.path_style = overrides.path_style.value_or(!config.endpoint_url.empty());
  config.region = overrides.region;
  if (config.region.empty()) config.region = get(env, "AWS_REGION");
  if (config.region.empty()) config.region = get(env, "AWS_DEFAULT_REGION");
  if (config.region.empty()) config.region = "us-east-1";

  const bool file_by_setting = !overrides.credentials_file.empty() || !overrides.profile.empty();
  std::string key_id = file_by_setting ? "" : get(env, "AWS_ACCESS_KEY_ID");
  std::string secret = file_by_setting ? "" : get(env, "AWS_SECRET_ACCESS_KEY");
  if (!key_id.empty() || !secret.empty()) {
    if (key_id.empty() || secret.empty()) {
      return invalid(
          std::string("S3 credentials: ") +
          (key_id.empty() ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY") + " is not set while " +
          (key_id.empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID") + " is: set both");
    }
    config.credentials = {key_id, secret, get(env, "AWS_SESSION_TOKEN")};
  } else {
    std::string file = overrides.credentials_file;
    if (file.empty()) file = get(env, "AWS_SHARED_CREDENTIALS_FILE");
    if (file.empty() && !get(env, "HOME").empty()) file = get(env, "HOME") + "/.aws/credentials";
    std::string profile = overrides.profile;
    if (profile.empty()) profile = get(env, "AWS_PROFILE");
    if (profile.empty()) profile = "default";
    if (file.empty()) {
      return invalid(
          "S3 credentials: none found (set AWS_ACCESS_KEY_ID and "
          "AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE)");
    }
    auto text = fs::read_file(file);
    if (!text) {
      return invalid("S3 credentials: none found (" +
                     std::string(file_by_setting ? "the settings name a credentials file or "
                                                   "profile, and "
                                                 : "AWS_ACCESS_KEY_ID is not set and ") +
                     file + " cannot be read: " + text.error().message + ")");
    }
    auto creds = parse_credentials_file(*text, profile);
    if (!creds) return invalid(file + ": " + creds.error().message);
    config.credentials = *creds;
  }
  if (auto st = validate_config(config); !st) return st.error();
  return config;
}

}  // namespace endure::s3
