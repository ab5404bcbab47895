#include "agent/health/nvml.h"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <map>
#include <string>

#include "agent/health/nvml_library.h"
#include "api/node_gauges.h"
#include "common/log.h"

namespace endure::agent::health {

namespace {

constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;             // NVML_VOLATILE_ECC: since driver load

using GetEccFn = nvml::Return (*)(nvml::Device, int, int, unsigned long long*);

Finding nvml_finding(std::string detail) { return {FaultKind::kNvml, "nvml", std::move(detail)}; }

}  // namespace

// Touched only by the probe thread, one probe at a time (BoundedProbe runs at most one), so
// it needs no lock; it lives as long as the check or a stuck probe, whichever is longer.
struct NvmlCheck::Session {
  explicit Session(std::string library) : nvml(std::move(library)) {}
  NvmlLibrary nvml;
  std::map<unsigned int, unsigned long long> ecc_baseline;  // GPU index → first count
  // The last look's numbers for the node gauges (written by the probe thread); -1: none.
  std::atomic<long long> seen_gpus{-1};
  std::atomic<long long> seen_ecc{-1};

  std::vector<Finding> look(int expected_gpus, bool continuous) {
    std::vector<Finding> findings;
    if (auto failed = nvml.open({"nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
                                 "nvmlDeviceGetTotalEccErrors"})) {
      findings.push_back(nvml_finding(*failed));
      return findings;
    }
    unsigned int count = 0;
    nvml::Return rc = nvml.fn<nvml::GetCountFn>("nvmlDeviceGetCount_v2")(&count);
    if (rc != nvml::kSuccess) {
      findings.push_back(nvml_finding("nvmlDeviceGetCount_v2: " + nvml.error_text(rc)));
      return findings;
    }
    seen_gpus = count;
    if (static_cast<long>(count) != expected_gpus) {
      findings.push_back({FaultKind::kGpuCount, "nvml",
                          fmt::format("expected {} GPUs, NVML sees {}", expected_gpus, count)});
    }
    if (!continuous) return findings;

    auto get_handle = nvml.fn<nvml::GetHandleFn>("nvmlDeviceGetHandleByIndex_v2");
    auto get_ecc = nvml.fn<GetEccFn>("nvmlDeviceGetTotalEccErrors");
    std::string rose;
    long long ecc_total = 0;
    for (unsigned int i = 0; i < count; ++i) {
      nvml::Device dev = nullptr;
      rc = get_handle(i, &dev);
      if (rc != nvml::kSuccess) {
        findings.push_back(nvml_finding(fmt::format("GPU {}: {}", i, nvml.error_text(rc))));
        continue;
      }
      unsigned long long ecc = 0;
      rc = get_ecc(dev, kMemoryErrorUncorrected, kVolatileEcc, &ecc);
      if (rc == nvml::kErrorNotSupported) continue;  // no ECC on this GPU, or ECC off
      if (rc != nvml::kSuccess) {
        findings.push_back(
            nvml_finding(fmt::format("GPU {}: ECC counters: {}", i, nvml.error_text(rc))));
        continue;
      }
      ecc_total += static_cast<long long>(ecc);
      auto [it, first] = ecc_baseline.emplace(i, ecc);
      if (!first && ecc > it->second) {
        rose += fmt::format("{}GPU {}: {} -> {}", rose.empty() ? "" : "; ", i, it->second, ecc);
      }
    }
    seen_ecc = ecc_total;
    if (!rose.empty()) {
      findings.push_back({FaultKind::kEcc, "nvml",
                          "uncorrected volatile ECC errors rose since the first look: " + rose});
    }
    return findings;
  }
};

NvmlCheck::NvmlCheck(const NodeExpectations& expect, bool continuous,
                     std::chrono::milliseconds timeout)
    : gpus_(expect.gpus),
      continuous_(continuous),
      timeout_(timeout),
      session_(std::make_shared<Session>(expect.nvml_library)) {}

std::vector<Finding> NvmlCheck::run() {
  std::vector<Finding> findings;
  if (gpus_ <= 0) return findings;  // no GPU expected: nothing to look at, nothing to load
  try {
    findings = probe_.run_or_report_hang(
        [session = session_, gpus = gpus_, continuous = continuous_] {
          return session->look(gpus, continuous);
        },
        timeout_, FaultKind::kNvml, "nvml", "NVML");
  } catch (const std::exception& e) {
    log::warn("nvml check: {}", e.what());
  }
  return findings;
}

void NvmlCheck::gauges(json& out) const {
  if (!session_) return;
  if (long long n = session_->seen_gpus; n >= 0) out[api::gauge::kGpus] = n;
  if (long long n = session_->seen_ecc; n >= 0) out[api::gauge::kGpuEccUncorrected] = n;
}

}  // namespace endure::agent::health
