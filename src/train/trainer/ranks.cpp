#include "train/trainer/ranks.h"

#include <charconv>

extern char** environ;

namespace endure::train {
namespace {

Result<int> number(const std::map<std::string, std::string>& env, const char* name, int fallback,
                   int min) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return fallback;
  int value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min) {
    return invalid(std::string(name) + " \"" + it->second +
                   "\" is not an integer >= " + std::to_string(min));
  }
  return value;
}

}  // namespace

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

Result<Ranks> ranks_from(const std::map<std::string, std::string>& env) {
  Ranks r;
  auto world = number(env, "SLURM_NTASKS", 1, 1);
  if (!world) return world.error();
  auto rank = number(env, "SLURM_PROCID", 0, 0);
  if (!rank) return rank.error();
  if (*rank >= *world) {
    return invalid("SLURM_PROCID " + std::to_string(*rank) + " is not below SLURM_NTASKS " +
                   std::to_string(*world));
  }
  r.rank = *rank;
  r.world = *world;
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  r.address = get("ENDURE_COMM_ADDRESS");
  if (r.address.empty()) r.address = get("SLURMD_NODENAME");
  if (r.address.empty()) r.address = "127.0.0.1";
  if (r.world > 1) {
    auto key = comm::rendezvous_key(env);
    if (!key) return invalid(key.error().message);
    r.key = *key;
  }
  return r;
}

Result<std::unique_ptr<comm::Communicator>> connect_ranks(const Ranks& ranks,
                                                          const std::filesystem::path& folder,
                                                          std::chrono::milliseconds timeout) {
  comm::Options o;
  o.rank = ranks.rank;
  o.world = ranks.world;
  o.address = ranks.world > 1 ? ranks.address : "127.0.0.1";
  o.timeout = timeout;
  o.key = ranks.world > 1 ? ranks.key : "one-rank";
  std::shared_ptr<comm::RendezvousStore> store;
  if (ranks.world > 1) {
    auto s = comm::file_store(folder);
    if (!s) return s.error();
    store = *s;
  } else {
    store = comm::memory_store();
  }
  return comm::connect(o, store);
}

}  // namespace endure::train
