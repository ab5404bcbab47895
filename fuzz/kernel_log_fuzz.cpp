// One kernel log record as the agent reads it from /dev/kmsg or dmesg.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agent/health/kernel_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view record(reinterpret_cast<const char*>(data), size);
  (void)endure::agent::health::classify_kernel_record(record);
  (void)endure::agent::health::kmsg_record_id(record);
  return 0;
}
