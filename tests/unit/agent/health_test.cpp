// Node health checks: kernel-log classification and tailing, disks, /fsx (including a
// probe that hangs), slurmd, CPUs, memory and NVML's absent-library paths.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/health/disk.h"
#include "agent/health/fsx.h"
#include "agent/health/health_check.h"
#include "agent/health/kernel_log.h"
#include "agent/health/nvml.h"
#include "agent/health/resources.h"
#include "agent/health/slurmd.h"
#include "api/node_gauges.h"
#include "support/temp_dir.h"

namespace endure::agent::health {
namespace {

namespace sfs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Each test's own folder, named for this suite.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("endure-health-test") { EXPECT_TRUE(ok()); }
};

void append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

std::vector<std::string> kinds(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(api::name(f.kind));
  return out;
}

// Exactly one finding, of kind, whose detail holds part.
void expect_one(const std::vector<Finding>& found, const std::string& kind,
                const std::string& part) {
  ASSERT_EQ(kinds(found), std::vector<std::string>{kind});
  EXPECT_NE(found[0].detail.find(part), std::string::npos) << found[0].detail;
}

// Expectations that every check passes on this machine, pointed at temp folders.
NodeExpectations healthy_here(const TempDir& dir) {
  NodeExpectations e;
  e.instance_id = "i-node-a";
  e.local_path = dir.str();
  e.fsx_path = dir.str();
  e.kmsg_path = dir.str("kmsg");
  e.disk_min_free_fraction = 0;
  e.disk_min_free_mib = 0;
  return e;
}

// --- Finding ---------------------------------------------------------------------------

TEST(HealthFindingTest, ToJsonHasKindCheckDetail) {
  Finding f{FaultKind::kXid, "kernel-log", "Xid 79: gone"};
  json j = f.to_json();
  EXPECT_EQ(j.dump(), R"({"Kind":"xid","Check":"kernel-log","Detail":"Xid 79: gone"})");
}

// --- classify_kernel_record --------------------------------------------------------------

struct RecordCase {
  const char* record;
  const char* kind;  // nullptr: not a finding
  const char* in_detail = nullptr;
};

const RecordCase kRecords[] = {
    // NVIDIA Xid, kmsg and dmesg formats; hardware Xids only.
    {"4,1021,123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen "
     "off the bus.",
     "xid", "Xid 79"},
    {"[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python, An uncorrectable "
     "double bit error (DBE) has been detected on GPU",
     "xid", "Xid 48"},
    {"NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
     "marked for remapping",
     "xid", "Xid 63"},
    {"NVRM: Xid (PCI:0000:3b:00): 64, pid=1, name=x, Row Remapper: failed", "xid", "Xid 64"},
    {"4,2,3,-;NVRM: Xid (PCI:0000:86:00): 74, pid=99, name=torchrun, NVLink: fatal error", "xid",
     "Xid 74"},
    {"NVRM: Xid (PCI:0000:3b:00): 92, pid=1, name=x, High single-bit ECC error rate", "xid",
     "Xid 92"},
    {"NVRM: Xid (PCI:0000:3b:00): 94, pid=1, name=x, Contained: SM (0x1)", "xid", "Xid 94"},
    {"NVRM: Xid (PCI:0000:3b:00): 95, pid=1, name=x, Uncontained: FBHUB", "xid", "Xid 95"},
    {"NVRM: Xid (PCI:0000:3b:00): 119, pid=1, name=x, Timeout waiting for RPC from GSP!", "xid",
     "Xid 119"},
    {"NVRM: Xid (PCI:0000:3b:00): 120, pid=1, name=x, GSP error", "xid", "Xid 120"},
    {"NVRM: Xid (PCI:0000:3b:00): 140, pid=1, name=x, Unrecovered ECC Error", "xid", "Xid 140"},
    {"4,5,6,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, name=python, Graphics Exception", nullptr},
    {"[  99.1] NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python, MMU Fault", nullptr},
    {"NVRM: Xid (PCI:0000:3b:00): 43, pid=1234, name=python, Ch 00000010", nullptr},
    {"NVRM: Xid (PCI:0000:3b:00): 45, pid=1234, name=python, Ch 00000010", nullptr},
    // Machine checks.
    {"2,300,400,-;mce: [Hardware Error]: Machine check events logged", "mce", "Machine check"},
    {"[  5.000000] mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400", "mce",
     "Bank 5"},
    {"mce: CPU0: Core temperature above threshold, cpu clock throttled", nullptr},
    // EDAC: uncorrected is a finding, corrected is not.
    {"3,77,88,-;EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 "
     "slot:0 page:0x1234)",
     "ecc", "UE memory read error"},
    {"EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1)", nullptr},
    // File-system and block errors.
    {"3,10,20,-;EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: reading "
     "directory lblock 0",
     "fs-error", "EXT4-fs error (device sda1)"},
    {"[ 77.7] XFS (sdb1): Corruption detected. Unmount and run xfs_repair", "fs-error",
     "XFS (sdb1)"},
    {"BTRFS error (device nvme0n1p2): bdev /dev/nvme0n1p2 errs: wr 0, rd 1", "fs-error", "BTRFS"},
    {"Buffer I/O error on dev sda1, logical block 12345, async page read", "fs-error",
     "logical block 12345"},
    {"3,11,21,-;blk_update_request: I/O error, dev sda, sector 2048 op 0x0:(READ)", "fs-error",
     "dev sda"},
    {"I/O error, dev nvme0n1, sector 4096 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 0",
     "fs-error", "nvme0n1"},
    // A kmsg record with continuation lines: classified by its message, metadata ignored.
    {"3,12,22,-;EXT4-fs error (device sda1): ext4_journal_check_start: Detected aborted "
     "journal\n SUBSYSTEM=block\n DEVICE=b8:1\n",
     "fs-error", "aborted journal"},
    {" SUBSYSTEM=pci", nullptr},
    {"<3>[   12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.",
     "xid", "Xid 79"},
    // Unrelated lines.
    {"6,100,200,-;usb 1-1: new high-speed USB device number 2 using xhci_hcd", nullptr},
    {"[   12.345678] e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex", nullptr},
    {"EXT4-fs (sda1): mounted filesystem with ordered data mode", nullptr},
    {"BTRFS info (device sda2): disk space caching is enabled", nullptr},
    {"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15", nullptr},
    {"", nullptr},
};

TEST(KernelRecordTest, ClassifiesByTheKernelsMessageFormats) {
  for (const auto& c : kRecords) {
    SCOPED_TRACE(c.record);
    auto f = classify_kernel_record(c.record);
    if (c.kind == nullptr) {
      EXPECT_FALSE(f.has_value()) << "got " << api::name(f->kind);
      continue;
    }
    ASSERT_TRUE(f.has_value());
    EXPECT_STREQ(api::name(f->kind), c.kind);
    EXPECT_EQ(f->check, "kernel-log");
    if (c.in_detail != nullptr) {
      EXPECT_NE(f->detail.find(c.in_detail), std::string::npos) << f->detail;
    }
  }
}

TEST(KernelRecordTest, DetailIsTheMessageWithoutHeaderOrTimestamp) {
  auto kmsg = classify_kernel_record("3,11,21,-;Buffer I/O error on dev sda1, logical block 1");
  ASSERT_TRUE(kmsg);
  EXPECT_EQ(kmsg->detail, "Buffer I/O error on dev sda1, logical block 1");
  auto dmesg =
      classify_kernel_record("[   12.345678] Buffer I/O error on dev sda1, logical block 1");
  ASSERT_TRUE(dmesg);
  EXPECT_EQ(dmesg->detail, kmsg->detail);
  auto cont = classify_kernel_record("3,1,2,-;EXT4-fs error (device sda1): x\n DEVICE=b8:1\n");
  ASSERT_TRUE(cont);
  EXPECT_EQ(cont->detail, "EXT4-fs error (device sda1): x");
}

// --- KernelLogCheck ----------------------------------------------------------------------

constexpr const char* kXidLine =
    "4,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n";

TEST(KernelLogCheckTest, ReportsOnlyLinesAppendedAfterConstructionEachOnce) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  append(e.kmsg_path, kXidLine);
  append(e.kmsg_path, "3,2,200,-;EXT4-fs error (device sda1): old\n");

