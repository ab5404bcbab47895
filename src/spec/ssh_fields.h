// The rules for the fields that name a machine endured reaches over SSH: a host in a pool
// file, the cluster's shared file server in a spec. One wording for both.
#pragma once

#include <optional>
#include <string>

namespace endure::spec {

// A hostname (RFC 1123). Names go into ssh's arguments and power commands: letters,
// digits and the punctuation of names only, never a leading '-' (an option to ssh).
bool valid_hostname(const std::string& s);
// A hostname or an IP address.
bool valid_address(const std::string& s);
// A login name ([a-z_][a-z0-9_-]*, at most 32).
bool valid_user(const std::string& s);
inline constexpr const char* kUserRule = "must be a user name ([a-z_][a-z0-9_-]*, at most 32)";

// Why key is neither a public SSH key ("ssh-ed25519 AAAA...", from the machine's
// /etc/ssh/ssh_host_*_key.pub) nor its SHA256: fingerprint; nullopt when it is one.
std::optional<std::string> check_host_key(const std::string& key);

}  // namespace endure::spec
