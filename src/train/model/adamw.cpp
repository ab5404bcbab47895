// AdamW over the flat buffers: decayed and undecayed ranges of the same kernel.
#include <cmath>

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
  backend_->release(m_);
  backend_->release(v_);
}

void AdamW::update(float* params, const float* grads, float lr) {
  step += 1;
  // in double, as PyTorch computes them (Python floats)
  const float bc1 = (float)(1.0 - std::pow((double)config_.beta1, (double)step));
  const float bc2_sqrt = (float)std::sqrt(1.0 - std::pow((double)config_.beta2, (double)step));
  for (int decay = 0; decay < 2; decay++) {
    for (auto [b, e] : decay ? decay_ranges_ : plain_ranges_) {
      backend_->adamw(params + b, grads + b, m_ + b, v_ + b, e - b, lr, config_.beta1,
                      config_.beta2, config_.eps, decay ? config_.weight_decay : 0.f, bc1,
                      bc2_sqrt);
    }
  }
}

}  // namespace endure::model