  KernelLogCheck check(e);
  EXPECT_TRUE(check.run().empty());  // old lines are never reported

  append(e.kmsg_path, "6,3,300,-;usb 1-1: new device\n");
  append(e.kmsg_path, "3,4,400,-;EXT4-fs error (device sda1): new\n SUBSYSTEM=block\n");
  append(e.kmsg_path, "2,5,500,-;mce: [Hardware Error]: Machine check events logged\n");
  auto found = check.run();
  EXPECT_EQ(kinds(found), (std::vector<std::string>{"fs-error", "mce"}));
  EXPECT_TRUE(check.run().empty());  // reported once
}

TEST(KernelLogCheckTest, HoldsAPartialLineUntilItsNewline) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  append(e.kmsg_path, "");
  KernelLogCheck check(e);

  append(e.kmsg_path, "4,1,100,-;NVRM: Xid (PCI:0000:3b:00): 7");
  EXPECT_TRUE(check.run().empty());
  append(e.kmsg_path, "9, pid=1, name=x, GPU has fallen off the bus.\n");
  expect_one(check.run(), "xid", "Xid 79");
  EXPECT_TRUE(check.run().empty());
}

TEST(KernelLogCheckTest, ALogThatAppearsLaterStartsAtItsEnd) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  KernelLogCheck check(e);  // no file yet
  EXPECT_TRUE(check.run().empty());
  append(e.kmsg_path, kXidLine);  // written before the check could open it: old
  EXPECT_TRUE(check.run().empty());
  append(e.kmsg_path, kXidLine);
  EXPECT_EQ(kinds(check.run()), std::vector<std::string>{"xid"});
}

