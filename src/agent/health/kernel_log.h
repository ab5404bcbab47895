// Kernel log check: reports hardware and file-system faults the kernel logs (NVIDIA Xid,
// machine checks, uncorrectable memory errors, file-system and block I/O errors).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/health/health_check.h"

namespace endure::agent::health {

// Classifies one kernel log record: a /dev/kmsg record ("PRI,SEQ,TSUSEC,FLAGS;message",
// optionally followed by continuation lines that start with a space), a dmesg line
// ("[   12.345678] message") or bare message text. Only the message is looked at; it returns
// a Finding of kind xid, mce, ecc or fs-error (check "kernel-log", detail: the message),
// or nullopt for everything else.
std::optional<Finding> classify_kernel_record(std::string_view record);

// Tails the kernel log at expect.kmsg_path: /dev/kmsg in production, a regular file with
// lines in the same format on local nodes. Only records logged after construction are
// reported, each once.
class KernelLogCheck : public HealthCheck {
 public:
  explicit KernelLogCheck(const NodeExpectations& expect);
  ~KernelLogCheck() override;
  KernelLogCheck(const KernelLogCheck&) = delete;
  KernelLogCheck& operator=(const KernelLogCheck&) = delete;

  const char* name() const override { return "kernel-log"; }
  // Reads what was logged since the last run (at most a few MiB, the rest next time) and
  // returns the faults among it. A partial last line is kept until its newline arrives.
  std::vector<Finding> run() override;

 private:
  // Opens the log and skips to its end; false (logged) when it cannot be opened.
  bool open_at_end();

  std::string path_;
  int fd_ = -1;
  std::string partial_;  // bytes after the last newline read
  bool warned_ = false;  // an unopenable log is logged once, not at every run
};

}  // namespace endure::agent::health
