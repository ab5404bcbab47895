#include "agent/health/kernel_log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <initializer_list>

#include "common/log.h"

namespace endure::agent::health {

namespace {

constexpr std::size_t kMaxDetail = 512;  // a finding carries the line, not a flood
// One run reads at most this much; the rest waits for the next run, so a log storm cannot
// keep run() busy.
constexpr std::size_t kMaxBytesPerRun = 4 << 20;
constexpr int kMaxReadsPerRun = 65536;
constexpr std::size_t kMaxFindingsPerRun = 32;  // an Xid storm is one fault, not thousands
// A kmsg record is at most 8 KiB (CONSOLE_EXT_LOG_MAX); a read with a smaller buffer fails.
constexpr std::size_t kReadBuffer = 16 << 10;
constexpr std::size_t kMaxLine = 64 << 10;  // a "line" that never ends is looked at anyway

bool all_of(std::string_view s, std::string_view allowed) {
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return allowed.find(c) != std::string_view::npos; });
}

void trim_leading_spaces(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

// The message of a record: its first line (continuation lines are key=value metadata),
// without the kmsg header, a "<PRI>" prefix (dmesg -r) or a "[  12.345678]" timestamp.
std::string_view message_of(std::string_view record) {
  trim_leading_spaces(record);
  record = record.substr(0, record.find('\n'));
  if (!record.empty() && record.back() == '\r') record.remove_suffix(1);

  // kmsg: "PRI,SEQ,TSUSEC,FLAGS[,more];message": digits first, commas, no space before ';'.
  std::size_t semi = record.find(';');
  if (semi != std::string_view::npos && semi > 0 &&
      std::isdigit(static_cast<unsigned char>(record[0]))) {
    std::string_view head = record.substr(0, semi);
    if (head.find(',') != std::string_view::npos && head.find(' ') == std::string_view::npos) {
      record.remove_prefix(semi + 1);
    }
  }
  if (record.size() > 2 && record[0] == '<') {
    std::size_t gt = record.find('>');
    if (gt != std::string_view::npos && gt > 1 && all_of(record.substr(1, gt - 1), "0123456789")) {
      record.remove_prefix(gt + 1);
    }
  }
  if (!record.empty() && record[0] == '[') {
    std::size_t close = record.find(']');
    if (close != std::string_view::npos && close > 1 &&
        all_of(record.substr(1, close - 1), "0123456789. ")) {
      record.remove_prefix(close + 1);
    }
  }
  trim_leading_spaces(record);
  return record;
}

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

bool contains_any(std::string_view s, std::initializer_list<std::string_view> whats) {
  return std::any_of(whats.begin(), whats.end(),
                     [&](std::string_view w) { return contains(s, w); });
}

// `word` as a whole word: "1 UE memory" has UE, "QUEUE" does not.
bool has_word(std::string_view s, std::string_view word) {
  auto is_word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t at = s.find(word); at != std::string_view::npos; at = s.find(word, at + 1)) {
    bool starts = at == 0 || !is_word_char(s[at - 1]);
    std::size_t end = at + word.size();
    bool ends = end == s.size() || !is_word_char(s[end]);
    if (starts && ends) return true;
  }
  return false;
}

bool contains_icase(std::string_view s, std::string_view what) {
  auto it = std::search(s.begin(), s.end(), what.begin(), what.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != s.end();
}

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, ...": the number after the device.
std::optional<int> xid_number(std::string_view msg) {
  std::size_t at = msg.find("NVRM: Xid");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = msg.substr(at);
  std::size_t after_device = rest.find("): ");
  if (after_device == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(after_device + 3);
  int xid = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), xid);
  if (ec != std::errc() || end == rest.data()) return std::nullopt;
  return xid;
}

