#include "memstore/eviction.h"

#include <algorithm>
#include <map>

namespace endure::memstore {
namespace {

// What each run keeps: its newest complete step, and its two newest steps above it (the
// ones being written: a store takes its own node's ranks' copies and a peer's, which may be a step
// apart). An unfinished step below those was given up (a save that failed, a commit that
// never came): kept, it would fill the store and refuse every step after it.
struct Kept {
  int64_t complete = -1;
  int64_t newest[2] = {-1, -1};
  bool holds(int64_t step) const {
    return step == complete || (step > complete && (step == newest[0] || step == newest[1]));
  }
};

std::map<std::string, Kept> kept_of(const std::vector<HeldStep>& held) {
  std::map<std::string, Kept> kept;
  for (const auto& s : held) {
    Kept& k = kept[s.run];
    if (s.complete) k.complete = std::max(k.complete, s.step);
    if (s.step > k.newest[0]) {
      k.newest[1] = k.newest[0];
      k.newest[0] = s.step;
    } else if (s.step > k.newest[1] && s.step != k.newest[0]) {
      k.newest[1] = s.step;
    }
  }
  return kept;
}

}  // namespace

bool evictable(const HeldStep& s, const std::vector<HeldStep>& held) {
  return !kept_of(held)[s.run].holds(s.step);
}

std::optional<std::vector<HeldStep>> evict_for(const std::vector<HeldStep>& held, uint64_t used,
                                               uint64_t capacity, uint64_t incoming) {
  if (incoming > capacity) return std::nullopt;
  std::vector<HeldStep> drops;
  if (used + incoming <= capacity) return drops;
  auto kept = kept_of(held);
  std::vector<HeldStep> candidates;
  for (const auto& s : held)
    if (!kept[s.run].holds(s.step)) candidates.push_back(s);
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
