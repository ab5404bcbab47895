// The Gloo backend of endure::comm: a full mesh of TCP pairs, met through a Gloo store.
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <mutex>
#include <system_error>
#include <vector>

#include "endure/comm.h"

namespace endure::comm {

namespace {

class GlooStore : public RendezvousStore {
 public:
  explicit GlooStore(std::unique_ptr<gloo::rendezvous::Store> store) : store_(std::move(store)) {}
  gloo::rendezvous::Store& get() { return *store_; }

 private:
  std::unique_ptr<gloo::rendezvous::Store> store_;
};

// What Gloo threw, as endure's error: a timeout, or a peer that went away.
Error gloo_error(const std::string& what, const std::exception& e) {
  std::string message = e.what();
  // Gloo says "Timed out" from its pairs and "Wait timeout" from its stores.
  bool timed_out =
      message.find("imed out") != std::string::npos || message.find("imeout") != std::string::npos;
  return make_error(timed_out ? "CommTimeout" : "CommPeerLost", what + ": " + message);
}

void sum_floats(void* out, const void* a, const void* b, size_t n) {
  gloo::sum<float>(out, a, b, n);
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context,
                   std::chrono::milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}

  int rank() const override { return context_->rank; }
  int world() const override { return context_->size; }

  Status all_reduce(float* data, std::size_t count) override {
    if (world() == 1 || count == 0) return {};
    return run("all-reduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data, count);
      opts.setReduceFunction(&sum_floats);
      // The ring adds each part in an order fixed by the ranks: deterministic for a world.
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }

  // The sum of the whole buffer, this rank keeping its part: one all-reduce, so that the
  // parts are the bytes an all-reduce gives (the same order of the sum).
  Status reduce_scatter(const float* in, std::size_t count, float* out) override {
    Range mine = shard_range(count, world(), rank());
    scratch_.assign(in, in + count);
    if (auto s = all_reduce(scratch_.data(), count); !s) return s;
    std::copy_n(scratch_.data() + mine.offset, mine.count, out);
    return {};
  }

  Status all_gather(const float* shard, std::size_t count, float* out) override {
    Range mine = shard_range(count, world(), rank());
    if (world() == 1) {
      std::copy_n(shard, count, out);
      return {};
    }
    std::vector<size_t> counts;
    for (int r = 0; r < world(); ++r) counts.push_back(shard_range(count, world(), r).count);
    return run("all-gather", [&] {
      gloo::AllgathervOptions opts(context_);
      // Gloo reads its input from a non-const buffer; it does not write it.
      opts.setInput(const_cast<float*>(shard), mine.count);
      opts.setOutput(out, counts);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::allgatherv(opts);
    });
  }

  Status broadcast(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= world()) {
      return make_error("InvalidArgument", "broadcast: root " + std::to_string(root) +
                                               " is not a rank of " + std::to_string(world()));
    }
    if (world() == 1 || bytes == 0) return {};
    return run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<char*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  Status barrier() override {
    if (world() == 1) return {};
    return run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  template <class F>
  Status run(const char* what, F&& body) {
    try {
      body();
      return {};
    } catch (const std::exception& e) {
      return gloo_error(what, e);
    }
  }
  uint32_t next_tag() { return tag_++; }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::chrono::milliseconds timeout_;
  uint32_t tag_ = 0;
  std::vector<float> scratch_;
};

}  // namespace

Result<std::shared_ptr<RendezvousStore>> file_store(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error("IOError", "rendezvous folder " + dir.string() + ": " + ec.message());
  return std::shared_ptr<RendezvousStore>(
      std::make_shared<GlooStore>(std::make_unique<gloo::rendezvous::FileStore>(dir.string())));
}

std::shared_ptr<RendezvousStore> memory_store() {
  return std::make_shared<GlooStore>(std::make_unique<gloo::rendezvous::HashStore>());
}

Result<std::unique_ptr<Communicator>> connect(const Options& options,
                                              std::shared_ptr<RendezvousStore> store) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world) {
    return make_error("InvalidArgument", "rank " + std::to_string(options.rank) +
                                             " is not in a world of " +
                                             std::to_string(options.world));
  }
  if (options.key.empty()) return make_error("InvalidArgument", "the rendezvous key is empty");
  auto* gloo_store = dynamic_cast<GlooStore*>(store.get());
  if (!gloo_store) return make_error("InvalidArgument", "not a store of this backend");
  // A write to a peer that died raises SIGPIPE, whose default ends the process: it must be
  // the error of the call instead (EPIPE), as the contract says.
  static std::once_flag sigpipe_ignored;
  std::call_once(sigpipe_ignored, [] { ::signal(SIGPIPE, SIG_IGN); });
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed(options.key, gloo_store->get());
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world);
    context->setTimeout(options.timeout);
    context->connectFullMesh(prefixed, device);
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(std::move(context), options.timeout));
  } catch (const std::exception& e) {
    return gloo_error("rendezvous " + options.key, e);
  }
}

}  // namespace endure::comm
