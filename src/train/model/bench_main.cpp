// endure-model-bench: times training steps (forward, backward, clip, AdamW) of a preset on
// random tokens and prints one JSON object: tokens/s, the model's achieved GFLOP/s, and the
// machine's sgemm GFLOP/s measured in the same run (OpenBLAS on 2048^3 with the same
// threads) so that MFU can be quoted. --profile adds the time spent in each kernel.
#include <cblas.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "common/command_line.h"
#include "endure/model.h"
#include "train/model/backend.h"

using namespace endure;
using namespace endure::model;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A Backend that times every call of the one it wraps.
class ProfilingBackend final : public Backend {
 public:
  explicit ProfilingBackend(Backend* inner) : in_(inner) {}
  std::map<std::string, double> seconds;
  const char* name() const override { return "profile"; }
  int threads() const override { return in_->threads(); }
  float* alloc(size_t n) override { return in_->alloc(n); }
  void release(float* p) override { in_->release(p); }
  void discard(float* p, size_t n) override { in_->discard(p, n); }
#define TIMED(label, call) \
  double t0_ = now();      \
  call;                    \
  seconds[label] += now() - t0_;
  void zero(float* p, size_t n) override { TIMED("zero", in_->zero(p, n)) }
  void embedding_forward(float* o, const int32_t* t, const float* w, int N, int C) override {
    TIMED("embedding_fwd", in_->embedding_forward(o, t, w, N, C))
  }
  void embedding_backward(float* d, const int32_t* t, const float* g, int N, int C,
                          int V) override {
    TIMED("embedding_bwd", in_->embedding_backward(d, t, g, N, C, V))
  }
  void rmsnorm_forward(float* o, float* r, const float* x, const float* w, int N, int C,
                       float e) override {
    TIMED("rmsnorm_fwd", in_->rmsnorm_forward(o, r, x, w, N, C, e))
  }
  void rmsnorm_backward(float* dx, float* dw, const float* d, const float* x, const float* w,
                        const float* r, int N, int C) override {
    TIMED("rmsnorm_bwd", in_->rmsnorm_backward(dx, dw, d, x, w, r, N, C))
  }
  void matmul_forward(float* o, const float* x, const float* w, int N, int C, int OC) override {
    TIMED("matmul_fwd", in_->matmul_forward(o, x, w, N, C, OC))
  }
  void matmul_backward(float* dx, float* dw, const float* d, const float* x, const float* w, int N,
                       int C, int OC, float a) override {
    TIMED("matmul_bwd", in_->matmul_backward(dx, dw, d, x, w, N, C, OC, a))
  }
  void rope_forward(float* q, const float* c, const float* s, const AttentionShape& sh) override {
    TIMED("rope_fwd", in_->rope_forward(q, c, s, sh))
  }
  void rope_backward(float* q, const float* c, const float* s, const AttentionShape& sh) override {
    TIMED("rope_bwd", in_->rope_backward(q, c, s, sh))
  }
  void attention_forward(float* o, float* a, const float* q, const AttentionShape& s) override {
    TIMED("attention_fwd", in_->attention_forward(o, a, q, s))
  }
  void attention_backward(float* dq, float* da, const float* d, const float* q, const float* a,
                          const AttentionShape& s) override {
    TIMED("attention_bwd", in_->attention_backward(dq, da, d, q, a, s))
  }
  void swiglu_forward(float* o, const float* h, int N, int Hf) override {
    TIMED("swiglu_fwd", in_->swiglu_forward(o, h, N, Hf))
  }
  void swiglu_backward(float* d, const float* o, const float* h, int N, int Hf) override {
    TIMED("swiglu_bwd", in_->swiglu_backward(d, o, h, N, Hf))
  }
  void add(float* o, const float* a, const float* b, size_t n) override {
    TIMED("add", in_->add(o, a, b, n))
  }
  double classifier_forward(float* l, float* ls, const float* x, const float* w, const int32_t* t,
                            int N, int C, int V, int* c) override {
    double r;
    TIMED("classifier_fwd", r = in_->classifier_forward(l, ls, x, w, t, N, C, V, c))
    return r;
  }
  void classifier_backward(float* dx, float* dw, const float* d, const float* x, const float* w,
                           int N, int C, int V, float a) override {
    TIMED("classifier_bwd", in_->classifier_backward(dx, dw, d, x, w, N, C, V, a))
  }
  double sum_squares(const float* x, size_t n) override {
    double r;
    TIMED("sum_squares", r = in_->sum_squares(x, n))
    return r;
  }
  void scale(float* x, size_t n, float f) override { TIMED("scale", in_->scale(x, n, f)) }
  void adamw(AdamWSlice out, AdamWSlice in, const float* g, size_t n, float lr, float b1, float b2,
             float eps, float wd, float bc1, float bc2) override {
    TIMED("adamw", in_->adamw(out, in, g, n, lr, b1, b2, eps, wd, bc1, bc2))
  }
#undef TIMED

