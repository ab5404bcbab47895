// The Llama model: the flat parameter and gradient buffers, the activation arena, and the
// order of the layers' kernels forward and backward.
#include <algorithm>
#include <cmath>

#include "endure/model.h"
#include "train/model/backend.h"
#include "train/model/init.h"

namespace endure::model {

namespace {

// Pointers into the flat parameter (or gradient) buffer, one layer's tensors.
struct LayerWeights {
  float* attention_norm;  // (C)
  float* wqkv;            // (C + 2 kv, C): wq, wk, wv stacked
  float* wo;              // (C, C)
  float* ffn_norm;        // (C)
  float* w13;             // (2 Hf, C): w1, w3 stacked
  float* w2;              // (C, Hf)
};
struct Weights {
  float* tok_embeddings;  // (V, C)
  std::vector<LayerWeights> layers;
  float* norm;  // (C)
  float* head;  // (V, C): output.weight, or tok_embeddings when tied
};

// One layer's saved activations, sized for max_batch x seq_len rows.
struct LayerActs {
  float* x_in;   // (N,C) the residual stream entering the layer
  float* ln1;    // (N,C)
  float* rstd1;  // (N)
  float* qkv;    // (N, qkv_ld), q and k rotated
  float* att;    // (B,H,T,T) softmax probabilities
  float* atty;   // (N,C) attention output before wo
  float* x_mid;  // (N,C) the residual stream after attention
  float* ln2;    // (N,C)
  float* rstd2;  // (N)
  float* h13;    // (N, 2Hf)
  float* g;      // (N,Hf) silu(h1) * h3
};

}  // namespace

struct Llama::Impl {
  LlamaConfig cfg;
  Backend* be = nullptr;
  int max_batch = 0;
  int C = 0, L = 0, V = 0, Hf = 0, kv = 0, qkv_ld = 0;

  std::vector<ParamView> views;
  size_t n_params = 0;
  float* params = nullptr;
  bool own_params = true;  // until use_params() moves them into the caller's memory
  float* grads = nullptr;
  Weights w, dw;

  float* arena = nullptr;
  std::vector<LayerActs> acts;
  float* x_out = nullptr;   // (N,C) residual stream after the last layer
  float* lnf = nullptr;     // (N,C)
  float* rstdf = nullptr;   // (N)
  float* logits = nullptr;  // (N,V), holds softmax - onehot after forward
  float* losses = nullptr;  // (N)
  float* tmp = nullptr;     // (N,C) a matmul's output before its residual add
  // backward scratch
  float* dx = nullptr;        // (N,C) gradient of the residual stream
  float* dln = nullptr;       // (N,C)
  float* dqkv = nullptr;      // (N, qkv_ld)
  float* datt = nullptr;      // (B,H,T,T)
  float* dh13 = nullptr;      // (N, 2Hf)
  float* dg = nullptr;        // (N,Hf)
  float* datty = nullptr;     // (N,C)
  float* rope_cos = nullptr;  // (seq_len, hd/2)
  float* rope_sin = nullptr;
  std::vector<int32_t> inputs, targets;  // the last forward's tokens
  int B = 0, T = 0, count = 0;
  bool ready_for_backward = false;
  const ParamHooks* hooks = nullptr;

  void need(int unit, bool backward) const {
    if (hooks && hooks->need) hooks->need(unit, backward);
  }
  void done(int unit, bool backward) const {
    if (hooks && hooks->done) hooks->done(unit, backward);
  }

  ~Impl() {
    if (be) {
      if (own_params) be->release(params);
      be->release(grads);
      be->release(arena);
    }
  }

  void layout() {
    size_t off = 0;
    auto add = [&](std::string name, std::vector<int> shape) {
      ParamView v{std::move(name), off, std::move(shape)};
      off += v.numel();
      views.push_back(std::move(v));
    };
    add("tok_embeddings.weight", {V, C});
    for (int l = 0; l < L; l++) {
      std::string p = "layers." + std::to_string(l) + ".";
      add(p + "attention_norm.weight", {C});
      add(p + "attention.wq.weight", {C, C});
      add(p + "attention.wk.weight", {kv, C});
      add(p + "attention.wv.weight", {kv, C});
      add(p + "attention.wo.weight", {C, C});
      add(p + "ffn_norm.weight", {C});
      add(p + "feed_forward.w1.weight", {Hf, C});
      add(p + "feed_forward.w3.weight", {Hf, C});
      add(p + "feed_forward.w2.weight", {C, Hf});
    }
    add("norm.weight", {C});
    if (!cfg.tie_embeddings) add("output.weight", {V, C});
    n_params = off;
  }

