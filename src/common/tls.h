// endured's own certificate authority: made at first start, kept in ENDURE_HOME/tls, and
// given to each host at bootstrap so that its agent can pin it. The server certificate it
// signs names every address agents may use to reach endured.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace endure::tls {

struct Files {
  std::filesystem::path ca_cert;      // ca.pem: what agents pin
  std::filesystem::path ca_key;       // ca.key, mode 0600
  std::filesystem::path server_cert;  // server.pem, signed by the CA
  std::filesystem::path server_key;   // server.key, mode 0600
};

// Makes the CA (once: an existing one is kept) and a server certificate for names (IP
// addresses and DNS names), made again when it lacks one of them or is not the CA's.
// Each file is written atomically; keys are P-256, never readable by others.
Result<Files> ensure_files(const std::filesystem::path& dir, const std::vector<std::string>& names);

// The addresses this machine answers on (every interface's IPv4 and IPv6 address, with
// localhost and the hostname): what a server certificate for endured names.
std::vector<std::string> machine_names();

}  // namespace endure::tls
