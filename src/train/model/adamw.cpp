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
#include "train/model/adamw_kernel.h"
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
// writing memory out of place would otherwise cost (as much again as the writes). The
// floats before and after dst's 32-byte boundaries go past the cache too: a line written
// partly through the cache and partly past it costs many times a whole line.
void stream_copy(float* dst, const float* src, size_t n) {
#if defined(__AVX__)
  auto one = [&](size_t i) {
    int bits;
    std::memcpy(&bits, src + i, sizeof bits);
    _mm_stream_si32(reinterpret_cast<int*>(dst + i), bits);
  };
  size_t i = 0;
  for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 32 != 0; ++i) one(i);
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) one(i);
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
  if (out.p == in.p) {
    for (int decay = 0; decay < 2; decay++) {
      for (auto [b, e] : decay ? decay_ranges_ : plain_ranges_) {
        kernel({out.p + b, out.m + b, out.v + b}, b, e, decay);
      }
    }
    return;
  }
  // Out of place, in pieces (with or without `written`): every range in buffer order, so
  // that each thread goes through its own part in order.
  std::vector<std::tuple<size_t, size_t, bool>> ranges;
  for (auto [b, e] : decay_ranges_) ranges.emplace_back(b, e, true);
  for (auto [b, e] : plain_ranges_) ranges.emplace_back(b, e, false);
  std::sort(ranges.begin(), ranges.end());
  const AdamWScalars with_decay = adamw_scalars(lr, config_.beta1, config_.beta2, config_.eps,
                                                config_.weight_decay, bc1, bc2_sqrt);
  const AdamWScalars without =
      adamw_scalars(lr, config_.beta1, config_.beta2, config_.eps, 0.f, bc1, bc2_sqrt);
  // Each piece is computed into the thread's scratch (3 x 32 KiB, in L2) a block of 4 lines
  // at a time, each block streamed to `out` at once: the stores go out while the next loads
  // come in, as they do in place, where a copy pass after the piece would leave the memory
  // idle between them. The piece is then shown to written() from the scratch.
  constexpr size_t kPiece = 8192, kBlock = 64;
  // Blocks and the threads' parts are cut where a line of out.p starts (and of out.m and
  // out.v, which lie alike when a buffer's size is a multiple of 64 bytes, as with any model
  // whose dims are multiples of 16): a line streamed in two parts at two times is written
  // to memory twice, and measured here, cutting blocks mid-line made the update twice as slow.
  constexpr size_t kLine = 64 / sizeof(float);
  const size_t lead = (64 - reinterpret_cast<uintptr_t>(out.p) % 64) % 64 / sizeof(float);
  auto line_start = [lead](size_t i) { return i <= lead ? i : i - (i - lead) % kLine; };
  const size_t max_threads = static_cast<size_t>(omp_get_max_threads());
  if (scratch_.size() < max_threads * 3 * kPiece) scratch_.assign(max_threads * 3 * kPiece, 0.0f);
#pragma omp parallel
  {
    const size_t threads = static_cast<size_t>(omp_get_num_threads());
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    const size_t begin = t == 0 ? 0 : line_start(n_ * t / threads);
    const size_t end = t + 1 == threads ? n_ : line_start(n_ * (t + 1) / threads);
    float* sp = scratch_.data() + t * 3 * kPiece;
    const AdamWSlice hot{sp, sp + kPiece, sp + 2 * kPiece};
    size_t r = 0;
    for (size_t pos = begin; pos < end;) {
      while (std::get<1>(ranges[r]) <= pos) ++r;
      const auto [b, e, decay] = ranges[r];
      const size_t stop = std::min({end, pos + kPiece, e});
      for (size_t at = pos, to; at < stop; at = to) {
        to = at + kBlock < stop ? line_start(at + kBlock) : stop;
        const size_t j = at - pos, len = to - at;
        adamw_range({hot.p + j, hot.m + j, hot.v + j}, {in.p + at, in.m + at, in.v + at},
                    grads + at, len, decay ? with_decay : without);
        stream_copy(out.p + at, hot.p + j, len);
        stream_copy(out.m + at, hot.m + j, len);
        stream_copy(out.v + at, hot.v + j, len);
      }
      if (written) written(static_cast<int>(t), pos, stop, hot);
      pos = stop;
    }
#if defined(__AVX__)
    _mm_sfence();  // the streamed stores are seen by every thread after the region
#endif
  }
}

}  // namespace endure::model