TEST(KernelLogCheckTest, ATruncatedFileIsReadFromItsStart) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  append(e.kmsg_path, std::string(4096, 'x') + "\n");
  KernelLogCheck check(e);
  { std::ofstream(e.kmsg_path, std::ios::trunc) << kXidLine; }
  EXPECT_EQ(kinds(check.run()), std::vector<std::string>{"xid"});
}

// --- DiskCheck, BasicLocalDiskCheck ------------------------------------------------------

TEST(DiskCheckTest, FindsDiskFullOnlyBelowTheThresholds) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  EXPECT_TRUE(DiskCheck(e).run().empty());

  e.disk_min_free_fraction = 1.01;  // more free than the disk's size: always short
  expect_one(DiskCheck(e).run(), "disk-full", " used of ");

  e.disk_min_free_fraction = 0;
  e.disk_min_free_mib = 1L << 40;  // an exbibyte
  EXPECT_EQ(kinds(DiskCheck(e).run()), std::vector<std::string>{"disk-full"});
}

TEST(DiskCheckTest, MissingPathIsLocalDisk) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.local_path = dir.str("missing");
  EXPECT_EQ(kinds(DiskCheck(e).run()), std::vector<std::string>{"local-disk"});
}

TEST(BasicLocalDiskCheckTest, WritableFolderWithSpaceIsHealthy) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  EXPECT_TRUE(BasicLocalDiskCheck(e).run().empty());
  EXPECT_FALSE(sfs::exists(dir.path() / ".endure-health-probe"));  // cleaned up
}

TEST(BasicLocalDiskCheckTest, MissingFolderOrFileIsLocalDisk) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.local_path = dir.str("missing");
  expect_one(BasicLocalDiskCheck(e).run(), "local-disk", "No such file");

  append(dir.str("file"), "x");
  e.local_path = dir.str("file");
  EXPECT_EQ(kinds(BasicLocalDiskCheck(e).run()), std::vector<std::string>{"local-disk"});
}

TEST(BasicLocalDiskCheckTest, AFolderThatRefusesFilesIsLocalDisk) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.local_path = "/proc";  // a folder where nobody, root included, can create a file
  expect_one(BasicLocalDiskCheck(e).run(), "local-disk", "create /proc/.endure-health-probe");
}

TEST(BasicLocalDiskCheckTest, ShortOfSpaceIsDiskFull) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.disk_min_free_fraction = 1.01;
  EXPECT_EQ(kinds(BasicLocalDiskCheck(e).run()), std::vector<std::string>{"disk-full"});
}

// --- FsxCheck ----------------------------------------------------------------------------

TEST(FsxCheckTest, WritableFolderIsHealthyAndLeavesNoProbeFile) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  EXPECT_TRUE(FsxCheck(e).run().empty());
  EXPECT_TRUE(sfs::is_directory(dir.path() / ".endure-health"));
  EXPECT_FALSE(sfs::exists(dir.path() / ".endure-health" / "i-node-a"));
  EXPECT_TRUE(FsxCheck(e).run().empty());  // the folder already there is fine
}

