// The Llama model and its training numerics: config rules, presets, gradients against
// finite differences, determinism, gradient accumulation, the optimizer, the schedule and
// clipping. (Every gradient against PyTorch: the model_matches_torch test.)
#include "endure/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace endure::model {
namespace {

LlamaConfig tiny() { return *LlamaConfig::preset("tiny"); }

std::unique_ptr<Llama> make_model(const LlamaConfig& c, int max_batch, uint64_t seed = 7) {
  auto m = Llama::create(c, max_batch);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  (*m)->init(seed);
  return std::move(*m);
}

// Deterministic tokens: inputs and next-token targets, B sequences of T.
struct Batch {
  std::vector<int32_t> in, tg;
};
Batch make_batch(int B, int T, int V, uint64_t seed) {
  Batch b{std::vector<int32_t>(B * T), std::vector<int32_t>(B * T)};
  uint64_t x = seed;
  for (int i = 0; i < B * T; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    b.in[i] = (x >> 33) % V;
    b.tg[i] = (x >> 13) % V;
  }
  return b;
}

const ParamView& view(const Llama& m, const std::string& name) {
  for (const auto& p : m.named_parameters()) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no parameter " << name;
  return m.named_parameters()[0];
}

// ---- config ----

TEST(LlamaConfig, IndivisibleDimIsAClearError) {
  LlamaConfig c = *LlamaConfig::preset("stories15M");
  c.dim = 290;
  Status s = c.validate();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "ValidationException");
  EXPECT_EQ(s.error().message, "dim 290 is not divisible by n_heads 6");
}

TEST(LlamaConfig, EveryRuleNamesItsField) {
  struct Case {
    void (*edit)(LlamaConfig&);
    const char* says;
  };
  const Case cases[] = {
      {[](LlamaConfig& c) { c.n_kv_heads = 3; }, "n_heads 4 is not divisible by n_kv_heads 3"},
      {[](LlamaConfig& c) { c.n_heads = 32; }, "head_dim (dim / n_heads) 1 must be even"},
      {[](LlamaConfig& c) { c.dim = 0; }, "dim must be positive"},
      {[](LlamaConfig& c) { c.n_layers = -1; }, "n_layers must be positive"},
      {[](LlamaConfig& c) { c.vocab_size = 0; }, "vocab_size must be positive"},
      {[](LlamaConfig& c) { c.seq_len = 0; }, "seq_len must be positive"},
      {[](LlamaConfig& c) { c.hidden_dim = -5; }, "hidden_dim must be positive"},
      {[](LlamaConfig& c) { c.norm_eps = 0; }, "norm_eps must be positive"},
      {[](LlamaConfig& c) { c.rope_theta = -1; }, "rope_theta must be positive"},
  };
  for (const Case& k : cases) {
    LlamaConfig c = tiny();
    k.edit(c);
    Status s = c.validate();
    ASSERT_FALSE(s.ok()) << k.says;
    EXPECT_NE(s.error().message.find(k.says), std::string::npos) << s.error().message;
  }
  LlamaConfig c = tiny();
  c.dim = 290;
  auto m = Llama::create(c, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("not divisible"), std::string::npos);
}

TEST(LlamaConfig, Stories15MIsLlama2cs) {
  LlamaConfig c = *LlamaConfig::preset("stories15M");
  EXPECT_EQ(c.dim, 288);
  EXPECT_EQ(c.n_layers, 6);
  EXPECT_EQ(c.n_heads, 6);
  EXPECT_EQ(c.n_kv_heads, 6);
  EXPECT_EQ(c.seq_len, 256);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.ffn_hidden(), 768);
  EXPECT_TRUE(c.tie_embeddings);
  // llama2.c's "15M": 9.2M embedding + 6 x 995,904 + the final norm
  EXPECT_EQ(c.num_parameters(), 15191712);
  c.hidden_dim = 0;  // the 8/3 rule gives the same width
  EXPECT_EQ(c.ffn_hidden(), 768);
  // 6 x matmul weights (head included) + 12 L C T
  EXPECT_DOUBLE_EQ(c.flops_per_token(), 6.0 * (6 * 995328 + 32000 * 288) + 12.0 * 6 * 288 * 256);
  for (const auto& name : LlamaConfig::preset_names()) {
    auto p = LlamaConfig::preset(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_TRUE(p->validate().ok()) << name;
  }
  auto bad = LlamaConfig::preset("stories1B");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("stories15M"), std::string::npos);
}

