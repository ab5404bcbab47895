#include "provider/host/host_bootstrap.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <map>
#include <sstream>

#include "api/node_contract.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "provider/host/agent_unit.h"

namespace endure::provider {

namespace {

using namespace std::chrono_literals;

const char* const kPrograms[] = {"endure-agent", "endure-auto-resume", "endure-fsx", "endure-memstore"};
const char* const kLibraries[] = {"auto_resume.so"};
constexpr const char* kServiceScript = "/opt/endure/bin/endure-agent-service";
constexpr const char* kServicePid = kHostServicePidFile;
constexpr const char* kAgentLog = kHostAgentLog;
constexpr const char* kRcLocal = "/etc/rc.local";
constexpr const char* kUnitPath = "/etc/systemd/system/endure-agent.service";
constexpr const char* kBlockBegin = "# endure: begin (written by endured; do not edit)";
constexpr const char* kBlockEnd = "# endure: end";
// The host's own files that a node's files replace (outside /opt/endure) are kept here,
// listed in kWrittenList, and put back when the host is cleaned.
constexpr const char* kSavedDir = "/opt/endure/saved";
constexpr const char* kWrittenList = "/opt/endure/written.list";
// Host files the base lifecycle scripts replace (the cluster's munge key, srun's
// auto-resume plugin): kept likewise.
constexpr const char* kLifecycleReplaces[] = {"/etc/munge/munge.key",
                                              "/etc/slurm/plugstack.conf.d/auto_resume.conf"};

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// Path → sha256 of the files already on the host (absent ones are left out).
std::map<std::string, std::string> hashes_on_host(SshClient& ssh,
                                                  const std::vector<std::string>& paths) {
  std::string cmd = "sha256sum";
  for (const auto& p : paths) cmd += " '" + p + "'";
  cmd += " 2>/dev/null || true";
  std::map<std::string, std::string> out;
  std::istringstream lines(ssh.run(cmd, 60s).out);
  std::string hash, path;
  while (lines >> hash >> path) out[path] = hash;
  return out;
}

Status copy_software(SshClient& ssh, const NodeSoftware& software) {
  std::vector<std::pair<std::filesystem::path, std::string>> wanted;  // local, on the host
  for (const char* p : kPrograms) {
    wanted.push_back({software.bin_dir / p, std::string(node::kBinDir) + "/" + p});
  }
  for (const char* l : kLibraries) {
    wanted.push_back({software.lib_dir / l, std::string(node::kLibDir) + "/" + l});
  }
  std::vector<std::string> remote;
  for (const auto& w : wanted) remote.push_back(w.second);
  auto present = hashes_on_host(ssh, remote);
  for (const auto& [local, there] : wanted) {
    auto bytes = fs::read_file(local);
    if (!bytes) return bytes.error();
    if (present[there] == sha256_hex(*bytes)) continue;  // already there: not sent again
    if (auto s = ssh.write_file(there, *bytes, 0755); !s) return s;
  }
  return {};
}

Status copy_lifecycle(SshClient& ssh, const std::filesystem::path& source) {
  if (source.empty()) return {};
  process::Options o;
  o.timeout = 60s;
  auto archive = process::run({"tar", "-C", source.string(), "-cf", "-", "."}, o);
  if (archive.exit_code != 0) {
    return make_error("BootstrapFailed", "tar " + source.string() + ": " + archive.err);
  }
  std::string dir = node::kLifecycleDir;
  auto out = ssh.run(fmt::format("rm -rf '{0}.new' && mkdir -p '{0}.new' && tar -C '{0}.new' "
                                 "-xf - && rm -rf '{0}' && mv '{0}.new' '{0}'",
                                 dir),
                     120s, archive.out);
  if (out.exit_code != 0) return ssh.failure("copy the lifecycle scripts", out);
  return {};
}

// The boot service: a systemd unit where systemd is the host's init, else a block in
// /etc/rc.local that starts the supervisor script.
Status install_service(SshClient& ssh) {
  if (auto s = ssh.write_file(kServiceScript, agent_service_script(), 0755); !s) return s;
  std::string script = fmt::format(
      "set -e\n"
      "if [ -d /run/systemd/system ]; then\n"
      "  cat > {unit_path}.new && mv {unit_path}.new {unit_path}\n"
      "  systemctl daemon-reload && systemctl enable --now endure-agent.service\n"
      "  exit 0\n"
      "fi\n"
      "cat >/dev/null\n"
      // The block goes right after the interpreter line: the host's own lines (an exit 0 at
      // their end, say) stay as they are, and run after it.
      "[ -f {rc} ] || printf '#!/bin/sh\\n' > {rc}\n"
      "sed -i '/^{begin}$/,/^{end}$/d' {rc}\n"
      "block=$(printf '%s\\n%s\\n%s' '{begin}' '{service} start' '{end}')\n"
      "if head -n1 {rc} | grep -q '^#!'; then\n"
      "  {{ head -n1 {rc}; echo \"$block\"; tail -n +2 {rc}; }} > {rc}.new\n"
      "else\n"
      "  {{ echo '#!/bin/sh'; echo \"$block\"; cat {rc}; }} > {rc}.new\n"
      "fi\n"
      "chmod 755 {rc}.new && mv {rc}.new {rc}\n"
      "{service} start\n",
      fmt::arg("unit_path", kUnitPath), fmt::arg("rc", kRcLocal), fmt::arg("begin", kBlockBegin),
      fmt::arg("end", kBlockEnd), fmt::arg("service", kServiceScript));
  auto out = ssh.run(script, 60s, kAgentUnit);
  if (out.exit_code != 0) return ssh.failure("install the agent's boot service", out);
  return {};
}

}  // namespace

std::string agent_service_script() {
  return fmt::format(
      "#!/bin/sh\n"
      "# endure's agent on a host without systemd: started at boot from /etc/rc.local, and\n"
      "# started again (with --restarted: the same boot) whenever it exits.\n"
      "pidfile={pid}\n"
      "case \"$1\" in\n"
      "start)\n"
      "  if [ -f \"$pidfile\" ] && kill -0 \"$(cat \"$pidfile\")\" 2>/dev/null; then exit 0; fi\n"
      "  setsid \"$0\" run </dev/null >>{log} 2>&1 &\n"
      "  echo $! > \"$pidfile\"\n"
      "  ;;\n"
      "run)\n"
      "  flag=\n"
      "  while :; do\n"
      "    {bin}/endure-agent --config {config} $flag &\n"
      "    echo $! > {agent_pid}\n"
      "    wait $!\n"
      "    flag=--restarted\n"
      "    sleep 1\n"
      "  done\n"
      "  ;;\n"
      "*) echo \"usage: $0 start\" >&2; exit 2 ;;\n"
      "esac\n",
      fmt::arg("pid", kServicePid), fmt::arg("log", kAgentLog), fmt::arg("bin", node::kBinDir),
      fmt::arg("config", node::kAgentConfigPath), fmt::arg("agent_pid", node::kAgentPidFile));
}

// The node's folders, and a copy of every host file the node's files will replace (taken
// once: a bootstrap run again keeps the host's original, not endure's).
Status prepare_host(SshClient& ssh, const LaunchRequest& request) {
  std::string script = "set -e\n";
  for (const char* d : node::kNodeFolders) script += "mkdir -p " + shell_quote(d) + "\n";
  script += fmt::format("mkdir -p {0}; touch {1}\n", kSavedDir, kWrittenList);
  // The mount point of the cluster's /fsx: made here when the host has none, and listed so
  // that cleaning removes it again.
  script += fmt::format("if [ ! -e {0} ]; then mkdir {0}; echo {0} >> {1}; fi\n",
                        node::kSharedFsPath, kWrittenList);
  std::string prefix = std::string(node::kEndureDir) + "/";
  std::vector<std::string> replaced(std::begin(kLifecycleReplaces), std::end(kLifecycleReplaces));
  for (const auto* files : {&request.files, &request.secret_files}) {
    for (const auto& [path, content] : *files) {
      if (path.rfind(prefix, 0) != 0) replaced.push_back(path);
    }
  }
  for (const auto& path : replaced) {
    script += fmt::format(
        "if ! grep -qxF {0} {1}; then\n"
        "  if [ -e {0} ]; then mkdir -p {2}$(dirname {0}); cp -a {0} {2}{0}; fi\n"
        "  echo {0} >> {1}\n"
        "fi\n",
        shell_quote(path), kWrittenList, kSavedDir);
  }
  auto out = ssh.run(script, 60s);
  if (out.exit_code != 0) return ssh.failure("prepare the node's folders", out);
  return {};
}

Status bootstrap_host(SshClient& ssh, const NodeSoftware& software, const LaunchRequest& request,
                      const std::string& endure_ca_pem) {
  if (auto s = ssh.connect(); !s) return s;
  if (auto s = copy_software(ssh, software); !s) return s;
  if (auto s = prepare_host(ssh, request); !s) return s;
  for (const auto& [path, content] : request.files) {
    if (auto s = ssh.write_file(path, content, 0644); !s) return s;
  }
  for (const auto& [path, content] : request.secret_files) {
    if (auto s = ssh.write_file(path, content, 0400); !s) return s;
  }
  if (auto s = ssh.write_file(node::kEndureCaPath, endure_ca_pem, 0644); !s) return s;
  if (auto s = copy_lifecycle(ssh, request.lifecycle_source); !s) return s;
  crash_point("host.bootstrap.before_service");
  return install_service(ssh);
}

Status clean_host(SshClient& ssh) {
  // Every process endure started: the agent's service (and so the agent), then the daemons
  // the lifecycle scripts started, by the pid files they keep; then endure's files.
  std::string script = fmt::format(
      "if [ -d /run/systemd/system ] && [ -f {unit} ]; then\n"
      "  systemctl disable --now endure-agent.service >/dev/null 2>&1 || true\n"
      "  rm -f {unit}; systemctl daemon-reload\n"
      "fi\n"
      // /fsx first, by the mount table (a mount whose server died fails every stat), then
      // its server and the rest by their pid files.
      "grep -q ' {fsx} ' /proc/self/mountinfo && umount -l {fsx}\n"
      "for f in {service_pid} {agent_pid} {fsx_pid} /run/slurm/*.pid /run/munge/*.pid; do\n"
      "  [ -f \"$f\" ] && kill -9 \"$(cat \"$f\")\" 2>/dev/null\n"
      "  rm -f \"$f\"\n"
      "done\n"
      // What the agent's /fsx probe left under the mount point before /fsx was mounted.
      "grep -q ' {fsx} ' /proc/self/mountinfo || rm -rf {fsx}/.endure-health\n"
      // The host's own files back where the node's were (or the node's removed).
      "if [ -f {written} ]; then\n"
      "  while IFS= read -r f; do\n"
      "    if [ -e \"{saved}$f\" ]; then cp -a \"{saved}$f\" \"$f\";\n"
      "    elif [ -d \"$f\" ]; then rmdir \"$f\" 2>/dev/null;\n"
      "    else rm -f \"$f\"; fi\n"
      "  done < {written}\n"
      "fi\n"
      "[ -f {rc} ] && sed -i '/^{begin}$/,/^{end}$/d' {rc}\n"
      "rm -rf {dir} {log}\n"
      "true\n",
      fmt::arg("unit", kUnitPath), fmt::arg("service_pid", kServicePid),
      fmt::arg("agent_pid", node::kAgentPidFile), fmt::arg("fsx_pid", node::kFsxPidFile),
      fmt::arg("rc", kRcLocal), fmt::arg("begin", kBlockBegin), fmt::arg("end", kBlockEnd),
      fmt::arg("dir", node::kEndureDir), fmt::arg("log", kAgentLog),
      fmt::arg("written", kWrittenList), fmt::arg("saved", kSavedDir),
      fmt::arg("fsx", node::kSharedFsPath));
  auto out = ssh.run(script, 60s);
  if (out.exit_code != 0) return ssh.failure("clean up endure", out);
  return {};
}

}  // namespace endure::provider
