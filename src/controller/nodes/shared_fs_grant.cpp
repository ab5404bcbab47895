#include "controller/nodes/shared_fs_grant.h"

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include "common/fs.h"
#include "common/log.h"
#include "common/process.h"
#include "provider/host/host_registry.h"
#include "provider/host/ssh_client.h"

namespace endure::controller {

namespace {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

constexpr auto kServerTimeout = 30s;

struct Paths {
  stdfs::path key, pub, known_hosts, granted;
};

Paths paths_of(const Config& config, const std::string& cluster_id) {
  stdfs::path dir = config.secrets_dir() / cluster_id;
  return {dir / "fsx_ed25519", dir / "fsx_ed25519.pub", dir / "fsx_known_hosts",
          dir / "fsx_granted"};
}

// What a grant was made for: a changed server or folder is granted again.
std::string grant_target(const spec::SharedFileSystemSpec& fs) {
  return fmt::format("{}@{}:{}:{}\n", fs.user, fs.dns_name, fs.port, fs.mount_name);
}

Error failed(const std::string& what) {
  return make_error("SharedFileSystemFailed", "SharedFileSystem: " + what);
}

provider::SshClient server(const Config& config, const std::string& cluster_id,
                           const spec::SharedFileSystemSpec& fs) {
  provider::SshTarget target;
  target.name = "file server " + fs.dns_name;
  target.address = fs.dns_name;
  target.port = fs.port;
  target.user = fs.user;
  target.identity_file = fs.identity_file;
  target.host_key = fs.host_key;
  // Named by a hash, as the hosts' are: the control socket's path is short.
  auto name =
      fmt::format("{:012x}", std::hash<std::string>{}("fsx:" + cluster_id) & 0xffffffffffffu);
  return provider::SshClient(target, provider::ssh_state_root(config.home) / name);
}

// The cluster's key pair, made once: the public half lands first, so a private key on
// disk always has its public key beside it.
Status ensure_key(const Paths& p, const std::string& cluster_id) {
  if (stdfs::exists(p.key) && stdfs::exists(p.pub)) return {};
  if (auto s = fs::make_dirs(p.key.parent_path(), 0700); !s) return s;
  stdfs::path fresh = p.key.string() + ".new";
  std::error_code ec;
  stdfs::remove(fresh, ec);
  stdfs::remove(fresh.string() + ".pub", ec);
  process::Options o;
  o.timeout = 30s;
  auto made = process::run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                            "endure:" + cluster_id, "-f", fresh.string()},
                           o);
  if (made.exit_code != 0) return failed("ssh-keygen for the cluster's key: " + made.err);
  stdfs::rename(fresh.string() + ".pub", p.pub, ec);
  if (!ec) stdfs::rename(fresh, p.key, ec);
  if (ec) return failed("keep the cluster's key: " + ec.message());
  return {};
}

// "type base64" of a public key file's line.
Result<std::string> key_blob(const stdfs::path& pub) {
  auto text = fs::read_file(pub);
  if (!text) return text.error();
  std::istringstream parts(*text);
  std::string type, blob;
  parts >> type >> blob;
  if (blob.empty()) return failed(pub.string() + " holds no key");
  return blob;
}

}  // namespace

Status grant_shared_fs(const Config& config, const std::string& cluster_id,
                       const spec::SharedFileSystemSpec& fs) {
  Paths p = paths_of(config, cluster_id);
  const std::string target = grant_target(fs);
  if (auto done = fs::read_file(p.granted); done && *done == target) return {};
  if (auto s = ensure_key(p, cluster_id); !s) return s;
  auto pub = fs::read_file(p.pub);
  if (!pub) return pub.error();
  auto ssh = server(config, cluster_id, fs);
  if (auto s = ssh.connect(kServerTimeout); !s) return failed(s.error().message);
  // The key may only speak sftp, started in the folder: it cannot run a command or forward.
  std::string script = fmt::format(
      "set -e\n"
      "mkdir -p {mount}\n"
      "umask 077\n"
      "mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys\n"
      "read -r type blob comment\n"
      "grep -qF \" $blob \" ~/.ssh/authorized_keys || "
      "echo \"restrict,command=\\\"internal-sftp -d {mount}\\\" $type $blob {comment}\" "
      ">> ~/.ssh/authorized_keys\n",
      fmt::arg("mount", fs.mount_name), fmt::arg("comment", "endure:" + cluster_id));
  auto out = ssh.run(script, kServerTimeout, *pub);
  ssh.disconnect();
  if (out.exit_code != 0) return failed(ssh.failure("let the cluster's key in", out).message);
  auto seen = fs::read_file(ssh.known_hosts_file());
  if (!seen) return seen.error();
  if (auto s = fs::atomic_write_file(p.known_hosts, *seen, 0644); !s) return s;
  log::info("{}: the cluster's key may mount {}:{}", cluster_id, fs.dns_name, fs.mount_name);
  return fs::atomic_write_file(p.granted, target, 0600);
}

Result<SharedFsAccess> shared_fs_access(const Config& config, const std::string& cluster_id) {
  Paths p = paths_of(config, cluster_id);
  auto key = fs::read_file(p.key);
  if (!key) return key.error();
  auto known = fs::read_file(p.known_hosts);
  if (!known) return known.error();
  return SharedFsAccess{*key, *known};
}

Status revoke_shared_fs(const Config& config, const std::string& cluster_id,
                        const spec::SharedFileSystemSpec& fs) {
  Paths p = paths_of(config, cluster_id);
  if (!stdfs::exists(p.granted)) return {};
  auto blob = key_blob(p.pub);
  if (!blob) return blob.error();
  auto ssh = server(config, cluster_id, fs);
  if (auto s = ssh.connect(kServerTimeout); !s) return failed(s.error().message);
  auto out = ssh.run(fmt::format("f=~/.ssh/authorized_keys\n"
                                 "[ -f \"$f\" ] || exit 0\n"
                                 "grep -vF ' {} ' \"$f\" > \"$f.endure\" || true\n"
                                 "chmod 600 \"$f.endure\" && mv \"$f.endure\" \"$f\"\n",
                                 *blob),
                     kServerTimeout);
  ssh.disconnect();
  if (out.exit_code != 0) return failed(ssh.failure("take the cluster's key out", out).message);
  std::error_code ec;
  stdfs::remove(p.granted, ec);
  return {};
}

}  // namespace endure::controller
