// What endure does with each registered host, as pure decisions: the states a host goes
// through, which host a new node gets, and how a new pool file merges with the hosts known.
// The store keeps the records; the host provider acts on these decisions.
//
//   Available ──pick──► Bootstrapping ──in service──► InUse ──released──► Available
//       ▲                    │ (released: Available)          │
//       │                    │ unreachable, failed            │ replaced (its verdict)
//       │                    ▼ bootstrap or basic checks      ▼
//       └──returned────── Quarantined ◄──────────────────────┘
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "provider/host/host_pool.h"
#include "store/store.h"

namespace endure::provider {

enum class HostState { kAvailable, kBootstrapping, kInUse, kQuarantined };
const char* to_string(HostState s);
std::optional<HostState> host_state_from(const std::string& name);

struct HostRecord {
  PoolHost host;
  std::string pool;
  HostState state = HostState::kAvailable;
  std::string cluster_id;  // Bootstrapping, InUse: whom it serves
  std::string instance_id;
  std::string reason;  // Quarantined: why it was set aside
};

// Bootstrapping or InUse: the host holds a node of a cluster.
bool serves_a_node(HostState s);

// Whether a host may go from one state to the other (the diagram above; staying is not a
// change). An error names both states and what may follow the first.
Status check_host_change(HostState from, HostState to);

// The host a new node of a group drawing from pool gets: the first Available one in the
// pool file's order that is not in tried (hosts already failed for this node); nullopt when
// the pool has none left.
std::optional<std::size_t> pick_host(const std::vector<HostRecord>& records,
                                     const std::string& pool, const std::set<std::string>& tried);

// A pool file registered again, merged with the hosts known: a new host is Available; a
// known one keeps its state and takes its new registration (address, key, power command);
// one no longer listed is dropped when Available or Quarantined, and refused (naming it)
// when it still serves a node. The pool a host is in may not change while it serves one.
Result<std::vector<HostRecord>> merge_registration(const std::vector<HostRecord>& known,
                                                   const std::vector<HostPool>& pools);

// A record as the store keeps it (position: its place in the pool file), and back; a row
// whose registration no longer reads is an error naming the host.
store::HostRow to_row(const HostRecord& record, int position);
Result<HostRecord> from_row(const store::HostRow& row);

}  // namespace endure::provider
