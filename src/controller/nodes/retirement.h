// How an instance leaves, written once for every way it can: scale down, delete, a failure,
// a Replace, a lost warm spare. The provider's effect first (its machine set aside where a
// fault is to blame, then its files removed, or kept for a failure's log), then the row's
// change, then the health watch lets it go. A provider error leaves the row live, so
// nothing is orphaned: the caller's next pass tries again.
#pragma once

#include <string>
#include <utility>

#include "controller/core/health_monitor.h"
#include "controller/core/node_transitions.h"
#include "provider/node_provider.h"
#include "store/store.h"

namespace endure::controller {

struct Retirement {
  explicit Retirement(NodeChange row_change) : change(std::move(row_change)) {}
  NodeChange change;        // retire(), finish_replace() or lose_spare()
  bool keep_files = false;  // terminate (its files, its log kept) rather than destroy
  std::string set_aside;    // not empty: the provider sets its machine aside, for this reason
  const char* crash_point_after_effect = nullptr;  // the tests' crash point between the two
};

Status retire_instance(store::Store& store, provider::NodeProvider& provider, HealthMonitor& health,
                       const store::InstanceRow& row, const Retirement& how);

}  // namespace endure::controller