TEST(LlamaConfig, JsonRoundTripAndStrictKeys) {
  LlamaConfig c = tiny();
  auto back = LlamaConfig::from_json(c.to_json());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->to_json(), c.to_json());

  auto unknown = LlamaConfig::from_json(json{{"preset", "tiny"}, {"n_head", 4}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown model config key \"n_head\""), std::string::npos);

  auto missing = LlamaConfig::from_json(json{{"dim", 64}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("n_layers"), std::string::npos);

  auto wrong_type = LlamaConfig::from_json(json{{"preset", "tiny"}, {"dim", "64"}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().message.find("dim must be an integer"), std::string::npos);

  auto bad_rule = LlamaConfig::from_json(json{{"preset", "stories15M"}, {"dim", 290}});
  ASSERT_FALSE(bad_rule.ok());
  EXPECT_EQ(bad_rule.error().message, "dim 290 is not divisible by n_heads 6");

  // n_kv_heads defaults to n_heads; a preset's fields are overridden one by one
  auto plain = LlamaConfig::from_json(
      json{{"dim", 64}, {"n_layers", 2}, {"n_heads", 8}, {"vocab_size", 100}, {"seq_len", 32}});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->n_kv_heads, 8);
  auto over = LlamaConfig::from_json(
      json{{"preset", "stories15M"}, {"seq_len", 512}, {"tie_embeddings", false}});
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->seq_len, 512);
  EXPECT_EQ(over->dim, 288);
  EXPECT_FALSE(over->tie_embeddings);
}

// ---- model ----

TEST(Llama, ParameterLayout) {
  for (bool tie : {false, true}) {
    LlamaConfig c = tiny();
    c.tie_embeddings = tie;
    auto m = make_model(c, 1);
    EXPECT_EQ((int64_t)m->num_params(), c.num_parameters());
    const auto& ps = m->named_parameters();
    EXPECT_EQ(ps.front().name, "tok_embeddings.weight");
    EXPECT_EQ(ps.back().name, tie ? "norm.weight" : "output.weight");
    size_t off = 0;
    for (const auto& p : ps) {
      EXPECT_EQ(p.offset, off) << p.name;
      off += p.numel();
    }
    EXPECT_EQ(off, m->num_params());
    const ParamView& wk = view(*m, "layers.1.attention.wk.weight");
    EXPECT_EQ(wk.shape, (std::vector<int>{c.kv_dim(), c.dim}));
    const ParamView& w2 = view(*m, "layers.0.feed_forward.w2.weight");
    EXPECT_EQ(w2.shape, (std::vector<int>{c.dim, c.ffn_hidden()}));
  }
}

TEST(Llama, InitIsDeterministicAndScaled) {
  auto a = make_model(tiny(), 1, 11), b = make_model(tiny(), 1, 11), c = make_model(tiny(), 1, 12);
  EXPECT_EQ(std::memcmp(a->params(), b->params(), a->num_params() * 4), 0);
  EXPECT_NE(std::memcmp(a->params(), c->params(), a->num_params() * 4), 0);
  const ParamView& e = view(*a, "tok_embeddings.weight");
  double ss = 0;
  for (size_t i = 0; i < e.numel(); i++)
    ss += a->params()[e.offset + i] * a->params()[e.offset + i];
  EXPECT_NEAR(std::sqrt(ss / e.numel()), 0.02, 0.002);
  EXPECT_EQ(a->params()[view(*a, "norm.weight").offset], 1.0f);
}

TEST(Llama, BadInputIsNaN) {
  LlamaConfig c = tiny();
  auto m = make_model(c, 2);
  Batch b = make_batch(2, c.seq_len, c.vocab_size, 1);
  b.in[3] = c.vocab_size;
  EXPECT_TRUE(std::isnan(m->forward(b.in.data(), b.tg.data(), 2, c.seq_len)));
  b.in[3] = 0;
  EXPECT_TRUE(std::isnan(m->forward(b.in.data(), b.tg.data(), 3, c.seq_len)));      // > max_batch
  EXPECT_TRUE(std::isnan(m->forward(b.in.data(), b.tg.data(), 1, c.seq_len + 1)));  // > seq_len
  EXPECT_FALSE(std::isnan(m->forward(b.in.data(), b.tg.data(), 2, c.seq_len)));
}

