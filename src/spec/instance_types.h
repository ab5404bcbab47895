// Instance types of the local provider: what each declares to Slurm and the health checks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace endure::spec {

struct InstanceType {
  std::string name;     // "local.c2"
  int cpus = 0;         // CPUs declared to Slurm
  int memory_mib = 0;   // RealMemory declared to Slurm
  int gpus = 0;         // GPUs the health checks expect (0: no GPU check)
  std::string summary;  // one line for the README and error messages
  int local_disk_mib = 1024;  // size of the node's local disk (/local)
};

// Every type the local provider offers, in a fixed order.
const std::vector<InstanceType>& instance_types();

// nullptr when unknown.
const InstanceType* find_instance_type(std::string_view name);

// "local.c1, local.c2, ..." for error messages.
std::string instance_type_names();

}  // namespace endure::spec
