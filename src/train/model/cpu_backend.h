// The CPU backend: OpenBLAS sgemm (single-threaded, called from inside OpenMP's threads so
// that one pool of threads owns the cores) and OpenMP loops with static partitions. Each
// kernel lives in the file of its layer (embedding.cpp, rmsnorm.cpp, ...), forward beside
// backward; memory and the optimizer's pieces are in cpu_backend.cpp.
// One caller at a time: kernels share the backend's scratch memory.
#pragma once

#include <vector>

#include "train/model/backend.h"

namespace endure::model {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  const char* name() const override { return "cpu"; }
  int threads() const override;

  float* alloc(size_t n) override;
  void release(float* p) override;
  void discard(float* p, size_t n) override;
  void zero(float* p, size_t n) override;

  void embedding_forward(float* out, const int32_t* tokens, const float* table, int N,
                         int C) override;
  void embedding_backward(float* dtable, const int32_t* tokens, const float* dout, int N, int C,
                          int V) override;
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C,
                       float eps) override;
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, int N, int C) override;
  void matmul_forward(float* out, const float* inp, const float* weight, int N, int C,
                      int OC) override;
  void matmul_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC, float alpha) override;
  void rope_forward(float* qkv, const float* cos, const float* sin,
                    const AttentionShape& s) override;
  void rope_backward(float* dqkv, const float* cos, const float* sin,
                     const AttentionShape& s) override;
  void attention_forward(float* out, float* att, const float* qkv,
                         const AttentionShape& s) override;
  void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                          const float* att, const AttentionShape& s) override;
  void swiglu_forward(float* out, const float* h13, int N, int Hf) override;
  void swiglu_backward(float* dh13, const float* dout, const float* h13, int N, int Hf) override;
  void add(float* out, const float* a, const float* b, size_t n) override;
  double classifier_forward(float* logits, float* losses, const float* inp, const float* weight,
                            const int32_t* targets, int N, int C, int V, int* count) override;
  void classifier_backward(float* dinp, float* dweight, const float* dlogits, const float* inp,
                           const float* weight, int N, int C, int V, float alpha) override;
  double sum_squares(const float* x, size_t n) override;
  void scale(float* x, size_t n, float factor) override;
  void adamw(AdamWSlice out, AdamWSlice in, const float* g, size_t n, float lr, float beta1,
             float beta2, float eps, float weight_decay, float bc1, float bc2_sqrt) override;

 private:
  // Per-thread scratch (rmsnorm's weight-gradient partials), grown on first use only.
  float* scratch(size_t per_thread);
  std::vector<float> scratch_;
};

}  // namespace endure::model
