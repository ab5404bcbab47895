#include "controller/nodes/logical_ids.h"

#include <algorithm>

#include "common/ids.h"

namespace endure::controller {

std::string new_logical_id(const std::string& node_name) {
  return node_name + "-" + ids::random_hex(8);
}

json logical_ids_for(const json& ids, const spec::ClusterLayout& layout) {
  json out = json::object();
  for (const auto& n : layout.nodes) {
    auto kept = ids.find(n.node_name);
    out[n.node_name] = kept != ids.end() && kept->is_string() ? kept->get<std::string>()
                                                              : new_logical_id(n.node_name);
  }
  return out;
}

Result<json> sync_logical_ids(store::Store& store, const store::ClusterRow& cluster,
                              const spec::ClusterLayout& layout) {
  // The same slots (node names are unique in a layout): nothing to write.
  if (cluster.logical_ids.size() == layout.nodes.size() &&
      std::all_of(layout.nodes.begin(), layout.nodes.end(),
                  [&](const auto& n) { return cluster.logical_ids.contains(n.node_name); })) {
    return cluster.logical_ids;
  }
  // Read again inside the transaction: BatchAddClusterNodes may have given ids meanwhile.
  json stored;
  Status s = store.mutate_cluster(cluster.id, [&](store::ClusterRow& c) -> Status {
    c.logical_ids = logical_ids_for(c.logical_ids, layout);
    stored = c.logical_ids;
    return {};
  });
  if (!s) return s.error();
  return stored;
}

}  // namespace endure::controller