TEST(FsxCheckTest, MissingFolderIsFsxError) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.fsx_path = dir.str("missing");
  expect_one(FsxCheck(e).run(), "fsx-error", "No such file");
}

TEST(FsxCheckTest, BasicModeAlsoChecksSpace) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.disk_min_free_fraction = 1.01;
  EXPECT_TRUE(FsxCheck(e).run().empty());  // continuous: space is not its business
  EXPECT_EQ(kinds(FsxCheck(e, /*check_space=*/true).run()), std::vector<std::string>{"disk-full"});
}

TEST(FsxCheckTest, AHungProbeIsReportedInTimeAndNotStartedTwice) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.fsx_timeout_ms = 200;
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  FsxCheck check(e, false, [=](const NodeExpectations&) -> std::optional<Finding> {
    if (++*calls == 1) {
      // A hung NFS call, until the test lets it go (30 s at most, so that no run hangs).
      for (auto deadline = Clock::now() + 30s; !*release && Clock::now() < deadline;) {
        std::this_thread::sleep_for(5ms);
      }
      *returned = true;
    }
    return std::nullopt;
  });

  // run() gives up on the probe at its timeout, while the probe is still stuck.
  expect_one(check.run(), "fsx-hang", "did not finish in 200 ms");
  EXPECT_FALSE(*returned);
  for (auto deadline = Clock::now() + 5s; *calls == 0 && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
  }
  // Still stuck: reported at once (the "earlier probe" path waits for nothing), no second
  // probe started.
  expect_one(check.run(), "fsx-hang", "an earlier probe of");
  EXPECT_EQ(calls->load(), 1);
  EXPECT_FALSE(*returned);

  // Once the stuck probe returns, the next run starts a new one and finds the folder healthy.
  *release = true;
  std::vector<Finding> found;
  for (auto deadline = Clock::now() + 5s; Clock::now() < deadline;) {
    found = check.run();
    if (found.empty()) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(*returned);
  EXPECT_EQ(kinds(found), std::vector<std::string>{});
  EXPECT_GE(calls->load(), 2);
}

TEST(FsxCheckTest, ACheckMayGoAwayWhileItsProbeIsStuck) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.fsx_timeout_ms = 20;
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  {
    FsxCheck check(e, false, [=](const NodeExpectations& x) -> std::optional<Finding> {
      for (auto deadline = Clock::now() + 30s; !*release && Clock::now() < deadline;) {
        std::this_thread::sleep_for(5ms);
      }
      *returned = true;
      return Finding{FaultKind::kFsxError, "fsx", x.fsx_path};  // touches only its own copy
    });
    EXPECT_EQ(kinds(check.run()), std::vector<std::string>{"fsx-hang"});
  }
  *release = true;  // the check is gone; its probe returns now
  for (auto deadline = Clock::now() + 5s; !*returned && Clock::now() < deadline;) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(*returned);
}

// --- SlurmdCheck -------------------------------------------------------------------------

// A child process, killed (by its pid) and reaped at the end of the test.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void kill_and_reap() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

bool wait_for_comm(pid_t pid, const std::string& comm) {
  for (auto deadline = Clock::now() + 5s; Clock::now() < deadline;) {
    if (comm_of(pid) == comm) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

TEST(SlurmdCheckTest, AnotherProgramBehindThePidIsSlurmdGone) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.slurmd_pid_file = dir.str("slurmd.pid");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Child child(pid);
  ASSERT_TRUE(wait_for_comm(pid, "sleep"));
  append(e.slurmd_pid_file, std::to_string(pid) + "\n");

  expect_one(SlurmdCheck(e).run(), "slurmd-gone", "\"sleep\"");

  child.kill_and_reap();  // now the pid is of a dead process
  expect_one(SlurmdCheck(e).run(), "slurmd-gone", "not running");
}

TEST(SlurmdCheckTest, ALiveSlurmdIsHealthyAndAZombieIsNot) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.slurmd_pid_file = dir.str("slurmd.pid");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A stand-in slurmd: only its comm matters. alarm() ends it should the test not.
    ::prctl(PR_SET_NAME, "slurmd", 0, 0, 0);
    ::alarm(60);
    for (;;) ::pause();
  }
  Child child(pid);
  ASSERT_TRUE(wait_for_comm(pid, "slurmd"));
  append(e.slurmd_pid_file, std::to_string(pid) + "\n");
  EXPECT_TRUE(SlurmdCheck(e).run().empty());

  ::kill(pid, SIGKILL);  // dead but not reaped: a zombie
  for (auto deadline = Clock::now() + 5s; proc_state(pid) != 'Z' && Clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(proc_state(pid), 'Z');
  expect_one(SlurmdCheck(e).run(), "slurmd-gone", "zombie");
}

