// The learning-rate schedule and gradient clipping.
#include <algorithm>
#include <cmath>

#include "endure/model.h"
#include "train/model/backend.h"

namespace endure::model {

float cosine_lr(int64_t step, int64_t warmup, int64_t total, float max_lr, float min_lr) {
  if (step < warmup) return max_lr * (float)(step + 1) / (float)warmup;
  if (step >= total) return min_lr;
  const double progress = (double)(step - warmup) / (double)std::max<int64_t>(1, total - warmup);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * progress));  // 1 -> 0
  return (float)(min_lr + coeff * (max_lr - min_lr));
}

float clip_grad_norm(float* grads, size_t n, float max_norm, Backend* backend) {
  Backend* be = backend ? backend : cpu_backend();
  const float norm = (float)std::sqrt(be->sum_squares(grads, n));
  const float factor = max_norm / (norm + 1e-6f);
  if (factor < 1.0f) be->scale(grads, n, factor);
  return norm;
}

}  // namespace endure::model
