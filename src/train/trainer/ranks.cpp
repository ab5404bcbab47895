#include "train/trainer/ranks.h"

#include <algorithm>
#include <charconv>

#include "slurm/hostlist.h"

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

bool whole_int(const std::string& text, int* value) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && p == end;
}

// One entry of SLURM_STEP_TASKS_PER_NODE: "N", or "N(xM)" for N tasks on each of M nodes.
bool tasks_of(const std::string& part, int* n, int* times) {
  *times = 1;
  std::string head = part;
  if (auto open = part.find("(x"); open != std::string::npos) {
    if (part.back() != ')' || !whole_int(part.substr(open + 2, part.size() - open - 3), times) ||
        *times < 1)
      return false;
    head = part.substr(0, open);
  }
  return whole_int(head, n) && *n >= 0;
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

Result<std::vector<std::string>> rank_nodes_from(const std::map<std::string, std::string>& env,
                                                 int world) {
  auto first = [&](const char* a, const char* b) -> std::pair<std::string, std::string> {
    for (const char* name : {a, b}) {
      auto it = env.find(name);
      if (it != env.end() && !it->second.empty()) return {name, it->second};
    }
    return {};
  };
  auto [list_var, list] = first("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST");
  auto [count_var, counts] = first("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE");
  if (list.empty() || counts.empty()) return std::vector<std::string>{};
  auto hosts = slurm::expand_hostlist(list);
  if (!hosts) return invalid(list_var + ": " + hosts.error().message);
  std::vector<int> per_node;
  size_t at = 0;
  while (at <= counts.size()) {
    size_t comma = std::min(counts.find(',', at), counts.size());
    const std::string part = counts.substr(at, comma - at);
    int n = 0, times = 0;
    if (!tasks_of(part, &n, &times)) {
      return invalid(count_var + " \"" + counts + "\": \"" + part + "\" is not N or N(xM)");
    }
    per_node.insert(per_node.end(), static_cast<size_t>(times), n);
    at = comma + 1;
  }
  int total = 0;
  for (int n : per_node) total += n;
  if (per_node.size() != hosts->size() || total != world) {
    return invalid(count_var + " \"" + counts + "\" does not place " + std::to_string(world) +
                   " tasks on the " + std::to_string(hosts->size()) + " nodes of " + list_var);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < hosts->size(); ++i)
    out.insert(out.end(), static_cast<size_t>(per_node[i]), (*hosts)[i]);
  return out;
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
