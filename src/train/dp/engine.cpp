// One rank's training under a ZeRO stage: which memory holds what, and the collectives of a
// step. Stages 0 and 1 all-reduce the gradients in buckets (dp::GradientReducer); stages 2
// and 3 reduce-scatter each unit on a CommQueue as backward finishes it, and stage 3 gathers
// each unit's parameters on the same queue just ahead of their use, so that every rank
// issues its collectives in the one order the model's calls fix.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "endure/dp.h"
#include "endure/zero.h"
#include "train/dp/comm_queue.h"
#include "train/model/backend.h"

namespace endure::zero {

namespace {

// Bytes of the pages under [p, p + bytes) that are in memory.
std::size_t resident_bytes(const void* p, std::size_t bytes) {
  if (bytes == 0) return 0;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page;
  std::vector<unsigned char> in_memory((end - begin) / page);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, in_memory.data()) != 0) return bytes;
  std::size_t pages = 0;
  for (unsigned char v : in_memory) pages += v & 1;
  return std::min(bytes, pages * page);
}

}  // namespace

struct Engine::Impl {
  Impl(comm::Communicator& c, model::Llama& m, const EngineOptions& o, model::Backend* b)
      : comm(c),
        model(m),
        be(b ? b : model::cpu_backend()),
        options(o),
        layout(model_units(m.named_parameters()), c.world()),
        rank(c.rank()),
        n(m.num_params()),
        params(m.params()),
        grads(m.grads()),
        last_unit(static_cast<int>(layout.units()) - 1),
        tied(m.config().tie_embeddings) {
    for (std::size_t u = 0; u < layout.units(); ++u) packed_at.push_back(layout.packed(u, rank));
  }

  comm::Communicator& comm;
  model::Llama& model;
  model::Backend* be;
  EngineOptions options;
  Layout layout;
  int rank;
  std::size_t n;
  float* params;
  float* grads;
  int last_unit;
  bool tied;
  std::vector<std::size_t> packed_at;  // where this rank's part of each unit starts, packed

  int64_t steps = 0;
  std::unique_ptr<model::AdamW> full;                // stage 0
  std::vector<std::unique_ptr<model::AdamW>> parts;  // stages 1-3: one per unit's part
  std::vector<float> grad_shard;                     // stages 2, 3: this rank's parts
  std::vector<float> param_shard;                    // stage 3
  std::vector<float> scratch;                        // the queue's: a part to accumulate
  std::optional<dp::GradientReducer> reducer;        // stages 0, 1
  dp::CommQueue queue;

  bool in_step = false;
  bool first_micro = true;       // stages 2, 3: the step's first reduce-scatter assigns
  std::size_t reduced_from = 0;  // stages 2, 3: units [reduced_from, units) are queued
  // Stage 3: which units' parameters are here or on their way, and how far each pass got.
  model::ParamHooks hooks;
  std::vector<bool> resident;
  std::vector<uint64_t> pending;
  bool training = false;
  int forward_cursor = -1, backward_cursor = 0;
  Status hook_error;

  comm::Range part(std::size_t u) const { return layout.part(u, rank); }
  float* param_part(std::size_t u) {
    return options.stage == 3 ? param_shard.data() + packed_at[u] : params + part(u).offset;
  }

  // An update's end: its gathers done, the step counted, the step's memory let go.
  Status end_update() {
    Status s = queue.drain();
    ++steps;
    training = false;
    in_step = false;
    release_all();
    return s;
  }

  void begin_step() {
    queue.begin_step();
    if (options.stage <= 1) model.zero_grad();
    first_micro = true;
    training = true;
    in_step = true;
  }

  // Stages 2, 3: backward has made grads()[begin, end) final; every unit now wholly final
  // is reduce-scattered into this rank's part and dropped.
  void grads_final_from(std::size_t begin) {
    while (reduced_from > 0 && layout.unit(reduced_from - 1).offset >= begin) {
      --reduced_from;
      const std::size_t u = reduced_from;
      const bool assign = first_micro;
      queue.push([this, u, assign]() -> Status {
        const comm::Range unit = layout.unit(u);
        float* mine = grad_shard.data() + packed_at[u];
        Status s;
        if (assign) {
          s = comm.reduce_scatter_v(grads + unit.offset, layout.counts(u), mine);
        } else {
          scratch.resize(part(u).count);
          s = comm.reduce_scatter_v(grads + unit.offset, layout.counts(u), scratch.data());
          for (std::size_t i = 0; s && i < scratch.size(); ++i) mine[i] += scratch[i];
        }
        be->discard(grads + unit.offset, unit.count);
        return s;
      });
    }
  }

  // base's unit u made whole from every rank's part of it, each already in its place.
  uint64_t gather_in_place(float* base, std::size_t u) {
    return queue.push([this, base, u] {
      return comm.all_gather_v(base + part(u).offset, layout.counts(u),
                               base + layout.unit(u).offset);
    });
  }

  uint64_t gather_params(std::size_t u) {
    return queue.push([this, u] {
      return comm.all_gather_v(param_part(u), layout.counts(u), params + layout.unit(u).offset);
    });
  }

