// A stand-in for NVML (libnvidia-ml.so.1), for machines without a GPU: it exports the
// same C functions the agent loads with dlopen, and answers from a small state file named
// by ENDURE_FAKE_NVML_STATE ("count N", "ecc N" and "events MASK" lines, re-read on every
// call) so that a test can change what the "GPUs" report. Events come from the file named
// by ENDURE_FAKE_NVML_EVENTS, one per line appended ("GPU TYPE DATA", TYPE as nvml.h's
// nvmlEventType bits), each delivered once by nvmlEventSetWait_v2.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "agent/health/nvml_abi.h"

namespace {

constexpr unsigned kMaxGpus = 16;
constexpr int kSuccess = 0, kInvalidArgument = 2, kTimeout = 10;

struct State {
  unsigned count = 0;
  unsigned long long ecc = 0;
  unsigned long long events = 0x1 | 0x2 | 0x8;  // single- and double-bit ECC, Xid
};

State read_state() {
  State s;
  const char* path = std::getenv("ENDURE_FAKE_NVML_STATE");
  if (!path) return s;
  FILE* f = std::fopen(path, "r");
  if (!f) return s;
  char key[32];
  unsigned long long value = 0;
  while (std::fscanf(f, "%31s %llu", key, &value) == 2) {
    if (std::strcmp(key, "count") == 0) s.count = static_cast<unsigned>(value);
    if (std::strcmp(key, "ecc") == 0) s.ecc = value;
    if (std::strcmp(key, "events") == 0) s.events = value;
  }
  std::fclose(f);
  return s;
}

}  // namespace

// The handles' types, opaque to the agent, defined here as the library defines them.
struct nvmlDevice_st {};
struct nvmlEventSet_st {
  unsigned long long registered[kMaxGpus] = {};
  long delivered = 0;  // event lines already handed out
};

namespace {

nvmlDevice_st g_devices[kMaxGpus];  // handles point here

// The event after the first `skip` lines of the events file; false when there is none yet.
bool event_line(long skip, unsigned* gpu, unsigned long long* type, unsigned long long* data) {
  const char* path = std::getenv("ENDURE_FAKE_NVML_EVENTS");
  if (!path) return false;
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  bool found = false;
  for (long line = 0; std::fscanf(f, "%u %llu %llu", gpu, type, data) == 3; ++line) {
    if (line == skip) {
      found = true;
      break;
    }
  }
  std::fclose(f);
  return found;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = read_state().count;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (index >= read_state().count || index >= kMaxGpus) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}

int nvmlDeviceGetTotalEccErrors(nvmlDevice_t, int error_type, int, unsigned long long* count) {
  *count = error_type == 1 ? read_state().ecc : 0;  // 1: uncorrected
  return kSuccess;
}

int nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = new nvmlEventSet_st;
  return kSuccess;
}

int nvmlEventSetFree(nvmlEventSet_t set) {
  delete set;
  return kSuccess;
}

int nvmlDeviceGetSupportedEventTypes(nvmlDevice_t, unsigned long long* types) {
  *types = read_state().events;
  return kSuccess;
}

int nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set) {
  long index = device - g_devices;
  if (index < 0 || index >= static_cast<long>(kMaxGpus)) return kInvalidArgument;
  set->registered[index] |= types;
  return kSuccess;
}

// Polls the events file until an event for a registered GPU and type comes, or timeout.
int nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* out, unsigned timeout_ms) {
  for (unsigned waited = 0;; waited += 5) {
    unsigned gpu = 0;
    unsigned long long type = 0, data = 0;
    while (event_line(set->delivered, &gpu, &type, &data)) {
      ++set->delivered;
      if (gpu < kMaxGpus && (set->registered[gpu] & type) != 0) {
        *out = {&g_devices[gpu], type, data, 0xFFFFFFFFu, 0xFFFFFFFFu};
        return kSuccess;
      }
    }
    if (waited >= timeout_ms) return kTimeout;
    timespec pause{0, 5 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

const char* nvmlErrorString(int rc) {
  switch (rc) {
    case kSuccess:
      return "Success";
    case kTimeout:
      return "Timeout";
    default:
      return "Invalid Argument";
  }
}

}  // extern "C"
