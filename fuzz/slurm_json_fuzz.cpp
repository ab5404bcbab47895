// What Slurm's commands print, as endured reads it: `sinfo --json`, `squeue --json`, and
// the one command without --json, `squeue -s -o %i|%N` (a job's steps). The first byte
// picks the command, the rest is its output, handed to SlurmClient as a controller node's
// command would.
#include <cstddef>
#include <cstdint>
#include <string>

#include "slurm/slurm_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string printed(reinterpret_cast<const char*>(data) + 1, size - 1);
  endure::slurm::SlurmClient slurm([&](const std::vector<std::string>&, std::chrono::milliseconds) {
    return endure::process::Output{0, false, printed, ""};
  });
  switch (data[0] % 3) {
    case 0:
      if (auto nodes = slurm.nodes(); nodes) {
        for (const auto& n : *nodes) (void)n.in_service();
      }
      break;
    case 1:
      (void)slurm.jobs();
      break;
    default:
      (void)slurm.steps_on(7, {"worker-1", "worker-2"});
      break;
  }
  return 0;
}
