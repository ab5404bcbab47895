// GPU checks through NVML, loaded at run time so that the agent runs on nodes without the
// NVIDIA driver: the GPU count at creation, uncorrected ECC errors while in service.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "agent/health/health_check.h"

namespace endure::agent::health {

class NvmlCheck : public HealthCheck {
 public:
  // continuous: also watch the uncorrected volatile ECC counters. NVML calls run in a
  // bounded thread (a wedged driver can block them) that waits at most timeout.
  explicit NvmlCheck(const NodeExpectations& expect, bool continuous = false,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10));
  const char* name() const override { return "nvml"; }
  // Nothing (and no dlopen) when expect.gpus is 0. Otherwise: nvml when the library
  // (expect.nvml_library) cannot be loaded, NVML fails or does not answer in time;
  // gpu-count when NVML sees another number of GPUs than expect.gpus; continuous only: ecc
  // when a GPU's uncorrected volatile ECC count is above what it was at the first run.
  std::vector<Finding> run() override;
  // gpus and gpu_ecc_uncorrected (summed over GPUs) from the last look that got them.
  void gauges(json& out) const override;

 private:
  struct Session;  // the library and the ECC baseline, shared with the probe thread
  int gpus_;
  bool continuous_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<Session> session_;
  BoundedProbe probe_;
};

}  // namespace endure::agent::health
