// libnvidia-ml loaded at run time, so that the agent runs on nodes without the NVIDIA
// driver: the library opened, the functions a caller names resolved, NVML initialised once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/health/nvml_abi.h"

namespace endure::agent::health {

// The few NVML values used, from nvml.h: NVML_SUCCESS is 0.
namespace nvml {
using Return = int;
using Device = nvmlDevice_t;
using EventSet = nvmlEventSet_t;
constexpr Return kSuccess = 0;
constexpr Return kErrorNotSupported = 3;  // the GPU lacks the feature (no ECC, no events)
constexpr Return kErrorTimeout = 10;      // an event wait ended with no event
// The functions both the check and the event watch call.
using GetCountFn = Return (*)(unsigned int*);
using GetHandleFn = Return (*)(unsigned int, Device*);
}  // namespace nvml

class NvmlLibrary {
 public:
  explicit NvmlLibrary(std::string path) : path_(std::move(path)) {}
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // Loads the library, resolves nvmlInit_v2, nvmlShutdown, nvmlErrorString and `symbols`,
  // and initialises NVML (once: nvmlInit takes long on big nodes). An error text when a
  // step fails ("NVML not available: ...", "nvmlInit_v2: ..."); called again, it retries.
  std::optional<std::string> open(const std::vector<const char*>& symbols);

  // A function open resolved, as its C type.
  template <class Fn>
  Fn fn(const char* name) const {
    auto it = symbols_.find(name);
    return it == symbols_.end() ? nullptr : reinterpret_cast<Fn>(it->second);
  }
  // "Not Supported (3)", from the library's own words where it has them.
  std::string error_text(nvml::Return rc) const;

 private:
  std::string path_;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::map<std::string, void*> symbols_;
};

}  // namespace endure::agent::health
