// The C API over ckpt::Checkpointer: no exception crosses it, every error is a code plus
// the handle's last message.
#include "endure/checkpoint_c.h"

#include <new>
#include <string>

#include "endure/checkpoint.h"

struct endure_ckpt {
  std::unique_ptr<endure::ckpt::Checkpointer> impl;
  endure::ckpt::Loaded loaded;
  std::string error;
};

namespace {

endure_ckpt_status code_of(const endure::Error& e) {
  if (e.code == "ValidationException" || e.code == "WorldMismatch" || e.code == "TierOff" ||
      e.code == "InvalidConfig")
    return ENDURE_CKPT_EINVAL;
  if (e.code == "IOError") return ENDURE_CKPT_EIO;
  if (e.code == "NotFound") return ENDURE_CKPT_ENOTFOUND;
  if (e.code == "CorruptCheckpoint") return ENDURE_CKPT_ECORRUPT;
  if (e.code == "CommitTimeout") return ENDURE_CKPT_ETIMEOUT;
  return ENDURE_CKPT_EOTHER;
}

endure_ckpt_status fail(endure_ckpt* c, const endure::Error& e) {
  if (c) c->error = e.message;
  return code_of(e);
}

endure_ckpt_status done(endure_ckpt* c) {
  c->error.clear();
  return ENDURE_CKPT_OK;
}

// Why this thread's last open failed: a failed open has no handle to keep it in.
thread_local std::string open_error;

endure_ckpt_status open_failed(const endure::Error& e) {
  open_error = e.message;
  return code_of(e);
}

}  // namespace

