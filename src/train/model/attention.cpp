// Causal multi-head attention with grouped-query heads, on the fused qkv buffer.
//
// Per (batch, head), in blocks of query rows, each block only against the keys it can see
// (0 .. end of block), so the upper triangle is never multiplied:
//   S = Q K^T / sqrt(hd)   (rows, kend)       sgemm
//   P = softmax(S) causal  (rows, kend)       stored in att for the backward
//   O = P V                (rows, hd)         sgemm
// Query head h reads kv head h / (H / KVH).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "train/model/cpu_backend.h"
#include "train/model/parallel.h"
#include "train/model/vec_math.h"

namespace endure::model {

namespace {
constexpr int kBlock = 64;  // query rows per block

struct HeadPtrs {
  const float* q;  // (T, hd) with row stride qkv_ld
  const float* k;
  const float* v;
};

HeadPtrs head_ptrs(const float* qkv, const AttentionShape& s, int b, int h) {
  const int kvh = h / (s.n_heads / s.n_kv_heads);
  const float* base = qkv + (size_t)b * s.T * s.qkv_ld;
  return {base + h * s.head_dim, base + (s.n_heads + kvh) * s.head_dim,
          base + (s.n_heads + s.n_kv_heads + kvh) * s.head_dim};
}
}  // namespace

// qkv (B,T,qkv_ld) -> out (B,T,H*hd), att (B,H,T,T) (zero above the diagonal)
void CpuBackend::attention_forward(float* out, float* att, const float* qkv,
                                   const AttentionShape& s) {
  const int T = s.T, hd = s.head_dim, ld = s.qkv_ld, C = s.n_heads * hd;
  const float scale = 1.0f / std::sqrt((float)hd);
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < s.B * s.n_heads; bh++) {
    const int b = bh / s.n_heads, h = bh % s.n_heads;
    HeadPtrs p = head_ptrs(qkv, s, b, h);
    float* A = att + (size_t)bh * T * T;
    float* O = out + (size_t)b * T * C + h * hd;
    for (int r0 = 0; r0 < T; r0 += kBlock) {
      const int rows = std::min(kBlock, T - r0), kend = r0 + rows;
      float* S = A + (size_t)r0 * T;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kend, hd, scale,
                  p.q + (size_t)r0 * ld, ld, p.k, ld, 0.f, S, T);
      for (int i = 0; i < rows; i++) {
        const int t = r0 + i;  // sees keys 0..t
        float* row = S + (size_t)i * T;
        const float mx = max_of(row, t + 1);
        const float sum = exp_shift_sum(row, t + 1, mx);
        const float inv = 1.0f / sum;
#pragma omp simd
        for (int j = 0; j <= t; j++) row[j] *= inv;
        std::memset(row + t + 1, 0, sizeof(float) * (T - t - 1));
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, kend, 1.f, S, T, p.v, ld,
                  0.f, O + (size_t)r0 * C, C);
    }
  }
}

// dout (B,T,H*hd) -> dqkv (B,T,qkv_ld) =. Per (batch, kv head), its query heads in order
// (their dK and dV add up in a fixed order), per block of query rows:
//   dP = dO V^T                      (rows, kend)
//   dS = P * (dP - rowsum(P * dP)) / sqrt(hd)
//   dQ = dS K;  dK += dS^T Q;  dV += P^T dO
void CpuBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                                    const float* att, const AttentionShape& s) {
  const int T = s.T, hd = s.head_dim, ld = s.qkv_ld, C = s.n_heads * hd;
  const int group = s.n_heads / s.n_kv_heads;
  const float scale = 1.0f / std::sqrt((float)hd);
#pragma omp parallel for schedule(static)
  for (int bk = 0; bk < s.B * s.n_kv_heads; bk++) {
    const int b = bk / s.n_kv_heads, kvh = bk % s.n_kv_heads;
    float* base = dqkv + (size_t)b * T * ld;
    float* dK = base + (s.n_heads + kvh) * hd;
    float* dV = base + (s.n_heads + s.n_kv_heads + kvh) * hd;
    for (int t = 0; t < T; t++) {
      std::memset(dK + (size_t)t * ld, 0, sizeof(float) * hd);
      std::memset(dV + (size_t)t * ld, 0, sizeof(float) * hd);
    }
    for (int h = kvh * group; h < (kvh + 1) * group; h++) {
      HeadPtrs p = head_ptrs(qkv, s, b, h);
      const int bh = b * s.n_heads + h;
      const float* A = att + (size_t)bh * T * T;
      float* dA = datt + (size_t)bh * T * T;
      const float* dO = dout + (size_t)b * T * C + h * hd;
      float* dQ = base + h * hd;
      for (int r0 = 0; r0 < T; r0 += kBlock) {
        const int rows = std::min(kBlock, T - r0), kend = r0 + rows;
        const float* P = A + (size_t)r0 * T;
        float* dS = dA + (size_t)r0 * T;
        const float* dOb = dO + (size_t)r0 * C;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kend, hd, 1.f, dOb, C, p.v, ld,
                    0.f, dS, T);
        for (int i = 0; i < rows; i++) {
          const int t = r0 + i;
          const float* pr = P + (size_t)i * T;
          float* dr = dS + (size_t)i * T;
          float dot = 0.f;
#pragma omp simd reduction(+ : dot)
          for (int j = 0; j <= t; j++) dot += pr[j] * dr[j];
#pragma omp simd
          for (int j = 0; j <= t; j++) dr[j] = pr[j] * (dr[j] - dot) * scale;
          // keys after t stay out of the products below: P is 0 there; so must dS be
          std::memset(dr + t + 1, 0, sizeof(float) * (kend - t - 1));
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, kend, 1.f, dS, T, p.k, ld,
                    0.f, dQ + (size_t)r0 * ld, ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kend, hd, rows, 1.f, dS, T,
                    p.q + (size_t)r0 * ld, ld, 1.f, dK, ld);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kend, hd, rows, 1.f, P, T, dOb, C, 1.f,
                    dV, ld);
      }
    }
  }
}

}  // namespace endure::model
