// Token embedding: a row lookup forward, a scatter-add backward.
#include <cstring>

#include "train/model/cpu_backend.h"
#include "train/model/parallel.h"

namespace endure::model {

// out (N,C) = table (V,C)[tokens (N)]
void CpuBackend::embedding_forward(float* out, const int32_t* tokens, const float* table, int N,
                                   int C) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    std::memcpy(out + (size_t)n * C, table + (size_t)tokens[n] * C, sizeof(float) * C);
  }
}

// dtable (V,C) += dout (N,C) scattered by tokens (N). Each thread owns a range of token ids
// and walks every position in order: no two threads write one row, and a row's sum is
// always taken in position order.
void CpuBackend::embedding_backward(float* dtable, const int32_t* tokens, const float* dout, int N,
                                    int C, int V) {
#pragma omp parallel
  {
    Range own = split(V, omp_get_num_threads(), omp_get_thread_num());
    for (int n = 0; n < N; n++) {
      int tok = tokens[n];
      if (tok < own.begin || tok >= own.end) continue;
      float* d = dtable + (size_t)tok * C;
      const float* g = dout + (size_t)n * C;
#pragma omp simd
      for (int c = 0; c < C; c++) d[c] += g[c];
    }
  }
}

}  // namespace endure::model
