#include "spec/instance_types.h"

namespace endure::spec {

const std::vector<InstanceType>& instance_types() {
  // Local nodes are namespaces on one host, so these are what each node declares to Slurm,
  // not what it is guaranteed; keep them small enough that a laptop can run a few.
  static const std::vector<InstanceType> types = {
      {"local.c1", 1, 1024, 0, "1 CPU, 1 GiB: a controller or login node", 512},
      {"local.c2", 2, 2048, 0, "2 CPUs, 2 GiB: a small worker", 1024},
      {"local.c4", 4, 4096, 0, "4 CPUs, 4 GiB: a larger worker", 2048},
      {"local.m2", 2, 4096, 0, "2 CPUs, 4 GiB: a memory-heavy worker", 1024},
  };
  return types;
}

const InstanceType* find_instance_type(std::string_view name) {
  for (const InstanceType& type : instance_types()) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

std::string instance_type_names() {
  std::string out;
  for (const InstanceType& type : instance_types()) {
    if (!out.empty()) out += ", ";
    out += type.name;
  }
  return out;
}

}  // namespace endure::spec
