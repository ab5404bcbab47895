// File helpers (atomic writes, reads, folders, tails) and the process runner.
#include "common/fs.h"

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"

namespace endure {
namespace {

namespace sfs = std::filesystem;

// Each test's own folder, named for this suite.
class TempDir : public test::TempDir {
 public:
  TempDir() : test::TempDir("endure-fs-test") { EXPECT_TRUE(ok()); }
};

// Sets the umask for the scope of a test and restores it after.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

int mode_of(const sfs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

std::vector<std::string> entries(const sfs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : sfs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

void write_plain(const sfs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
}

TEST(FsTest, AtomicWriteWritesContent) {
  TempDir dir;
  auto path = dir.path() / "slurm.conf";
  std::string data = "ClusterName=ml\n";
  data += std::string("binary\0bytes\xff", 13);
  ASSERT_TRUE(fs::atomic_write_file(path, data).ok());
  auto read = fs::read_file(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, data);
  EXPECT_EQ(mode_of(path), 0644);  // the default mode

  auto empty = dir.path() / "empty";
  ASSERT_TRUE(fs::atomic_write_file(empty, "").ok());
  ASSERT_TRUE(fs::read_file(empty).ok());
  EXPECT_EQ(*fs::read_file(empty), "");
}

TEST(FsTest, AtomicWriteHonoursModeExactlyWhateverTheUmask) {
  TempDir dir;
  ScopedUmask mask(022);
  auto secret = dir.path() / "token";
  ASSERT_TRUE(fs::atomic_write_file(secret, "s3cret", 0600).ok());
  EXPECT_EQ(mode_of(secret), 0600);

  // A mode the umask would cut (0666 & ~022 = 0644) still holds exactly.
  auto shared = dir.path() / "shared";
  ASSERT_TRUE(fs::atomic_write_file(shared, "x", 0666).ok());
  EXPECT_EQ(mode_of(shared), 0666);

  ScopedUmask strict(077);
  auto hosts = dir.path() / "hosts";
  ASSERT_TRUE(fs::atomic_write_file(hosts, "127.0.0.1 localhost\n", 0644).ok());
  EXPECT_EQ(mode_of(hosts), 0644);
}

TEST(FsTest, AtomicWriteOverwriteReplacesContentAndMode) {
  TempDir dir;
  ScopedUmask mask(022);
  auto path = dir.path() / "file";
  ASSERT_TRUE(fs::atomic_write_file(path, std::string(10000, 'x'), 0644).ok());
  ASSERT_TRUE(fs::atomic_write_file(path, "short", 0600).ok());
  auto read = fs::read_file(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "short");
  EXPECT_EQ(mode_of(path), 0600);

  // Over a file written some other way too.
  auto plain = dir.path() / "plain";
  write_plain(plain, "old content that is longer");
  ASSERT_TRUE(fs::atomic_write_file(plain, "new").ok());
  EXPECT_EQ(*fs::read_file(plain), "new");
}

TEST(FsTest, AtomicWriteLeavesNoTempFiles) {
  TempDir dir;
  for (int n = 0; n < 5; ++n) {
    ASSERT_TRUE(fs::atomic_write_file(dir.path() / "a.conf", "v" + std::to_string(n)).ok());
    ASSERT_TRUE(fs::atomic_write_file(dir.path() / "b.conf", "w" + std::to_string(n), 0600).ok());
  }
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"a.conf", "b.conf"}));
  EXPECT_EQ(*fs::read_file(dir.path() / "a.conf"), "v4");
}

TEST(FsTest, AtomicWriteIntoMissingFolderFailsAndLeavesNothing) {
  TempDir dir;
  auto path = dir.path() / "missing" / "file";
  Status s = fs::atomic_write_file(path, "data");
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(s.error().code.empty());
  EXPECT_FALSE(s.error().message.empty());
  EXPECT_FALSE(sfs::exists(dir.path() / "missing"));
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(FsTest, AtomicWriteOverAFolderFailsAndLeavesNoTemp) {
  TempDir dir;
  auto target = dir.path() / "target";
  sfs::create_directory(target);
  sfs::create_directory(target / "child");  // rename() cannot replace a non-empty folder
  Status s = fs::atomic_write_file(target, "data");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(sfs::is_directory(target));
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"target"}));
}

TEST(FsTest, ReadFileMissingIsNotFound) {
  TempDir dir;
  auto read = fs::read_file(dir.path() / "nope");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, "NotFound");
  auto nested = fs::read_file(dir.path() / "no" / "such" / "file");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, "NotFound");
}