extern "C" endure_ckpt_status endure_ckpt_open_with(const endure_ckpt_options* options,
                                                    endure_ckpt** out) {
  try {
    open_error.clear();
    if (!options || !options->dir || !out) {
      return open_failed(endure::make_error("ValidationException", "options, dir, out: NULL"));
    }
    endure::ckpt::Options o;
    o.dir = options->dir;
    if (options->local_dir) o.local_dir = options->local_dir;
    if (options->memory_dir) o.memory_dir = options->memory_dir;
    o.rank = options->rank;
    o.world = options->world;
    o.keep_last = options->keep_last;
    o.keep_every = options->keep_every;
    if (options->commit_timeout_seconds > 0)
      o.commit_timeout_seconds = options->commit_timeout_seconds;
    if (options->s3) o.s3 = options->s3;
    if (options->disk_duty != 0) o.disk_duty = options->disk_duty;
    if (options->cluster_node && *options->cluster_node) {
      o.cluster_node = options->cluster_node;
      std::string nodes = options->cluster_rank_nodes ? options->cluster_rank_nodes : "";
      for (size_t at = 0; !nodes.empty() && at <= nodes.size();) {
        size_t comma = nodes.find(',', at);
        if (comma == std::string::npos) comma = nodes.size();
        o.cluster_rank_nodes.push_back(nodes.substr(at, comma - at));
        at = comma + 1;
      }
      if (options->cluster_replicas < -1)
        return open_failed(endure::invalid("cluster_replicas: -1 (none), 0 (the default, 1) or more"));
      o.cluster_replicas = options->cluster_replicas == 0 ? 1 : std::max(0, options->cluster_replicas);
      if (options->cluster_config_dir) o.cluster_config_dir = options->cluster_config_dir;
    }
    auto c = endure::ckpt::Checkpointer::open(o);
    if (!c) return open_failed(c.error());
    *out = new endure_ckpt{std::move(*c), {}, {}};
    return ENDURE_CKPT_OK;
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" endure_ckpt_status endure_ckpt_open_tiered(const char* dir, const char* local_dir,
                                                      const char* memory_dir, int rank, int world,
                                                      int keep_last, int keep_every,
                                                      endure_ckpt** out) {
  endure_ckpt_options o{};  // every field after these: the default
  o.dir = dir;
  o.local_dir = local_dir;
  o.memory_dir = memory_dir;
  o.rank = rank;
  o.world = world;
  o.keep_last = keep_last;
  o.keep_every = keep_every;
  return endure_ckpt_open_with(&o, out);
}

extern "C" endure_ckpt_status endure_ckpt_open(const char* dir, int rank, int world, int keep_last,
                                               int keep_every, endure_ckpt** out) {
  return endure_ckpt_open_tiered(dir, nullptr, nullptr, rank, world, keep_last, keep_every, out);
}

extern "C" void endure_ckpt_close(endure_ckpt* c) {
  try {
    delete c;
  } catch (...) {
  }
}

namespace {

// A save's user_json: NULL is an empty object.
endure::Result<endure::json> parse_user(const char* user_json) {
  if (!user_json) return endure::json::object();
  auto user = endure::json::parse(user_json, nullptr, false);
  if (!user.is_object())
    return endure::make_error("ValidationException", "user_json: not a JSON object");
  return user;
}

// endure_ckpt_save and endure_ckpt_save_overlapped: the same checks, then one of the two.
endure_ckpt_status save_with(endure_ckpt* c, int64_t step, const endure_ckpt_buffer* buffers,
                             size_t count, const char* user_json, bool overlapped,
                             endure::ckpt::Tiers tiers = endure::ckpt::Tiers::all) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    if (!buffers && count) return fail(c, endure::make_error("ValidationException", "buffers: NULL"));
    std::vector<endure::ckpt::Buffer> list;
    for (size_t i = 0; i < count; ++i) {
      list.push_back({buffers[i].name ? buffers[i].name : "", buffers[i].data, buffers[i].size});
    }
    auto user = parse_user(user_json);
    if (!user) return fail(c, user.error());
    auto s = overlapped ? c->impl->save_overlapped(step, list, *user, tiers)
                        : c->impl->save(step, list, *user, tiers);
    return s ? done(c) : fail(c, s.error());
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

}  // namespace

extern "C" endure_ckpt_status endure_ckpt_save(endure_ckpt* c, int64_t step,
                                               const endure_ckpt_buffer* buffers, size_t count,
                                               const char* user_json) {
  return save_with(c, step, buffers, count, user_json, /*overlapped=*/false);
}

extern "C" endure_ckpt_status endure_ckpt_save_overlapped(endure_ckpt* c, int64_t step,
                                                          const endure_ckpt_buffer* buffers,
                                                          size_t count, const char* user_json) {
  return save_with(c, step, buffers, count, user_json, /*overlapped=*/true);
}

extern "C" endure_ckpt_status endure_ckpt_save_overlapped_memory(endure_ckpt* c, int64_t step,
                                                                 const endure_ckpt_buffer* buffers,
                                                                 size_t count,
                                                                 const char* user_json) {
  return save_with(c, step, buffers, count, user_json, /*overlapped=*/true,
                   endure::ckpt::Tiers::memory);
}

extern "C" endure_ckpt_status endure_ckpt_next_state(endure_ckpt* c, const char* const* names,
                                                     const size_t* sizes, size_t count,
                                                     void** data) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    if (count && (!names || !sizes || !data)) {
      return fail(c, endure::make_error("ValidationException", "names, sizes, data: NULL"));
    }
    std::vector<endure::ckpt::BufferShape> shapes;
    for (size_t i = 0; i < count; ++i) shapes.push_back({names[i] ? names[i] : "", sizes[i]});
    auto buffers = c->impl->next_state(shapes);
    if (!buffers) return fail(c, buffers.error());
    for (size_t i = 0; i < count; ++i) data[i] = (*buffers)[i].data;
    return done(c);
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" endure_ckpt_status endure_ckpt_save_in_place(endure_ckpt* c, int64_t step,
                                                        const char* user_json, int memory_only) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    auto user = parse_user(user_json);
    if (!user) return fail(c, user.error());
    auto s = c->impl->save_in_place(
        step, *user, memory_only ? endure::ckpt::Tiers::memory : endure::ckpt::Tiers::all);
    return s ? done(c) : fail(c, s.error());
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" int endure_ckpt_disk_busy(const endure_ckpt* c) {
  return c && c->impl->disk_busy() ? 1 : 0;
}