  Weights point(float* base) const {
    Weights r;
    size_t i = 0;
    auto next = [&] { return base + views[i++].offset; };
    r.tok_embeddings = next();
    for (int l = 0; l < L; l++) {
      LayerWeights lw;
      lw.attention_norm = next();
      lw.wqkv = next();
      i += 2;  // wk, wv follow wq
      lw.wo = next();
      lw.ffn_norm = next();
      lw.w13 = next();
      i += 1;  // w3 follows w1
      lw.w2 = next();
      r.layers.push_back(lw);
    }
    r.norm = next();
    r.head = cfg.tie_embeddings ? r.tok_embeddings : next();
    return r;
  }

  // Carves the arena; with base == nullptr only counts. Returns the floats needed.
  size_t carve(float* base) {
    const size_t N = (size_t)max_batch * cfg.seq_len;
    const size_t att = (size_t)max_batch * cfg.n_heads * cfg.seq_len * cfg.seq_len;
    size_t off = 0;
    auto take = [&](size_t n) {
      float* p = base ? base + off : nullptr;
      off += (n + 15) / 16 * 16;  // 64-byte aligned pieces
      return p;
    };
    acts.assign(L, {});
    for (auto& a : acts) {
      a.x_in = take(N * C);
      a.ln1 = take(N * C);
      a.rstd1 = take(N);
      a.qkv = take(N * qkv_ld);
      a.att = take(att);
      a.atty = take(N * C);
      a.x_mid = take(N * C);
      a.ln2 = take(N * C);
      a.rstd2 = take(N);
      a.h13 = take(N * 2 * Hf);
      a.g = take(N * Hf);
    }
    x_out = take(N * C);
    lnf = take(N * C);
    rstdf = take(N);
    logits = take(N * V);
    losses = take(N);
    tmp = take(N * C);
    dx = take(N * C);
    dln = take(N * C);
    dqkv = take(N * qkv_ld);
    datt = take(att);
    dh13 = take(N * 2 * Hf);
    dg = take(N * Hf);
    datty = take(N * C);
    const int half = cfg.head_dim() / 2;
    rope_cos = take((size_t)cfg.seq_len * half);
    rope_sin = take((size_t)cfg.seq_len * half);
    return off;
  }

  void fill_rope_tables() {
    const int half = cfg.head_dim() / 2, hd = cfg.head_dim();
    for (int t = 0; t < cfg.seq_len; t++) {
      for (int i = 0; i < half; i++) {
        double freq = 1.0 / std::pow((double)cfg.rope_theta, (2.0 * i) / hd);
        double angle = t * freq;
        rope_cos[(size_t)t * half + i] = (float)std::cos(angle);
        rope_sin[(size_t)t * half + i] = (float)std::sin(angle);
      }
    }
  }

