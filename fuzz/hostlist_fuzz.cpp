// Slurm hostlist expressions ("n[1-4,7]"), as sinfo and scontrol print them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "slurm/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto hosts = endure::slurm::expand_hostlist(std::string(reinterpret_cast<const char*>(data), size));
  if (hosts.ok()) (void)endure::slurm::join_hostlist(*hosts);
  return 0;
}
