// endure-fsx end to end: the real binary mounts a temp folder, in a private mount namespace
// so that no mount reaches the host even when a test dies, and the checks go through it.
//
// Each mounted test runs in a forked child (its own process group) that unshares its mount
// namespace, starts endure-fsx, runs the check and sends back one line per finding through
// a pipe: "I text" (for the log), "F text" (a failure), "S text" (skip). The parent only
// reads, with a deadline, and kills the child's process group if the deadline passes.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/health/fsx.h"
#include "common/process.h"
#include "support/temp_dir.h"

namespace endure {
namespace {

namespace sfs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const std::string kFsxBin = std::string(ENDURE_BIN_DIR) + "/endure-fsx";
constexpr auto kTestDeadline = std::chrono::seconds(25);  // every test stays under 30 s

// The child's side of the pipe. Failures are values here: gtest's own state in a forked
// child would never reach the parent.
class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  void info(const std::string& text) { send('I', text); }
  void skip(const std::string& text) { send('S', text); }
  // Always false, so that a check can `return r.fail(...)`.
  bool fail(const std::string& text) {
    failed_ = true;
    send('F', text);
    return false;
  }
  // fail() with strerror(errno) appended.
  bool fail_errno(const std::string& text) { return fail(text + ": " + strerror(errno)); }
  bool failed() const { return failed_; }