TEST(SlurmdCheckTest, MissingOrEmptyPidFileIsSlurmdGone) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  e.slurmd_pid_file = dir.str("missing.pid");
  EXPECT_EQ(kinds(SlurmdCheck(e).run()), std::vector<std::string>{"slurmd-gone"});
  e.slurmd_pid_file = dir.str("garbage.pid");
  append(e.slurmd_pid_file, "not a pid\n");
  EXPECT_EQ(kinds(SlurmdCheck(e).run()), std::vector<std::string>{"slurmd-gone"});
}

// --- CpuCheck, MemoryCheck ---------------------------------------------------------------

TEST(CpuCheckTest, PassesWithOneCpuAndFailsWithAHundredThousand) {
  NodeExpectations e;
  e.cpus = 1;
  EXPECT_GE(usable_cpus(), 1);
  EXPECT_TRUE(CpuCheck(e).run().empty());
  e.cpus = 100000;
  expect_one(CpuCheck(e).run(), "cpu", "expected 100000");
}

TEST(MemoryCheckTest, PassesWithOneMibAndFailsWithAPetabyte) {
  NodeExpectations e;
  e.memory_mib = 1;
  EXPECT_GT(mem_total_mib(), 0);
  EXPECT_TRUE(MemoryCheck(e).run().empty());
  e.memory_mib = 1000000000;
  expect_one(MemoryCheck(e).run(), "memory", "expected 1000000000 MiB");
  e.memory_mib = 0;  // no expectation
  EXPECT_TRUE(MemoryCheck(e).run().empty());
}

// --- NvmlCheck ---------------------------------------------------------------------------

TEST(NvmlCheckTest, NoGpusExpectedSkipsWithoutLoadingAnything) {
  NodeExpectations e;
  e.gpus = 0;
  e.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  EXPECT_TRUE(NvmlCheck(e).run().empty());
  EXPECT_TRUE(NvmlCheck(e, /*continuous=*/true).run().empty());
}

TEST(NvmlCheckTest, MissingLibraryIsACleanNvmlFinding) {
  NodeExpectations e;
  e.gpus = 8;
  e.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  for (bool continuous : {false, true}) {
    NvmlCheck check(e, continuous);
    expect_one(check.run(), "nvml", "NVML not available: ");
    EXPECT_EQ(kinds(check.run()), std::vector<std::string>{"nvml"});  // and again
  }
}

// The library name production loads: on a machine without it (this one: no GPU) the check
// says so as a finding; on one with it, the check loads it (whatever it then finds of the GPUs).
TEST(NvmlCheckTest, TheDefaultLibraryIsLoadedWhenPresentAndNamedWhenNot) {
  NodeExpectations e;
  e.gpus = 1;
  void* present = ::dlopen(e.nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto found = NvmlCheck(e).run();
  if (present) {
    ::dlclose(present);
    for (const auto& f : found) {
      EXPECT_EQ(f.detail.find("NVML not available"), std::string::npos) << f.detail;
    }
  } else {
    expect_one(found, "nvml", "NVML not available: ");
  }
}

TEST(NvmlCheckTest, ALibraryWithoutNvmlIsACleanNvmlFinding) {
  NodeExpectations e;
  e.gpus = 1;
  e.nvml_library = "libm.so.6";  // loads, but has no nvmlInit_v2
  expect_one(NvmlCheck(e).run(), "nvml", "nvmlInit_v2");
}

// --- The factories -----------------------------------------------------------------------

std::vector<std::string> names(const std::vector<std::unique_ptr<HealthCheck>>& checks) {
  std::vector<std::string> out;
  for (const auto& c : checks) out.push_back(c->name());
  return out;
}

TEST(HealthChecksTest, BasicAndContinuousListsFollowTheNode) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  append(e.kmsg_path, "");
  EXPECT_EQ(names(basic_checks(e)),
            (std::vector<std::string>{"cpu", "memory", "local-disk", "fsx"}));
  EXPECT_EQ(names(continuous_checks(e)), (std::vector<std::string>{"disk", "fsx"}));
  e.runs_slurmd = true;
  e.gpus = 8;
  EXPECT_EQ(names(basic_checks(e)),
            (std::vector<std::string>{"cpu", "memory", "local-disk", "fsx", "nvml"}));
  EXPECT_EQ(names(continuous_checks(e)),
            (std::vector<std::string>{"disk", "fsx", "slurmd", "nvml"}));
}

