#include "provider/host/host_registry.h"

#include <fmt/format.h>

#include <functional>

#include "api/wire.h"
#include "common/log.h"

namespace endure::provider {

HostRegistry::HostRegistry(store::Store& store, std::filesystem::path ssh_root)
    : store_(store), ssh_root_(std::move(ssh_root)) {}

std::vector<HostRecord> HostRegistry::read_all() {
  std::vector<HostRecord> out;
  for (const auto& row : store_.hosts()) {
    auto record = from_row(row);
    if (!record) {
      log::warn("{}", record.error().message);
      continue;
    }
    out.push_back(std::move(*record));
  }
  return out;
}

Result<std::vector<HostRecord>> HostRegistry::register_pools(const json& file) {
  auto pools = parse_host_pools(file);
  if (!pools) return pools.error();
  std::lock_guard lock(mu_);
  auto known = read_all();
  auto merged = merge_registration(known, *pools);
  if (!merged) return merged.error();
  // A host registered anew (another address, port or key) is checked against it again.
  for (const auto& old : known) {
    for (const auto& now : *merged) {
      const SshTarget &a = old.host.ssh, &b = now.host.ssh;
      if (a.name == b.name &&
          (a.address != b.address || a.port != b.port || a.host_key != b.host_key)) {
        ssh(old).forget();
      }
    }
  }
  std::vector<store::HostRow> rows;
  std::map<std::string, int> next_position;
  for (const auto& r : *merged) rows.push_back(to_row(r, next_position[r.pool]++));
  if (auto s = store_.replace_hosts(rows); !s) return s.error();
  return std::move(*merged);
}

Result<std::vector<HostRecord>> HostRegistry::list(const std::string& pool) {
  std::lock_guard lock(mu_);
  std::vector<HostRecord> out;
  for (auto& r : read_all()) {
    if (pool.empty() || r.pool == pool) out.push_back(std::move(r));
  }
  return out;
}

bool HostRegistry::has_pool(const std::string& pool) {
  for (const auto& row : store_.hosts()) {
    if (row.pool == pool) return true;
  }
  return false;
}

std::optional<HostRecord> HostRegistry::find(const std::string& name) {
  std::lock_guard lock(mu_);
  for (auto& r : read_all()) {
    if (r.host.ssh.name == name) return std::move(r);
  }
  return std::nullopt;
}

std::optional<HostRecord> HostRegistry::host_of(const std::string& cluster_id,
                                                const std::string& instance_id) {
  std::lock_guard lock(mu_);
  for (auto& r : read_all()) {
    if (r.state != HostState::kAvailable && r.cluster_id == cluster_id &&
        r.instance_id == instance_id) {
      return std::move(r);
    }
  }
  return std::nullopt;
}

Result<std::optional<HostRecord>> HostRegistry::claim(const std::string& pool,
                                                      const std::string& cluster_id,
                                                      const std::string& instance_id,
                                                      const std::set<std::string>& tried) {
  std::lock_guard lock(mu_);
  auto records = read_all();
  auto picked = pick_host(records, pool, tried);
  if (!picked) return std::optional<HostRecord>();
  HostRecord r = records[*picked];
  auto s = store_.mutate_host(r.host.ssh.name, [&](store::HostRow& row) -> Status {
    row.state = to_string(HostState::kBootstrapping);
    row.cluster_id = cluster_id;
    row.instance_id = instance_id;
    row.reason.clear();
    return {};
  });
  if (!s) return s.error();
  r.state = HostState::kBootstrapping;
  r.cluster_id = cluster_id;
  r.instance_id = instance_id;
  r.reason.clear();
  return std::optional<HostRecord>(std::move(r));
}

Status HostRegistry::change(const std::string& name, HostState to, const std::string& reason) {
  std::lock_guard lock(mu_);
  return store_.mutate_host(name, [&](store::HostRow& row) -> Status {
    auto from = host_state_from(row.state);
    if (!from) return make_error(api::kInternalFailure, "host " + name + ": state " + row.state);
    if (*from == to) return {};
    if (auto s = check_host_change(*from, to); !s) {
      return make_error(s.error().code, "host " + name + ": " + s.error().message);
    }
    row.state = to_string(to);
    if (to == HostState::kAvailable) {
      row.cluster_id.clear();
      row.instance_id.clear();
    }
    row.reason = to == HostState::kQuarantined ? reason : "";
    return {};
  });
}

Result<HostRecord> HostRegistry::return_host(
    const std::string& name, const std::function<Status(const HostRecord&)>& check) {
  auto record = find(name);
  if (!record) return make_error(api::kResourceNotFound, "host " + name + " is not registered");
  if (record->state != HostState::kQuarantined) {
    return make_error(api::kConflictException,
                      fmt::format("host {} is {}: only a Quarantined host can be returned", name,
                                  to_string(record->state)));
  }
  // Checked without the lock: a host that does not answer takes seconds to say so.
  if (Status checked = check(*record); !checked) {
    std::string reason = "failed basic checks on return: " + checked.error().message;
    std::lock_guard lock(mu_);
    log::ok(store_.mutate_host(name,
                               [&](store::HostRow& row) -> Status {
                                 if (row.state == to_string(HostState::kQuarantined)) {
                                   row.reason = reason;
                                 }
                                 return {};
                               }),
            "host registry");
    return make_error(api::kConflictException,
                      "host " + name + " stays Quarantined: " + checked.error().message);
  }
  if (auto s = change(name, HostState::kAvailable); !s) return s.error();
  auto now = find(name);
  if (!now) return make_error(api::kResourceNotFound, "host " + name + " is not registered");
  return std::move(*now);
}

SshClient HostRegistry::ssh(const HostRecord& record) const {
  // Named by a hash: a host name may be too long for the socket path (messages name the host).
  const std::string& name = record.host.ssh.name;
  return SshClient(
      record.host.ssh,
      ssh_root_ / fmt::format("{:012x}", std::hash<std::string>{}(name)&0xffffffffffffu));
}

std::filesystem::path ssh_state_root(const std::filesystem::path& home) {
  // Room for "/<12 hex digits>/cm" and ssh's temporary suffix on the socket (17 bytes).
  std::filesystem::path in_home = home / "ssh";
  if (in_home.string().size() <= 70) return in_home;
  return fmt::format("/run/endure-ssh-{:08x}",
                     std::hash<std::string>{}(home.string()) & 0xffffffffu);
}

}  // namespace endure::provider
