#include "controller/nodes/memory_store_push.h"

#include <chrono>
#include <optional>
#include <string>

#include "api/node_contract.h"
#include "common/log.h"
#include "controller/core/transition.h"
#include "controller/nodes/node_bootstrap.h"

namespace endure::controller {

using namespace std::chrono_literals;

void push_memory_store_config(store::Store& store, provider::NodeProvider& provider,
                              const store::ClusterRow& cluster, const spec::ClusterSpec& spec) {
  const std::string setting = spec::memory_store_setting(spec.tiered_storage);
  if (setting == cluster.applied_memory_store) return;
  std::optional<std::string> content;
  if (spec::memory_tier_on(spec.tiered_storage)) {
    auto token = store.memory_store_token(cluster.id);
    if (!token) {
      log::error("{}: {}", cluster.name, token.error().message);
      return;
    }
    content = memory_store_config(cluster.name, spec, *token)->to_json().dump(2);
  }
  bool done = true;
  int nodes = 0;
  for (const auto& r : store.instances(cluster.id, true)) {
    if (r.pid == 0) continue;  // not launched yet: its launch writes the spec's file
    // A node coming back (a reboot under way) keeps its files: written once it is up. One
    // down for good (Failure, kept under NodeRecovery None) is left as it is.
    if (!provider.running(cluster.id, r.instance_id)) {
      if (r.status == api::NodeStatus::kPending) done = false;
      continue;
    }
    const std::string what =
        r.node_name + ": " + (content ? "write" : "remove") + " " + node::kMemoryStoreConfigPath;
    if (content) {
      done &= log::ok(
          provider.write_file(cluster.id, r.instance_id, node::kMemoryStoreConfigPath, *content),
          what);
    } else {
      auto out =
          provider.exec(cluster.id, r.instance_id, {"rm", "-f", node::kMemoryStoreConfigPath}, 10s);
      if (out.exit_code != 0) log::warn("{}: {}: {}", cluster.name, what, out.err);
      done &= out.exit_code == 0;
    }
    ++nodes;
  }
  if (!done) return;
  (void)transition(
      store, cluster, [&](store::ClusterRow& c) { c.applied_memory_store = setting; },
      "MemoryStoreConfigApplied",
      (content ? "memory_store.json (" + setting + ") written to "
               : std::string("memory_store.json removed from ")) +
          std::to_string(nodes) + " running nodes");
}

}  // namespace endure::controller
