#include "train/ckpt/restore_order.h"

namespace endure::ckpt {

const char* name(Source source) {
  switch (source) {
    case Source::own_store: return "own node";
    case Source::peer_store: return "peer";
    case Source::disk: return "disk";
    case Source::s3: return "s3";
  }
  return "?";
}

std::vector<Candidate> restore_order(const std::string& own_node,
                                     const std::vector<std::string>& replica_nodes,
                                     const std::string& disk_dir, const std::string& s3_uri) {
  std::vector<Candidate> order;
  if (!own_node.empty()) {
    order.push_back({Source::own_store, own_node});
    for (const auto& peer : replica_nodes)
      if (peer != own_node) order.push_back({Source::peer_store, peer});
  }
  if (!disk_dir.empty()) order.push_back({Source::disk, disk_dir});
  if (!s3_uri.empty()) order.push_back({Source::s3, s3_uri});
  return order;
}

}  // namespace endure::ckpt
