// AdamW over the flat buffers: decayed and undecayed ranges of the same kernel.
#include <omp.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "endure/model.h"
#include "train/model/backend.h"

namespace endure::model {

AdamW::AdamW(const AdamWConfig& config, size_t n, const std::vector<ParamView>& params,
             Backend* backend)
    : config_(config), n_(n), backend_(backend ? backend : cpu_backend()) {
  m_ = backend_->alloc(n);
  v_ = backend_->alloc(n);
  // Adjacent tensors of the same kind merge into one range.
  for (const ParamView& p : params) {
    auto& ranges = p.shape.size() >= 2 ? decay_ranges_ : plain_ranges_;
    size_t b = p.offset, e = p.offset + p.numel();
    if (!ranges.empty() && ranges.back().second == b) {
      ranges.back().second = e;
    } else {
      ranges.push_back({b, e});
    }
  }
}

AdamW::~AdamW() {
  if (!own_moments_) return;
  backend_->release(m_);
  backend_->release(v_);
}

void AdamW::update(float* params, const float* grads, float lr) {
  run(AdamWSlice{params, m_, v_}, AdamWSlice{params, m_, v_}, grads, lr, {});
}

void AdamW::update_into(const float* params, const float* grads, float lr, AdamWSlice next,
                        const Written& written) {
  run(next, AdamWSlice{const_cast<float*>(params), m_, v_}, grads, lr, written);
  use_moments(next.m, next.v);
}

void AdamW::use_moments(float* m, float* v) {
  if (m == m_ && v == v_) return;
  if (own_moments_) {
    backend_->release(m_);
    backend_->release(v_);
    own_moments_ = false;
  }
  m_ = m;
  v_ = v;
}

namespace {

// Copies n floats with stores that go past the cache: no read of dst's lines first, which
// writing memory out of place would otherwise cost (as much again as the writes).
void stream_copy(float* dst, const float* src, size_t n) {
#if defined(__AVX__)
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 32 != 0; ++i) dst[i] = src[i];
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
#else
  std::memcpy(dst, src, n * sizeof(float));
#endif
}

}  // namespace

void AdamW::run(AdamWSlice out, AdamWSlice in, const float* grads, float lr,
                const Written& written) {
  step += 1;
  // in double, as PyTorch computes them (Python floats)
  const float bc1 = (float)(1.0 - std::pow((double)config_.beta1, (double)step));
  const float bc2_sqrt = (float)std::sqrt(1.0 - std::pow((double)config_.beta2, (double)step));
  auto kernel = [&](AdamWSlice to, size_t b, size_t e, bool decay) {
    backend_->adamw(to, {in.p + b, in.m + b, in.v + b}, grads + b, e - b, lr, config_.beta1,
                    config_.beta2, config_.eps, decay ? config_.weight_decay : 0.f, bc1, bc2_sqrt);
  };
  if (!written) {
    for (int decay = 0; decay < 2; decay++) {
      for (auto [b, e] : decay ? decay_ranges_ : plain_ranges_) {
        kernel({out.p + b, out.m + b, out.v + b}, b, e, decay);
      }
    }
    return;
  }
  // Every range in buffer order, so that each thread goes through its own part in order.
  std::vector<std::tuple<size_t, size_t, bool>> ranges;
  for (auto [b, e] : decay_ranges_) ranges.emplace_back(b, e, true);
  for (auto [b, e] : plain_ranges_) ranges.emplace_back(b, e, false);
  std::sort(ranges.begin(), ranges.end());
  // Each piece is computed into the thread's scratch (3 x 32 KiB, in L2), shown to
  // written() there, and streamed to `out`.
  constexpr size_t kPiece = 8192;
  const size_t max_threads = static_cast<size_t>(omp_get_max_threads());
  if (scratch_.size() < max_threads * 3 * kPiece) scratch_.assign(max_threads * 3 * kPiece, 0.0f);
#pragma omp parallel
  {
    const size_t threads = static_cast<size_t>(omp_get_num_threads());
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    const size_t begin = n_ * t / threads, end = n_ * (t + 1) / threads;
    float* sp = scratch_.data() + t * 3 * kPiece;
    const AdamWSlice hot{sp, sp + kPiece, sp + 2 * kPiece};
    size_t r = 0;
    for (size_t pos = begin; pos < end;) {
      while (std::get<1>(ranges[r]) <= pos) ++r;
      const auto [b, e, decay] = ranges[r];
      const size_t stop = std::min({end, pos + kPiece, e});
      kernel(hot, pos, stop, decay);  // the backend's own team is this thread alone here
      written(static_cast<int>(t), pos, stop, hot);
      stream_copy(out.p + pos, hot.p, stop - pos);
      stream_copy(out.m + pos, hot.m, stop - pos);
      stream_copy(out.v + pos, hot.v, stop - pos);
      pos = stop;
    }
#if defined(__AVX__)
    _mm_sfence();  // the streamed stores are seen by every thread after the region
#endif
  }
}

}  // namespace endure::model
