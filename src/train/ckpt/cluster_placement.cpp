#include "train/ckpt/cluster_placement.h"

#include <algorithm>
#include <set>

namespace endure::ckpt {

std::vector<std::string> replica_nodes(const std::vector<StoreNode>& nodes, const std::string& own,
                                       int k) {
  std::vector<StoreNode> ring = nodes;
  std::sort(ring.begin(), ring.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  ring.erase(std::unique(ring.begin(), ring.end(),
                         [](const auto& a, const auto& b) { return a.name == b.name; }),
             ring.end());
  const std::vector<StoreNode> nodes_by_name = ring;
  // The ring from own's successor round to own's predecessor; own itself is never a pick.
  auto own_at = std::find_if(ring.begin(), ring.end(), [&](const auto& n) { return n.name == own; });
  std::set<std::string> groups, racks;
  int own_at_name_order = -1;
  std::string own_group;
  if (own_at != ring.end()) {
    own_at_name_order = static_cast<int>(own_at - ring.begin());
    own_group = own_at->group;
    groups.insert(own_at->group);
    racks.insert(own_at->rack);
    std::rotate(ring.begin(), own_at, ring.end());
    ring.erase(ring.begin());
  } else {
    auto after = std::upper_bound(ring.begin(), ring.end(), own,
                                  [](const std::string& name, const auto& n) { return name < n.name; });
    std::rotate(ring.begin(), after, ring.end());
  }

  // Own's place among its group's nodes: when only some nodes are preferred (another
  // group's), the group's nodes pick different ones of them, so no store takes every
  // replica of a group while another takes none.
  int own_index = 0;
  if (own_at_name_order >= 0)
    for (int i = 0; i < own_at_name_order; ++i) own_index += nodes_by_name[i].group == own_group;

  std::vector<std::string> picks;
  std::vector<bool> taken(ring.size(), false);
  while (static_cast<int>(picks.size()) < k && picks.size() < ring.size()) {
    auto score = [&](const StoreNode& n) {
      return (groups.count(n.group) ? 0 : 2) + (racks.count(n.rack) ? 0 : 1);
    };
    int best_score = -1;
    for (size_t i = 0; i < ring.size(); ++i)
      if (!taken[i]) best_score = std::max(best_score, score(ring[i]));
    std::vector<size_t> best, untaken;
    for (size_t i = 0; i < ring.size(); ++i) {
      if (taken[i]) continue;
      untaken.push_back(i);
      if (score(ring[i]) == best_score) best.push_back(i);
    }
    size_t pick = best.size() == untaken.size() ? best.front() : best[own_index % best.size()];
    taken[pick] = true;
    picks.push_back(ring[pick].name);
    groups.insert(ring[pick].group);
    racks.insert(ring[pick].rack);
    // Once every group (rack) holds a copy, a further copy may go to any of them.
    if (std::all_of(ring.begin(), ring.end(), [&](const auto& n) { return groups.count(n.group); }))
      groups.clear();
    if (std::all_of(ring.begin(), ring.end(), [&](const auto& n) { return racks.count(n.rack); }))
      racks.clear();
  }
  return picks;
}

}  // namespace endure::ckpt
