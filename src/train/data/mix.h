// Seeded randomness the data part uses where results must not depend on a library's
// generator: splitmix64 (Steele, Lea, Flood 2014), tiny and the same on every platform.
#pragma once

#include <cstdint>

namespace endure::data {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A 64-bit key from two (a seed and a purpose or an epoch).
inline uint64_t mix64(uint64_t a, uint64_t b) { return splitmix64(splitmix64(a) ^ b); }

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = splitmix64(state_);
    state_ += 0x9E3779B97F4A7C15ull;
    return z;
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace endure::data
