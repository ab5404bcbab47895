#include "memstore/eviction.h"

#include <algorithm>
#include <map>

namespace endure::memstore {
namespace {

std::map<std::string, int64_t> newest_complete(const std::vector<HeldStep>& held) {
  std::map<std::string, int64_t> newest;
  for (const auto& s : held)
    if (s.complete) newest[s.run] = std::max(newest.count(s.run) ? newest[s.run] : s.step, s.step);
  return newest;
}

}  // namespace

bool evictable(const HeldStep& s, const std::vector<HeldStep>& held) {
  auto newest = newest_complete(held);
  auto it = newest.find(s.run);
  return it != newest.end() && s.step < it->second;
}

std::optional<std::vector<HeldStep>> evict_for(const std::vector<HeldStep>& held, uint64_t used,
                                               uint64_t capacity, uint64_t incoming) {
  if (incoming > capacity) return std::nullopt;
  std::vector<HeldStep> drops;
  if (used + incoming <= capacity) return drops;
  auto newest = newest_complete(held);
  std::vector<HeldStep> candidates;
  for (const auto& s : held) {
    auto it = newest.find(s.run);
    if (it != newest.end() && s.step < it->second) candidates.push_back(s);
  }
  std::sort(candidates.begin(), candidates.end(), [](const HeldStep& a, const HeldStep& b) {
    return std::tie(a.written_ns, a.run, a.step) < std::tie(b.written_ns, b.run, b.step);
  });
  uint64_t freed = 0;
  for (const auto& s : candidates) {
    if (used - freed + incoming <= capacity) break;
    drops.push_back(s);
    freed += s.bytes;
  }
  if (used - freed + incoming > capacity) return std::nullopt;
  return drops;
}

}  // namespace endure::memstore
