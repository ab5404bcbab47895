// NVML's C declarations that endure uses, named as nvml.h names them and at global scope, so
// that a function's type is one type for the agent that calls it through dlopen and for a
// library that defines it (NVML, or the tests' stand-in): UBSan's function check compares
// them. Handles are opaque pointers; enums are int-sized.
#pragma once

extern "C" {
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
// As nvmlEventSetWait_v2 fills it.
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;
}
