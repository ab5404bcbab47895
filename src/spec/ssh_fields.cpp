#include "spec/ssh_fields.h"

#include <algorithm>
#include <regex>
#include <string_view>
#include <vector>

namespace endure::spec {

namespace {

const std::vector<std::string_view> kKeyTypes = {"ssh-ed25519",
                                                 "ecdsa-sha2-nistp256",
                                                 "ecdsa-sha2-nistp384",
                                                 "ecdsa-sha2-nistp521",
                                                 "ssh-rsa",
                                                 "sk-ssh-ed25519@openssh.com",
                                                 "sk-ecdsa-sha2-nistp256@openssh.com"};

bool matches(const std::string& s, const char* pattern) {
  return std::regex_match(s, std::regex(pattern));
}

}  // namespace

bool valid_hostname(const std::string& s) {
  return s.size() <= 253 && matches(s,
                                    "^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                                    "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$");
}

bool valid_address(const std::string& s) {
  return valid_hostname(s) || (s.find(':') != std::string::npos && matches(s, "^[0-9A-Fa-f:.]+$"));
}

bool valid_user(const std::string& s) { return matches(s, "^[a-z_][a-z0-9_-]{0,31}$"); }

std::optional<std::string> check_host_key(const std::string& key) {
  if (key.rfind("SHA256:", 0) == 0) {
    if (matches(key, "^SHA256:[A-Za-z0-9+/]{43}$")) return std::nullopt;
    return "a fingerprint is SHA256: and 43 base64 characters, as ssh-keygen -l prints it";
  }
  auto space = key.find(' ');
  std::string type = key.substr(0, space);
  if (std::find(kKeyTypes.begin(), kKeyTypes.end(), type) == kKeyTypes.end()) {
    return "must be the host's public key (\"ssh-ed25519 AAAA...\", from its "
           "/etc/ssh/ssh_host_*_key.pub) or its SHA256: fingerprint";
  }
  std::string rest = space == std::string::npos ? "" : key.substr(space + 1);
  std::string blob = rest.substr(0, rest.find(' '));
  if (!matches(blob, "^[A-Za-z0-9+/]{16,}={0,2}$")) {
    return "the key after " + type + " is not base64";
  }
  return std::nullopt;
}

}  // namespace endure::spec
