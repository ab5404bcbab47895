// The host pool actions (RegisterHostPools, ListHosts, ReturnHost): the API's messages
// turned into the host registry's calls and its records into HostSummaries.
#pragma once

#include "common/json.h"
#include "common/result.h"
#include "provider/host/host_registry.h"

namespace endure::controller {

class HostService {
 public:
  explicit HostService(provider::HostRegistry& hosts) : hosts_(hosts) {}

  Result<json> register_pools(const json& request);
  Result<json> list_hosts(const json& request);
  // The host passes provider::check_host_basics first.
  Result<json> return_host(const json& request);

 private:
  provider::HostRegistry& hosts_;
};

}  // namespace endure::controller
