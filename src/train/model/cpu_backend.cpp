// The CPU backend's memory, its elementwise pieces and the optimizer's kernels; the layers'
// kernels are in their own files.
#include "train/model/cpu_backend.h"

#include <cblas.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "train/model/adamw_kernel.h"
#include "train/model/parallel.h"

namespace endure::model {

CpuBackend::CpuBackend() {
  // OpenMP's threads own the cores; each calls OpenBLAS on its own block of a product.
  openblas_set_num_threads(1);
}

int CpuBackend::threads() const { return omp_get_max_threads(); }

float* CpuBackend::alloc(size_t n) {
  size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (p) zero(p, n);  // touches every page now
  return p;
}

void CpuBackend::release(float* p) { std::free(p); }

void CpuBackend::discard(float* p, size_t n) {
  // The whole pages inside the range go back to the kernel (they read as zeros after);
  // the pieces of pages at its edges, shared with what lies beside, are zeroed by hand.
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + n * sizeof(float);
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last && madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0) {
    std::memset(p, 0, first - begin);
    std::memset(reinterpret_cast<void*>(last), 0, end - last);
  } else {
    std::memset(p, 0, n * sizeof(float));
  }
}

void CpuBackend::zero(float* p, size_t n) {
#pragma omp parallel
  {
    Range r = split(n, omp_get_num_threads(), omp_get_thread_num());
    if (r.size() > 0) std::memset(p + r.begin, 0, sizeof(float) * r.size());
  }
}

float* CpuBackend::scratch(size_t per_thread) {
  size_t need = per_thread * omp_get_max_threads();
  if (scratch_.size() < need) scratch_.resize(need);
  return scratch_.data();
}

// out (n) = a + b
void CpuBackend::add(float* out, const float* a, const float* b, size_t n) {
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// Blocks of 64Ki floats, each summed in double, then the blocks in order: the same result on
// any thread count.
double CpuBackend::sum_squares(const float* x, size_t n) {
  constexpr size_t kBlock = 1 << 16;
  const size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks);
#pragma omp parallel for schedule(static)
  for (size_t blk = 0; blk < blocks; blk++) {
    const float* p = x + blk * kBlock;
    const size_t len = std::min(kBlock, n - blk * kBlock);
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < len; i++) s += (double)p[i] * p[i];
    partial[blk] = s;
  }
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

void CpuBackend::scale(float* x, size_t n, float factor) {
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) x[i] *= factor;
}

// PyTorch's AdamW step, elementwise (see include/endure/model.h), each thread on its block.
void CpuBackend::adamw(AdamWSlice out, AdamWSlice in, const float* g, size_t n, float lr,
                       float beta1, float beta2, float eps, float weight_decay, float bc1,
                       float bc2_sqrt) {
  const AdamWScalars s = adamw_scalars(lr, beta1, beta2, eps, weight_decay, bc1, bc2_sqrt);
#pragma omp parallel
  {
    const Range r = split(static_cast<long>(n), omp_get_num_threads(), omp_get_thread_num(), 16);
    const size_t b = static_cast<size_t>(r.begin);
    adamw_range({out.p + b, out.m + b, out.v + b}, {in.p + b, in.m + b, in.v + b}, g + b,
                static_cast<size_t>(r.size()), s);
  }
}

Backend* cpu_backend() {
  static CpuBackend backend;
  return &backend;
}

}  // namespace endure::model
