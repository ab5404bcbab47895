// AdamW's elementwise update, one body for every path that runs it (the CPU backend's
// parallel loop, the optimizer's pieces that a checkpoint sees): the same expressions in the
// same build give the same floats, so that a state updated out of place in pieces is the one
// updated in place, bit for bit.
#pragma once

#include <cmath>
#include <cstddef>

#include "endure/model.h"

namespace endure::model {

// The step's scalars, as PyTorch's AdamW forms them (see include/endure/model.h).
struct AdamWScalars {
  float beta1, beta2, eps, bc2_sqrt;
  float decay;      // 1 - lr * weight_decay
  float step_size;  // lr / bc1
};

inline AdamWScalars adamw_scalars(float lr, float beta1, float beta2, float eps, float weight_decay,
                                  float bc1, float bc2_sqrt) {
  return {beta1, beta2, eps, bc2_sqrt, 1.0f - lr * weight_decay, lr / bc1};
}

// [0, n) of `in` into `out`, on the calling thread. Element i reads only index i of `in`
// before writing index i of `out`: in place is safe.
inline void adamw_range(AdamWSlice out, AdamWSlice in, const float* g, size_t n,
                        const AdamWScalars& s) {
  const float *p = in.p, *m = in.m, *v = in.v;
  float *po = out.p, *mo = out.m, *vo = out.v;
#pragma omp simd
  for (size_t i = 0; i < n; i++) {
    float mi = s.beta1 * m[i] + (1.0f - s.beta1) * g[i];
    float vi = s.beta2 * v[i] + (1.0f - s.beta2) * g[i] * g[i];
    mo[i] = mi;
    vo[i] = vi;
    float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    po[i] = p[i] * s.decay - s.step_size * mi / denom;
  }
}

}  // namespace endure::model
