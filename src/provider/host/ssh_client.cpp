#include "provider/host/ssh_client.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <sstream>
#include <system_error>

#include "common/fs.h"

namespace endure::provider {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

using namespace std::chrono_literals;

long seconds_at_least_one(std::chrono::milliseconds t) {
  return std::max<long>(1, static_cast<long>((t.count() + 999) / 1000));
}

bool mentions(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

bool is_fingerprint(const std::string& host_key) { return host_key.rfind("SHA256:", 0) == 0; }

SshClient::SshClient(SshTarget target, std::filesystem::path state_dir)
    : target_(std::move(target)),
      state_dir_(std::move(state_dir)),
      known_hosts_(state_dir_ / "known_hosts") {}

std::vector<std::string> SshClient::ssh_argv(std::chrono::milliseconds timeout) const {
  return {"ssh",
          "-F",
          "/dev/null",  // the operator's own ssh config has no say
          "-p",
          std::to_string(target_.port),
          "-i",
          target_.identity_file.string(),
          "-o",
          "IdentitiesOnly=yes",
          "-o",
          "BatchMode=yes",
          "-o",
          "StrictHostKeyChecking=yes",
          "-o",
          "UserKnownHostsFile=" + known_hosts_.string(),
          "-o",
          "GlobalKnownHostsFile=/dev/null",
          "-o",
          "CheckHostIP=no",
          "-o",
          "ControlMaster=auto",
          "-o",
          "ControlPath=" + (state_dir_ / "cm").string(),
          "-o",
          "ControlPersist=60",
          "-o",
          "ConnectTimeout=" + std::to_string(seconds_at_least_one(timeout)),
          "-o",
          "ServerAliveInterval=5",
          "-o",
          "ServerAliveCountMax=2",
          "-o",
          "LogLevel=ERROR",
          "-l",
          target_.user,
          target_.address,
          "--"};
}

Error SshClient::failure(const std::string& what, const process::Output& out) const {
  std::string where = fmt::format("host {} ({}:{})", target_.name, target_.address, target_.port);
  if (mentions(out.err, "Host key verification failed") ||
      mentions(out.err, "REMOTE HOST IDENTIFICATION HAS CHANGED") ||
      mentions(out.err, "host key for")) {
    return make_error("HostKeyMismatch",
                      where +
                          ": its SSH host key is not the one registered for it; refusing "
                          "to connect (register the host's new key if it was reinstalled)");
  }
  if (out.timed_out) return make_error("HostUnreachable", where + ": " + what + " timed out");
  std::string err = out.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  if (out.exit_code == 255) {
    return make_error("HostUnreachable", where + ": " + what + ": " + err);
  }
  return make_error("HostCommandFailed",
                    fmt::format("{}: {} exited with {}: {}", where, what, out.exit_code, err));
}

Status SshClient::connect(std::chrono::milliseconds timeout) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  if (ec) return make_error("ProviderError", "create " + state_dir_.string() + ": " + ec.message());
  ::chmod(state_dir_.c_str(), 0700);
  std::string host =
      target_.port == 22 ? target_.address : fmt::format("[{}]:{}", target_.address, target_.port);
  std::string key_line;
  if (!is_fingerprint(target_.host_key)) {
    // "type base64 [comment]": the comment is not part of the identity.
    std::istringstream parts(target_.host_key);
    std::string type, blob;
    parts >> type >> blob;
    key_line = type + " " + blob;
  } else {
    // Only a fingerprint is registered: take the key the host offers if, and only if, it
    // has that fingerprint; the connection below then holds the host to that key.
    process::Options o;
    o.timeout = timeout;
    auto scan = process::run({"ssh-keyscan", "-T", std::to_string(seconds_at_least_one(timeout)),
                              "-p", std::to_string(target_.port), target_.address},
                             o);
    std::istringstream lines(scan.out);
    std::string line;
    bool offered = false;
    while (std::getline(lines, line)) {
      std::istringstream parts(line);
      std::string name, type, blob;
      if (!(parts >> name >> type >> blob)) continue;
      offered = true;
      process::Options in;
      in.stdin_data = type + " " + blob + "\n";
      auto fp = process::run({"ssh-keygen", "-l", "-E", "sha256", "-f", "-"}, in);
      std::istringstream fields(fp.out);
      std::string bits, fingerprint;
      if (fields >> bits >> fingerprint && fingerprint == target_.host_key) {
        key_line = type + " " + blob;
        break;
      }
    }
    if (!offered) {
      return make_error("HostUnreachable",
                        fmt::format("host {} ({}:{}): offered no SSH host key within {} ms",
                                    target_.name, target_.address, target_.port, timeout.count()));
    }
    if (key_line.empty())
      return failure("connect", {255, false, "", "Host key verification failed"});
  }
  if (auto s = fs::atomic_write_file(known_hosts_, host + " " + key_line + "\n"); !s) return s;
  auto out = run("true", timeout);
  if (out.exit_code != 0) return failure("connect", out);
  return {};
}

bool SshClient::trusted() const { return std::filesystem::exists(known_hosts_); }

void SshClient::forget() {
  disconnect();
  std::error_code ec;
  std::filesystem::remove(known_hosts_, ec);
}

process::Output SshClient::run(const std::string& command, std::chrono::milliseconds timeout,
                               const std::string& stdin_data) {
  auto argv = ssh_argv(timeout);
  argv.push_back(command);
  process::Options o;
  o.timeout = timeout;
  o.stdin_data = stdin_data;
  return process::run(argv, o);
}

Status SshClient::write_file(const std::string& path, const std::string& content, int mode) {
  // The content goes through stdin: never in an argument list, a log or a process title.
  std::string q = shell_quote(path);
  std::string script = fmt::format(
      "set -e; d=$(dirname {0}); mkdir -p \"$d\"; t=$(mktemp \"$d/.endure.XXXXXX\"); "
      "trap 'rm -f \"$t\"' EXIT; cat >\"$t\"; chmod {1:o} \"$t\"; sync \"$t\"; mv -f \"$t\" {0}; "
      "trap - EXIT",
      q, mode);
  auto out = run(script, 60s, content);
  if (out.exit_code != 0) return failure("write " + path, out);
  return {};
}

void SshClient::disconnect() {
  auto argv = ssh_argv(5s);
  argv.erase(argv.end() - 1);  // "--"
  argv.insert(argv.begin() + 1, {"-O", "exit"});
  process::Options o;
  o.timeout = 5s;
  (void)process::run(argv, o);
}

}  // namespace endure::provider
