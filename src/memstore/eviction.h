// What a node's memory store drops to make room: whole steps, oldest first, and never a
// run's newest complete step or the two newest above it (being written). A step is complete
// in a store once its manifest is there; an unfinished one below those was given up. Whatever cannot be made to fit is refused
// rather than squeezed in: the store never holds more than its share of the node's memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace endure::memstore {

// One step of one run as a store holds it: its objects' bytes together, whether its
// manifest is there, and when it was last written to (what "oldest" means).
struct HeldStep {
  std::string run;
  int64_t step = 0;
  uint64_t bytes = 0;
  bool complete = false;
  int64_t written_ns = 0;
  bool operator==(const HeldStep&) const = default;
};

// Whether `s` may go: neither its run's newest complete step nor one of the two newest
// above it.
bool evictable(const HeldStep& s, const std::vector<HeldStep>& held);

// The steps to drop, oldest first, so that `incoming` more bytes fit within `capacity`
// with `used` held now (reserved writes included); none when they fit already. Nothing
// when even every evictable step gone leaves too little room.
std::optional<std::vector<HeldStep>> evict_for(const std::vector<HeldStep>& held, uint64_t used,
                                               uint64_t capacity, uint64_t incoming);

}  // namespace endure::memstore