bool is_uncorrected_edac(std::string_view msg) {
  if (!contains(msg, "EDAC ")) return false;
  // "EDAC MC0: 1 UE memory read error ..." is uncorrected; "... 1 CE ..." was corrected by
  // the hardware and is only worth a counter, not a node replacement.
  return has_word(msg, "UE") || contains_icase(msg, "uncorrect");
}

bool is_fs_error(std::string_view msg) {
  if (contains_any(msg, {"EXT4-fs error", "EXT3-fs error", "EXT2-fs error",
                         "Remounting filesystem read-only", "BTRFS error (device",
                         "BTRFS critical (device", "Buffer I/O error on dev"})) {
    return true;
  }
  if (contains(msg, "XFS (") &&
      contains_any(msg, {"Corruption", "I/O error", "I/O Error", "shut down", "Shutting down"})) {
    return true;
  }
  // The block layer: "blk_update_request: I/O error, dev sda, sector ..." (older kernels),
  // "I/O error, dev nvme0n1, sector ..." and its "critical medium/target error" siblings.
  return contains_any(
      msg, {"I/O error, dev ", "critical medium error, dev ", "critical target error, dev "});
}

Finding kernel_finding(FaultKind kind, std::string_view msg, std::string prefix = {}) {
  std::string detail = std::move(prefix);
  detail.append(msg.substr(0, kMaxDetail));
  return Finding{kind, "kernel-log", std::move(detail)};
}

}  // namespace

// Application faults left out: 13 graphics engine exception, 31 MMU fault, 43 GPU stopped
// processing, 45 preemptive cleanup.
bool is_hardware_xid(int xid) {
  switch (xid) {
    case 48:   // double-bit ECC error
    case 63:   // ECC page retirement / row remapping recorded: needs a GPU reset
    case 64:   // ECC page retirement / row remapping failed
    case 74:   // NVLink error
    case 79:   // GPU has fallen off the bus
    case 92:   // high single-bit ECC error rate
    case 94:   // contained ECC error
    case 95:   // uncontained ECC error
    case 119:  // GSP RPC timeout
    case 120:  // GSP error
    case 140:  // unrecovered ECC error
      return true;
    default:
      return false;
  }
}

std::optional<Finding> classify_kernel_record(std::string_view record) {
  std::string_view msg = message_of(record);
  if (msg.empty()) return std::nullopt;
  if (auto xid = xid_number(msg)) {
    if (!is_hardware_xid(*xid)) return std::nullopt;
    return kernel_finding(FaultKind::kXid, msg, "Xid " + std::to_string(*xid) + ": ");
  }
  if (is_uncorrected_edac(msg)) return kernel_finding(FaultKind::kEcc, msg);
  // Any "[Hardware Error]" line is a machine check. "Machine check events logged" is also
  // printed for corrected errors; we report it anyway and let endured's recovery table
  // weigh it, rather than second-guess mcelog's decoding here.
  if (contains(msg, "[Hardware Error]")) return kernel_finding(FaultKind::kMce, msg);
  if (is_fs_error(msg)) return kernel_finding(FaultKind::kFsError, msg);
  return std::nullopt;
}

std::optional<std::string> kmsg_record_id(std::string_view record) {
  trim_leading_spaces(record);
  std::size_t semi = record.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view head = record.substr(0, semi);  // "PRI,SEQ,TSUSEC,FLAGS[,more]"
  std::size_t first = head.find(',');
  if (first == std::string_view::npos || !all_of(head.substr(0, first), "0123456789")) {
    return std::nullopt;
  }
  std::string_view seq = head.substr(first + 1);
  seq = seq.substr(0, seq.find(','));
  if (seq.empty() || !all_of(seq, "0123456789")) return std::nullopt;
  return "kmsg:" + std::string(seq);
}

KernelLogCheck::KernelLogCheck(const NodeExpectations& expect) : path_(expect.kmsg_path) {
  open_at_end();
}

