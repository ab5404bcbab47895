#include "agent/local_boot.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "api/node_contract.h"
#include "api/node_files.h"
#include "common/fs.h"

extern char** environ;

namespace endure::agent {
namespace {

Error sys_error(const std::string& what) {
  return make_error("BootError", what + ": " + std::strerror(errno));
}

// Our pid as the host sees it: /proc is still the host's until we mount our own.
int host_pid() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) == 0) return std::atoi(line.c_str() + 6);
  }
  return 0;
}

constexpr long kFuseSuperMagic = 0x65735546;

bool fsx_is_fuse() {
  struct statfs st {};
  return ::statfs("/fsx", &st) == 0 && st.f_type == kFuseSuperMagic;
}

// endure-fsx beside this binary, opened before the binds (one of them may hide the folder
// it lives in, /tmp say); -1 when there is none.
int open_fsx_server() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "endure-fsx";
  if (ec) return -1;
  return ::open(exe.c_str(), O_RDONLY | O_CLOEXEC);
}

// /fsx through this node's own endure-fsx, or a plain bind where the host has no FUSE.
Status mount_fsx(const std::string& backing, int server_fd) {
  std::error_code ec;
  std::filesystem::create_directories("/fsx", ec);
  if (server_fd < 0 || !std::filesystem::exists("/dev/fuse")) {
    std::fprintf(stderr, "local boot: no endure-fsx or no /dev/fuse: /fsx is a plain bind\n");
    if (::mount(backing.c_str(), "/fsx", nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return sys_error("bind " + backing + " on /fsx");
    }
    return {};
  }
  const char* argv[] = {"endure-fsx", backing.c_str(), "/fsx", "--pid-file", node::kFsxPidFile,
                        nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::fexecve(server_fd, const_cast<char* const*>(argv), environ);
    ::_exit(127);
  }
  ::close(server_fd);
  if (pid < 0) return sys_error("fork endure-fsx");
  for (int i = 0; i < 100; ++i) {
    if (fsx_is_fuse()) return {};
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return make_error("BootError", "endure-fsx exited before /fsx was mounted");
    }
    ::usleep(50 * 1000);
  }
  return make_error("BootError", "endure-fsx did not mount /fsx within 5 s");
}

}  // namespace

Status local_boot(const std::string& boot_json_path) {
  auto text = fs::read_file(boot_json_path);
  if (!text) return text.error();
  auto parsed = json::parse(*text, nullptr, false);
  auto boot = api::LocalBoot::from_json(parsed);
  if (!boot) return boot.error();

  int pid = host_pid();
  if (pid <= 0) return make_error("BootError", "cannot read NSpid from /proc/self/status");
  if (auto s = fs::atomic_write_file(boot->pid_file, std::to_string(pid) + "\n"); !s) return s;

  // Our mounts must not leak back to the host.
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return sys_error("make / private");
  }
  int fsx_server = boot->fsx_backing.empty() ? -1 : open_fsx_server();
  // Open every source before mounting anything: a bind (of /tmp, say) may hide the
  // host path of a later source.
  std::vector<int> sources;
  for (const auto& b : boot->binds) {
    int fd = ::open(b.source.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return sys_error("open " + b.source);
    sources.push_back(fd);
  }
  for (size_t i = 0; i < boot->binds.size(); ++i) {
    const auto& b = boot->binds[i];
    std::error_code ec;
    if (b.file) {
      if (!std::filesystem::exists(b.target, ec)) std::ofstream(b.target).close();
    } else {
      std::filesystem::create_directories(b.target, ec);
    }
    std::string via = "/proc/self/fd/" + std::to_string(sources[i]);
    if (::mount(via.c_str(), b.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return sys_error("bind " + b.source + " on " + b.target);
    }
    ::close(sources[i]);
  }
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return sys_error("mount /proc");
  }
  if (!boot->fsx_backing.empty()) {
    if (auto s = mount_fsx(boot->fsx_backing, fsx_server); !s) return s;
  }
  if (::sethostname(boot->hostname.c_str(), boot->hostname.size()) != 0) {
    return sys_error("sethostname " + boot->hostname);
  }
  // fd 3 is the instance lock: keep it for our lifetime, but not in the node's daemons.
  ::fcntl(3, F_SETFD, FD_CLOEXEC);
  if (::chdir("/") != 0) return sys_error("chdir /");
  return {};
}

}  // namespace endure::agent
