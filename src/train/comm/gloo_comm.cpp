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

// Gloo's own collectives use slot prefixes 0x01 to 0x08 (gloo/types.h).
constexpr uint8_t kReduceScatterSlotPrefix = 0x10;

class GlooStore : public RendezvousStore {
 public:
  explicit GlooStore(std::unique_ptr<gloo::rendezvous::Store> store) : store_(std::move(store)) {}
  gloo::rendezvous::Store& get() { return *store_; }

 private:
  std::unique_ptr<gloo::rendezvous::Store> store_;
};

// Gloo's FileStore, safe for the connect() of ranks that are threads of one process (tests):
// its set() appends each key's path to a vector of the store with no lock, and two ranks
// setting their addresses at once corrupt the heap. Only set() writes the store's memory;
// get() and wait() poll the folder and stay outside the lock, so that a rank waiting for a
// peer's key never holds what the peer needs. Ranks in processes of their own each have a
// store and never shared one.
class ThreadSafeFileStore : public gloo::rendezvous::FileStore {
 public:
  using FileStore::FileStore;
  void set(const std::string& key, const std::vector<char>& data) override {
    std::lock_guard<std::mutex> lock(set_mutex_);
    FileStore::set(key, data);
  }

 private:
  std::mutex set_mutex_;
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

  // A ring: in step s (of world-1) each rank sends the part it summed last to the next rank
  // and adds the part the previous rank sends it, so that part k has travelled round from
  // rank k+1 and reaches rank k last, complete. Written here on Gloo's transport because
  // Gloo's own reduce-scatter (ReduceScatterHalvingDoubling) sets up its buffers per
  // instance, holds two copies of the whole input, and takes no per-call timeout. The order
  // of every sum is fixed by the ranks: deterministic for a world.
  Status reduce_scatter_v(float* data, const std::vector<std::size_t>& counts,
                          float* out) override {
    if (auto s = check_counts("reduce-scatter", counts); !s) return s;
    const int w = world(), r = rank();
    std::vector<std::size_t> offsets(w, 0);
    for (int k = 1; k < w; ++k) offsets[k] = offsets[k - 1] + counts[k - 1];
    const std::size_t total = offsets[w - 1] + counts[w - 1];
    if (w > 1 && total > 0) {
      auto status = run("reduce-scatter", [&] {
        const std::size_t largest = *std::max_element(counts.begin(), counts.end());
        if (scratch_.size() < largest) scratch_.resize(largest);
        auto send = context_->createUnboundBuffer(data, total * sizeof(float));
        auto recv = context_->createUnboundBuffer(scratch_.data(), largest * sizeof(float));
        const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, next_tag());
        const int right = (r + 1) % w, left = (r + w - 1) % w;
        for (int step = 0; step < w - 1; ++step) {
          const int sending = (r + 2 * w - step - 1) % w, adding = (r + 2 * w - step - 2) % w;
          if (counts[adding] > 0) recv->recv(left, slot, 0, counts[adding] * sizeof(float));
          if (counts[sending] > 0) {
            send->send(right, slot, offsets[sending] * sizeof(float),
                       counts[sending] * sizeof(float));
          }
          if (counts[adding] > 0) recv->waitRecv(timeout_);
          if (counts[sending] > 0) send->waitSend(timeout_);
          float* part = data + offsets[adding];
          for (std::size_t i = 0; i < counts[adding]; ++i) part[i] += scratch_[i];
        }
      });
      if (!status) return status;
    }
    std::copy_n(data + offsets[r], counts[r], out);
    return {};
  }

  Status all_gather_v(const float* shard, const std::vector<std::size_t>& counts,
                      float* out) override {
    if (auto s = check_counts("all-gather", counts); !s) return s;
    if (world() == 1) {
      if (shard != out) std::copy_n(shard, counts[0], out);
      return {};
    }
    std::size_t mine = 0;
    for (int k = 0; k < rank(); ++k) mine += counts[k];
    return run("all-gather", [&] {
      gloo::AllgathervOptions opts(context_);
      // Without an input Gloo's gather is in place: this rank's part is already in out.
      // Gloo reads its input from a non-const buffer; it does not write it.
      if (shard != out + mine) opts.setInput(const_cast<float*>(shard), counts[rank()]);
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
  Status check_counts(const char* what, const std::vector<std::size_t>& counts) const {
    if (counts.size() == static_cast<std::size_t>(world())) return {};
    return make_error("InvalidArgument", std::string(what) + ": " + std::to_string(counts.size()) +
                                             " parts for " + std::to_string(world()) + " ranks");
  }

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
      std::make_shared<GlooStore>(std::make_unique<ThreadSafeFileStore>(dir.string())));
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
    // No rank returns before every rank's mesh is whole: one that returned and closed its
    // pairs at once would fail a peer still connecting ("Connection closed by peer").
    gloo::BarrierOptions barrier(context);
    barrier.setTimeout(options.timeout);
    gloo::barrier(barrier);
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(std::move(context), options.timeout));
  } catch (const std::exception& e) {
    return gloo_error("rendezvous " + options.key, e);
  }
}

}  // namespace endure::comm
