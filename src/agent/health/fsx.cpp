#include "agent/health/fsx.h"

#include <errno.h>
#include <fmt/format.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "agent/health/disk.h"
#include "api/node_gauges.h"
#include "common/log.h"

namespace endure::agent::health {

namespace {

Finding fsx_error(std::string detail) { return {FaultKind::kFsxError, "fsx", std::move(detail)}; }

// The probe file's name: the instance's, so that nodes sharing /fsx never collide.
std::string probe_name(const NodeExpectations& expect) {
  if (!expect.instance_id.empty()) return expect.instance_id;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') return host;
  return "node-" + std::to_string(::getpid());
}

}  // namespace

std::optional<Finding> probe_fsx(const NodeExpectations& expect, bool check_space) {
  const std::string& path = expect.fsx_path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return fsx_error(fmt::format("stat {}: {}", path, strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return fsx_error(path + ": not a folder");

  std::string dir = path + "/.endure-health";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return fsx_error(fmt::format("mkdir {}: {}", dir, strerror(errno)));
  }
  if (auto failed = file_round_trip(dir + "/" + probe_name(expect))) return fsx_error(*failed);
  if (check_space) return free_space_finding(path, expect, "fsx", FaultKind::kFsxError);
  return std::nullopt;
}

FsxCheck::FsxCheck(const NodeExpectations& expect, bool check_space, FsxProbe probe)
    : expect_(expect), probe_fn_(std::move(probe)) {
  if (!probe_fn_) {
    probe_fn_ = [check_space](const NodeExpectations& e) { return probe_fsx(e, check_space); };
  }
}

std::vector<Finding> FsxCheck::run() {
  std::vector<Finding> findings;
  try {
    // The thread gets copies of the probe and the expectations, never this check.
    const auto started = std::chrono::steady_clock::now();
    findings = probe_.run_or_report_hang(
        [fn = probe_fn_, expect = expect_] {
          std::vector<Finding> found;
          if (auto f = fn(expect)) found.push_back(std::move(*f));
          return found;
        },
        std::chrono::milliseconds(expect_.fsx_timeout_ms), FaultKind::kFsxHang, "fsx",
        expect_.fsx_path);
    bool hung = std::any_of(findings.begin(), findings.end(),
                            [](const Finding& f) { return f.kind == FaultKind::kFsxHang; });
    // A probe still stuck from before returns at once: report the bound, not that instant.
    probe_seconds_ =
        hung ? expect_.fsx_timeout_ms / 1000.0
             : std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  } catch (const std::exception& e) {
    log::warn("fsx check: {}", e.what());
  }
  return findings;
}

void FsxCheck::gauges(json& out) const {
  if (probe_seconds_ >= 0) out[api::gauge::kFsxProbeSeconds] = probe_seconds_;
}

}  // namespace endure::agent::health
