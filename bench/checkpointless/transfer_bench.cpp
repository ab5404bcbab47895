// bench/checkpointless's measuring program: one shard into a memory store and back over its
// data path (train/ckpt/cluster_store.h against a running endure-memstore), and the same
// bytes over a bare TCP connection between the same two addresses with the same system
// calls (sendfile out of tmpfs, recv straight into memory): the network's own limit.
//
//   endure-memstore-bench tcp-source --address A --port P --file F --rounds R
//       serves F's bytes with sendfile to each of R connections, then exits
//   endure-memstore-bench measure --store A:P --token T --tcp A:Q --mib M --rounds R
//       prints one JSON line a measurement: {"kind": "put"|"get"|"tcp", "round", "seconds",
//       "gb_per_s"}
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "common/framed_socket.h"
#include "common/json.h"
#include "train/ckpt/cluster_store.h"

namespace {

using Clock = std::chrono::steady_clock;

void emit(const std::string& kind, int round, double seconds, uint64_t bytes) {
  endure::json row = {{"kind", kind}, {"round", round}, {"seconds", seconds},
                      {"gb_per_s", double(bytes) / seconds / 1e9}};
  std::printf("%s\n", row.dump().c_str());
  std::fflush(stdout);
}

int tcp_source(const std::string& address, int port, const std::string& file, int rounds) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return std::perror(file.c_str()), 1;
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 4) != 0)
    return std::perror("tcp-source: listen"), 1;
  std::printf("ready\n");
  std::fflush(stdout);
  for (int r = 0; r < rounds; ++r) {
    int c = ::accept(listener, nullptr, nullptr);
    if (c < 0) return std::perror("tcp-source: accept"), 1;
    endure::net::set_timeouts(c, 60);
    auto sent = endure::net::send_file(c, fd, 0, static_cast<uint64_t>(st.st_size));
    if (!sent) std::fprintf(stderr, "tcp-source: %s\n", sent.error().message.c_str());
    ::close(c);
  }
  return 0;
}

bool split(const std::string& hostport, std::string& host, int& port) {
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  host = hostport.substr(0, colon);
  port = std::atoi(hostport.c_str() + colon + 1);
  return port > 0;
}

int measure(const std::string& store, const std::string& token, const std::string& tcp, int mib, int rounds) {
  endure::ckpt::StoreAddress at{"store", "", 0};
  std::string tcp_host;
  int tcp_port = 0;
  if (!split(store, at.address, at.port) || !split(tcp, tcp_host, tcp_port)) {
    std::fprintf(stderr, "measure: --store and --tcp are ADDRESS:PORT\n");
    return 2;
  }
  const uint64_t bytes = uint64_t(mib) << 20;
  std::vector<char> shard(bytes), back(bytes);
  for (uint64_t i = 0; i < bytes; i += 4096) shard[i] = static_cast<char>(i >> 12);
  std::memset(back.data(), 0, back.size());  // its pages taken before any timing
  endure::ckpt::ClusterStoreClient client(token, 120);
  // Step after step as a trainer saves them: once the store is full, each shard goes into
  // the pages of one it dropped.
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    auto put = client.put(at, "bench", r, "rank-00000.shard", shard.data(), bytes);
    auto t1 = Clock::now();
    if (!put) return std::fprintf(stderr, "put: %s\n", put.error().message.c_str()), 1;
    emit("put", r, std::chrono::duration<double>(t1 - t0).count(), bytes);
    (void)client.put(at, "bench", r, "MANIFEST.json", "{}", 2);
    auto t2 = Clock::now();
    auto got = client.get_into(at, "bench", r, "rank-00000.shard", back.data(), bytes);
    auto t3 = Clock::now();
    if (!got) return std::fprintf(stderr, "get: %s\n", got.error().message.c_str()), 1;
    if (std::memcmp(back.data(), shard.data(), bytes) != 0) return std::fprintf(stderr, "get: bytes differ\n"), 1;
    emit("get", r, std::chrono::duration<double>(t3 - t2).count(), bytes);

    auto fd = endure::net::connect_tcp(tcp_host, tcp_port, 120);
    if (!fd) return std::fprintf(stderr, "tcp: %s\n", fd.error().message.c_str()), 1;
    auto t4 = Clock::now();
    auto recvd = endure::net::recv_all(*fd, back.data(), bytes);
    auto t5 = Clock::now();
    ::close(*fd);
    if (!recvd) return std::fprintf(stderr, "tcp: %s\n", recvd.error().message.c_str()), 1;
    emit("tcp", r, std::chrono::duration<double>(t5 - t4).count(), bytes);
  }
  (void)client.remove(at, "bench");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"endure-memstore-bench: a memory store's data path against bare TCP"};
  app.require_subcommand(1);
  std::string address, file, store, token, tcp;
  int port = 0, rounds = 3, mib = 1024;
  auto* source = app.add_subcommand("tcp-source", "serve a file's bytes to each connection");
  source->add_option("--address", address)->required();
  source->add_option("--port", port)->required();
  source->add_option("--file", file)->required();
  source->add_option("--rounds", rounds)->check(CLI::Range(1, 100));
  auto* run = app.add_subcommand("measure", "put, get and bare TCP, a round each");
  run->add_option("--store", store, "the store's ADDRESS:PORT")->required();
  run->add_option("--token", token)->required();
  run->add_option("--tcp", tcp, "the tcp-source's ADDRESS:PORT")->required();
  run->add_option("--mib", mib)->check(CLI::Range(1, 65536));
  run->add_option("--rounds", rounds)->check(CLI::Range(1, 100));
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  if (source->parsed()) return tcp_source(address, port, file, rounds);
  return measure(store, token, tcp, mib, rounds);
}