TEST(FsTest, MakeDirsCreatesNestedFoldersWithTheMode) {
  TempDir dir;
  ScopedUmask mask(022);
  auto nested = dir.path() / "a" / "b" / "c";
  ASSERT_TRUE(fs::make_dirs(nested, 0700).ok());
  EXPECT_TRUE(sfs::is_directory(nested));
  EXPECT_EQ(mode_of(nested), 0700);
  // Again on an existing folder: still fine.
  EXPECT_TRUE(fs::make_dirs(nested, 0700).ok());
  EXPECT_TRUE(sfs::is_directory(nested));

  auto sticky = dir.path() / "tmp";
  ASSERT_TRUE(fs::make_dirs(sticky, 01777).ok());
  EXPECT_EQ(mode_of(sticky), 01777);

  auto plain = dir.path() / "plain";
  ASSERT_TRUE(fs::make_dirs(plain).ok());
  EXPECT_EQ(mode_of(plain), 0755);
}

TEST(FsTest, MakeDirsUnderAFileFails) {
  TempDir dir;
  write_plain(dir.path() / "file", "x");
  Status s = fs::make_dirs(dir.path() / "file" / "sub");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "IOError");
}

TEST(FsTest, RemoveTreeRemovesEverythingAndMissingSucceeds) {
  TempDir dir;
  auto root = dir.path() / "tree";
  ASSERT_TRUE(fs::make_dirs(root / "x" / "y").ok());
  write_plain(root / "x" / "y" / "f", "data");
  write_plain(root / "g", "data");
  ASSERT_TRUE(fs::remove_tree(root).ok());
  EXPECT_FALSE(sfs::exists(root));
  EXPECT_TRUE(fs::remove_tree(root).ok());  // already gone
  EXPECT_TRUE(fs::remove_tree(dir.path() / "never" / "existed").ok());
  EXPECT_TRUE(sfs::exists(dir.path()));
}

TEST(FsTest, TailLines) {
  TempDir dir;
  auto path = dir.path() / "log";
  write_plain(path, "one\ntwo\nthree\n");
  EXPECT_EQ(fs::tail_lines(path, 10), "one\ntwo\nthree\n");  // fewer lines than n
  EXPECT_EQ(fs::tail_lines(path, 3), "one\ntwo\nthree\n");   // exactly n
  EXPECT_EQ(fs::tail_lines(path, 2), "two\nthree\n");        // more than n
  EXPECT_EQ(fs::tail_lines(path, 1), "three\n");
  EXPECT_EQ(fs::tail_lines(dir.path() / "missing", 5), "");

  auto many = dir.path() / "many";
  std::string text;
  for (int n = 0; n < 1000; ++n) text += "line " + std::to_string(n) + "\n";
  write_plain(many, text);
  EXPECT_EQ(fs::tail_lines(many, 2), "line 998\nline 999\n");

  auto empty = dir.path() / "empty";
  write_plain(empty, "");
  EXPECT_EQ(fs::tail_lines(empty, 3), "");
}

// --- process::run ---------------------------------------------------------------------------