TEST(Llama, InitialLossIsLogVocab) {
  LlamaConfig c = tiny();
  auto m = make_model(c, 4);
  Batch b = make_batch(4, c.seq_len, c.vocab_size, 3);
  float loss = m->forward(b.in.data(), b.tg.data(), 4, c.seq_len);
  EXPECT_NEAR(loss, std::log((float)c.vocab_size), 0.1);
}

// Central differences in float on a model with larger weights (so the loss moves well above
// float rounding): for each tensor, its three largest gradients.
TEST(Llama, GradientsMatchFiniteDifferences) {
  for (bool tie : {false, true}) {
    LlamaConfig c = tiny();
    c.tie_embeddings = tie;
    auto m = make_model(c, 2, 5);
    for (const auto& p : m->named_parameters()) {  // std 0.02 -> about 0.2
      if (p.shape.size() == 2) {
        for (size_t i = 0; i < p.numel(); i++) m->params()[p.offset + i] *= 10;
      }
    }
    const int B = 2, T = 8;
    Batch b = make_batch(B, T, c.vocab_size, 9);
    b.tg[5] = -1;  // an ignored position
    m->zero_grad();
    m->forward(b.in.data(), b.tg.data(), B, T);
    m->backward();
    std::vector<float> grad(m->grads(), m->grads() + m->num_params());
    for (const auto& p : m->named_parameters()) {
      std::vector<size_t> idx(p.numel());
      for (size_t i = 0; i < idx.size(); i++) idx[i] = p.offset + i;
      std::partial_sort(idx.begin(), idx.begin() + 3, idx.end(), [&](size_t x, size_t y) {
        return std::fabs(grad[x]) > std::fabs(grad[y]);
      });
      for (int k = 0; k < 3; k++) {
        const size_t i = idx[k];
        float* w = m->params() + i;
        const float orig = *w, h = 1e-2f * std::max(1.0f, std::fabs(orig));
        *w = orig + h;
        double up = m->forward(b.in.data(), b.tg.data(), B, T);
        *w = orig - h;
        double down = m->forward(b.in.data(), b.tg.data(), B, T);
        *w = orig;
        const double fd = (up - down) / (2.0 * h);
        EXPECT_NEAR(grad[i], fd, 2e-2 * std::fabs(fd) + 2e-4)
            << p.name << " [" << i - p.offset << "] tie=" << tie;
      }
    }
  }
}

// Runs `steps` training steps (forward, backward, clip, AdamW) and returns the parameters.
std::vector<float> train(int steps, uint64_t seed) {
  LlamaConfig c = tiny();
  auto m = make_model(c, 4, seed);
  AdamW opt(AdamWConfig{}, m->num_params(), m->named_parameters());
  for (int s = 0; s < steps; s++) {
    Batch b = make_batch(4, c.seq_len, c.vocab_size, 100 + s);
    m->zero_grad();
    m->forward(b.in.data(), b.tg.data(), 4, c.seq_len);
    m->backward();
    clip_grad_norm(m->grads(), m->num_params(), 1.0f);
    opt.update(m->params(), m->grads(), cosine_lr(s, 2, steps, 1e-2f, 1e-3f));
  }
  return std::vector<float>(m->params(), m->params() + m->num_params());
}