KernelLogCheck::~KernelLogCheck() {
  if (fd_ >= 0) ::close(fd_);
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

void KernelLogCheck::wait_for_records(std::chrono::milliseconds timeout) {
  int ms = static_cast<int>(timeout.count());
  int fd = inotify_fd_ >= 0 ? inotify_fd_ : fd_;
  if (fd < 0) {
    ::poll(nullptr, 0, ms);
    return;
  }
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) > 0 && fd == inotify_fd_) {
    // Drained: what changed is read by run(), not from the events.
    char events[4096];
    while (::read(inotify_fd_, events, sizeof events) > 0) {
    }
  }
}

bool KernelLogCheck::open_at_end() {
  // O_NONBLOCK: on /dev/kmsg a read with nothing new would otherwise wait for a record.
  int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (!warned_) log::warn("kernel log {}: {}; retrying at each run", path_, strerror(errno));
    warned_ = true;
    return false;
  }
  // On /dev/kmsg SEEK_END skips the records already in the ring; on a file, its lines.
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) {
    log::warn("kernel log {}: cannot seek to its end: {}", path_, strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ >= 0 && ::inotify_add_watch(inotify_fd_, path_.c_str(), IN_MODIFY) < 0) {
      ::close(inotify_fd_);
      inotify_fd_ = -1;  // wait_for_records then polls the file: readable at once, a busy loop
    }
  }
  fd_ = fd;
  offset_ = end > 0 ? end : 0;
  partial_.clear();
  return true;
}

std::vector<Finding> KernelLogCheck::run() {
  std::vector<Finding> findings;
  for (auto& f : read_faults()) findings.push_back(std::move(f.finding));
  return findings;
}

std::vector<LoggedFault> KernelLogCheck::read_faults() {
  std::vector<LoggedFault> findings;
  try {
    if (fd_ < 0 && !open_at_end()) return findings;

    // A regular file that got shorter was truncated or replaced: what is in it now is new.
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
      off_t pos = ::lseek(fd_, 0, SEEK_CUR);
      if (pos > st.st_size) {
        ::lseek(fd_, 0, SEEK_SET);
        partial_.clear();
        offset_ = 0;
      }
    }

    std::size_t dropped = 0;
    auto look_at = [&](std::string_view line, long long at) {
      // Continuation lines (" SUBSYSTEM=pci") belong to the record above; its first line
      // holds the whole message.
      if (line.empty() || line.front() == ' ') return;
      if (auto f = classify_kernel_record(line)) {
        if (findings.size() < kMaxFindingsPerRun) {
          findings.push_back(
              {kmsg_record_id(line).value_or("kmsg@" + std::to_string(at)), std::move(*f)});
        } else {
          ++dropped;
        }
      }
    };

    std::string buf(kReadBuffer, '\0');
    std::size_t total = 0;
    for (int reads = 0; total < kMaxBytesPerRun && reads < kMaxReadsPerRun; ++reads) {
      ssize_t n = ::read(fd_, buf.data(), buf.size());
      if (n == 0) break;  // end of a regular file
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // /dev/kmsg: nothing more
        if (errno == EPIPE) continue;  // /dev/kmsg: records overwritten before we read them
        log::warn("kernel log {}: {}", path_, strerror(errno));
        break;
      }
      total += static_cast<std::size_t>(n);
      partial_.append(buf.data(), static_cast<std::size_t>(n));

      std::size_t start = 0;
      for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
        look_at(std::string_view(partial_).substr(start, nl - start), offset_ + start);
      }
      partial_.erase(0, start);
      offset_ += start;
      if (partial_.size() > kMaxLine) {
        look_at(partial_, offset_);
        offset_ += partial_.size();
        partial_.clear();
      }
    }
    if (dropped > 0) {
      log::warn("kernel log {}: {} more findings this run not reported", path_, dropped);
    }
  } catch (const std::exception& e) {
    log::warn("kernel log check: {}", e.what());
  }
  return findings;
}

}  // namespace endure::agent::health