 private:
  void send(char kind, std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    std::string line = std::string(1, kind) + " " + text + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  int fd_;
  bool failed_ = false;
};

bool skip_reason(std::string* why) {
  if (::geteuid() != 0) {
    *why = "needs root (mounts FUSE in a private mount namespace)";
    return true;
  }
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    *why = "no /dev/fuse";
    return true;
  }
  return false;
}

// CI runs as root with FUSE: there a mounted test that cannot run fails instead of skipping.
bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

dev_t dev_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

// Waits for pid to exit, up to timeout; returns its wait status, or -1 while it still runs.
int wait_for(pid_t pid, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -2;  // not our child (any more)
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

// The process state letter from /proc/PID/stat ('T' when stopped), or '?'.
char proc_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
}

// SIGSTOP, then wait until every thread of pid is stopped: kill() returns before the
// threads stop, and on a busy machine a request sent meanwhile may still be answered.
bool stop_process(pid_t pid) {
  ::kill(pid, SIGSTOP);
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  auto all_stopped = [&] {
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
      if (proc_state(std::stoi(task.path().filename().string())) != 'T') return false;
    }
    return !ec;
  };
  auto deadline = Clock::now() + std::chrono::seconds(2);
  while (!all_stopped() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  return all_stopped();
}

// One running endure-fsx, started and stopped by the namespaced child.
struct Fsx {
  std::string backing;
  std::string mnt;
  std::string pid_file;
  pid_t pid = -1;
};

// Starts endure-fsx and waits until its pid file says it is mounted.
bool start_fsx(Fsx& f, Reporter& r) {
  f.pid = ::fork();
  if (f.pid < 0) return r.fail_errno("fork");
  if (f.pid == 0) {
    ::execl(kFsxBin.c_str(), "endure-fsx", f.backing.c_str(), f.mnt.c_str(), "--pid-file",
            f.pid_file.c_str(), "--foreground", static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(f.pid, &status, WNOHANG) == f.pid) {
      f.pid = -1;
      return r.fail("endure-fsx exited before mounting, status " + std::to_string(status));
    }
    std::ifstream in(f.pid_file);
    long pid = 0;
    if (in >> pid) {
      if (pid != f.pid) return r.fail("pid file says " + std::to_string(pid));
      sfs::path parent = sfs::path(f.mnt).parent_path();
      if (dev_of(f.mnt) == dev_of(parent.string())) return r.fail("pid file but no mount");
      return true;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return r.fail("endure-fsx did not mount within 10 s");
}

// SIGTERM: endure-fsx must unmount, remove its pid file and exit 0. Whatever happens, no
// endure-fsx of ours is left (killed by its pid).
bool stop_fsx(Fsx& f, Reporter& r) {
  if (f.pid <= 0) return false;
  ::kill(f.pid, SIGCONT);  // a stopped daemon could not act on SIGTERM
  ::kill(f.pid, SIGTERM);
  int status = wait_for(f.pid, std::chrono::seconds(10));
  bool ok = true;
  if (status == -1) {
    ok = r.fail("endure-fsx did not exit within 10 s of SIGTERM");
    ::kill(f.pid, SIGKILL);
    wait_for(f.pid, std::chrono::seconds(5));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ok = r.fail("endure-fsx ended with wait status " + std::to_string(status));
  }
  f.pid = -1;
  sfs::path parent = sfs::path(f.mnt).parent_path();
  if (dev_of(f.mnt) != dev_of(parent.string())) ok = r.fail(f.mnt + " still mounted");
  if (::access(f.pid_file.c_str(), F_OK) == 0) ok = r.fail("pid file left behind");
  return ok;
}

// A check: runs with endure-fsx mounted on fsx.mnt over fsx.backing.
using Check = std::function<void(Fsx& fsx, const std::string& root, Reporter& r)>;

// The namespaced child's work; returns its exit code.
int child_run(const std::string& root, const Check& check, Reporter& r) {
  if (::unshare(CLONE_NEWNS) != 0) {
    if (errno == EPERM) {
      r.skip("unshare(CLONE_NEWNS) not permitted here");
      return 0;
    }
    r.fail_errno("unshare(CLONE_NEWNS)");
    return 1;
  }
  // Private from / down: the FUSE mount made below never propagates to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    r.fail_errno("make / private");
    return 1;
  }
  ::umask(022);  // the modes the checks expect
  Fsx fsx{root + "/backing", root + "/mnt", root + "/fsx.pid"};
  if (start_fsx(fsx, r)) {
    check(fsx, root, r);
    stop_fsx(fsx, r);
  }
  return r.failed() ? 1 : 0;
}

// Runs check in a private mount namespace with endure-fsx mounted; reports what the child
// found as this test's log, failures and skip.
void run_mounted(const Check& check) {
  std::string why;
  if (skip_reason(&why)) {
    if (in_ci()) FAIL() << why << " (CI is set)";
    GTEST_SKIP() << why;
  }
  ASSERT_TRUE(sfs::exists(kFsxBin)) << kFsxBin;
  test::TempDir root("endure-fsx-test");
  ASSERT_TRUE(root.ok());
  sfs::create_directory(root.path() / "backing");
  sfs::create_directory(root.path() / "mnt");

  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);  // CLOEXEC: endure-fsx must not hold the pipe open
  std::fflush(nullptr);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setpgid(0, 0);
    ::close(fds[0]);
    Reporter r(fds[1]);
    int code = 1;
    try {
      code = child_run(root.str(), check, r);
    } catch (const std::exception& e) {
      r.fail(std::string("exception: ") + e.what());
    } catch (...) {
      r.fail("unknown exception");
    }
    _exit(code);  // never back into gtest
  }
  ::setpgid(child, child);  // also here: whichever runs first, the group exists
  ::close(fds[1]);

