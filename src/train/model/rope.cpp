// Rotary position embeddings, llama2.c's convention: within each head, the pair
// (x[2i], x[2i+1]) at position t is rotated by the angle t * theta^(-2i/hd).
#include "train/model/cpu_backend.h"

namespace endure::model {

namespace {

// Rotates the q and k heads of every row of a (B,T,qkv_ld) buffer by +angle (sign 1) or
// -angle (sign -1, the backward: the transpose of a rotation is its inverse).
void rotate(float* qkv, const float* cos, const float* sin, const AttentionShape& s, float sign) {
  const int half = s.head_dim / 2;
  const int heads = s.n_heads + s.n_kv_heads;  // q heads then k heads, adjacent
  const long rows = (long)s.B * s.T;
#pragma omp parallel for schedule(static)
  for (long n = 0; n < rows; n++) {
    const int t = n % s.T;
    const float* c = cos + (size_t)t * half;
    const float* sn = sin + (size_t)t * half;
    float* row = qkv + n * s.qkv_ld;
    for (int h = 0; h < heads; h++) {
      float* v = row + h * s.head_dim;
#pragma omp simd
      for (int i = 0; i < half; i++) {
        float x0 = v[2 * i], x1 = v[2 * i + 1];
        float si = sign * sn[i];
        v[2 * i] = x0 * c[i] - x1 * si;
        v[2 * i + 1] = x0 * si + x1 * c[i];
      }
    }
  }
}

}  // namespace

// qkv (B,T,qkv_ld): q (H,hd) and k (KVH,hd) rotated in place
void CpuBackend::rope_forward(float* qkv, const float* cos, const float* sin,
                              const AttentionShape& s) {
  rotate(qkv, cos, sin, s, 1.f);
}

// dqkv (B,T,qkv_ld): dq and dk rotated back in place
void CpuBackend::rope_backward(float* dqkv, const float* cos, const float* sin,
                               const AttentionShape& s) {
  rotate(dqkv, cos, sin, s, -1.f);
}

}  // namespace endure::model
