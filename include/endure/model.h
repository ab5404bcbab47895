// endure's model: Llama 2 (forward and backward, fp32) and its optimizer, written here.
//
// The architecture is Meta's Llama 2 as llama2.c trains it: token embedding; per layer a
// pre-norm RMSNorm, multi-head causal attention with rotary position embeddings (pairs
// (2i, 2i+1) of each head rotated, llama2.c's convention) and optional grouped-query
// heads, a residual add, a pre-norm RMSNorm, a SwiGLU feed-forward w2(silu(w1 x) * w3 x)
// and a residual add; a final RMSNorm and the output head. No biases anywhere.
//
// Parameters live in one flat float buffer and their gradients in another of the same
// layout (one checkpoint write, one all-reduce); named_parameters() says where each tensor
// is. Activations live in one arena sized for (max_batch, seq_len), allocated and touched
// once by create(): a training step allocates nothing.
//
// Determinism: with the same thread count, the same calls give bitwise-identical results
// (static partitions, fixed-order sums, no atomics); the thread count is OpenMP's
// (OMP_NUM_THREADS or omp_set_num_threads before create()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::model {

class Backend;  // the compute kernels (src/train/model/backend.h); the CPU one by default

struct LlamaConfig {
  int dim = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // grouped-query attention when < n_heads; must divide n_heads
  int vocab_size = 0;
  int seq_len = 0;     // the longest sequence (rotary tables and activations are sized by it)
  int hidden_dim = 0;  // SwiGLU width; 0: int(2 * 4 * dim / 3) rounded up to multiple_of
  int multiple_of = 32;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.f;
  bool tie_embeddings = false;  // the output head shares tok_embeddings.weight

  int head_dim() const { return n_heads > 0 ? dim / n_heads : 0; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  int ffn_hidden() const;  // hidden_dim, or the derived width when it is 0

  // Every rule, failing with a ValidationException that names the field and the rule
  // ("dim 290 is not divisible by n_heads 6"): positive sizes, dim % n_heads,
  // n_heads % n_kv_heads, an even head_dim (RoPE rotates pairs), norm_eps and rope_theta > 0.
  Status validate() const;

  // Every field, hidden_dim resolved.
  json to_json() const;
  // Fields as to_json writes them; "preset": NAME starts from a preset that the other keys
  // override. Required (unless a preset is given): dim, n_layers, n_heads, vocab_size,
  // seq_len; n_kv_heads defaults to n_heads. Unknown keys and wrong types are errors; the
  // result is validated.
  static Result<LlamaConfig> from_json(const json& j);
  // "stories15M" (llama2.c's: dim 288, 6 layers, 6 heads, seq 256, vocab 32000, hidden 768,
  // tied head), "stories42M" (dim 512, 8 layers, 8 heads, seq 1024, tied), "stories110M"
  // (dim 768, 12 layers, 12 heads, seq 1024, tied), "tiny" (dim 32, 2 layers, 4 heads,
  // 2 kv heads, vocab 97, seq 16, hidden 96: the tests' model).
  static Result<LlamaConfig> preset(const std::string& name);
  static std::vector<std::string> preset_names();

  // Every parameter, counted once (a tied head is not counted twice).
  int64_t num_parameters() const;
  // Model FLOPs of forward + backward per token at sequence length T (0: seq_len), for
  // MFU: 6 * (matmul weights, the output head always included) + 12 * n_layers * dim * T
  // (attention's two products, the PaLM convention: no discount for the causal mask).
  double flops_per_token(int T = 0) const;
};

// Where one named tensor lives in the flat parameter (and gradient) buffer.
struct ParamView {
  std::string name;        // llama2.c / PyTorch names: "layers.0.attention.wq.weight", ...
  size_t offset = 0;       // in floats
  std::vector<int> shape;  // row-major, PyTorch's (out_features, in_features) for weights
  size_t numel() const;
};

// Called around every use of a unit's parameters by forward() and backward(), for a caller
// that keeps them sharded among ranks and gathers each unit only while it is used (ZeRO-3):
// need(u) before the first read of unit u's parameters, done(u) after the last. Units, in
// buffer order: 0 the embeddings (and a tied head), 1 + l layer l, n_layers + 1 the final
// norm and an untied head. Forward needs 0, 1 .. n_layers, n_layers + 1 (and 0 again inside
// it for a tied head); backward needs n_layers + 1 (0 inside it when tied), then n_layers
// down to 1 (the embeddings' gradient needs no parameters). `backward`: which pass calls.
struct ParamHooks {
  std::function<void(int unit, bool backward)> need;
  std::function<void(int unit, bool backward)> done;
};

class Llama {
 public:
  // REQUIRES: config valid (checked again here), max_batch > 0. Allocates and touches the
  // parameters, the gradients (zeroed) and the activations for max_batch x seq_len tokens.
  // backend: nullptr is the CPU backend; otherwise it must outlive the model.
  static Result<std::unique_ptr<Llama>> create(const LlamaConfig& config, int max_batch,
                                               Backend* backend = nullptr);
  ~Llama();

  // Deterministic initialisation, identical on every machine: every weight matrix and the
  // embedding from normal(0, 0.02) (wo and w3: 0.02 / sqrt(2 * n_layers), as llama2.c),
  // norms 1. Draws come from a counter-based generator (splitmix64 of seed and index).
  void init(uint64_t seed);