extern "C" endure_ckpt_status endure_ckpt_flush(endure_ckpt* c) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    auto s = c->impl->flush();
    return s ? done(c) : fail(c, s.error());
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" endure_ckpt_status endure_ckpt_wait_copied(endure_ckpt* c) {
  if (!c) return ENDURE_CKPT_EINVAL;
  c->impl->wait_copied();
  return done(c);
}

extern "C" endure_ckpt_status endure_ckpt_wait(endure_ckpt* c) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    auto s = c->impl->wait();
    return s ? done(c) : fail(c, s.error());
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" endure_ckpt_status endure_ckpt_latest(endure_ckpt* c, int64_t* step) {
  if (!c || !step) return ENDURE_CKPT_EINVAL;
  try {
    auto l = c->impl->latest();
    if (!l) return fail(c, endure::make_error("NotFound", "no complete, valid checkpoint"));
    *step = l->step;
    return done(c);
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" endure_ckpt_status endure_ckpt_load(endure_ckpt* c, int64_t step, int64_t* loaded_step) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    auto l = c->impl->load(step);
    if (!l) return fail(c, l.error());
    c->loaded = std::move(*l);
    if (loaded_step) *loaded_step = c->loaded.step;
    return done(c);
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" endure_ckpt_status endure_ckpt_loaded_buffer(endure_ckpt* c, const char* name,
                                                        const void** data, size_t* size) {
  if (!c || !name || !data || !size) return ENDURE_CKPT_EINVAL;
  auto it = c->loaded.buffers.find(name);
  if (it == c->loaded.buffers.end()) {
    return fail(c, endure::make_error("NotFound", std::string("buffer \"") + name + "\": not loaded"));
  }
  *data = it->second.data();
  *size = it->second.size();
  return done(c);
}

namespace {

// What the caller's targets_for answers for a copy of `step` about to be read, as the engine
// takes it: a refusal is a ValidationException, which ends the restore before any write.
endure::Result<std::vector<endure::ckpt::MutableBuffer>> ask_targets(
    endure_ckpt_targets_fn targets_for, void* ctx, int64_t step, const endure::json& user) {
  const endure_ckpt_target* targets = nullptr;
  size_t count = 0;
  const std::string text = user.is_object() ? user.dump() : "{}";
  if (targets_for(ctx, step, text.c_str(), &targets, &count) != ENDURE_CKPT_OK) {
    return endure::make_error("ValidationException",
                              "targets: the caller refused step " + std::to_string(step));
  }
  if (!targets && count) return endure::make_error("ValidationException", "targets: NULL");
  std::vector<endure::ckpt::MutableBuffer> list;
  for (size_t i = 0; i < count; ++i) {
    const char* name = targets[i].name ? targets[i].name : "";
    if (targets[i].size > 0 && !targets[i].data) {
      return endure::make_error("ValidationException",
                                std::string("targets: \"") + name + "\" has no data");
    }
    list.push_back({name, targets[i].data, targets[i].size});
  }
  return list;
}

}  // namespace

extern "C" endure_ckpt_status endure_ckpt_load_into(endure_ckpt* c, int64_t step,
                                                    endure_ckpt_targets_fn targets_for, void* ctx,
                                                    int64_t* loaded_step) {
  if (!c) return ENDURE_CKPT_EINVAL;
  try {
    if (!targets_for) {
      return fail(c, endure::make_error("ValidationException", "targets_for: NULL"));
    }
    auto info = c->impl->load_into(step, [&](int64_t s, const endure::json& user) {
      return ask_targets(targets_for, ctx, s, user);
    });
    if (!info) return fail(c, info.error());
    if (loaded_step) *loaded_step = info->step;
    return done(c);
  } catch (...) {
    return ENDURE_CKPT_EOTHER;
  }
}

extern "C" const char* endure_ckpt_last_error(const endure_ckpt* c) {
  return c ? c->error.c_str() : open_error.c_str();
}
