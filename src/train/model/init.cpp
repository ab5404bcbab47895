#include "train/model/init.h"

#include <cmath>

namespace endure::model {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// (0, 1]: 53 random bits, never 0 (log below)
double uniform(uint64_t key, uint64_t counter) {
  return ((splitmix64(key ^ splitmix64(counter)) >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace

void fill_normal(float* p, size_t n, float stdev, uint64_t seed, uint64_t tensor) {
  const uint64_t key = splitmix64(splitmix64(seed) + tensor);
  const double two_pi = 6.283185307179586476925286766559;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    double u1 = uniform(key, 2 * i), u2 = uniform(key, 2 * i + 1);
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
    p[i] = (float)(stdev * z);
  }
}

}  // namespace endure::model
