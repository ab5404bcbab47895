// endure-ckpt-bench DIR MIB...: the checkpoint engine's figures for each state size, as
// one JSON line per size: the training stall of save() against a memcpy of the same bytes,
// background persist and verified restore bandwidth, and the naive save (serialize, write,
// fsync in the caller's thread). bench/ckpt/run.sh adds the disk's own figures (dd) and
// torch.save, and prints the table.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/fs.h"
#include "endure/checkpoint.h"

using namespace endure;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The page cache would make every read a memory copy: restore figures are from the disk.
void drop_caches() {
  ::sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
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
    auto t0 = Clock::now();
    std::memcpy(target.data(), weights.data(), weights.size());
    std::memcpy(target.data() + weights.size(), moments.data(), moments.size());
    double memcpy_s = seconds_since(t0);

    auto dir = root / ("engine-" + std::to_string(mib));
    fs::remove_tree(dir);
    ckpt::Options o;
    o.dir = dir;
    o.keep_last = 2;
    auto c = ckpt::Checkpointer::open(o);
    if (!c) {
      std::fprintf(stderr, "%s\n", c.error().message.c_str());
      return 1;
    }
    // A first save touches the staging memory; training saves again and again.
    (*c)->save(1, buffers);
    (*c)->wait();
    t0 = Clock::now();
    (*c)->save(2, buffers);
    double stall_s = seconds_since(t0);
    Status w = (*c)->wait();
    double persist_s = seconds_since(t0);
    if (!w) {
      std::fprintf(stderr, "%s\n", w.error().message.c_str());
      return 1;
    }
    // Restore into model memory that exists already, as a resuming trainer has it.
    drop_caches();
    t0 = Clock::now();
    auto loaded = (*c)->load_into(2, {{"weights", weights.data(), weights.size()},
                                      {"moments", moments.data(), moments.size()}});
    double restore_s = seconds_since(t0);
    if (!loaded) {
      std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
      return 1;
    }

    // Naive: serialize into a new buffer, write and fsync, all in the caller's thread.
    auto naive_path = root / ("naive-" + std::to_string(mib) + ".bin");
    t0 = Clock::now();
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
    fs::remove_tree(dir);
    std::printf(
        "{\"mib\": %zu, \"memcpy_s\": %.6f, \"stall_s\": %.6f, \"persist_s\": %.6f, "
        "\"restore_s\": %.6f, \"naive_s\": %.6f}\n",
        mib, memcpy_s, stall_s, persist_s, restore_s, naive_s);
    std::fflush(stdout);
  }
  return 0;
}
