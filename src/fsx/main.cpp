// endure-fsx: a node's /fsx, a FUSE passthrough to the cluster's shared backing folder.
//
//   endure-fsx BACKING_DIR MOUNTPOINT [--pid-file PATH] [--foreground]
//
// Runs in the foreground always (the node's agent supervises it); --foreground is accepted
// so that command lines can say so. Exit 0 after a clean unmount (SIGTERM, SIGINT, SIGHUP
// or an outside umount), 1 when mounting or serving fails, 2 on bad arguments.
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "common/command_line.h"
#include "common/fs.h"
#include "common/log.h"
#include "fsx/passthrough.h"

namespace {

namespace sfs = std::filesystem;

struct Args {
  std::string backing;     // canonical
  std::string mountpoint;  // canonical
  std::string pid_file;    // empty: none
};

struct ArgError {
  std::string message;
};

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Checks the command line's values; every complaint names the argument and the rule.
std::variant<Args, ArgError> check_args(const std::vector<std::string>& positional,
                                        bool pid_file_given, const std::string& pid_file) {
  Args a;
  a.pid_file = pid_file;
  if (pid_file_given && a.pid_file.empty()) return ArgError{"--pid-file needs a PATH"};
  if (positional.size() != 2) return ArgError{"expected BACKING_DIR and MOUNTPOINT"};
  if (!is_dir(positional[0])) return ArgError{"BACKING_DIR " + positional[0] + " is not a folder"};
  if (!is_dir(positional[1])) return ArgError{"MOUNTPOINT " + positional[1] + " is not a folder"};

  std::error_code ec;
  a.backing = sfs::canonical(positional[0], ec).string();
  if (ec) return ArgError{"BACKING_DIR " + positional[0] + ": " + ec.message()};
  a.mountpoint = sfs::canonical(positional[1], ec).string();
  if (ec) return ArgError{"MOUNTPOINT " + positional[1] + ": " + ec.message()};
  // A mount point inside the backing folder would show the mount inside itself: every
  // lookup there would come back into this daemon. (The same folder is fine: the backing
  // root is opened before the mount covers it.)
  sfs::path rel = sfs::path(a.mountpoint).lexically_relative(a.backing);
  if (a.mountpoint != a.backing && !rel.empty() && *rel.begin() != "..") {
    return ArgError{"MOUNTPOINT " + a.mountpoint + " is inside BACKING_DIR " + a.backing};
  }
  if (!a.pid_file.empty()) {
    sfs::path parent = sfs::absolute(a.pid_file, ec).parent_path();
    if (ec || !is_dir(parent.string())) {
      return ArgError{"--pid-file " + a.pid_file + ": its folder does not exist"};
    }
    if (is_dir(a.pid_file)) return ArgError{"--pid-file " + a.pid_file + " is a folder"};
  }
  // Root mounts with mount(2) itself, so allow_other needs no user_allow_other in
  // /etc/fuse.conf; as anyone else the mount would need it, and fusermount3.
  if (::geteuid() != 0) return ArgError{"must run as root (it mounts with allow_other)"};
  return a;
}

// fsname is how the mount shows in /proc/mounts; commas and backslashes would split the
// option string, so they are escaped the way libfuse's option parser reads them.
std::string escape_option(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Removes the pid file only while it still names us: a successor may have written its own.
void remove_pid_file(const std::string& path) {
  if (path.empty()) return;
  auto content = endure::fs::read_file(path);
  if (content.ok() && *content == std::to_string(::getpid()) + "\n") ::unlink(path.c_str());
}

int serve(const Args& a) {
  auto backing = endure::fsx::open_backing(a.backing);
  if (!backing.ok()) {
    endure::log::error("endure-fsx: {}", backing.error().message);
    return 1;
  }
  // The kernel has already applied the caller's umask to every mode we are handed.
  ::umask(0);

  std::string opts =
      "allow_other,default_permissions,fsname=" + escape_option(a.backing) + ",subtype=endure-fsx";
  std::vector<std::string> words = {"endure-fsx", "-o", opts};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

  const fuse_operations& ops = endure::fsx::passthrough_operations();
  fuse* f = fuse_new(&args, &ops, sizeof ops, &*backing);
  if (f == nullptr) {
    endure::log::error("endure-fsx: fuse_new failed");
    fuse_opt_free_args(&args);
    return 1;
  }
  int rc = 1;
  if (fuse_mount(f, a.mountpoint.c_str()) != 0) {
    endure::log::error("endure-fsx: cannot mount {} (is /dev/fuse there?)", a.mountpoint);
  } else {
    fuse_session* se = fuse_get_session(f);
    // SIGTERM, SIGINT and SIGHUP end the loop; SIGPIPE is ignored.
    if (fuse_set_signal_handlers(se) != 0) {
      endure::log::error("endure-fsx: cannot set signal handlers");
    } else {
      // The pid file appears only once the mount is there: whoever waits for it may use it.
      auto written = a.pid_file.empty() ? endure::Status::Ok()
                                        : endure::fs::atomic_write_file(
                                              a.pid_file, std::to_string(::getpid()) + "\n");
      if (!written.ok()) {
        endure::log::error("endure-fsx: pid file: {}", written.error().message);
      } else {
        endure::log::info("endure-fsx: {} mounted on {}", a.backing, a.mountpoint);
        fuse_loop_config loop{};
        loop.clone_fd = 0;
        loop.max_idle_threads = 10;
        int res = fuse_loop_mt(f, &loop);
        // libfuse reports the signal that ended the loop as its result: that is a clean end.
        rc = (res == 0 || res == SIGTERM || res == SIGINT || res == SIGHUP) ? 0 : 1;
        if (rc != 0) endure::log::error("endure-fsx: loop ended with {}", res);
        remove_pid_file(a.pid_file);
      }
      fuse_remove_signal_handlers(se);
    }
    fuse_unmount(f);
    if (rc == 0) endure::log::info("endure-fsx: {} unmounted", a.mountpoint);
  }
  fuse_destroy(f);
  fuse_opt_free_args(&args);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"endure-fsx: a node's /fsx, a FUSE passthrough to the cluster's shared folder"};
  app.name("endure-fsx");
  std::vector<std::string> positional(2);
  std::string pid_file;
  bool foreground = false;
  app.add_option("BACKING_DIR", positional[0],
                 "the cluster's shared folder that this node's /fsx shows")
      ->type_name("DIR")
      ->required();
  app.add_option("MOUNTPOINT", positional[1],
                 "where to mount it (a node's /fsx): a folder, not inside BACKING_DIR")
      ->type_name("DIR")
      ->required();
  auto* pid = app.add_option("--pid-file", pid_file,
                             "write endure-fsx's pid to this file while it serves (default: none)")
                  ->type_name("FILE");
  app.add_flag("-f,--foreground", foreground,
               "accepted so command lines can say so: endure-fsx always runs in the foreground "
               "(the node's agent supervises it)");
  app.footer(
      "Must run as root. Exit status: 0 after a clean unmount (SIGTERM, SIGINT, SIGHUP or "
      "an outside umount), 1 when mounting or serving fails, 2 on bad arguments.");
  if (auto exit = endure::parse_command_line(app, argc, argv)) return *exit;
  try {
    auto checked = check_args(positional, pid->count() > 0, pid_file);
    if (auto* err = std::get_if<ArgError>(&checked)) {
      fprintf(stderr, "endure-fsx: %s (see 'endure-fsx --help')\n", err->message.c_str());
      return endure::kExitUsage;
    }
    return serve(std::get<Args>(checked));
  } catch (const std::exception& e) {
    fprintf(stderr, "endure-fsx: %s\n", e.what());
    return 1;
  }
}
