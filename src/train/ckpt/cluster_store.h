// The training side's client of the nodes' memory stores: the cluster memory tier's
// transport. Objects go and come over each store's data path (memstore/data_server.h, the
// HTTP port + 1); listings, removals and figures over its HTTP front (memstore/server.h).
// One connection of each kind per store is kept and reused; calls to one store take turns.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace httplib {
class Client;
}

namespace endure::ckpt {

// A node's store: its Slurm name (what placement speaks of) and where it listens (its HTTP
// port; the data path is on the next one).
struct StoreAddress {
  std::string node;
  std::string address;
  int port = 0;
};

class ClusterStoreClient {
 public:
  // token: the cluster's credential (memory_store.json's Token).
  explicit ClusterStoreClient(std::string token, double timeout_seconds = 30);
  ~ClusterStoreClient();

  // Objects are named as in a checkpoint folder (format.h: shard_name(), descriptor_name(),
  // kManifestName). Stores an object (the bytes of [data, data + size)), replacing one of
  // the same name.
  // "InsufficientStorage" when the store has no room for it.
  Status put(const StoreAddress& at, const std::string& run, int64_t step, const std::string& object,
             const void* data, size_t size);
  // An object's bytes: ResourceNotFound when the store does not hold it.
  Result<std::string> get(const StoreAddress& at, const std::string& run, int64_t step,
                          const std::string& object);
  // An object of exactly `size` bytes, read straight into dest (anything else is an error).
  Status get_into(const StoreAddress& at, const std::string& run, int64_t step,
                  const std::string& object, void* dest, size_t size);
  // The run's steps as the store lists them ({"Steps": [...]}).
  Result<json> steps(const StoreAddress& at, const std::string& run);
  Status remove(const StoreAddress& at, const std::string& run,
                std::optional<int64_t> step = std::nullopt);
  Result<json> stats(const StoreAddress& at);

 private:
  // The store's client, made on first use; callers of one store take turns on it.
  struct Conn;
  Conn& conn(const StoreAddress& at);
  Result<json> data_request(Conn& c, const StoreAddress& at, json header, const void* body = nullptr,
                            size_t body_size = 0);
  // A get's bytes after its reply; the connection is given up when they do not all come.
  Status receive(Conn& c, const StoreAddress& at, void* dest, size_t size);
  std::string token_;
  double timeout_seconds_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Conn>> conns_;
};

}  // namespace endure::ckpt
