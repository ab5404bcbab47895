// GPU faults as the driver raises them, through NVML's event API: Xid critical errors and
// double-bit ECC errors, each sent the moment it comes rather than at the next check round.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "agent/health/health_check.h"
#include "agent/health/kernel_log.h"

namespace endure::agent::health {

// What an event means: an Xid number's fault (a hardware Xid, see is_hardware_xid), an
// uncorrected ECC error, or nothing (an application's Xid, another event type).
struct NvmlEvent {
  unsigned int gpu = 0;
  unsigned long long type = 0;  // nvmlEventType* bits
  unsigned long long data = 0;  // the Xid for an Xid event
};
std::optional<Finding> classify_nvml_event(const NvmlEvent& event);

class NvmlEventWatch {
 public:
  // Starts waiting on the GPUs' events on a thread of its own and hands each fault to
  // sink, named "nvml:<start>-<n>" (unique in the node's life, so counted once however
  // often it is sent). Nothing at all (no thread, no dlopen) when expect.gpus is 0; a
  // driver without the event API or GPUs without the events leave the watch idle, logged
  // once (the kernel log and the ECC counters still see these faults).
  NvmlEventWatch(const NodeExpectations& expect,
                 std::function<void(std::vector<LoggedFault>)> sink);
  // Stops the thread: joined when it ends within a second; a wait wedged in the driver is
  // left behind with the sink cut off, so that the agent can still stop.
  ~NvmlEventWatch();
  NvmlEventWatch(const NvmlEventWatch&) = delete;
  NvmlEventWatch& operator=(const NvmlEventWatch&) = delete;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace endure::agent::health
