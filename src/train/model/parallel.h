// Static work partitions for OpenMP threads: the same split for the same thread count, so
// every result is bitwise reproducible.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>

namespace endure::model {

// Thread t's share [begin, end) of n items out of nt, the cut points on multiples of align.
struct Range {
  long begin, end;
  long size() const { return end - begin; }
};
inline Range split(long n, int nt, int t, long align = 1) {
  long units = (n + align - 1) / align;
  long per = units / nt, extra = units % nt;
  long b = t * per + std::min<long>(t, extra);
  long e = b + per + (t < extra ? 1 : 0);
  return {std::min(n, b * align), std::min(n, e * align)};
}

// Row blocks on multiples of 16 (the sgemm kernels' tile height).
inline constexpr long kRowAlign = 16;

}  // namespace endure::model