  AttentionShape shape(int B_, int T_) const {
    return {B_, T_, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim(), qkv_ld};
  }
};

Llama::Llama() : impl_(std::make_unique<Impl>()) {}
Llama::~Llama() = default;

Result<std::unique_ptr<Llama>> Llama::create(const LlamaConfig& config, int max_batch,
                                             Backend* backend) {
  Status s = config.validate();
  if (!s.ok()) return s.error();
  if (max_batch <= 0) {
    return make_error("ValidationException",
                      "max_batch must be positive, got " + std::to_string(max_batch));
  }
  std::unique_ptr<Llama> m(new Llama());
  Impl& I = *m->impl_;
  I.cfg = config;
  I.be = backend ? backend : cpu_backend();
  I.max_batch = max_batch;
  I.C = config.dim;
  I.L = config.n_layers;
  I.V = config.vocab_size;
  I.Hf = config.ffn_hidden();
  I.kv = config.kv_dim();
  I.qkv_ld = I.C + 2 * I.kv;
  I.layout();
  I.params = I.be->alloc(I.n_params);
  I.grads = I.be->alloc(I.n_params);
  size_t arena = I.carve(nullptr);
  I.arena = I.be->alloc(arena);
  if (!I.params || !I.grads || !I.arena) {
    return make_error(
        "ResourceExhausted",
        "cannot allocate the model's " + std::to_string((2 * I.n_params + arena) * 4) + " bytes");
  }
  I.carve(I.arena);
  I.w = I.point(I.params);
  I.dw = I.point(I.grads);
  I.fill_rope_tables();
  I.inputs.resize((size_t)max_batch * config.seq_len);
  I.targets.resize((size_t)max_batch * config.seq_len);
  return m;
}

void Llama::init(uint64_t seed) {
  Impl& I = *impl_;
  const float std_resid = 0.02f / std::sqrt(2.0f * I.L);
  for (size_t i = 0; i < I.views.size(); i++) {
    const ParamView& v = I.views[i];
    float* p = I.params + v.offset;
    const std::string& n = v.name;
    auto ends_with = [&](const char* s) {
      std::string suffix(s);
      return n.size() >= suffix.size() &&
             n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (v.shape.size() == 1) {
      for (size_t k = 0; k < v.numel(); k++) p[k] = 1.0f;
    } else {
      float stdev = (ends_with("wo.weight") || ends_with("w3.weight")) ? std_resid : 0.02f;
      fill_normal(p, v.numel(), stdev, seed, i);
    }
  }
}

void Llama::use_params(float* params) {
  Impl& I = *impl_;
  if (params == I.params) return;
  if (I.own_params) I.be->release(I.params);
  I.own_params = false;
  I.params = params;
  I.w = I.point(I.params);
}

float* Llama::params() { return impl_->params; }
const float* Llama::params() const { return impl_->params; }
float* Llama::grads() { return impl_->grads; }
const float* Llama::grads() const { return impl_->grads; }
size_t Llama::num_params() const { return impl_->n_params; }
const std::vector<ParamView>& Llama::named_parameters() const { return impl_->views; }
const LlamaConfig& Llama::config() const { return impl_->cfg; }
int Llama::max_batch() const { return impl_->max_batch; }

void Llama::zero_grad() { impl_->be->zero(impl_->grads, impl_->n_params); }
void Llama::set_param_hooks(const ParamHooks* hooks) { impl_->hooks = hooks; }

float Llama::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
  Impl& I = *impl_;
  I.ready_for_backward = false;
  if (B < 1 || B > I.max_batch || T < 1 || T > I.cfg.seq_len || !inputs || !targets) return NAN;
  const int N = B * T, C = I.C;
  for (int n = 0; n < N; n++) {
    if (inputs[n] < 0 || inputs[n] >= I.V || targets[n] >= I.V) return NAN;
  }
  std::copy(inputs, inputs + N, I.inputs.begin());
  std::copy(targets, targets + N, I.targets.begin());
  I.B = B;
  I.T = T;
  Backend& be = *I.be;
  const AttentionShape s = I.shape(B, T);

  const int last = I.L + 1;  // the unit of the final norm (and an untied head)
  const bool tied = I.cfg.tie_embeddings;
  I.need(0, false);
  be.embedding_forward(I.acts[0].x_in, I.inputs.data(), I.w.tok_embeddings, N, C);
  I.done(0, false);
  for (int l = 0; l < I.L; l++) {
    I.need(1 + l, false);
    LayerActs& a = I.acts[l];
    const LayerWeights& lw = I.w.layers[l];
    float* x_next = l + 1 < I.L ? I.acts[l + 1].x_in : I.x_out;
    be.rmsnorm_forward(a.ln1, a.rstd1, a.x_in, lw.attention_norm, N, C, I.cfg.norm_eps);
    be.matmul_forward(a.qkv, a.ln1, lw.wqkv, N, C, I.qkv_ld);
    be.rope_forward(a.qkv, I.rope_cos, I.rope_sin, s);
    be.attention_forward(a.atty, a.att, a.qkv, s);
    be.matmul_forward(I.tmp, a.atty, lw.wo, N, C, C);
    be.add(a.x_mid, a.x_in, I.tmp, (size_t)N * C);
    be.rmsnorm_forward(a.ln2, a.rstd2, a.x_mid, lw.ffn_norm, N, C, I.cfg.norm_eps);
    be.matmul_forward(a.h13, a.ln2, lw.w13, N, C, 2 * I.Hf);
    be.swiglu_forward(a.g, a.h13, N, I.Hf);
    be.matmul_forward(I.tmp, a.g, lw.w2, N, I.Hf, C);
    be.add(x_next, a.x_mid, I.tmp, (size_t)N * C);
    I.done(1 + l, false);
  }
  I.need(last, false);
  be.rmsnorm_forward(I.lnf, I.rstdf, I.x_out, I.w.norm, N, C, I.cfg.norm_eps);
  if (tied) I.need(0, false);
  double total = be.classifier_forward(I.logits, I.losses, I.lnf, I.w.head, I.targets.data(), N, C,
                                       I.V, &I.count);
  if (tied) I.done(0, false);
  I.done(last, false);
  I.ready_for_backward = true;
  return I.count > 0 ? (float)(total / I.count) : 0.f;
}

void Llama::backward(float grad_scale, const GradsReady& ready) {
  Impl& I = *impl_;
  if (!I.ready_for_backward) return;
  I.ready_for_backward = false;
  // Where each part of the buffer starts: [layer l's first tensor, the next one's).
  auto at = [&](const float* p) { return static_cast<size_t>(p - I.grads); };
  size_t final_from = I.n_params;  // grads()[final_from, end) are final
  auto final_down_to = [&](size_t begin) {
    if (ready && begin < final_from) ready(begin, final_from);
    final_from = std::min(final_from, begin);
  };
  if (I.count == 0) {
    final_down_to(0);
    return;
  }
  const int N = I.B * I.T, C = I.C;
  Backend& be = *I.be;
  const AttentionShape s = I.shape(I.B, I.T);

  const int last = I.L + 1;
  const bool tied = I.cfg.tie_embeddings;
  I.need(last, true);
  if (tied) I.need(0, true);
  be.classifier_backward(I.dln, I.dw.head, I.logits, I.lnf, I.w.head, N, C, I.V,
                         grad_scale / I.count);
  if (tied) I.done(0, true);
  be.zero(I.dx, (size_t)N * C);
  be.rmsnorm_backward(I.dx, I.dw.norm, I.dln, I.x_out, I.w.norm, I.rstdf, N, C);
  I.done(last, true);
  // A tied head's gradient is the embedding's, which is final only at the end.
  final_down_to(at(I.dw.norm));
  for (int l = I.L - 1; l >= 0; l--) {
    I.need(1 + l, true);
    LayerActs& a = I.acts[l];
    const LayerWeights& lw = I.w.layers[l];
    const LayerWeights& dlw = I.dw.layers[l];
    // feed-forward: x_next = x_mid + w2(g), g = swiglu(w13 ln2), ln2 = norm(x_mid)
    be.matmul_backward(I.dg, dlw.w2, I.dx, a.g, lw.w2, N, I.Hf, C);
    be.swiglu_backward(I.dh13, I.dg, a.h13, N, I.Hf);
    be.matmul_backward(I.dln, dlw.w13, I.dh13, a.ln2, lw.w13, N, C, 2 * I.Hf);
    be.rmsnorm_backward(I.dx, dlw.ffn_norm, I.dln, a.x_mid, lw.ffn_norm, a.rstd2, N, C);
    // attention: x_mid = x_in + wo(atty), atty = attention(rope(wqkv ln1)), ln1 = norm(x_in)
    be.matmul_backward(I.datty, dlw.wo, I.dx, a.atty, lw.wo, N, C, C);
    be.attention_backward(I.dqkv, I.datt, I.datty, a.qkv, a.att, s);
    be.rope_backward(I.dqkv, I.rope_cos, I.rope_sin, s);
    be.matmul_backward(I.dln, dlw.wqkv, I.dqkv, a.ln1, lw.wqkv, N, C, I.qkv_ld);
    be.rmsnorm_backward(I.dx, dlw.attention_norm, I.dln, a.x_in, lw.attention_norm, a.rstd1, N, C);
    I.done(1 + l, true);
    final_down_to(at(dlw.attention_norm));
  }
  be.embedding_backward(I.dw.tok_embeddings, I.inputs.data(), I.dx, N, C, I.V);
  final_down_to(0);
}

}  // namespace endure::model