 private:
  Backend* in_;
};

// OpenBLAS's own threaded sgemm on n^3, best of a few: the machine's practical fp32 peak.
double measure_sgemm(int n, int threads) {
  std::vector<float> a((size_t)n * n, 0.5f), b((size_t)n * n, 0.25f), c((size_t)n * n, 0.f);
  openblas_set_num_threads(threads);
  double best = 0;
  for (int i = 0; i < 5; i++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
                0.f, c.data(), n);
    best = std::max(best, 2.0 * n * n * n / (now() - t0) / 1e9);
  }
  openblas_set_num_threads(1);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time Llama training steps on random tokens"};
  app.name("endure-model-bench");
  std::string preset = "stories15M";
  int batch = 8, seq = 0, threads = 0, steps = 10, warmup = 2;
  bool profile = false, skip_sgemm = false, sgemm_only = false;
  app.add_option("--preset", preset, "model preset");
  app.add_option("--batch", batch, "sequences per step");
  app.add_option("--seq", seq, "sequence length (default: the preset's)");
  app.add_option("--threads", threads, "OpenMP threads (default: OpenMP's)");
  app.add_option("--steps", steps, "timed steps");
  app.add_option("--warmup", warmup, "untimed steps first");
  app.add_flag("--profile", profile, "time each kernel (adds overhead)");
  app.add_flag("--no-sgemm", skip_sgemm, "skip the sgemm measurement");
  app.add_flag("--sgemm-only", sgemm_only, "only the sgemm measurement (for bench/train)");
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  if (threads > 0) omp_set_num_threads(threads);
  threads = omp_get_max_threads();
  if (sgemm_only) {
    std::printf("%s\n", json{{"threads", threads}, {"sgemm_gflops", measure_sgemm(2048, threads)}}
                               .dump().c_str());
    return 0;
  }

  auto cfg = LlamaConfig::preset(preset);
  if (!cfg.ok()) {
    std::cerr << cfg.error().message << "\n";
    return 2;
  }
  if (seq <= 0) seq = cfg->seq_len;
  if (seq > cfg->seq_len) {
    std::cerr << "--seq " << seq << " exceeds the preset's seq_len " << cfg->seq_len << "\n";
    return 2;
  }
  ProfilingBackend prof(cpu_backend());
  double t_create = now();
  auto created = Llama::create(*cfg, batch, profile ? &prof : nullptr);
  if (!created.ok()) {
    std::cerr << created.error().message << "\n";
    return 1;
  }
  Llama& model = **created;
  model.init(42);
  AdamW opt(AdamWConfig{}, model.num_params(), model.named_parameters(), profile ? &prof : nullptr);
  t_create = now() - t_create;

  std::vector<int32_t> in((size_t)batch * seq), tg((size_t)batch * seq);
  uint64_t x = 12345;
  for (size_t i = 0; i < in.size(); i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    in[i] = (x >> 33) % cfg->vocab_size;
    tg[i] = (x >> 17) % cfg->vocab_size;
  }
  std::vector<double> times;
  float loss = 0;
  for (int s = 0; s < warmup + steps; s++) {
    if (s == warmup) prof.seconds.clear();
    double t0 = now();
    loss = model.forward(in.data(), tg.data(), batch, seq);
    model.backward();
    clip_grad_norm(model.grads(), model.num_params(), 1.0f);
    opt.update(model.params(), model.grads(), 3e-4f);
    model.zero_grad();
    if (s >= warmup) times.push_back(now() - t0);
  }
  std::sort(times.begin(), times.end());
  double total = 0;
  for (double t : times) total += t;
  const double mean = total / times.size(), median = times[times.size() / 2];
  const double tokens = (double)batch * seq;
  const double flops = cfg->flops_per_token(seq) * tokens;
  json out = {{"impl", "endure"},
              {"preset", preset},
              {"batch", batch},
              {"seq", seq},
              {"threads", threads},
              {"steps", steps},
              {"params", cfg->num_parameters()},
              {"loss", loss},
              {"step_s_median", median},
              {"step_s_mean", mean},
              {"tokens_per_s", tokens / mean},
              {"tokens_per_s_median", tokens / median},
              {"model_gflops_per_token", cfg->flops_per_token(seq) / 1e9},
              {"achieved_gflops", flops / mean / 1e9},
              {"setup_s", t_create}};
  if (!skip_sgemm) {
    double sgemm = measure_sgemm(2048, threads);
    out["sgemm_gflops"] = sgemm;
    out["mfu"] = flops / mean / 1e9 / sgemm;
  }
  if (profile) {
    json p = json::object();
    for (auto& [k, v] : prof.seconds) p[k] = v / steps;
    out["profile_s_per_step"] = p;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
