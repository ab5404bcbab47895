// DebugInjectFault: makes a real fault on a node through the provider's fault drills (tests
// and drills), and records it in the event log. The verdict is left to detection.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "provider/node_provider.h"
#include "store/store.h"

namespace endure::controller {

class FaultInjector {
 public:
  FaultInjector(store::Store& store, provider::NodeProvider& provider)
      : store_(store), provider_(provider) {}

  // {ClusterName, NodeId, Kind} -> {NodeName, InstanceId, Kind, Description}
  Result<json> inject(const json& request);

 private:
  store::Store& store_;
  provider::NodeProvider& provider_;
};

}  // namespace endure::controller
