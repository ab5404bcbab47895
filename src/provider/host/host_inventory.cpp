#include "provider/host/host_inventory.h"

#include <map>

#include "api/wire.h"

namespace endure::provider {

namespace {

using S = HostState;

// The one table of host changes.
const std::map<S, std::vector<S>>& next_states() {
  static const std::map<S, std::vector<S>> table = {
      {S::kAvailable, {S::kBootstrapping}},
      {S::kBootstrapping, {S::kInUse, S::kAvailable, S::kQuarantined}},
      {S::kInUse, {S::kAvailable, S::kQuarantined}},
      {S::kQuarantined, {S::kAvailable}},
  };
  return table;
}

}  // namespace

bool serves_a_node(HostState s) { return s == S::kBootstrapping || s == S::kInUse; }

const char* to_string(HostState s) {
  switch (s) {
    case S::kAvailable:
      return "Available";
    case S::kBootstrapping:
      return "Bootstrapping";
    case S::kInUse:
      return "InUse";
    case S::kQuarantined:
      return "Quarantined";
  }
  return "Unknown";
}

std::optional<HostState> host_state_from(const std::string& name) {
  for (S s : {S::kAvailable, S::kBootstrapping, S::kInUse, S::kQuarantined}) {
    if (name == to_string(s)) return s;
  }
  return std::nullopt;
}

Status check_host_change(HostState from, HostState to) {
  const auto& allowed = next_states().at(from);
  for (S s : allowed) {
    if (s == to) return {};
  }
  std::string list;
  for (S s : allowed) list += (list.empty() ? "" : ", ") + std::string(to_string(s));
  return make_error(api::kConflictException, std::string("a host cannot go from ") +
                                                 to_string(from) + " to " + to_string(to) +
                                                 " (from " + to_string(from) + ": " + list + ")");
}

std::optional<std::size_t> pick_host(const std::vector<HostRecord>& records,
                                     const std::string& pool, const std::set<std::string>& tried) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const HostRecord& r = records[i];
    if (r.pool == pool && r.state == S::kAvailable && !tried.count(r.host.ssh.name)) return i;
  }
  return std::nullopt;
}

Result<std::vector<HostRecord>> merge_registration(const std::vector<HostRecord>& known,
                                                   const std::vector<HostPool>& pools) {
  std::map<std::string, const HostRecord*> by_name;
  for (const auto& r : known) by_name[r.host.ssh.name] = &r;
  std::vector<HostRecord> merged;
  std::set<std::string> listed;
  for (const auto& pool : pools) {
    for (const auto& host : pool.hosts) {
      listed.insert(host.ssh.name);
      auto it = by_name.find(host.ssh.name);
      if (it == by_name.end()) {
        merged.push_back({host, pool.name, S::kAvailable, "", "", ""});
        continue;
      }
      HostRecord r = *it->second;
      if (r.pool != pool.name && serves_a_node(r.state)) {
        return make_error(api::kResourceInUse, "host " + host.ssh.name + " serves node " +
                                                   r.instance_id + "; it cannot move from pool " +
                                                   r.pool + " to " + pool.name +
                                                   " until it is released");
      }
      r.host = host;
      r.pool = pool.name;
      merged.push_back(std::move(r));
    }
  }
  for (const auto& r : known) {
    if (listed.count(r.host.ssh.name) || !serves_a_node(r.state)) continue;
    return make_error(api::kResourceInUse, "host " + r.host.ssh.name + " (pool " + r.pool +
                                               ") serves node " + r.instance_id +
                                               "; it cannot leave the pool file until released");
  }
  return merged;
}

store::HostRow to_row(const HostRecord& r, int position) {
  const SshTarget& t = r.host.ssh;
  json registration = {{"HostName", t.name},
                       {"Address", t.address},
                       {"Port", t.port},
                       {"User", t.user},
                       {"IdentityFile", t.identity_file.string()},
                       {"HostKey", t.host_key}};
  if (!r.host.power_command.empty()) registration["PowerCommand"] = r.host.power_command;
  return {t.name,        r.pool,   position, registration, to_string(r.state), r.cluster_id,
          r.instance_id, r.reason, 0};
}

Result<HostRecord> from_row(const store::HostRow& row) {
  auto state = host_state_from(row.state);
  // The registration is read as the pool file's entry it came from: the same rules hold.
  auto pools =
      parse_host_pools({{"Pools", {{{"PoolName", row.pool}, {"Hosts", {row.registration}}}}}});
  if (!state || !pools) {
    return make_error(api::kInternalFailure,
                      "host " + row.name + ": stored record does not read: " +
                          (state ? pools.error().message : "state " + row.state));
  }
  return HostRecord{(*pools)[0].hosts[0], row.pool,        *state,
                    row.cluster_id,       row.instance_id, row.reason};
}

}  // namespace endure::provider
