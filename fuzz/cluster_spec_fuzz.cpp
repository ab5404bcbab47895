// The cluster spec as CreateCluster and UpdateCluster receive it: any bytes, parsed as
// JSON, then validated. A refusal is fine; a crash, a leak or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto request = endure::json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (request.is_discarded()) return 0;
  auto spec = endure::spec::parse_cluster_spec(request);
  if (spec.ok()) (void)endure::spec::apply_cluster_update(*spec, request);
  return 0;
}
