// endured's only way onto a host: OpenSSH's client, one reused connection per host, the
// host's identity checked against the key registered for it (never "accept new").
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "common/process.h"
#include "common/result.h"

namespace endure::provider {

struct SshTarget {
  std::string name;     // for messages ("gpu-07")
  std::string address;  // an IP address or DNS name
  int port = 22;
  std::string user = "root";
  std::filesystem::path identity_file;  // the private key endured logs in with
  // The host's SSH public key as its .pub file has it ("ssh-ed25519 AAAA..."), or its
  // fingerprint as ssh-keygen -l prints it ("SHA256:..."): one of the two.
  std::string host_key;
};

// s as one word of a POSIX shell command line.
std::string shell_quote(const std::string& s);

// "SHA256:..." fingerprints: a fingerprint rather than a key.
bool is_fingerprint(const std::string& host_key);

class SshClient {
 public:
  // state_dir: where the host's known_hosts and the connection's control socket live
  // (short: a unix socket path has at most 107 bytes).
  SshClient(SshTarget target, std::filesystem::path state_dir);

  // Makes the known_hosts entry from the registered key (for a fingerprint: the key the
  // host offers, checked against it) and connects once. Errors: HostKeyMismatch when the
  // host is not the one registered, HostUnreachable when it does not answer in time.
  Status connect(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Whether connect() has recorded the host's key here (the client's state outlives it).
  bool trusted() const;
  // Forgets the host's recorded key and ends the connection: the next connect() checks the
  // host against its registration again.
  void forget();

  // Runs a shell command on the host. exit_code 255 with timed_out false: ssh itself
  // failed (the error is in err).
  process::Output run(const std::string& command, std::chrono::milliseconds timeout,
                      const std::string& stdin_data = "");

  // Writes content to path on the host atomically (a temporary file renamed), with mode.
  Status write_file(const std::string& path, const std::string& content, int mode);

  // Ends the reused connection.
  void disconnect();

  const SshTarget& target() const { return target_; }
  // The host's known_hosts entry, once connect() has recorded it.
  const std::filesystem::path& known_hosts_file() const { return known_hosts_; }

  // What a failed run means, naming the host and what was being done: HostKeyMismatch,
  // HostUnreachable (ssh itself failed, or the deadline passed) or HostCommandFailed.
  Error failure(const std::string& what, const process::Output& out) const;

 private:
  std::vector<std::string> ssh_argv(std::chrono::milliseconds timeout) const;

  SshTarget target_;
  std::filesystem::path state_dir_;
  std::filesystem::path known_hosts_;
};

}  // namespace endure::provider