// Kills a process this test started (by its pid) if it still runs, and waits for it to go.
void kill_if_alive(int pid) {
  if (pid <= 0 || !process::alive(pid)) return;
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && process::alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int first_line_as_pid(const std::string& out) {
  try {
    return std::stoi(out.substr(0, out.find('\n')));
  } catch (...) {
    return 0;
  }
}

TEST(ProcessTest, CapturesStdoutStderrAndExitCode) {
  auto out = process::run({"bash", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(out.out, "out\n");
  EXPECT_EQ(out.err, "err\n");
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_FALSE(out.timed_out);

  auto ok = process::run({"true"});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.out, "");
  EXPECT_EQ(ok.err, "");
}

TEST(ProcessTest, LargeOutputOnBothStreams) {
  // More than a pipe buffer on each stream, so both must be drained while the child runs.
  auto out = process::run({"bash", "-c",
                           "head -c 300000 /dev/zero | tr '\\0' a; head -c 200000 /dev/zero | "
                           "tr '\\0' b >&2"});
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.out, std::string(300000, 'a'));
  EXPECT_EQ(out.err, std::string(200000, 'b'));
}

TEST(ProcessTest, SignalledChildReports128PlusSignal) {
  auto out = process::run({"bash", "-c", "kill -KILL $$"});
  EXPECT_EQ(out.exit_code, 128 + SIGKILL);
  EXPECT_FALSE(out.timed_out);
}

TEST(ProcessTest, MissingProgramExits127) {
  auto out = process::run({"endure-no-such-program-xyz"});
  EXPECT_EQ(out.exit_code, 127);
  EXPECT_FALSE(out.timed_out);

  auto empty = process::run({});
  EXPECT_EQ(empty.exit_code, -1);
  EXPECT_FALSE(empty.err.empty());
}

TEST(ProcessTest, TimeoutKills) {
  process::Options options;
  options.timeout = std::chrono::milliseconds(300);
  auto out = process::run({"sleep", "30"}, options);
  // Left alone, sleep would exit 0 after 30 s: SIGKILL says the deadline ended it.
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(out.exit_code, 128 + SIGKILL);
}

TEST(ProcessTest, TimeoutKillsTheWholeProcessGroup) {
  process::Options options;
  options.timeout = std::chrono::milliseconds(500);
  auto out = process::run({"bash", "-c", "sleep 30 & echo $!; wait"}, options);
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(out.exit_code, 128 + SIGKILL);
  int grandchild = first_line_as_pid(out.out);
  ASSERT_GT(grandchild, 0) << out.out;
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !process::alive(grandchild);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "background sleep " << grandchild << " survived the timeout";
  kill_if_alive(grandchild);
}

TEST(ProcessTest, TimeoutHoldsWhenTheChildClosesItsOutput) {
  // A script that sends its output elsewhere (exec >log 2>&1) and then hangs must still be
  // killed at the deadline.
  process::Options options;
  options.timeout = std::chrono::milliseconds(300);
  auto out = process::run({"bash", "-c", "exec >/dev/null 2>&1; sleep 30"}, options);
  // Killed, not waited for: the script would exit 0 after 30 s.
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(out.exit_code, 128 + SIGKILL);
}

TEST(ProcessTest, StdinDataIsDelivered) {
  process::Options options;
  options.stdin_data = "hello\nworld";
  auto out = process::run({"cat"}, options);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.out, "hello\nworld");

  // More than a pipe buffer, so writing and reading must interleave.
  options.stdin_data = std::string(1 << 20, 'z');
  auto big = process::run({"cat"}, options);
  EXPECT_EQ(big.exit_code, 0);
  EXPECT_EQ(big.out.size(), options.stdin_data.size());
  EXPECT_EQ(big.out, options.stdin_data);

  // No stdin data: the child sees end of file at once.
  auto none = process::run({"cat"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "");
}

TEST(ProcessTest, ChildThatIgnoresStdinReturnsWhenSigpipeIsIgnored) {
  // The child exits without reading its stdin. endured, the agent and the integration harness
  // all ignore SIGPIPE, so the failed write must just end the feeding, not the run.
  auto old = signal(SIGPIPE, SIG_IGN);
  process::Options options;
  options.stdin_data = std::string(1 << 20, 'q');
  options.timeout = std::chrono::seconds(10);
  auto out = process::run({"bash", "-c", "exit 0"}, options);
  signal(SIGPIPE, old);
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_FALSE(out.timed_out);  // a feeding stuck on the pipe would have run into the deadline
}

TEST(ProcessTest, ReturnsWhenChildExitsThoughGrandchildHoldsThePipe) {
  process::Options options;
  options.timeout = std::chrono::seconds(20);
  auto out = process::run({"bash", "-c", "sleep 30 & echo $!; echo hi"}, options);
  int grandchild = first_line_as_pid(out.out);
  EXPECT_FALSE(out.timed_out);  // waiting for the pipe's end would have run into the deadline
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_GT(grandchild, 0) << out.out;
  EXPECT_EQ(out.out, std::to_string(grandchild) + "\nhi\n");
  EXPECT_TRUE(process::alive(grandchild));  // the daemon-like grandchild is left alone
  kill_if_alive(grandchild);
  EXPECT_FALSE(process::alive(grandchild));
}

TEST(ProcessTest, EnvironmentAndWorkingDirectory) {
  process::Options add;
  add.env = {{"ENDURE_TEST_VAR", "value 1"}};
  auto out = process::run({"bash", "-c", "printf %s \"$ENDURE_TEST_VAR\""}, add);
  EXPECT_EQ(out.out, "value 1");

  process::Options replace;
  replace.replace_env = true;
  replace.env = {{"ONLY", "this"}};
  auto env = process::run({"/usr/bin/env"}, replace);
  EXPECT_EQ(env.exit_code, 0);
  EXPECT_EQ(env.out, "ONLY=this\n");

  TempDir dir;
  process::Options in_dir;
  in_dir.cwd = dir.path().string();
  auto pwd = process::run({"pwd", "-P"}, in_dir);
  EXPECT_EQ(pwd.exit_code, 0);
  EXPECT_EQ(pwd.out, sfs::canonical(dir.path()).string() + "\n");

  in_dir.cwd = (dir.path() / "missing").string();
  auto bad = process::run({"pwd"}, in_dir);
  EXPECT_NE(bad.exit_code, 0);
}

TEST(ProcessTest, AliveReportsRunningAndGoneProcesses) {
  EXPECT_TRUE(process::alive(static_cast<int>(::getpid())));
  EXPECT_FALSE(process::alive(0));
  EXPECT_FALSE(process::alive(-1));
}

}  // namespace
}  // namespace endure
