#include "provider/host/host_provider.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/node_contract.h"
#include "common/fs.h"
#include "common/log.h"
#include "provider/host/host_probe.h"
#include "s3/lifecycle_cache.h"

namespace endure::provider {

using namespace std::chrono_literals;

namespace {

constexpr auto kCheckTimeout = 10s;
constexpr auto kLookTimeout = 2s;  // one look at a host: the probe, running()
constexpr auto kRunningKeptFor = 1s;

Error not_on_hosts(const std::string& what) {
  return make_error("UnsupportedOperation", what + " is not available on registered hosts");
}

}  // namespace

HostProvider::HostProvider(HostRegistry& hosts, NodeSoftware software,
                           std::filesystem::path ca_file, std::filesystem::path cache_root)
    : hosts_(hosts),
      software_(std::move(software)),
      ca_file_(std::move(ca_file)),
      cache_root_(std::move(cache_root)) {}

bool HostProvider::holds(const std::string& cluster_id, const std::string& instance_id) {
  return hosts_.host_of(cluster_id, instance_id).has_value();
}

SshClient HostProvider::reach(const HostRecord& host) {
  SshClient ssh = hosts_.ssh(host);
  // Its key is recorded at the first connection (and again after a new registration); a
  // failure here shows in the call that follows.
  if (!ssh.trusted()) (void)ssh.connect(kLookTimeout);
  return ssh;
}

Result<HostRecord> HostProvider::host_for(const std::string& cluster_id,
                                          const std::string& instance_id) {
  auto host = hosts_.host_of(cluster_id, instance_id);
  if (!host) {
    return make_error("ProviderError", "instance " + instance_id + " has no registered host");
  }
  return std::move(*host);
}

Status HostProvider::quarantine(const HostRecord& host, const std::string& reason) {
  log::warn("host {} set aside: {}", host.host.ssh.name, reason);
  return hosts_.change(host.host.ssh.name, HostState::kQuarantined, reason);
}

Result<int> HostProvider::launch(const LaunchRequest& request) {
  auto host = hosts_.find(request.host_name);
  if (!host || host->instance_id != request.instance_id ||
      (host->state != HostState::kBootstrapping && host->state != HostState::kInUse)) {
    return make_error("ProviderError",
                      "host " + request.host_name + " is not claimed for " + request.instance_id);
  }
  auto ca = fs::read_file(ca_file_);
  if (!ca) return ca.error();
  // An s3:// source: the snapshot this cluster first ran, while its source stays the same.
  auto lifecycle_source = s3::pin_lifecycle_snapshot(
      cache_root_ / request.cluster_id / "lifecycle-pins", request.lifecycle_source);
  if (!lifecycle_source) return lifecycle_source.error();
  auto ssh = reach(*host);
  Status done = check_host_basics(ssh, kCheckTimeout);
  // A fresh boot: what an earlier attempt left (its agent, its lifecycle outcome) goes first.
  if (done) done = clean_host(ssh);
  if (done) {
    // The host keeps its own name resolution: nodes reach each other by Slurm's NodeAddr.
    LaunchRequest on_host = request;
    on_host.lifecycle_source = *lifecycle_source;
    std::erase_if(on_host.files, [](const auto& f) { return f.first == node::kHostsPath; });
    done = bootstrap_host(ssh, software_, on_host, *ca);
  }
  if (!done) {
    (void)quarantine(*host, done.error().message);
    return done.error();
  }
  if (auto s = hosts_.change(request.host_name, HostState::kInUse); !s) return s.error();
  {
    std::lock_guard lock(seen_mu_);
    seen_.erase(request.instance_id);
  }
  return std::max(1, pid(request.cluster_id, request.instance_id));
}

Result<int> HostProvider::reboot(const std::string& cluster_id, const std::string& instance_id) {
  auto host = host_for(cluster_id, instance_id);
  if (!host) return host.error();
  auto ssh = reach(*host);
  std::string command = power_command_for(host->host, "reset");
  process::Output out;
  if (command.empty()) {
    // No power command: the host reboots itself (the connection drops as it goes).
    out = ssh.run("nohup sh -c 'sleep 1; reboot' >/dev/null 2>&1 &", kCheckTimeout);
  } else {
    process::Options o;
    o.timeout = 60s;
    out = process::run({"/bin/sh", "-c", command}, o);
  }
  if (out.exit_code != 0) {
    return make_error("ProviderError", fmt::format("host {}: power reset failed ({}): {}",
                                                   host->host.ssh.name, out.exit_code, out.err));
  }
  {
    std::lock_guard lock(seen_mu_);
    seen_.erase(instance_id);
  }
  ssh.disconnect();
  // Not waited for here: the node is Rebooting until its agent reports its boot scripts,
  // within the reboot timeout, as a local node is.
  return 1;
}

Result<int> HostProvider::reimage(const std::string&, const std::string&) {
  return not_on_hosts("reimaging (UpdateClusterSoftware)");
}

bool HostProvider::running(const std::string& cluster_id, const std::string& instance_id) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(seen_mu_);
    auto it = seen_.find(instance_id);
    if (it != seen_.end() && now - it->second.at < kRunningKeptFor) return it->second.running;
  }
  auto host = hosts_.host_of(cluster_id, instance_id);
  bool up = false;
  if (host && host->state != HostState::kQuarantined) {
    auto ssh = reach(*host);
    auto seen = host_service_running(ssh, kLookTimeout);
    // A host in service that does not answer is not known to be gone (hung, or cut off):
    // its silence is judged as a hang, and the power command answers it. One that answers
    // without endure's service, or one not yet in service, is not running.
    up = seen ? *seen : host->state == HostState::kInUse;
  }
  std::lock_guard lock(seen_mu_);
  seen_[instance_id] = {now, up};
  return up;
}

