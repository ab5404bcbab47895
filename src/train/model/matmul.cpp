// Matrix products without bias, through OpenBLAS sgemm: each OpenMP thread multiplies its
// own block of rows with single-threaded OpenBLAS (no split of the inner dimension, so no
// reduction across threads).
#include <cblas.h>

#include "train/model/cpu_backend.h"
#include "train/model/parallel.h"

namespace endure::model {

// inp (N,C), weight (OC,C) -> out (N,OC) = inp . weight^T
void CpuBackend::matmul_forward(float* out, const float* inp, const float* weight, int N, int C,
                                int OC) {
#pragma omp parallel
  {
    Range r = split(N, omp_get_num_threads(), omp_get_thread_num(), kRowAlign);
    if (r.size() > 0) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r.size(), OC, C, 1.f, inp + r.begin * C,
                  C, weight, C, 0.f, out + r.begin * OC, OC);
    }
  }
}

// dout (N,OC) -> dinp (N,C) = dout . weight;  dweight (OC,C) += alpha dout^T . inp
void CpuBackend::matmul_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                 const float* weight, int N, int C, int OC, float alpha) {
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    if (dinp) {
      Range r = split(N, nt, t, kRowAlign);
      if (r.size() > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r.size(), C, OC, 1.f,
                    dout + r.begin * OC, OC, weight, C, 0.f, dinp + r.begin * C, C);
      }
    }
    Range o = split(OC, nt, t, kRowAlign);
    if (o.size() > 0) {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, o.size(), C, N, alpha, dout + o.begin,
                  OC, inp, C, 1.f, dweight + o.begin * C, C);
    }
  }
}

}  // namespace endure::model
