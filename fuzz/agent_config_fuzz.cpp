// The node's files endured writes and the node's programs read: the agent's config
// (node::kAgentConfigPath) and the auto-resume supervisor's job credential
// (node::kAutoResumeConfigPath). The first byte picks the file, the rest is its content. A
// config read must write itself out and read back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/node_files.h"
#include "autoresume/supervisor_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto j = endure::json::parse(std::string(reinterpret_cast<const char*>(data) + 1, size - 1),
                               nullptr, false);
  if (j.is_discarded()) return 0;
  if (data[0] % 2 == 0) {
    auto config = endure::api::AgentConfig::from_json(j);
    if (config && !endure::api::AgentConfig::from_json(config->to_json())) std::abort();
  } else {
    (void)endure::autoresume::SupervisorConfig::from_json(j);
  }
  return 0;
}