TEST(Llama, TrainingIsBitwiseDeterministic) {
  auto a = train(5, 3), b = train(5, 3);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(Llama, MicroBatchesAccumulateToTheFullBatchGradient) {
  LlamaConfig c = tiny();
  const int B = 4, T = c.seq_len;
  auto m = make_model(c, B);
  Batch b = make_batch(B, T, c.vocab_size, 21);
  m->zero_grad();
  const float full_loss = m->forward(b.in.data(), b.tg.data(), B, T);
  m->backward();
  std::vector<float> full(m->grads(), m->grads() + m->num_params());

  m->zero_grad();
  const int half = B / 2 * T;
  float l1 = m->forward(b.in.data(), b.tg.data(), B / 2, T);
  m->backward(0.5f);
  float l2 = m->forward(b.in.data() + half, b.tg.data() + half, B / 2, T);
  m->backward(0.5f);
  EXPECT_NEAR((l1 + l2) / 2, full_loss, 1e-5);
  for (const auto& p : m->named_parameters()) {
    float scale = 0, err = 0;
    for (size_t i = p.offset; i < p.offset + p.numel(); i++) {
      scale = std::max(scale, std::fabs(full[i]));
      err = std::max(err, std::fabs(full[i] - m->grads()[i]));
    }
    EXPECT_LE(err, 1e-5 * scale + 1e-9) << p.name;
  }
}

TEST(Llama, ShorterSequencesAndIgnoredTargets) {
  LlamaConfig c = tiny();
  auto m = make_model(c, 2);
  Batch b = make_batch(2, 5, c.vocab_size, 4);
  float loss = m->forward(b.in.data(), b.tg.data(), 2, 5);
  EXPECT_TRUE(std::isfinite(loss));
  // the same sequences with the second half of the targets ignored: the mean is over the rest
  std::vector<int32_t> tg = b.tg;
  for (int t = 3; t < 5; t++) tg[t] = tg[5 + t] = -1;
  float part = m->forward(b.in.data(), tg.data(), 2, 5);
  EXPECT_TRUE(std::isfinite(part));
  EXPECT_NE(part, loss);
  for (auto& t : tg) t = -1;
  EXPECT_EQ(m->forward(b.in.data(), tg.data(), 2, 5), 0.f);
  m->zero_grad();
  m->backward();  // nothing counted: no gradient
  for (size_t i = 0; i < m->num_params(); i++) ASSERT_EQ(m->grads()[i], 0.f);
}

// ---- training numerics ----

TEST(AdamW, DecaysMatricesNotNorms) {
  LlamaConfig c = tiny();
  auto m = make_model(c, 1);
  std::vector<float> before(m->params(), m->params() + m->num_params());
  m->zero_grad();  // zero gradients: only the decay moves anything
  AdamW opt(AdamWConfig{}, m->num_params(), m->named_parameters());
  opt.update(m->params(), m->grads(), 0.5f);
  EXPECT_EQ(opt.step, 1);
  for (const auto& p : m->named_parameters()) {
    const size_t i = p.offset;
    if (p.shape.size() >= 2) {
      EXPECT_FLOAT_EQ(m->params()[i], before[i] * (1 - 0.5f * 0.1f)) << p.name;
    } else {
      EXPECT_EQ(m->params()[i], before[i]) << p.name;
    }
  }
}

TEST(AdamW, FirstStepMovesByLr) {
  // one parameter of each kind; with bias correction the first step is lr * sign(g)
  std::vector<ParamView> views = {{"norm.weight", 0, {2}}, {"w", 2, {1, 2}}};
  std::vector<float> p = {1, 1, 1, 1}, g = {0.5f, -2, 3, -0.25f};
  AdamWConfig cfg;
  cfg.weight_decay = 0;
  AdamW opt(cfg, 4, views);
  opt.update(p.data(), g.data(), 0.01f);
  for (int i = 0; i < 4; i++) {
    EXPECT_NEAR(p[i], 1 - 0.01f * (g[i] > 0 ? 1 : -1), 1e-6) << i;
    EXPECT_NEAR(opt.m()[i], 0.1f * g[i], 1e-7);
    EXPECT_NEAR(opt.v()[i], 0.05f * g[i] * g[i], 1e-7);
  }
}

// Out of place (a checkpoint's slot), in streamed pieces, with or without `written`: the
// same floats as in place, whatever the buffers' alignment and the tensors' boundaries.
TEST(AdamW, OutOfPlaceInPiecesIsInPlaceBitForBit) {
  // matrices (decayed) and norms (not) in turns, 3 pieces and more, a size of no round number
  const std::vector<ParamView> views = {{"a.weight", 0, {101}},
                                        {"b", 101, {97, 130}},
                                        {"c.weight", 12711, {33}},
                                        {"d", 12744, {120, 99}},
                                        {"e.weight", 24624, {13}}};
  const size_t n = 24637;
  std::vector<float> g(n);
  for (size_t i = 0; i < n; i++) g[i] = std::sin(0.37f * static_cast<float>(i)) * 1e-2f;
  for (size_t shift : {0u, 1u, 4u, 7u}) {  // floats: the slot's header puts its buffers at 16 bytes
    std::vector<float> p(n);
    for (size_t i = 0; i < n; i++) p[i] = std::cos(0.11f * static_cast<float>(i));
    AdamW in_place(AdamWConfig{}, n, views), out_of_place(AdamWConfig{}, n, views);
    // Three sets of state taking turns, each in one block at `shift` floats past a line.
    std::vector<float> sets(3 * (3 * n + 16) + 16);
    float* base = sets.data() + (16 - reinterpret_cast<uintptr_t>(sets.data()) % 64 / 4) % 16;
    auto set = [&](int k) {
      float* b = base + k * (3 * n + 16) + shift;
      return AdamWSlice{b, b + n, b + 2 * n};
    };
    std::copy(p.begin(), p.end(), set(0).p);
    out_of_place.use_moments(set(0).m, set(0).v);
    std::fill(set(0).m, set(0).m + 2 * n, 0.0f);
    for (int step = 0; step < 4; step++) {
      in_place.update(p.data(), g.data(), 1e-2f);
      const AdamWSlice from = set(step % 3), to = set((step + 1) % 3);
      std::vector<int> seen(n, 0);
      std::mutex mu;
      AdamW::Written written = [&](int, size_t b, size_t e, AdamWSlice values) {
        std::lock_guard lock(mu);
        for (size_t i = b; i < e; i++) {
          ++seen[i];
          EXPECT_EQ(std::memcmp(&values.p[i - b], &to.p[i], sizeof(float)), 0) << i;
        }
      };
      out_of_place.update_into(from.p, g.data(), 1e-2f, to, step % 2 ? written : AdamW::Written());
      if (step % 2) {
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(n));
      }
      ASSERT_EQ(std::memcmp(to.p, p.data(), n * sizeof(float)), 0) << "shift " << shift;
      ASSERT_EQ(std::memcmp(to.m, in_place.m(), n * sizeof(float)), 0) << "shift " << shift;
      ASSERT_EQ(std::memcmp(to.v, in_place.v(), n * sizeof(float)), 0) << "shift " << shift;
    }
  }
}

