// SwiGLU's gate: silu(a) * b, a = x w1^T and b = x w3^T side by side in one (N, 2Hf) buffer
// (w1 and w3 are adjacent in the parameters, so one matmul makes both).
#include <algorithm>

#include "train/model/cpu_backend.h"
#include "train/model/vec_math.h"

namespace endure::model {

namespace {
constexpr int kChunk = 256;  // sigmoids computed a chunk at a time, on the stack
}

// h13 (N,2Hf) = [a | b] -> out (N,Hf) = a sigmoid(a) * b
void CpuBackend::swiglu_forward(float* out, const float* h13, int N, int Hf) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* __restrict a = h13 + (size_t)n * 2 * Hf;
    const float* __restrict b = a + Hf;
    float* __restrict o = out + (size_t)n * Hf;
    float sig[kChunk];
    for (int j0 = 0; j0 < Hf; j0 += kChunk) {
      const int len = std::min(kChunk, Hf - j0);
      sigmoid(sig, a + j0, len);
#pragma omp simd
      for (int j = 0; j < len; j++) o[j0 + j] = a[j0 + j] * sig[j] * b[j0 + j];
    }
  }
}

// dout (N,Hf) -> dh13 (N,2Hf) = [dout * b * sig (1 + a (1 - sig)) | dout * a sig]
void CpuBackend::swiglu_backward(float* dh13, const float* dout, const float* h13, int N, int Hf) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float* __restrict a = h13 + (size_t)n * 2 * Hf;
    const float* __restrict b = a + Hf;
    const float* __restrict d = dout + (size_t)n * Hf;
    float* __restrict da = dh13 + (size_t)n * 2 * Hf;
    float* __restrict db = da + Hf;
    float sig[kChunk];
    for (int j0 = 0; j0 < Hf; j0 += kChunk) {
      const int len = std::min(kChunk, Hf - j0);
      sigmoid(sig, a + j0, len);
#pragma omp simd
      for (int j = 0; j < len; j++) {
        const float x = a[j0 + j], s = sig[j];
        da[j0 + j] = d[j0 + j] * b[j0 + j] * s * (1.0f + x * (1.0f - s));
        db[j0 + j] = d[j0 + j] * x * s;
      }
    }
  }
}

}  // namespace endure::model