  float* params();
  const float* params() const;
  // The parameters are now the num_params() floats at `params`, the caller's memory, kept
  // alive by it until the model is gone or moved on again (an optimizer writing each step's
  // parameters into other memory moves them every step). The model's own buffer is freed
  // on the first move.
  void use_params(float* params);
  float* grads();
  const float* grads() const;
  size_t num_params() const;
  // In buffer order. Layout: tok_embeddings.weight, then per layer
  // attention_norm, attention.wq, wk, wv, wo, ffn_norm, feed_forward.w1, w3, w2 (wq|wk|wv
  // and w1|w3 adjacent so each pair is one matrix product), then norm.weight and, unless
  // tied, output.weight.
  const std::vector<ParamView>& named_parameters() const;
  const LlamaConfig& config() const;
  int max_batch() const;

  // inputs, targets: (B, T) token ids in [0, vocab_size). Returns the mean cross-entropy
  // over the B * T positions (targets < 0 are ignored and not counted). Keeps what
  // backward() needs. REQUIRES: 1 <= B <= max_batch, 1 <= T <= seq_len, ids in range
  // (checked: any of them broken returns NaN and computes nothing).
  float forward(const int32_t* inputs, const int32_t* targets, int B, int T);
  // Called by backward() each time a range [begin, end) of grads() (in floats) is final for
  // this backward: from the end of the buffer towards its start (the head and final norm,
  // then each layer from the last, then the embeddings), every float once. A data-parallel
  // reducer starts reducing a range while backward goes on with the rest.
  using GradsReady = std::function<void(size_t begin, size_t end)>;
  // Adds (+=) grad_scale * d(loss of the last forward)/d(params) into grads(), so that
  // micro-batches accumulate (pass 1 / micro_batches for the mean). REQUIRES: forward()
  // with targets just before; its activations are consumed (one backward per forward).
  void backward(float grad_scale = 1.0f, const GradsReady& ready = {});
  void zero_grad();
  // Hooks forward() and backward() call from now on (nullptr: none); they must outlive
  // their use.
  void set_param_hooks(const ParamHooks* hooks);

 private:
  Llama();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Training numerics ----

// AdamW's state over a range: the parameters and both moments.
struct AdamWSlice {
  float* p;
  float* m;
  float* v;
};

struct AdamWConfig {
  float lr = 3e-4f;  // the default; update() takes the scheduled rate
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-5f;
  float weight_decay = 0.1f;
};

// AdamW over the flat buffers, PyTorch's update (decoupled decay, bias-corrected moments):
//   p *= 1 - lr * wd  (only tensors with 2 or more dimensions: embeddings and matmul
//                      weights; never the RMSNorm gains, as llama2.c and nanoGPT)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
class AdamW {
 public:
  // params: the model's named_parameters() (which tensors decay); n: the buffer length.
  // m and v are allocated, zeroed and touched here. backend: nullptr is the CPU one.
  AdamW(const AdamWConfig& config, size_t n, const std::vector<ParamView>& params,
        Backend* backend = nullptr);
  ~AdamW();

  // One step: step += 1, then the update above with this lr.
  void update(float* params, const float* grads, float lr);
  // As update(), but out of place: reads the parameters from `params` and the moments from
  // m() and v(), and writes the new ones to next (size() floats each), whose m and v
  // become m() and v(). The memory read is left as it was: the state before the step, bit
  // for bit. `next` is written with stores that bypass the cache, so that the update moves
  // no more memory than in place. Each thread of the update writes one contiguous range of
  // the buffers in pieces, in increasing order; with `written`, it calls written(thread,
  // begin, end, values) for each piece: the floats [begin, end) of next.p, next.m and next.v
  // are final, and values holds a copy of them still in cache (a checkpoint takes its
  // checksums there).
  using Written = std::function<void(int thread, size_t begin, size_t end, AdamWSlice values)>;
  void update_into(const float* params, const float* grads, float lr, AdamWSlice next,
                   const Written& written = {});
  // The moments are now the size() floats at m and v each, the caller's memory, kept alive
  // by it until the optimizer is gone or moved on again. Its own are freed on the first move.
  void use_moments(float* m, float* v);

  float* m() { return m_; }
  float* v() { return v_; }
  size_t size() const { return n_; }
  const AdamWConfig& config() const { return config_; }
  int64_t step = 0;  // updates done (t of the bias correction); checkpoint and restore it

 private:
  AdamWConfig config_;
  size_t n_;
  Backend* backend_;
  float* m_;
  float* v_;
  bool own_moments_ = true;     // until update_into() moves them into the caller's memory
  std::vector<float> scratch_;  // update_into(): each thread's pieces
  void run(AdamWSlice out, AdamWSlice in, const float* grads, float lr, const Written& written);
  std::vector<std::pair<size_t, size_t>> decay_ranges_;  // [begin, end) that decay
  std::vector<std::pair<size_t, size_t>> plain_ranges_;  // the rest
};

// Linear warmup from 0 to max_lr over `warmup` steps (step 0 gets max_lr / warmup), then
// a cosine from max_lr down to min_lr at step `total`, min_lr after.
float cosine_lr(int64_t step, int64_t warmup, int64_t total, float max_lr, float min_lr);

// Scales grads so their global L2 norm is at most max_norm (PyTorch's clip_grad_norm_:
// factor max_norm / (norm + 1e-6) when below 1). Returns the norm before clipping. The sum
// is taken in double over fixed blocks in a fixed order: the same on any thread count.
float clip_grad_norm(float* grads, size_t n, float max_norm, Backend* backend = nullptr);

}  // namespace endure::model
