// The output head fused with softmax cross-entropy. The logits buffer (N,V) is written once
// by one large sgemm and turned in place into dlogits = softmax - onehot(target) while each
// row is in cache; the backward's two products read it with the 1/count scale as sgemm's
// alpha, so no pass over (N,V) is spent on scaling.
#include <cblas.h>

#include <cmath>

#include "train/model/cpu_backend.h"
#include "train/model/parallel.h"
#include "train/model/vec_math.h"

namespace endure::model {

// inp (N,C), weight (V,C), targets (N) -> logits (N,V) holding softmax - onehot,
// losses (N) = logsumexp - logit[target]; returns sum(losses), *count = targets >= 0
double CpuBackend::classifier_forward(float* logits, float* losses, const float* inp,
                                      const float* weight, const int32_t* targets, int N, int C,
                                      int V, int* count) {
#pragma omp parallel
  {
    Range r = split(N, omp_get_num_threads(), omp_get_thread_num(), kRowAlign);
    if (r.size() > 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r.size(), V, C, 1.f, inp + r.begin * C,
                  C, weight, C, 0.f, logits + r.begin * V, V);
    }
    for (long n = r.begin; n < r.end; n++) {
      float* row = logits + n * V;
      const int tgt = targets[n];
      if (tgt < 0) {
        for (int v = 0; v < V; v++) row[v] = 0.f;
        losses[n] = 0.f;
        continue;
      }
      const float mx = max_of(row, V);
      const float target_logit = row[tgt];
      const float sum = exp_shift_sum(row, V, mx);
      const float inv = 1.0f / sum;
#pragma omp simd
      for (int v = 0; v < V; v++) row[v] *= inv;
      row[tgt] -= 1.0f;
      losses[n] = std::log(sum) + mx - target_logit;
    }
  }
  double total = 0;
  int counted = 0;
  for (int n = 0; n < N; n++) {
    total += losses[n];
    counted += targets[n] >= 0;
  }
  *count = counted;
  return total;
}

// dlogits (N,V) (scaled by alpha here) -> dinp (N,C) =, dweight (V,C) +=
void CpuBackend::classifier_backward(float* dinp, float* dweight, const float* dlogits,
                                     const float* inp, const float* weight, int N, int C, int V,
                                     float alpha) {
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    Range r = split(N, nt, t, kRowAlign);
    if (r.size() > 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r.size(), C, V, alpha,
                  dlogits + r.begin * V, V, weight, C, 0.f, dinp + r.begin * C, C);
    }
    Range v = split(V, nt, t, kRowAlign);
    if (v.size() > 0) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, v.size(), C, N, alpha, dlogits + v.begin,
                  V, inp, C, 1.f, dweight + v.begin * C, C);
    }
  }
}

}  // namespace endure::model
