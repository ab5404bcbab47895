// LlamaConfig: presets, validation, JSON and the sizes derived from it.
#include <charconv>
#include <cmath>
#include <set>
#include <string>

#include "endure/model.h"

namespace endure::model {

namespace {

LlamaConfig make(int dim, int n_layers, int n_heads, int n_kv_heads, int vocab, int seq, int hidden,
                 bool tie) {
  LlamaConfig c;
  c.dim = dim;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.vocab_size = vocab;
  c.seq_len = seq;
  c.hidden_dim = hidden;
  c.tie_embeddings = tie;
  return c;
}

// A float as the shortest decimal that reads back as it (1e-05, not 9.999999747378752e-06).
double as_decimal(float x) {
  char buf[32];
  auto end = std::to_chars(buf, buf + sizeof buf, x).ptr;
  return std::stod(std::string(buf, end));
}

}  // namespace

int LlamaConfig::ffn_hidden() const {
  if (hidden_dim > 0) return hidden_dim;
  if (multiple_of <= 0) return 0;
  int h = 2 * (4 * dim) / 3;  // Meta's rule: two thirds of 4 * dim ...
  return multiple_of * ((h + multiple_of - 1) / multiple_of);  // ... up to a multiple
}

Status LlamaConfig::validate() const {
  struct Positive {
    const char* name;
    long value;
  };
  for (Positive p : {Positive{"dim", dim},
                     {"n_layers", n_layers},
                     {"n_heads", n_heads},
                     {"n_kv_heads", n_kv_heads},
                     {"vocab_size", vocab_size},
                     {"seq_len", seq_len},
                     {"multiple_of", multiple_of}}) {
    if (p.value <= 0) {
      return invalid(std::string(p.name) + " must be positive, got " + std::to_string(p.value));
    }
  }
  if (hidden_dim < 0) {
    return invalid("hidden_dim must be positive (or 0 to derive it), got " +
                   std::to_string(hidden_dim));
  }
  if (dim % n_heads != 0) {
    return invalid("dim " + std::to_string(dim) + " is not divisible by n_heads " +
                   std::to_string(n_heads));
  }
  if (n_heads % n_kv_heads != 0) {
    return invalid("n_heads " + std::to_string(n_heads) + " is not divisible by n_kv_heads " +
                   std::to_string(n_kv_heads));
  }
  if (head_dim() % 2 != 0) {
    return invalid("head_dim (dim / n_heads) " + std::to_string(head_dim()) +
                   " must be even: RoPE rotates pairs");
  }
  if (!(norm_eps > 0) || !std::isfinite(norm_eps)) {
    return invalid("norm_eps must be positive, got " + std::to_string(norm_eps));
  }
  if (!(rope_theta > 0) || !std::isfinite(rope_theta)) {
    return invalid("rope_theta must be positive, got " + std::to_string(rope_theta));
  }
  return Status::Ok();
}

json LlamaConfig::to_json() const {
  return json{{"dim", dim},
              {"n_layers", n_layers},
              {"n_heads", n_heads},
              {"n_kv_heads", n_kv_heads},
              {"vocab_size", vocab_size},
              {"seq_len", seq_len},
              {"hidden_dim", ffn_hidden()},
              {"multiple_of", multiple_of},
              {"norm_eps", as_decimal(norm_eps)},
              {"rope_theta", as_decimal(rope_theta)},
              {"tie_embeddings", tie_embeddings}};
}

Result<LlamaConfig> LlamaConfig::from_json(const json& j) {
  if (!j.is_object()) return invalid("a model config must be a JSON object");
  LlamaConfig c;
  bool have_preset = false;
  if (j.contains("preset")) {
    if (!j["preset"].is_string()) return invalid("preset must be a string");
    auto p = preset(j["preset"].get<std::string>());
    if (!p.ok()) return p.error();
    c = *p;
    have_preset = true;
  }
  static const std::set<std::string> known = {
      "preset",  "dim",        "n_layers",    "n_heads",  "n_kv_heads", "vocab_size",
      "seq_len", "hidden_dim", "multiple_of", "norm_eps", "rope_theta", "tie_embeddings"};
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) return invalid("unknown model config key \"" + key + "\"");
  }
  auto get_int = [&](const char* key, int* out, bool required) -> Status {
    if (!j.contains(key)) {
      if (required) return invalid(std::string("model config needs \"") + key + "\"");
      return Status::Ok();
    }
    const json& v = j[key];
    if (!v.is_number_integer()) return invalid(std::string(key) + " must be an integer");
    *out = v.get<int>();
    return Status::Ok();
  };
  auto get_float = [&](const char* key, float* out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    if (!j[key].is_number()) return invalid(std::string(key) + " must be a number");
    *out = j[key].get<float>();
    return Status::Ok();
  };
  const bool req = !have_preset;
  bool kv_given = j.contains("n_kv_heads");
  for (Status s :
       {get_int("dim", &c.dim, req), get_int("n_layers", &c.n_layers, req),
        get_int("n_heads", &c.n_heads, req), get_int("n_kv_heads", &c.n_kv_heads, false),
        get_int("vocab_size", &c.vocab_size, req), get_int("seq_len", &c.seq_len, req),
        get_int("hidden_dim", &c.hidden_dim, false), get_int("multiple_of", &c.multiple_of, false),
        get_float("norm_eps", &c.norm_eps), get_float("rope_theta", &c.rope_theta)}) {
    if (!s.ok()) return s.error();
  }
  if (!kv_given && (!have_preset || j.contains("n_heads"))) c.n_kv_heads = c.n_heads;
  if (j.contains("tie_embeddings")) {
    if (!j["tie_embeddings"].is_boolean()) return invalid("tie_embeddings must be a boolean");
    c.tie_embeddings = j["tie_embeddings"].get<bool>();
  }
  Status s = c.validate();
  if (!s.ok()) return s.error();
  return c;
}

std::vector<std::string> LlamaConfig::preset_names() {
  return {"stories15M", "stories42M", "stories110M", "tiny"};
}

Result<LlamaConfig> LlamaConfig::preset(const std::string& name) {
  if (name == "stories15M") return make(288, 6, 6, 6, 32000, 256, 768, true);
  if (name == "stories42M") return make(512, 8, 8, 8, 32000, 1024, 1376, true);
  if (name == "stories110M") return make(768, 12, 12, 12, 32000, 1024, 2048, true);
  if (name == "tiny") {
    LlamaConfig c = make(32, 2, 4, 2, 97, 16, 0, false);
    c.multiple_of = 16;  // 2 * 4 * 32 / 3 = 85 -> 96
    return c;
  }
  std::string names;
  for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
  return make_error("ResourceNotFound",
                    "unknown model preset \"" + name + "\" (known: " + names + ")");
}

int64_t LlamaConfig::num_parameters() const {
  const int64_t C = dim, V = vocab_size, Hf = ffn_hidden(), kv = kv_dim();
  const int64_t per_layer = 2 * C + C * C + 2 * C * kv + C * C + 3 * C * Hf;
  return V * C + n_layers * per_layer + C + (tie_embeddings ? 0 : V * C);
}

double LlamaConfig::flops_per_token(int T) const {
  if (T <= 0) T = seq_len;
  const double C = dim, V = vocab_size, Hf = ffn_hidden(), kv = kv_dim();
  const double matmul_weights = n_layers * (2 * C * C + 2 * C * kv + 3 * C * Hf) + V * C;
  return 6 * matmul_weights + 12.0 * n_layers * C * T;
}

size_t ParamView::numel() const {
  size_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

}  // namespace endure::model
