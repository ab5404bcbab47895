// The order an epoch visits windows in: a bijection on [0, n) keyed by 64 bits, computed
// per index in O(1) time and memory (a 4-round Feistel network on the next even power of
// two, cycle-walked into range), so a loader needs no permutation array however many
// windows there are, and its position is just an index.
#pragma once

#include <cstdint>

#include "train/data/mix.h"

namespace endure::data {

class WindowOrder {
 public:
  // REQUIRES: n > 0.
  WindowOrder(uint64_t n, uint64_t key) : n_(n) {
    int bits = 2;
    while (bits < 64 && (uint64_t{1} << bits) < n) ++bits;
    half_ = (bits + 1) / 2;
    mask_ = (uint64_t{1} << half_) - 1;
    SplitMix64 rng(key);
    for (auto& k : keys_) k = rng.next();
  }

  // The window visited i-th. REQUIRES: i < n.
  uint64_t operator()(uint64_t i) const {
    uint64_t x = permute(i);
    while (x >= n_) x = permute(x);  // i's cycle holds i, so it comes back under n
    return x;
  }

 private:
  uint64_t permute(uint64_t x) const {
    uint64_t left = x >> half_, right = x & mask_;
    for (uint64_t k : keys_) {
      uint64_t next = left ^ (splitmix64(right ^ k) & mask_);
      left = right;
      right = next;
    }
    return (left << half_) | right;
  }

  uint64_t n_;
  int half_;
  uint64_t mask_;
  uint64_t keys_[4];
};

}  // namespace endure::data
