// RMSNorm (no bias, no mean): out = inp / sqrt(mean(inp^2) + eps) * weight.
#include <cmath>

#include "train/model/cpu_backend.h"
#include "train/model/parallel.h"

namespace endure::model {

// inp (N,C), weight (C) -> out (N,C), rstd (N)
void CpuBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                 int N, int C, float eps) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* x = inp + (size_t)n * C;
    float* y = out + (size_t)n * C;
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int c = 0; c < C; c++) ss += x[c] * x[c];
    float r = 1.0f / std::sqrt(ss / C + eps);
    rstd[n] = r;
#pragma omp simd
    for (int c = 0; c < C; c++) y[c] = x[c] * r * weight[c];
  }
}

// dout (N,C) -> dinp (N,C) +=, dweight (C) +=.
//   y = x r w, r = (mean(x^2) + eps)^-1/2
//   dx_i = r w_i dy_i - r^3 / C * x_i * sum_j dy_j w_j x_j;  dw_i = sum_n dy_i x_i r
// dweight: each thread sums its rows into its own partial, then the partials are added in
// thread order.
void CpuBackend::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                  const float* weight, const float* rstd, int N, int C) {
  float* partials = scratch(C);
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    float* dw = partials + (size_t)t * C;
    for (int c = 0; c < C; c++) dw[c] = 0.f;
    Range rows = split(N, nt, t);
    for (long n = rows.begin; n < rows.end; n++) {
      const float* x = inp + (size_t)n * C;
      const float* dy = dout + (size_t)n * C;
      float* dx = dinp + (size_t)n * C;
      float r = rstd[n];
      float dot = 0.f;
#pragma omp simd reduction(+ : dot)
      for (int c = 0; c < C; c++) dot += dy[c] * weight[c] * x[c];
      float k = r * r * r * dot / C;
#pragma omp simd
      for (int c = 0; c < C; c++) {
        dx[c] += r * weight[c] * dy[c] - k * x[c];
        dw[c] += dy[c] * x[c] * r;
      }
    }
#pragma omp barrier
    Range cols = split(C, nt, t);
    for (int s = 0; s < nt; s++) {
      const float* p = partials + (size_t)s * C;
      for (long c = cols.begin; c < cols.end; c++) dweight[c] += p[c];
    }
  }
}

}  // namespace endure::model
