// endure-ckpt-bench DIR MIB...: the checkpoint engine's figures for each state size, as
// one JSON line per size: the training stall of save() against a memcpy of the same bytes,
// background persist bandwidth, verified restore against a sequential read of the same file,
// and the naive save (serialize, write, fsync in the caller's thread). bench/ckpt/run.sh
// adds dd's write and torch.save, and prints the table.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/fs.h"
#include "endure/checkpoint.h"
#include "train/ckpt/format.h"

using namespace endure;
using Clock = std::chrono::steady_clock;

namespace {

// Says what failed (for the caller to stop); true when s succeeded.
bool ok(const Status& s) {
  if (!s) std::fprintf(stderr, "%s\n", s.error().message.c_str());
  return s.ok();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The page cache would make every read a memory copy: restore figures are from the disk.
void drop_caches() {
  ::sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A sequential read of `path` from the disk, as `dd if=path of=/dev/null bs=1M` does it,
// timed from the open (dd's own figure leaves its open out; a restore's time has it).
double sequential_read_seconds(const std::filesystem::path& path) {
  drop_caches();
  std::vector<uint8_t> block(1 << 20);
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n;
  while ((n = ::read(fd, block.data(), block.size())) > 0) {
  }
  ::close(fd);
  return n < 0 ? -1 : seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: endure-ckpt-bench DIR MIB [MIB...]\n");
    return 2;
  }
  std::filesystem::path root = argv[1];
  for (int a = 2; a < argc; ++a) {
    size_t mib = std::strtoull(argv[a], nullptr, 10);
    size_t bytes = mib << 20;
    // Model state as training holds it: weights and optimizer moments, touched once.
    std::vector<uint8_t> weights(bytes / 3), moments(bytes - bytes / 3);
    for (size_t i = 0; i < weights.size(); i += 4096) weights[i] = static_cast<uint8_t>(i);
    for (size_t i = 0; i < moments.size(); i += 4096) moments[i] = static_cast<uint8_t>(i >> 12);
    std::vector<ckpt::Buffer> buffers = {{"weights", weights.data(), weights.size()},
                                         {"moments", moments.data(), moments.size()}};

    // The peer of the stall: the same bytes copied into memory touched before.
    std::vector<uint8_t> target(bytes);
    std::memset(target.data(), 1, bytes);
    auto time_memcpy = [&] {
      auto t0 = Clock::now();
      std::memcpy(target.data(), weights.data(), weights.size());
      std::memcpy(target.data() + weights.size(), moments.data(), moments.size());
      return seconds_since(t0);
    };

    auto dir = root / ("engine-" + std::to_string(mib));
    (void)fs::remove_tree(dir);  // a leftover of an earlier run, if any
    ckpt::Options o;
    o.dir = dir;
    // Retention off: its deletions come after the commit and are not persisting (here they
    // took 11 ms per 64 MiB, the disk being mounted with discard). The folder goes at the end.
    o.keep_last = 0;
    auto c = ckpt::Checkpointer::open(o);
    if (!c) {
      std::fprintf(stderr, "%s\n", c.error().message.c_str());
      return 1;
    }
    // A first save touches the staging memory; training saves again and again. Then five
    // timed saves, each right after a memcpy, and the medians: this machine's memory
    // bandwidth wanders by 2x between seconds, so the stall is judged by each pair's ratio.
    if (!ok((*c)->save(1, buffers)) || !ok((*c)->wait())) return 1;
    std::vector<double> memcpys, stalls, persists, stall_ratios;
    constexpr int64_t kLast = 6;
    for (int64_t step = 2; step <= kLast; ++step) {
      memcpys.push_back(time_memcpy());
      auto t0 = Clock::now();
      if (!ok((*c)->save(step, buffers))) return 1;
      stalls.push_back(seconds_since(t0));
      stall_ratios.push_back(stalls.back() / memcpys.back());
      Status w = (*c)->wait();
      persists.push_back(seconds_since(t0));
      if (!ok(w)) return 1;
    }
    // Restore into model memory that exists already, as a resuming trainer has it, against
    // a sequential read of the same shard. The first read after the writes just made runs
    // while the disk is still busy with them (5x slower at times here): one read settles it
    // uncounted, then ours and the plain read alternate, twice; each figure is the mean of two.
    std::vector<ckpt::MutableBuffer> into = {{"weights", weights.data(), weights.size()},
                                             {"moments", moments.data(), moments.size()}};
    auto shard = ckpt::step_dir(dir, kLast) / ckpt::shard_name(0);
    sequential_read_seconds(shard);
    double restore_s = 0, read_s = 0;
    for (int i = 0; i < 2; ++i) {
      drop_caches();
      auto t0 = Clock::now();
      auto loaded = (*c)->load_into(kLast, into);
      restore_s += seconds_since(t0) / 2;
      if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
        return 1;
      }
      double read = sequential_read_seconds(shard);
      if (read < 0) {
        std::fprintf(stderr, "cannot read %s: %s\n", shard.c_str(), std::strerror(errno));
        return 1;
      }
      read_s += read / 2;
    }

    // Naive: serialize into a new buffer, write and fsync, all in the caller's thread.
    auto naive_path = root / ("naive-" + std::to_string(mib) + ".bin");
    auto t0 = Clock::now();
    {
      std::vector<uint8_t> blob(bytes);
      std::memcpy(blob.data(), weights.data(), weights.size());
      std::memcpy(blob.data() + weights.size(), moments.data(), moments.size());
      int fd = ::open(naive_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      size_t done = 0;
      while (done < bytes) {
        ssize_t n = ::write(fd, blob.data() + done, bytes - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::fsync(fd);
      ::close(fd);
    }
    double naive_s = seconds_since(t0);
    std::filesystem::remove(naive_path);
    if (!ok(fs::remove_tree(dir))) return 1;
    std::printf(
        "{\"mib\": %zu, \"memcpy_s\": %.6f, \"stall_s\": %.6f, \"stall_vs_memcpy\": %.4f, \"persist_s\": %.6f, "
        "\"restore_s\": %.6f, \"read_s\": %.6f, \"naive_s\": %.6f}\n",
        mib, median(memcpys), median(stalls), median(stall_ratios), median(persists), restore_s, read_s, naive_s);
    std::fflush(stdout);
  }
  return 0;
}
