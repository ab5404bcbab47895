#include "agent/health/nvml_events.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

#include "agent/health/nvml_library.h"
#include "common/log.h"

namespace endure::agent::health {

namespace {

using namespace std::chrono_literals;

// From nvml.h.
constexpr unsigned long long kDoubleBitEcc = 0x2;  // nvmlEventTypeDoubleBitEccError
constexpr unsigned long long kXid = 0x8;           // nvmlEventTypeXidCriticalError

using SetCreateFn = nvml::Return (*)(nvml::EventSet*);
using SetFreeFn = nvml::Return (*)(nvml::EventSet);
using SupportedFn = nvml::Return (*)(nvml::Device, unsigned long long*);
using RegisterFn = nvml::Return (*)(nvml::Device, unsigned long long, nvml::EventSet);
using WaitFn = nvml::Return (*)(nvml::EventSet, nvmlEventData_t*, unsigned int);

constexpr auto kWaitSlice = 200ms;  // how soon a stop is seen

}  // namespace

std::optional<Finding> classify_nvml_event(const NvmlEvent& e) {
  if (e.type & kDoubleBitEcc) {
    return Finding{FaultKind::kEcc, "nvml-events",
                   fmt::format("GPU {}: uncorrected (double-bit) ECC error", e.gpu)};
  }
  // The driver's 999 ("an Xid it cannot name") is not in the hardware list either.
  if ((e.type & kXid) && is_hardware_xid(static_cast<int>(e.data))) {
    return Finding{FaultKind::kXid, "nvml-events", fmt::format("GPU {}: Xid {}", e.gpu, e.data)};
  }
  return std::nullopt;
}

struct NvmlEventWatch::Shared {
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable ended_cv;
  bool ended = false;
  std::function<void(std::vector<LoggedFault>)> sink;  // cut off (empty) once left behind
};

namespace {

// The events this node's GPUs can raise, registered on one set; false (logged) when none.
class Watch {
 public:
  explicit Watch(const std::string& library) : nvml_(library) {}
  ~Watch() {
    if (set_ != nullptr) nvml_.fn<SetFreeFn>("nvmlEventSetFree")(set_);
  }

  bool start() {
    if (auto failed = nvml_.open({"nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2",
                                  "nvmlEventSetCreate", "nvmlEventSetFree",
                                  "nvmlDeviceGetSupportedEventTypes", "nvmlDeviceRegisterEvents",
                                  "nvmlEventSetWait_v2"})) {
      log::warn("nvml events: {}; Xids are seen in the kernel log only", *failed);
      return false;
    }
    unsigned int count = 0;
    if (auto rc = nvml_.fn<nvml::GetCountFn>("nvmlDeviceGetCount_v2")(&count);
        rc != nvml::kSuccess) {
      log::warn("nvml events: nvmlDeviceGetCount_v2: {}", nvml_.error_text(rc));
      return false;
    }
    if (auto rc = nvml_.fn<SetCreateFn>("nvmlEventSetCreate")(&set_); rc != nvml::kSuccess) {
      log::warn("nvml events: nvmlEventSetCreate: {}", nvml_.error_text(rc));
      return false;
    }
    for (unsigned int i = 0; i < count; ++i) {
      nvml::Device dev = nullptr;
      unsigned long long supported = 0;
      if (nvml_.fn<nvml::GetHandleFn>("nvmlDeviceGetHandleByIndex_v2")(i, &dev) != nvml::kSuccess ||
          nvml_.fn<SupportedFn>("nvmlDeviceGetSupportedEventTypes")(dev, &supported) !=
              nvml::kSuccess) {
        continue;  // the count check and the ECC counters speak for this GPU
      }
      unsigned long long wanted = supported & (kXid | kDoubleBitEcc);
      if (wanted == 0) continue;
      auto rc = nvml_.fn<RegisterFn>("nvmlDeviceRegisterEvents")(dev, wanted, set_);
      if (rc != nvml::kSuccess) {
        log::warn("nvml events: GPU {}: nvmlDeviceRegisterEvents: {}", i, nvml_.error_text(rc));
        continue;
      }
      gpus_.push_back({dev, i});
    }
    if (gpus_.empty()) log::warn("nvml events: no GPU raises Xid or ECC events");
    return !gpus_.empty();
  }

  // One event, or nothing within the slice.
  std::optional<NvmlEvent> next() {
    nvmlEventData_t data{};
    auto rc = nvml_.fn<WaitFn>("nvmlEventSetWait_v2")(
        set_, &data, static_cast<unsigned int>(kWaitSlice.count()));
    if (rc == nvml::kErrorTimeout) return std::nullopt;
    if (rc != nvml::kSuccess) {
      // A lost GPU fails every wait: the count and ECC checks report it; do not spin.
      log::warn("nvml events: nvmlEventSetWait_v2: {}", nvml_.error_text(rc));
      std::this_thread::sleep_for(kWaitSlice);
      return std::nullopt;
    }
    NvmlEvent e{0, data.eventType, data.eventData};
    for (const auto& [dev, index] : gpus_) {
      if (dev == data.device) e.gpu = index;
    }
    return e;
  }

 private:
  NvmlLibrary nvml_;
  nvml::EventSet set_ = nullptr;
  std::vector<std::pair<nvml::Device, unsigned int>> gpus_;  // registered, with NVML's index
};

}  // namespace

NvmlEventWatch::NvmlEventWatch(const NodeExpectations& expect,
                               std::function<void(std::vector<LoggedFault>)> sink)
    : shared_(std::make_shared<Shared>()) {
  if (expect.gpus <= 0) return;
  shared_->sink = std::move(sink);
  thread_ = std::thread([shared = shared_, library = expect.nvml_library] {
    auto started = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    long long n = 0;
    {
      Watch watch(library);
      if (watch.start()) {
        while (!shared->stop) {
          auto event = watch.next();
          if (!event) continue;
          auto finding = classify_nvml_event(*event);
          if (!finding) continue;
          std::lock_guard lock(shared->mu);
          if (shared->sink) {
            shared->sink({{fmt::format("nvml:{}-{}", started, ++n), std::move(*finding)}});
          }
        }
      }
    }
    std::lock_guard lock(shared->mu);
    shared->ended = true;
    shared->ended_cv.notify_all();
  });
}

NvmlEventWatch::~NvmlEventWatch() {
  if (!thread_.joinable()) return;
  shared_->stop = true;
  std::unique_lock lock(shared_->mu);
  if (shared_->ended_cv.wait_for(lock, 1s, [&] { return shared_->ended; })) {
    lock.unlock();
    thread_.join();
    return;
  }
  shared_->sink = nullptr;
  log::warn("nvml events: a wait on the driver did not return; left behind");
  lock.unlock();
  thread_.detach();
}

}  // namespace endure::agent::health
