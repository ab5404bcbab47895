// Deterministic weight initialisation, the same on every machine and thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace endure::model {

// p[i] = stdev * z_i, z_i standard normal from Box-Muller on two uniforms drawn by
// splitmix64 from (seed, tensor, i): a counter-based stream, so any element is computable
// alone and the fill can run in parallel.
void fill_normal(float* p, size_t n, float stdev, uint64_t seed, uint64_t tensor);

}  // namespace endure::model