  std::string buf;
  bool timed_out = false;
  auto deadline = Clock::now() + kTestDeadline;
  while (true) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char chunk[4096];
    ssize_t got = ::read(fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child and its helpers are done
    buf.append(chunk, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(-child, SIGKILL);  // the child, endure-fsx and any prober
  int status = wait_for(child, std::chrono::seconds(10));
  if (status == -1) {
    ::kill(-child, SIGKILL);
    status = wait_for(child, std::chrono::seconds(5));
  }

  std::istringstream lines(buf);
  std::string line;
  std::string skipped;
  while (std::getline(lines, line)) {
    if (line.size() < 2) continue;
    std::string text = line.substr(2);
    if (line[0] == 'I') std::cout << "[ fsx      ] " << text << std::endl;
    if (line[0] == 'F') ADD_FAILURE() << text;
    if (line[0] == 'S') skipped = text;
  }
  EXPECT_FALSE(timed_out) << "the check ran past " << kTestDeadline.count() << " s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child wait status " << status;
  if (!skipped.empty()) {
    if (in_ci()) FAIL() << skipped << " (CI is set)";
    GTEST_SKIP() << skipped;
  }
}

// --- helpers for the checks (child side) ---

std::vector<char> pattern(size_t size, uint32_t seed) {
  std::vector<char> data(size);
  uint32_t x = seed;
  for (auto& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return data;
}

bool write_all(int fd, const char* p, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Writes data in chunk-sized writes and fsyncs it.
bool write_file(const std::string& path, const std::vector<char>& data, size_t chunk, Reporter& r) {
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return r.fail_errno("create " + path);
  bool ok = true;
  for (size_t off = 0; ok && off < data.size(); off += chunk) {
    if (!write_all(fd, data.data() + off, std::min(chunk, data.size() - off))) {
      ok = r.fail_errno("write " + path);
    }
  }
  if (ok && ::fsync(fd) != 0) ok = r.fail_errno("fsync " + path);
  if (::close(fd) != 0 && ok) ok = r.fail_errno("close " + path);
  return ok;
}

bool read_file(const std::string& path, std::vector<char>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

std::set<std::string> list_dir(const std::string& path) {
  std::set<std::string> names;
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n);
  }
  ::closedir(d);
  return names;
}

struct stat stat_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) st.st_mode = 0;
  return st;
}

// --- the tests ---

TEST(FsxPassthroughTest, RejectsBadArgumentsWithExit2) {
  ASSERT_TRUE(sfs::exists(kFsxBin)) << kFsxBin;
  test::TempDir dir("endure-fsx-args");
  ASSERT_TRUE(dir.ok());
  sfs::create_directory(dir.path() / "backing");
  sfs::create_directory(dir.path() / "backing" / "inner");
  sfs::create_directory(dir.path() / "mnt");
  { std::ofstream(dir.str("file")) << "x"; }
  const std::string b = dir.str("backing"), m = dir.str("mnt");
  const std::vector<std::vector<std::string>> bad = {
      {},
      {b},
      {b, m, "extra"},
      {dir.str("missing"), m},
      {b, dir.str("file")},
      {b, b + "/inner"},  // a mount inside its own backing folder
      {b, m, "--pid-file"},
      {b, m, "--pid-file", dir.str("no-such-folder/fsx.pid")},
      {b, m, "--bogus"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> argv = {kFsxBin};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process::Options opts;
    opts.timeout = std::chrono::seconds(5);
    auto out = process::run(argv, opts);
    std::string shown;
    for (const auto& a : extra) shown += " " + a;
    EXPECT_EQ(out.exit_code, 2) << "args:" << shown << "\n" << out.err;
    EXPECT_NE(out.err.find("endure-fsx --help"), std::string::npos) << shown;
  }
}

TEST(FsxPassthroughTest, FileOperationsReachTheBackingFolder) {
  run_mounted([](Fsx& f, const std::string&, Reporter& r) {
    const std::string& M = f.mnt;
    const std::string& B = f.backing;

    // 4 MiB, written in 1 MiB writes with fsync, read back both through the mount and from
    // the backing folder.
    auto data = pattern(4 << 20, 7);
    if (!write_file(M + "/ckpt.bin", data, 1 << 20, r)) return;
    std::vector<char> back;
    if (!read_file(M + "/ckpt.bin", &back) || back != data) r.fail("read back through mount");
    if (!read_file(B + "/ckpt.bin", &back) || back != data) r.fail("backing file differs");
    struct stat st = stat_of(M + "/ckpt.bin");
    if (!S_ISREG(st.st_mode) || st.st_size != (4 << 20)) r.fail("stat of the 4 MiB file");

    if (::mkdir((M + "/d").c_str(), 0750) != 0) return void(r.fail_errno("mkdir"));
    st = stat_of(B + "/d");
    if (!S_ISDIR(st.st_mode) || (st.st_mode & 07777) != 0750) r.fail("mkdir: backing mode");
    int dfd = ::open((M + "/d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || ::fsync(dfd) != 0) r.fail_errno("fsync of a folder");
    if (dfd >= 0) ::close(dfd);

    if (::rename((M + "/ckpt.bin").c_str(), (M + "/d/ckpt.bin").c_str()) != 0) {
      r.fail_errno("rename");
    }
    if (!sfs::exists(B + "/d/ckpt.bin") || sfs::exists(B + "/ckpt.bin")) {
      r.fail("rename not seen in the backing folder");
    }
    if (list_dir(M) != std::set<std::string>{"d"}) r.fail("readdir of the mount root");
    if (list_dir(M + "/d") != std::set<std::string>{"ckpt.bin"}) r.fail("readdir of d");

    if (::truncate((M + "/d/ckpt.bin").c_str(), 1000) != 0) r.fail_errno("truncate");
    if (stat_of(B + "/d/ckpt.bin").st_size != 1000) r.fail("truncate: backing size");
    if (stat_of(M + "/d/ckpt.bin").st_size != 1000) r.fail("truncate: size through mount");
    if (!read_file(M + "/d/ckpt.bin", &back) ||
        back != std::vector<char>(data.begin(), data.begin() + 1000)) {
      r.fail("truncate: content");
    }

    if (::chmod((M + "/d/ckpt.bin").c_str(), 0600) != 0) r.fail_errno("chmod");
    if ((stat_of(B + "/d/ckpt.bin").st_mode & 07777) != 0600) r.fail("chmod: backing mode");
    if ((stat_of(M + "/d/ckpt.bin").st_mode & 07777) != 0600) r.fail("chmod: mount mode");

    timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
    if (::utimensat(AT_FDCWD, (M + "/d/ckpt.bin").c_str(), times, 0) != 0) {
      r.fail_errno("utimensat");
    }
    if (stat_of(B + "/d/ckpt.bin").st_mtim.tv_sec != 1700000000) r.fail("utimens: backing");

    // rename flags: NOREPLACE refuses an existing target, EXCHANGE swaps the two.
    if (!write_file(M + "/d/other", pattern(10, 1), 10, r)) return;
    int rc = ::renameat2(AT_FDCWD, (M + "/d/other").c_str(), AT_FDCWD, (M + "/d/ckpt.bin").c_str(),
                         RENAME_NOREPLACE);
    if (rc == 0 || errno != EEXIST) r.fail("RENAME_NOREPLACE onto a file: want EEXIST");
    rc = ::renameat2(AT_FDCWD, (M + "/d/other").c_str(), AT_FDCWD, (M + "/d/ckpt.bin").c_str(),
                     RENAME_EXCHANGE);
    if (rc != 0) r.fail_errno("RENAME_EXCHANGE");
    if (stat_of(B + "/d/ckpt.bin").st_size != 10 || stat_of(B + "/d/other").st_size != 1000) {
      r.fail("RENAME_EXCHANGE: backing files not swapped");
    }

    if (::symlink("ckpt.bin", (M + "/d/link").c_str()) != 0) r.fail_errno("symlink");
    char target[64] = {};
    if (::readlink((M + "/d/link").c_str(), target, sizeof target - 1) != 8 ||
        std::string(target) != "ckpt.bin") {
      r.fail("readlink through mount");
    }
    if (!S_ISLNK(stat_of(B + "/d/link").st_mode)) r.fail("symlink: backing");
    if (::link((M + "/d/ckpt.bin").c_str(), (M + "/d/hard").c_str()) != 0) r.fail_errno("link");
    if (stat_of(B + "/d/ckpt.bin").st_nlink != 2) r.fail("link: backing nlink");

    // An open file whose name is gone still reads and writes (FUSE's NULL-path calls).
    int fd = ::open((M + "/d/hard").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return void(r.fail_errno("open hard"));
    for (const char* name : {"ckpt.bin", "hard", "other", "link"}) {
      if (::unlink((M + "/d/" + name).c_str()) != 0) r.fail_errno(std::string("unlink ") + name);
    }
    char got[4] = {};
    if (::pwrite(fd, "abc", 3, 5) != 3 || ::fsync(fd) != 0 || ::pread(fd, got, 3, 5) != 3 ||
        std::string(got) != "abc") {
      r.fail_errno("pwrite/fsync/pread on an unlinked open file");
    }
    ::close(fd);
    if (!list_dir(B + "/d").empty()) r.fail("unlink: backing folder not empty");
    if (::rmdir((M + "/d").c_str()) != 0) r.fail_errno("rmdir");
    if (sfs::exists(B + "/d")) r.fail("rmdir: still in the backing folder");

    struct statvfs vm {
    }, vb{};
    if (::statvfs(M.c_str(), &vm) != 0 || ::statvfs(B.c_str(), &vb) != 0) {
      r.fail_errno("statvfs");
    } else if (vm.f_bsize == 0 || vm.f_blocks != vb.f_blocks) {
      r.fail("statfs: mount and backing differ");
    }
  });
}

TEST(FsxPassthroughTest, OtherUsersCreateFilesTheyOwn) {
  run_mounted([](Fsx& f, const std::string& root, Reporter& r) {
    // mkdtemp made the test folder 0700; the other user must be able to walk to the mount.
    if (::chmod(root.c_str(), 0755) != 0) return void(r.fail_errno("chmod test folder"));
    if (::mkdir((f.mnt + "/shared").c_str(), 0777) != 0) return void(r.fail_errno("mkdir"));
    if (::chmod((f.mnt + "/shared").c_str(), 0777) != 0) return void(r.fail_errno("chmod"));
    // A user other than root: allow_other lets it in, and what it creates is its own.
    pid_t pid = ::fork();
    if (pid == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(10);
      int fd = ::open((f.mnt + "/shared/mine").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0 || ::write(fd, "x", 1) != 1 || ::close(fd) != 0) _exit(11);
      if (::mkdir((f.mnt + "/shared/sub").c_str(), 0755) != 0) _exit(12);
      // default_permissions: the kernel refuses what the mode bits refuse.
      int root_only = ::open((f.mnt + "/root-only").c_str(), O_CREAT | O_WRONLY, 0644);
      _exit(root_only < 0 && errno == EACCES ? 0 : 13);
    }
    int status = wait_for(pid, std::chrono::seconds(10));
    if (status == -1) {
      ::kill(pid, SIGKILL);
      wait_for(pid, std::chrono::seconds(5));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return void(r.fail("user 65534 through the mount: status " + std::to_string(status)));
    }
    for (const char* name : {"mine", "sub"}) {
      struct stat st = stat_of(f.backing + "/shared/" + name);
      if (st.st_uid != 65534 || st.st_gid != 65534) {
        r.fail(std::string(name) + ": backing owner " + std::to_string(st.st_uid) + ":" +
               std::to_string(st.st_gid) + ", want 65534:65534");
      }
    }
  });
}

TEST(FsxPassthroughTest, StoppedDaemonHangsItsMountOnly) {
  run_mounted([](Fsx& f, const std::string& root, Reporter& r) {
    // A second node's mount of the same backing folder: it must go on while the first hangs.
    Fsx other{f.backing, root + "/mnt2", root + "/fsx2.pid"};
    ::mkdir(other.mnt.c_str(), 0755);
    if (!start_fsx(other, r)) return;

    if (!stop_process(f.pid)) r.fail("endure-fsx did not stop");

    // The stat runs in its own process: a thread stuck in a FUSE call cannot be taken back.
    pid_t prober = ::fork();
    if (prober == 0) {
      struct stat st {};
      _exit(::stat(f.mnt.c_str(), &st) == 0 ? 0 : 1);
    }
    // It blocks: the prober goes to sleep (in the stat, the only thing it does) and stays.
    auto asleep = [&] { return proc_state(prober) == 'S' || proc_state(prober) == 'D'; };
    int status = wait_for(prober, milliseconds(0));
    for (auto deadline = Clock::now() + std::chrono::seconds(10);
         status == -1 && !asleep() && Clock::now() < deadline;) {
      std::this_thread::sleep_for(milliseconds(5));
      status = wait_for(prober, milliseconds(0));
    }
    if (status != -1) {
      r.fail("stat of the stopped mount returned, wait status " + std::to_string(status));
    } else if (!asleep()) {
      r.fail("stat of the stopped mount did not block within 10 s");
    }

    // The other mount answers meanwhile (hung too, it would hold this check past its deadline).
    struct stat st {};
    if (::stat((other.mnt + "/").c_str(), &st) != 0) r.fail_errno("stat of the other mount");
    if (status == -1 && (status = wait_for(prober, milliseconds(0))) != -1) {
      r.fail("stat of the stopped mount returned before SIGCONT");
    }

    ::kill(f.pid, SIGCONT);
    if (status == -1) status = wait_for(prober, std::chrono::seconds(5));
    if (status == -1) {
      r.fail("stat still blocked 5 s after SIGCONT");
      ::kill(prober, SIGKILL);
      wait_for(prober, std::chrono::seconds(5));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      r.fail("stat after SIGCONT failed, status " + std::to_string(status));
    } else if (!r.failed()) {
      r.info("stat of the stopped mount blocked until SIGCONT; the other mount answered meanwhile");
    }
    stop_fsx(other, r);
  });
}

TEST(FsxPassthroughTest, AgentFsxCheckReportsTheStoppedDaemon) {
  // The point of endure-fsx: the agent's own bounded probe sees this node's /fsx hang.
  run_mounted([](Fsx& f, const std::string&, Reporter& r) {
    agent::health::NodeExpectations expect;
    expect.instance_id = "i-fsxtest";
    expect.fsx_path = f.mnt;
    expect.fsx_timeout_ms = 500;
    agent::health::FsxCheck check(expect);
    auto kinds = [](const std::vector<agent::health::Finding>& found) {
      std::string out;
      for (const auto& x : found) out += std::string(api::name(x.kind)) + " (" + x.detail + ") ";
      return out;
    };
    auto found = check.run();
    if (!found.empty()) return void(r.fail("healthy mount: " + kinds(found)));

    if (!stop_process(f.pid)) r.fail("endure-fsx did not stop");
    found = check.run();
    if (found.size() != 1 || found[0].kind != api::FaultKind::kFsxHang)
      r.fail("stopped: " + kinds(found));
    else
      r.info("agent fsx check on the stopped mount: " + kinds(found));
    ::kill(f.pid, SIGCONT);

    // The stuck probe returns once the daemon runs again; then the check is healthy.
    auto deadline = Clock::now() + std::chrono::seconds(5);
    do {
      std::this_thread::sleep_for(milliseconds(50));
      found = check.run();
    } while (!found.empty() && Clock::now() < deadline);
    if (!found.empty()) r.fail("after SIGCONT: " + kinds(found));
  });
}

TEST(FsxPassthroughTest, SigtermUnmountsAndExitsZero) {
  // The harness's stop_fsx() does the SIGTERM checks; this test makes sure the mount it
  // stops is the one we mean: a FUSE mount of endure-fsx, allow_other, default_permissions.
  run_mounted([](Fsx& f, const std::string&, Reporter& r) {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    bool found = false;
    while (std::getline(in, line)) {
      if (line.find(" " + f.mnt + " ") == std::string::npos) continue;
      found = true;
      if (line.find(" - fuse.endure-fsx " + f.backing + " ") == std::string::npos) {
        r.fail("mount type/source: " + line);
      }
      if (line.find("allow_other") == std::string::npos ||
          line.find("default_permissions") == std::string::npos) {
        r.fail("mount options: " + line);
      }
    }
    if (!found) r.fail(f.mnt + " not in /proc/self/mountinfo");
  });
}

}  // namespace
}  // namespace endure
