// Kernel log check: reports hardware and file-system faults the kernel logs (NVIDIA Xid,
// machine checks, uncorrectable memory errors, file-system and block I/O errors).
#pragma once

#include <chrono>
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

// True for the Xids that mean the GPU, its memory or its links are broken (NVIDIA's Xid
// catalog); application faults (13, 31, 43, 45, ...) are the job's problem, not the node's.
bool is_hardware_xid(int xid);

// The record's name for LoggedFinding.RecordId: "kmsg:<sequence>" from a /dev/kmsg header;
// nullopt for a line without one.
std::optional<std::string> kmsg_record_id(std::string_view record);

// A fault read from one kernel log record, with the record's name (kmsg_record_id, or
// "kmsg@<offset>" for a line without a header) so that it is counted once however often it
// is sent.
struct LoggedFault {
  std::string record;
  Finding finding;
};

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
  // The same, each fault with its record's name.
  std::vector<LoggedFault> read_faults();
  // Returns when new records may be there to read, or after timeout: poll on /dev/kmsg,
  // inotify on a regular file, a plain wait while the log cannot be opened.
  void wait_for_records(std::chrono::milliseconds timeout);

 private:
  // Opens the log and skips to its end; false (logged) when it cannot be opened.
  bool open_at_end();

  std::string path_;
  int fd_ = -1;
  int inotify_fd_ = -1;   // a regular file's changes (poll on one always says readable)
  long long offset_ = 0;  // of the next byte read: names a record that has no sequence
  std::string partial_;   // bytes after the last newline read
  bool warned_ = false;   // an unopenable log is logged once, not at every run
};

}  // namespace endure::agent::health
