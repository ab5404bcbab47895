// The compute kernels a Llama step is made of, behind one interface: the model decides what
// runs in which order on which buffers, a Backend decides how. The CPU backend
// (cpu_backend.cpp) runs them with OpenBLAS and OpenMP; a CUDA backend would implement the
// same calls on device memory from its alloc().
//
// Shapes in the comments: N = B*T rows, C = dim, OC an output width, H heads, KVH kv heads,
// hd head_dim, Hf the SwiGLU width, V the vocabulary. Row-major throughout.
// Gradient conventions: "+=" accumulates (parameter gradients, the residual stream),
// "=" overwrites. Every kernel is deterministic for a given thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "endure/model.h"  // AdamWSlice

namespace endure::model {

struct AttentionShape {
  int B, T, n_heads, n_kv_heads, head_dim;
  int qkv_ld;  // row stride of the fused qkv buffer: (n_heads + 2 * n_kv_heads) * head_dim
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual int threads() const = 0;

  // ---- Memory: n floats, zeroed, every page touched now (the hot path never faults) ----
  virtual float* alloc(size_t n) = 0;
  virtual void release(float* p) = 0;
  virtual void zero(float* p, size_t n) = 0;
  // p[0, n) is no longer needed: it reads as zeros after, and the memory under it may be
  // given back until it is written again (the units a sharded trainer gathers and drops).
  // Safe beside other threads writing memory just outside the range; uses no thread team.
  virtual void discard(float* p, size_t n) = 0;

  // ---- Embedding: out (N,C) = table[tokens] (V,C) ----
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* table, int N,
                                 int C) = 0;
  // dtable (V,C) += scatter of dout (N,C) by tokens
  virtual void embedding_backward(float* dtable, const int32_t* tokens, const float* dout, int N,
                                  int C, int V) = 0;

  // ---- RMSNorm: out = inp * rstd * weight, rstd (N) = 1/sqrt(mean(inp^2) + eps) ----
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                               int N, int C, float eps) = 0;
  // dinp (N,C) +=, dweight (C) +=
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int N, int C) = 0;

  // ---- Matmul (no bias): out (N,OC) = inp (N,C) . weight (OC,C)^T ----
  virtual void matmul_forward(float* out, const float* inp, const float* weight, int N, int C,
                              int OC) = 0;
  // dinp (N,C) = dout . weight (skipped when dinp is null); dweight (OC,C) += alpha dout^T . inp
  virtual void matmul_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                               const float* weight, int N, int C, int OC, float alpha = 1.f) = 0;

  // ---- RoPE, in place on the q and k columns of qkv (B,T,qkv_ld); cos/sin (seq_len, hd/2) ----
  virtual void rope_forward(float* qkv, const float* cos, const float* sin,
                            const AttentionShape& s) = 0;
  // the inverse rotation, in place on dq and dk of dqkv (B,T,qkv_ld)
  virtual void rope_backward(float* dqkv, const float* cos, const float* sin,
                             const AttentionShape& s) = 0;

  // ---- Causal attention: out (B,T,H*hd), att (B,H,T,T) the softmax probabilities ----
  virtual void attention_forward(float* out, float* att, const float* qkv,
                                 const AttentionShape& s) = 0;
  // dqkv (B,T,qkv_ld) =; datt (B,H,T,T) scratch
  virtual void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                                  const float* att, const AttentionShape& s) = 0;

  // ---- SwiGLU gate: out (N,Hf) = silu(h13[:, :Hf]) * h13[:, Hf:], h13 (N,2Hf) ----
  virtual void swiglu_forward(float* out, const float* h13, int N, int Hf) = 0;
  // dh13 (N,2Hf) =
  virtual void swiglu_backward(float* dh13, const float* dout, const float* h13, int N, int Hf) = 0;

  // ---- Residual: out (n) = a + b ----
  virtual void add(float* out, const float* a, const float* b, size_t n) = 0;

  // ---- Output head and cross-entropy, fused ----
  // logits (N,V) = inp (N,C) . weight (V,C)^T, then in place dlogits = softmax - onehot
  // (rows with target < 0 zeroed); losses (N) = -log softmax[target] (0 when ignored).
  // Returns the sum of losses (fixed order) and sets *count to the counted rows.
  virtual double classifier_forward(float* logits, float* losses, const float* inp,
                                    const float* weight, const int32_t* targets, int N, int C,
                                    int V, int* count) = 0;
  // With dlogits from classifier_forward scaled by alpha: dinp (N,C) =, dweight (V,C) +=.
  virtual void classifier_backward(float* dinp, float* dweight, const float* dlogits,
                                   const float* inp, const float* weight, int N, int C, int V,
                                   float alpha) = 0;

  // ---- Optimizer pieces ----
  // sum of x^2 in double over fixed blocks, summed in a fixed order
  virtual double sum_squares(const float* x, size_t n) = 0;
  virtual void scale(float* x, size_t n, float factor) = 0;
  // AdamW on [0, n): see include/endure/model.h (bc1 = 1 - b1^t, bc2_sqrt = sqrt(1 - b2^t)).
  // Reads the state from `in` and writes it to `out`: the same memory to update in place,
  // other memory to keep `in` as it was (a checkpoint of the state before the step).
  virtual void adamw(AdamWSlice out, AdamWSlice in, const float* g, size_t n, float lr, float beta1,
                     float beta2, float eps, float weight_decay, float bc1, float bc2_sqrt) = 0;
};

// The process's CPU backend (OpenBLAS single-threaded inside OpenMP's threads).
Backend* cpu_backend();

}  // namespace endure::model