NodeProbe HostProvider::probe(const std::string& cluster_id, const std::string& instance_id) {
  auto host = host_for(cluster_id, instance_id);
  if (!host) return {MachineState::kUnknown, AgentState::kUnknown, host.error().message};
  auto ssh = reach(*host);
  return probe_host(ssh, kLookTimeout);
}

Status HostProvider::restart_agent(const std::string& cluster_id, const std::string& instance_id) {
  auto host = host_for(cluster_id, instance_id);
  if (!host) return host.error();
  auto ssh = reach(*host);
  return restart_host_agent(ssh, kCheckTimeout);
}

int HostProvider::pid(const std::string& cluster_id, const std::string& instance_id) {
  auto host = hosts_.host_of(cluster_id, instance_id);
  if (!host) return 0;
  auto ssh = reach(*host);
  auto out = ssh.run(fmt::format("cat {}", node::kAgentPidFile), kLookTimeout);
  int pid = 0;
  if (out.exit_code == 0) pid = std::atoi(out.out.c_str());
  return pid > 0 ? pid : 0;
}

Status HostProvider::release(const std::string& cluster_id, const std::string& instance_id) {
  auto host = hosts_.host_of(cluster_id, instance_id);
  {
    std::lock_guard lock(seen_mu_);
    seen_.erase(instance_id);
  }
  // Released already, or set aside: a host set aside is cleaned when it is returned, so that
  // a dead one never holds up the node that replaces it.
  if (!host || host->state == HostState::kQuarantined) return {};
  auto ssh = reach(*host);
  Status cleaned = clean_host(ssh);
  ssh.disconnect();
  if (!cleaned) {
    return quarantine(*host, "did not answer when its node " + instance_id +
                                 " was stopped: " + cleaned.error().message);
  }
  return hosts_.change(host->host.ssh.name, HostState::kAvailable);
}

Status HostProvider::set_aside(const std::string& cluster_id, const std::string& instance_id,
                               const std::string& reason) {
  auto host = hosts_.host_of(cluster_id, instance_id);
  if (!host || host->state == HostState::kQuarantined) return {};
  return quarantine(*host, reason);
}

Status HostProvider::terminate(const std::string& cluster_id, const std::string& instance_id) {
  // What stays of a stopped node on a host is the host: its files go with endure's service.
  return release(cluster_id, instance_id);
}

Status HostProvider::destroy(const std::string& cluster_id, const std::string& instance_id) {
  Status s = release(cluster_id, instance_id);
  std::error_code ec;
  std::filesystem::remove_all(cache_root_ / cluster_id / instance_id, ec);
  return s;
}

Status HostProvider::write_file(const std::string& cluster_id, const std::string& instance_id,
                                const std::string& path_in_node, const std::string& content) {
  if (path_in_node == node::kHostsPath) return {};  // the host's own, as at launch
  auto host = host_for(cluster_id, instance_id);
  if (!host) return host.error();
  auto ssh = reach(*host);
  return ssh.write_file(path_in_node, content, 0644);
}

process::Output HostProvider::exec(const std::string& cluster_id, const std::string& instance_id,
                                   const std::vector<std::string>& argv,
                                   std::chrono::milliseconds timeout) {
  auto host = host_for(cluster_id, instance_id);
  if (!host) return {255, false, "", host.error().message};
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + shell_quote(a);
  auto ssh = reach(*host);
  return ssh.run(command, timeout);
}

std::filesystem::path HostProvider::lifecycle_log(const std::string& cluster_id,
                                                  const std::string& instance_id) {
  auto copy = cache_root_ / cluster_id / instance_id / "lifecycle.log";
  auto host = hosts_.host_of(cluster_id, instance_id);
  if (!host || host->state == HostState::kQuarantined) return copy;
  auto ssh = reach(*host);
  auto out = ssh.run(fmt::format("cat {}", node::kLifecycleLog), kLookTimeout);
  if (out.exit_code == 0 && fs::make_dirs(copy.parent_path(), 0700)) {
    log::ok(fs::atomic_write_file(copy, out.out, 0600), "copy " + instance_id + "'s lifecycle log");
  }
  return copy;
}

std::string HostProvider::boot_diagnostics(const std::string& cluster_id,
                                           const std::string& instance_id) {
  auto host = host_for(cluster_id, instance_id);
  if (!host) return host.error().message;
  auto ssh = reach(*host);
  auto out = ssh.run(fmt::format("tail -n 5 {}", kHostAgentLog), kLookTimeout);
  if (out.exit_code != 0) return ssh.failure("read the agent's log", out).message;
  return out.out;
}

std::vector<std::string> HostProvider::instance_ids(const std::string& cluster_id) {
  std::vector<std::string> out;
  auto records = hosts_.list();
  if (!records) return out;
  for (const auto& r : *records) {
    // A host set aside no longer holds a node of the cluster (it is cleaned on return).
    if (serves_a_node(r.state) && r.cluster_id == cluster_id) {
      out.push_back(r.instance_id);
    }
  }
  return out;
}

Status HostProvider::remove_cluster(const std::string& cluster_id) {
  std::error_code ec;
  std::filesystem::remove_all(cache_root_ / cluster_id, ec);
  return {};
}

Result<std::filesystem::path> HostProvider::resolve_lifecycle_source(const std::string& field,
                                                                     const std::string&,
                                                                     const std::string&) {
  return make_error("ProviderError", field + ": resolved by the local provider");
}

}  // namespace endure::provider