  // Stage 3's hooks.
  void need(int u, bool backward) {
    if (!resident[u]) {
      const uint64_t ticket = pending[u] ? pending[u] : gather_params(u);
      if (auto s = queue.wait(ticket); !s && hook_error.ok()) hook_error = s;
      pending[u] = 0;
      resident[u] = true;
    }
    // The next unit of this pass is gathered while this one computes. Unit 0 inside a
    // pass is a tied head: it moves no cursor.
    int next = -1;
    if (!backward && u > forward_cursor) {
      forward_cursor = u;
      if (u < last_unit) next = u + 1;
    } else if (backward && u != 0 && u < backward_cursor) {
      backward_cursor = u;
      if (u > 1) next = u - 1;
    }
    if (next >= 0 && !resident[next] && !pending[next]) pending[next] = gather_params(next);
  }

  void done(int u, bool backward) {
    // Kept for the rest of a training step: a tied embedding (its head is used again), and
    // the last unit, which backward needs first.
    const bool keep = training && ((tied && u == 0) || (!backward && u == last_unit));
    if (keep) return;
    release(u);
  }

  void release(int u) {
    be->discard(params + layout.unit(u).offset, layout.unit(u).count);
    resident[u] = false;
  }

  // Stage 3, after a step or an evaluation: no unit stays gathered.
  void release_all() {
    if (options.stage != 3) return;
    for (int u = 0; u <= last_unit; ++u) {
      if (resident[u]) release(u);
    }
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  if (impl_->options.stage == 3) impl_->model.set_param_hooks(nullptr);
}

Result<std::unique_ptr<Engine>> Engine::create(comm::Communicator& comm, model::Llama& model,
                                               const EngineOptions& options,
                                               model::Backend* backend) {
  if (options.stage < 0 || options.stage > 3) {
    return make_error("InvalidArgument",
                      "zero stage " + std::to_string(options.stage) + " is not 0, 1, 2 or 3");
  }
  auto impl = std::make_unique<Impl>(comm, model, options, backend);
  Impl& I = *impl;
  const auto& views = model.named_parameters();
  if (options.stage == 0) {
    I.full = std::make_unique<model::AdamW>(options.adam, I.n, views, I.be);
  } else {
    for (std::size_t u = 0; u < I.layout.units(); ++u) {
      const comm::Range p = I.part(u);
      I.parts.push_back(std::make_unique<model::AdamW>(
          options.adam, p.count, shard_views(views, p.offset, p.offset + p.count), I.be));
    }
  }
  if (options.stage <= 1) {
    I.reducer.emplace(comm, I.grads, I.n, options.bucket_floats);
  } else {
    I.grad_shard.assign(I.layout.floats(I.rank), 0.0f);
    I.be->discard(I.grads, I.n);
  }
  if (options.stage == 3) {
    I.param_shard.resize(I.layout.floats(I.rank));
    for (std::size_t u = 0; u < I.layout.units(); ++u) {
      const comm::Range p = I.part(u);
      std::memcpy(I.param_shard.data() + I.packed_at[u], I.params + p.offset,
                  p.count * sizeof(float));
    }
    I.be->discard(I.params, I.n);
    I.resident.assign(I.layout.units(), false);
    I.pending.assign(I.layout.units(), 0);
    I.hooks.need = [&I](int u, bool backward) { I.need(u, backward); };
    I.hooks.done = [&I](int u, bool backward) { I.done(u, backward); };
    model.set_param_hooks(&I.hooks);
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Result<float> Engine::micro_batch(const int32_t* inputs, const int32_t* targets, int B, int T,
                                  float grad_scale, bool last) {
  Impl& I = *impl_;
  if (!I.in_step) I.begin_step();
  I.forward_cursor = -1;
  I.backward_cursor = I.last_unit + 1;
  const float loss = I.model.forward(inputs, targets, B, T);
  Status s;
  if (I.options.stage <= 1) {
    if (last) {
      I.reducer->begin();
      I.model.backward(grad_scale, [&I](std::size_t b, std::size_t e) { I.reducer->ready(b, e); });
      s = I.reducer->finish();
    } else {
      I.model.backward(grad_scale);  // summed locally; reduced with the last micro-batch
    }
  } else {
    I.reduced_from = I.layout.units();
    I.model.backward(grad_scale, [&I](std::size_t b, std::size_t) { I.grads_final_from(b); });
    I.grads_final_from(0);
    s = I.queue.drain();
    I.first_micro = false;
  }
  if (!I.hook_error.ok()) return I.hook_error.error();
  if (!s) return s.error();
  return loss;
}

Result<float> Engine::clip(float max_norm) {
  Impl& I = *impl_;
  if (I.options.stage <= 1) return model::clip_grad_norm(I.grads, I.n, max_norm, I.be);
  // Each rank's sum of squares in double, gathered bit for bit (two floats each) and added
  // in rank order: the same norm on every rank.
  const int world = I.comm.world();
  std::vector<float> sums(2 * static_cast<std::size_t>(world));
  const double mine = I.be->sum_squares(I.grad_shard.data(), I.grad_shard.size());
  std::memcpy(sums.data() + 2 * I.rank, &mine, sizeof mine);
  if (auto s = I.comm.all_gather_v(sums.data() + 2 * I.rank, std::vector<std::size_t>(world, 2),
                                   sums.data());
      !s) {
    return s.error();
  }
  double total = 0;
  for (int k = 0; k < world; ++k) {
    double part;
    std::memcpy(&part, sums.data() + 2 * k, sizeof part);
    total += part;
  }
  const float norm = static_cast<float>(std::sqrt(total));
  const float factor = max_norm / (norm + 1e-6f);
  if (factor < 1.0f) I.be->scale(I.grad_shard.data(), I.grad_shard.size(), factor);
  return norm;
}

bool Engine::state_movable() const { return impl_->full && impl_->comm.world() == 1; }

Status Engine::move_state(model::AdamWSlice to) {
  Impl& I = *impl_;
  if (!state_movable()) {
    return make_error("ValidationException", "the state moves only under stage 0 on one rank");
  }
  const std::size_t bytes = I.n * sizeof(float);
  std::memcpy(to.p, I.params, bytes);
  std::memcpy(to.m, I.full->m(), bytes);
  std::memcpy(to.v, I.full->v(), bytes);
  I.model.use_params(to.p);
  I.params = to.p;
  I.full->use_moments(to.m, to.v);
  return {};
}

Status Engine::update_into(float lr, model::AdamWSlice next, const model::AdamW::Written& written) {
  Impl& I = *impl_;
  if (!state_movable()) {
    return make_error("ValidationException", "the state moves only under stage 0 on one rank");
  }
  I.full->update_into(I.params, I.grads, lr, next, written);
  I.model.use_params(next.p);
  I.params = next.p;
  return I.end_update();
}

Status Engine::update(float lr) {
  Impl& I = *impl_;
  const int stage = I.options.stage;
  if (stage == 0) {
    I.full->update(I.params, I.grads, lr);
  } else {
    for (std::size_t u = 0; u < I.layout.units(); ++u) {
      const comm::Range p = I.part(u);
      const float* g = stage == 1 ? I.grads + p.offset : I.grad_shard.data() + I.packed_at[u];
      I.parts[u]->update(I.param_part(u), g, lr);
      // Stages 1 and 2 gather each unit's new parameters while the next unit updates.
      if (stage <= 2) I.gather_in_place(I.params, u);
    }
  }
  return I.end_update();
}

Result<float> Engine::forward(const int32_t* inputs, const int32_t* targets, int B, int T) {
  Impl& I = *impl_;
  I.training = false;
  I.forward_cursor = -1;
  const float loss = I.model.forward(inputs, targets, B, T);
  I.release_all();
  if (!I.hook_error.ok()) return I.hook_error.error();
  return loss;
}

std::vector<StatePart> Engine::state() {
  Impl& I = *impl_;
  std::vector<StatePart> out;
  for (std::size_t u = 0; u < I.layout.units(); ++u) {
    const comm::Range p = I.part(u);
    if (p.count == 0) continue;
    const std::string at = "." + std::to_string(u);
    float* m = I.full ? I.full->m() + p.offset : I.parts[u]->m();
    float* v = I.full ? I.full->v() + p.offset : I.parts[u]->v();
    out.push_back({"params" + at, u, I.param_part(u), p.count});
    out.push_back({"adam.m" + at, u, m, p.count});
    out.push_back({"adam.v" + at, u, v, p.count});
  }
  return out;
}

Status Engine::restored(int64_t adam_step) {
  Impl& I = *impl_;
  I.steps = adam_step;
  if (I.full) I.full->step = adam_step;
  for (auto& p : I.parts) p->step = adam_step;
  // What the stage keeps whole is gathered from every rank's restored part, in place.
  std::vector<float*> whole;
  if (I.options.stage <= 2) whole.push_back(I.params);
  if (I.options.stage == 0) {
    whole.push_back(I.full->m());
    whole.push_back(I.full->v());
  }
  for (float* base : whole) {
    for (std::size_t u = 0; u < I.layout.units(); ++u) I.gather_in_place(base, u);
  }
  return I.queue.drain();
}

int64_t Engine::adam_step() const { return impl_->steps; }
const Layout& Engine::layout() const { return impl_->layout; }
int Engine::stage() const { return impl_->options.stage; }

double Engine::comm_seconds() const {
  return impl_->queue.busy_seconds() + (impl_->reducer ? impl_->reducer->comm_seconds() : 0);
}

double Engine::exposed_seconds() const {
  return impl_->queue.waited_seconds() + (impl_->reducer ? impl_->reducer->exposed_seconds() : 0);
}

std::size_t Engine::state_bytes() const {
  const Impl& I = *impl_;
  std::size_t bytes = resident_bytes(I.params, I.n * sizeof(float)) +
                      resident_bytes(I.grads, I.n * sizeof(float)) +
                      (I.grad_shard.size() + I.param_shard.size()) * sizeof(float);
  if (I.full) bytes += 2 * I.full->size() * sizeof(float);
  for (const auto& p : I.parts) bytes += 2 * p->size() * sizeof(float);
  return bytes;
}

}  // namespace endure::zero
