#include "agent/health/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <exception>
#include <map>
#include <optional>
#include <string>

#include "common/log.h"

namespace endure::agent::health {

namespace {

// The few NVML declarations needed, from nvml.h: enums are int-sized, a device is an
// opaque pointer, NVML_SUCCESS is 0.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;  // no ECC on this GPU, or ECC off
constexpr int kMemoryErrorUncorrected = 1;          // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                     // NVML_VOLATILE_ECC: since driver load

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using GetCountFn = nvmlReturn_t (*)(unsigned int*);
using GetHandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using GetEccFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using ErrorStringFn = const char* (*)(nvmlReturn_t);

Finding nvml_finding(std::string detail) { return {"nvml", "nvml", std::move(detail)}; }

}  // namespace

// Touched only by the probe thread, one probe at a time (BoundedProbe runs at most one), so
// it needs no lock; it lives as long as the check or a stuck probe, whichever is longer.
struct NvmlCheck::Session {
  std::string library;
  void* handle = nullptr;
  bool initialized = false;
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  GetCountFn get_count = nullptr;
  GetHandleFn get_handle = nullptr;
  GetEccFn get_ecc = nullptr;
  ErrorStringFn error_string = nullptr;
  std::map<unsigned int, unsigned long long> ecc_baseline;  // GPU index → first count

  ~Session() {
    if (initialized) shutdown();
    if (handle != nullptr) ::dlclose(handle);
  }

  std::string error_text(nvmlReturn_t rc) const {
    const char* s = error_string != nullptr ? error_string(rc) : nullptr;
    return s != nullptr ? fmt::format("{} ({})", s, rc) : fmt::format("error {}", rc);
  }

  // Loads the library and resolves the functions; an error text when it cannot.
  std::optional<std::string> load() {
    if (handle != nullptr) return std::nullopt;
    ::dlerror();
    void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      return fmt::format("NVML not available: {}", why != nullptr ? why : library);
    }
    struct Symbol {
      const char* name;
      void** slot;
    };
    void* syms[6] = {};
    const Symbol wanted[] = {{"nvmlInit_v2", &syms[0]},
                             {"nvmlShutdown", &syms[1]},
                             {"nvmlDeviceGetCount_v2", &syms[2]},
                             {"nvmlDeviceGetHandleByIndex_v2", &syms[3]},
                             {"nvmlDeviceGetTotalEccErrors", &syms[4]},
                             {"nvmlErrorString", &syms[5]}};
    for (const auto& s : wanted) {
      *s.slot = ::dlsym(h, s.name);
      if (*s.slot == nullptr) {
        ::dlclose(h);
        return fmt::format("NVML not available: {} has no {}", library, s.name);
      }
    }
    handle = h;
    init = reinterpret_cast<InitFn>(syms[0]);
    shutdown = reinterpret_cast<ShutdownFn>(syms[1]);
    get_count = reinterpret_cast<GetCountFn>(syms[2]);
    get_handle = reinterpret_cast<GetHandleFn>(syms[3]);
    get_ecc = reinterpret_cast<GetEccFn>(syms[4]);
    error_string = reinterpret_cast<ErrorStringFn>(syms[5]);
    return std::nullopt;
  }

  std::vector<Finding> look(int expected_gpus, bool continuous) {
    std::vector<Finding> findings;
    if (auto failed = load()) {
      findings.push_back(nvml_finding(*failed));
      return findings;
    }
    if (!initialized) {
      // Initialised once and kept: nvmlInit takes long on big nodes, and the counters
      // should come from one session.
      nvmlReturn_t rc = init();
      if (rc != kNvmlSuccess) {
        findings.push_back(nvml_finding("nvmlInit_v2: " + error_text(rc)));
        return findings;
      }
      initialized = true;
    }
    unsigned int count = 0;
    nvmlReturn_t rc = get_count(&count);
    if (rc != kNvmlSuccess) {
      findings.push_back(nvml_finding("nvmlDeviceGetCount_v2: " + error_text(rc)));
      return findings;
    }
    if (static_cast<long>(count) != expected_gpus) {
      findings.push_back({"gpu-count", "nvml",
                          fmt::format("expected {} GPUs, NVML sees {}", expected_gpus, count)});
    }
    if (!continuous) return findings;

    std::string rose;
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      rc = get_handle(i, &dev);
      if (rc != kNvmlSuccess) {
        findings.push_back(nvml_finding(fmt::format("GPU {}: {}", i, error_text(rc))));
        continue;
      }
      unsigned long long ecc = 0;
      rc = get_ecc(dev, kMemoryErrorUncorrected, kVolatileEcc, &ecc);
      if (rc == kNvmlErrorNotSupported) continue;
      if (rc != kNvmlSuccess) {
        findings.push_back(
            nvml_finding(fmt::format("GPU {}: ECC counters: {}", i, error_text(rc))));
        continue;
      }
      auto [it, first] = ecc_baseline.emplace(i, ecc);
      if (!first && ecc > it->second) {
        rose += fmt::format("{}GPU {}: {} -> {}", rose.empty() ? "" : "; ", i, it->second, ecc);
      }
    }
    if (!rose.empty()) {
      findings.push_back(
          {"ecc", "nvml", "uncorrected volatile ECC errors rose since the first look: " + rose});
    }
    return findings;
  }
};

NvmlCheck::NvmlCheck(const NodeExpectations& expect, bool continuous,
                     std::chrono::milliseconds timeout)
    : gpus_(expect.gpus),
      continuous_(continuous),
      timeout_(timeout),
      session_(std::make_shared<Session>()) {
  session_->library = expect.nvml_library;
}

std::vector<Finding> NvmlCheck::run() {
  std::vector<Finding> findings;
  if (gpus_ <= 0) return findings;  // no GPU expected: nothing to look at, nothing to load
  try {
    findings = probe_.run_or_report_hang(
        [session = session_, gpus = gpus_, continuous = continuous_] {
          return session->look(gpus, continuous);
        },
        timeout_, "nvml", "nvml", "NVML");
  } catch (const std::exception& e) {
    log::warn("nvml check: {}", e.what());
  }
  return findings;
}

}  // namespace endure::agent::health
