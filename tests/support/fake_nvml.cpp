// A stand-in for NVML (libnvidia-ml.so.1), for machines without a GPU: it exports the
// same C functions the agent loads with dlopen, and answers from a small state file named
// by ENDURE_FAKE_NVML_STATE ("count N" and "ecc N" lines, re-read on every call) so that a
// test can change what the "GPUs" report.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct State {
  unsigned count = 0;
  unsigned long long ecc = 0;
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
  }
  std::fclose(f);
  return s;
}

int g_device_tag;  // handles point here: the agent treats them as opaque

}  // namespace

extern "C" {

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = read_state().count;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= read_state().count) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_device_tag;
  return 0;
}

int nvmlDeviceGetTotalEccErrors(void*, int error_type, int, unsigned long long* count) {
  *count = error_type == 1 ? read_state().ecc : 0;  // 1: uncorrected
  return 0;
}

const char* nvmlErrorString(int rc) { return rc == 0 ? "Success" : "Invalid Argument"; }

}  // extern "C"