TEST(Schedule, WarmupThenCosine) {
  EXPECT_FLOAT_EQ(cosine_lr(0, 10, 100, 1.0f, 0.1f), 0.1f);
  EXPECT_FLOAT_EQ(cosine_lr(9, 10, 100, 1.0f, 0.1f), 1.0f);
  EXPECT_FLOAT_EQ(cosine_lr(10, 10, 100, 1.0f, 0.1f), 1.0f);
  EXPECT_NEAR(cosine_lr(55, 10, 100, 1.0f, 0.1f), 0.55f, 1e-6);
  EXPECT_FLOAT_EQ(cosine_lr(100, 10, 100, 1.0f, 0.1f), 0.1f);
  EXPECT_FLOAT_EQ(cosine_lr(1000, 10, 100, 1.0f, 0.1f), 0.1f);
  for (int s = 10; s < 100; s++) {
    EXPECT_LE(cosine_lr(s + 1, 10, 100, 1.0f, 0.1f), cosine_lr(s, 10, 100, 1.0f, 0.1f));
  }
}

TEST(ClipGradNorm, ScalesDownOnlyAboveTheLimit) {
  std::vector<float> g(200000, 0.01f);  // norm sqrt(200000) * 0.01 = 4.47
  const float norm = clip_grad_norm(g.data(), g.size(), 1.0f);
  EXPECT_NEAR(norm, std::sqrt(200000.0) * 0.01, 1e-4);
  double ss = 0;
  for (float x : g) ss += (double)x * x;
  EXPECT_NEAR(std::sqrt(ss), 1.0, 1e-5);
  std::vector<float> small = {0.3f, 0.4f};
  EXPECT_NEAR(clip_grad_norm(small.data(), 2, 1.0f), 0.5f, 1e-7);
  EXPECT_EQ(small[0], 0.3f);
}

}  // namespace
}  // namespace endure::model
