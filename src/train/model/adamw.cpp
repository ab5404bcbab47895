// AdamW over the flat buffers: decayed and undecayed ranges of the same kernel.
#include <omp.h>

#include <algorithm>
#include <cmath>
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

void AdamW::run(AdamWSlice out, AdamWSlice in, const float* grads, float lr,
                const Written& written) {
  step += 1;
  // in double, as PyTorch computes them (Python floats)
  const float bc1 = (float)(1.0 - std::pow((double)config_.beta1, (double)step));
  const float bc2_sqrt = (float)std::sqrt(1.0 - std::pow((double)config_.beta2, (double)step));
  auto range = [&](size_t b, size_t e, bool decay) {
    backend_->adamw({out.p + b, out.m + b, out.v + b}, {in.p + b, in.m + b, in.v + b}, grads + b,
                    e - b, lr, config_.beta1, config_.beta2, config_.eps,
                    decay ? config_.weight_decay : 0.f, bc1, bc2_sqrt);
  };
  if (!written) {
    for (int decay = 0; decay < 2; decay++) {
      for (auto [b, e] : decay ? decay_ranges_ : plain_ranges_) range(b, e, decay);
    }
    return;
  }
  // Every range in buffer order, so that each thread goes through its own part in order.
  std::vector<std::tuple<size_t, size_t, bool>> ranges;
  for (auto [b, e] : decay_ranges_) ranges.emplace_back(b, e, true);
  for (auto [b, e] : plain_ranges_) ranges.emplace_back(b, e, false);
  std::sort(ranges.begin(), ranges.end());
  // Pieces of 16K floats: the three outputs of one (192 KiB) are still in L2 when written()
  // reads them.
  constexpr size_t kPiece = 16384;
#pragma omp parallel
  {
    const size_t threads = static_cast<size_t>(omp_get_num_threads());
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    const size_t begin = n_ * t / threads, end = n_ * (t + 1) / threads;
    size_t r = 0;
    for (size_t pos = begin; pos < end;) {
      while (std::get<1>(ranges[r]) <= pos) ++r;
      const auto [b, e, decay] = ranges[r];
      const size_t stop = std::min({end, pos + kPiece, e});
      range(pos, stop, decay);  // the backend's own team is this thread alone here
      written(static_cast<int>(t), pos, stop);
      pos = stop;
    }
  }
}

}  // namespace endure::model