TEST(HealthChecksTest, RunAllGathersFindings) {
  TempDir dir;
  NodeExpectations e = healthy_here(dir);
  append(e.kmsg_path, "");
  e.memory_mib = 1;
  EXPECT_TRUE(run_all(basic_checks(e)).empty());

  auto continuous = continuous_checks(e);
  EXPECT_TRUE(run_all(continuous).empty());
  e.local_path = dir.str("no-such-disk");
  EXPECT_EQ(kinds(run_all(continuous_checks(e))), std::vector<std::string>{"local-disk"});
  e.local_path = dir.str();

  e.runs_slurmd = true;
  e.slurmd_pid_file = dir.str("missing.pid");
  e.cpus = 100000;
  EXPECT_EQ(kinds(run_all(basic_checks(e))), std::vector<std::string>{"cpu"});
  EXPECT_EQ(kinds(run_all(continuous_checks(e))), std::vector<std::string>{"slurmd-gone"});
}

}  // namespace
}  // namespace endure::agent::health

namespace endure::agent::health {
namespace {

// The NVML check against the stand-in library: same functions, same dlopen path.
class NvmlStandInTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = dir_.str("nvml-state");
    ::setenv("ENDURE_FAKE_NVML_STATE", state_.c_str(), 1);
    expect_.gpus = 2;
    expect_.nvml_library = ENDURE_FAKE_NVML;
  }
  void TearDown() override { ::unsetenv("ENDURE_FAKE_NVML_STATE"); }
  void set_state(int count, int ecc) {
    std::ofstream(state_) << "count " << count << "\necc " << ecc << "\n";
  }

  endure::test::TempDir dir_{"endure-nvml-test"};
  std::string state_;
  NodeExpectations expect_;
};

TEST_F(NvmlStandInTest, TheRightGpuCountIsHealthy) {
  set_state(2, 0);
  EXPECT_TRUE(NvmlCheck(expect_).run().empty());
}

TEST_F(NvmlStandInTest, AMissingGpuIsAGpuCountFinding) {
  set_state(1, 0);
  auto findings = NvmlCheck(expect_).run();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_STREQ(api::name(findings[0].kind), "gpu-count");
}

// The heartbeat's GPU gauges are the numbers the check judged by, from the same library.
TEST_F(NvmlStandInTest, TheGaugesAreWhatTheLastLookSaw) {
  set_state(2, 3);
  NvmlCheck check(expect_, /*continuous=*/true);
  json none = json::object();
  check.gauges(none);
  EXPECT_TRUE(none.empty()) << none.dump();  // no look yet: no gauges
  EXPECT_TRUE(check.run().empty());
  json seen = json::object();
  check.gauges(seen);
  EXPECT_EQ(seen.value(api::gauge::kGpus, -1), 2) << seen.dump();
  // The stand-in gives every GPU the same count: the gauge sums the node's GPUs.
  EXPECT_EQ(seen.value(api::gauge::kGpuEccUncorrected, -1), 2 * 3) << seen.dump();
}

TEST_F(NvmlStandInTest, RisingUncorrectedEccIsAFinding) {
  set_state(2, 4);
  NvmlCheck check(expect_, /*continuous=*/true);
  EXPECT_TRUE(check.run().empty()) << "the count at the first look is the baseline";
  set_state(2, 5);
  auto findings = check.run();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_STREQ(api::name(findings[0].kind), "ecc");
}

}  // namespace
}  // namespace endure::agent::health
