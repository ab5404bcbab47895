#include "provider/local/local_provider.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include "api/node_contract.h"
#include "common/crash_point.h"
#include "common/fs.h"
#include "common/log.h"
#include "s3/lifecycle_cache.h"
#include "spec/layout.h"

namespace endure::provider {
namespace {

using namespace std::chrono_literals;

// True when some process holds the instance's lock, i.e. the instance is running.
bool lock_held(const std::filesystem::path& lock_path) {
  int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the lock if we took it
  return held;
}

int read_pid(const std::filesystem::path& pid_file) {
  auto text = fs::read_file(pid_file);
  if (!text) return 0;
  try {
    return std::stoi(*text);
  } catch (...) {
    return 0;
  }
}

bool is_mount_point(const std::filesystem::path& dir) {
  struct stat here {
  }, parent{};
  if (::stat(dir.c_str(), &here) != 0 || ::stat(dir.parent_path().c_str(), &parent) != 0) {
    return false;
  }
  return here.st_dev != parent.st_dev;
}

// The local disk is a tmpfs of the type's size: real ENOSPC when full, and, mounted on the
// host, it survives reboots of the node and goes when the instance does.
Status mount_local_disk(const std::filesystem::path& dir, int size_mib) {
  if (auto s = fs::make_dirs(dir, 0755); !s) return s;
  if (is_mount_point(dir)) return {};
  std::string options = "size=" + std::to_string(size_mib) + "m,mode=0755";
  if (::mount("endure-local", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return local_io_error("mount the local disk on " + dir.string());
  }
  return {};
}

void unmount_local_disk(const std::filesystem::path& dir) {
  while (is_mount_point(dir) && ::umount2(dir.c_str(), MNT_DETACH) == 0) {
  }
}

}  // namespace

Error local_io_error(const std::string& what) {
  return make_error("ProviderError", what + ": " + std::strerror(errno));
}

const std::vector<std::string>& local_node_private_dirs() {
  static const std::vector<std::string> dirs = {
      "/etc/slurm", "/etc/munge",     "/var/spool/slurm", "/var/log/slurm", "/run/slurm",
      "/run/munge", "/var/lib/munge", "/var/log/munge",   "/opt/endure",    "/tmp"};
  return dirs;
}

LocalProvider::LocalProvider(std::filesystem::path root, std::filesystem::path agent_path,
                             std::filesystem::path index_dir, s3::ConfigOverrides s3)
    : root_(std::move(root)),
      agent_path_(std::move(agent_path)),
      indexes_(std::move(index_dir), spec::kMaxClusters),
      s3_lifecycle_(std::make_unique<s3::LifecycleSourceCache>(root_.parent_path() / "lifecycle-s3",
                                                               std::move(s3))) {}

LocalProvider::~LocalProvider() = default;

Result<int> LocalProvider::claim_cluster_index(const std::string& cluster_id, int index) {
  return indexes_.claim(cluster_dir(cluster_id), index);
}

std::filesystem::path LocalProvider::cluster_dir(const std::string& cluster_id) const {
  return root_ / cluster_id;
}

std::filesystem::path LocalProvider::instance_dir(const std::string& cluster_id,
                                                  const std::string& instance_id) const {
  return cluster_dir(cluster_id) / "instances" / instance_id;
}

std::filesystem::path LocalProvider::node_path(const std::string& cluster_id,
                                               const std::string& instance_id,
                                               const std::string& path_in_node) const {
  auto dir = instance_dir(cluster_id, instance_id);
  if (path_in_node == node::kHostsPath) return dir / "root/etc/hosts";
  if (path_in_node.rfind("/local/", 0) == 0) return dir / "local" / path_in_node.substr(7);
  return dir / "root" / path_in_node.substr(1);
}

Status LocalProvider::prepare_cluster(const std::string& cluster_id) {
  if (auto s = fs::make_dirs(cluster_dir(cluster_id) / "instances", 0700); !s) return s;
  return fs::make_dirs(cluster_dir(cluster_id) / "fsx", 0755);
}

Result<int> LocalProvider::launch(const LaunchRequest& request) {
  auto dir = instance_dir(request.cluster_id, request.instance_id);
  // Already running: a previous controller launched it and died before recording it.
  if (running(request.cluster_id, request.instance_id)) {
    for (int i = 0; i < 100; ++i) {
      if (int pid = read_pid(dir / "host.pid"); pid > 0) return pid;
      std::this_thread::sleep_for(50ms);
    }
    return make_error("ProviderError",
                      "instance " + request.instance_id + " holds its lock but wrote no pid file");
  }
  if (auto s = fs::make_dirs(dir, 0700); !s) return s.error();

  // A fresh machine: the node's private folders and files.
  for (const auto& d : local_node_private_dirs()) {
    if (auto s = fs::make_dirs(dir / "root" / d.substr(1), d == "/tmp" ? 01777 : 0755); !s) {
      return s.error();
    }
  }
  for (const char* d : node::kNodeFolders) {
    if (auto s = fs::make_dirs(dir / "root" / (d + 1)); !s) return s.error();
  }
  if (auto s = mount_local_disk(dir / "local", request.local_disk_mib); !s) return s.error();
  std::error_code ec;
  // An s3:// source: the snapshot this cluster first ran, while its source stays the same.
  auto lifecycle_source = s3::pin_lifecycle_snapshot(
      cluster_dir(request.cluster_id) / "lifecycle-pins", request.lifecycle_source);
  if (!lifecycle_source) return lifecycle_source.error();
  auto lifecycle_copy = dir / "root/opt/endure/lifecycle";
  std::filesystem::remove_all(lifecycle_copy, ec);
  std::filesystem::copy(*lifecycle_source, lifecycle_copy,
                        std::filesystem::copy_options::recursive, ec);
  if (ec) {
    return make_error("ProviderError", "copy lifecycle scripts from " +
                                           lifecycle_source->string() + ": " + ec.message());
  }
  auto write_all = [&](const auto& files, int mode) -> Status {
    for (const auto& [path, content] : files) {
      auto host = node_path(request.cluster_id, request.instance_id, path);
      if (auto s = fs::make_dirs(host.parent_path()); !s) return s;
      if (auto s = fs::atomic_write_file(host, content, mode); !s) return s;
    }
    return {};
  };
  if (auto s = write_all(request.files, 0644); !s) return s.error();
  if (auto s = write_all(request.secret_files, 0600); !s) return s.error();
  if (!std::filesystem::exists(dir / "root/etc/hosts")) {
    if (auto s = fs::atomic_write_file(dir / "root/etc/hosts", "127.0.0.1 localhost\n"); !s) {
      return s.error();
    }
  }
  if (!std::filesystem::exists(dir / "kmsg")) {
    if (auto s = fs::atomic_write_file(dir / "kmsg", "", 0644); !s) return s.error();
  }

  LocalBoot boot_config;
  boot_config.hostname = request.node_name;
  boot_config.pid_file = (dir / "host.pid").string();
  for (const auto& d : local_node_private_dirs()) {
    boot_config.binds.push_back({(dir / "root" / d.substr(1)).string(), d, false});
  }
  boot_config.binds.push_back({(dir / "root/etc/hosts").string(), node::kHostsPath, true});
  boot_config.binds.push_back({(dir / "kmsg").string(), "/dev/kmsg", true});
  // The shared folder reaches the node under /opt/endure; /fsx is mounted from there.
  boot_config.binds.push_back(
      {(cluster_dir(request.cluster_id) / "fsx").string(), "/opt/endure/fsx-backing", false});
  boot_config.fsx_backing = "/opt/endure/fsx-backing";
  boot_config.binds.push_back({(dir / "local").string(), node::kLocalDiskPath, false});
  // endure's node software, as a machine image would hold it: the supervisor srun's
  // auto-resume plugin starts (bin/) and the plugin itself (lib/).
  auto software = agent_path_.parent_path();
  boot_config.binds.push_back({software.string(), node::kBinDir, false});
  if (std::filesystem::exists(software.parent_path() / "lib")) {
    boot_config.binds.push_back({(software.parent_path() / "lib").string(), node::kLibDir, false});
  }
  if (auto s = fs::atomic_write_file(dir / "boot.json", boot_config.to_json().dump(2)); !s) {
    return s.error();
  }
  return boot(request.cluster_id, request.instance_id);
}

Result<int> LocalProvider::boot(const std::string& cluster_id, const std::string& instance_id) {
  auto dir = instance_dir(cluster_id, instance_id);
  auto lock_path = dir / "lock";
  auto pid_path = dir / "host.pid";
  // The lock is taken before the namespace exists and passes into it: from here on
  // "running" and "lock held" mean the same, whatever happens to this process.
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0600);
  if (lock_fd < 0) return local_io_error("open " + lock_path.string());
  // running() takes the lock for an instant to test it (the health watch does so every
  // 0.1 s): a few tries tell that from an instance that holds it.
  bool locked = false;
  for (int attempt = 0; attempt < 20 && !locked; ++attempt) {
    locked = ::flock(lock_fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked) std::this_thread::sleep_for(5ms);
  }
  if (!locked) {
    ::close(lock_fd);
    return make_error("ProviderError", "instance " + instance_id + " is already running");
  }
  ::unlink(pid_path.c_str());
  int log_fd = ::open((dir / "boot.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::string agent = agent_path_.string();
  std::string boot_arg = (dir / "boot.json").string();
  const char* argv[] = {agent.c_str(), "--local-boot", boot_arg.c_str(), nullptr};
  std::string path_env = std::string("PATH=") + api::kNodePath;
  const char* envp[] = {path_env.c_str(), "HOME=/root", "LANG=C.UTF-8", nullptr};

  // clone() with new namespaces makes the child pid 1 of its own pid namespace. Only
  // async-signal-safe calls follow in the child: this process has other threads.
  long pid = ::syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWNS | SIGCHLD, nullptr,
                       nullptr, nullptr, nullptr);
  if (pid == 0) {
    ::setsid();
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    // fd 3 carries the lock into the node; dup2 clears close-on-exec.
    if (lock_fd != 3)
      ::dup2(lock_fd, 3);
    else
      ::fcntl(3, F_SETFD, 0);
    ::syscall(SYS_close_range, 4, ~0U, 0);
    ::execve(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    ::_exit(127);
  }
  int saved_errno = errno;
  ::close(lock_fd);
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) {
    errno = saved_errno;
    return local_io_error("clone for " + instance_id);
  }
  crash_point("launch.after_clone");
  // The agent writes the same pid itself; writing it here too closes the gap in which a
  // restarted controller would find the lock held and no pid.
  log::ok(fs::atomic_write_file(pid_path, std::to_string(pid) + "\n"), "local: " + instance_id);
  log::info("local: booted {} as host pid {}", instance_id, pid);
  return static_cast<int>(pid);
}

Result<int> LocalProvider::reboot(const std::string& cluster_id, const std::string& instance_id) {
  if (!std::filesystem::exists(instance_dir(cluster_id, instance_id) / "boot.json")) {
    return make_error("ProviderError", "instance " + instance_id + " was never launched");
  }
  if (auto s = terminate(cluster_id, instance_id); !s) return s.error();
  return boot(cluster_id, instance_id);
}

Status LocalProvider::rename(const std::string& cluster_id, const std::string& instance_id,
                             const std::string& hostname) {
  auto path = instance_dir(cluster_id, instance_id) / "boot.json";
  auto text = fs::read_file(path);
  if (!text) return text.error();
  auto boot = LocalBoot::from_json(json::parse(*text, nullptr, false));
  if (!boot) return boot.error();
  if (boot->hostname != hostname) {
    boot->hostname = hostname;
    if (auto s = fs::atomic_write_file(path, boot->to_json().dump(2)); !s) return s;
  }
  auto out = exec(cluster_id, instance_id, {"hostname", hostname}, std::chrono::seconds(5));
  if (out.exit_code != 0) {
    return make_error("ProviderError", "hostname " + hostname + " in " + instance_id + ": " +
                                           out.err);
  }
  return {};
}

Result<int> LocalProvider::reimage(const std::string& cluster_id, const std::string& instance_id) {
  if (!std::filesystem::exists(instance_dir(cluster_id, instance_id) / "boot.json")) {
    return make_error("ProviderError", "instance " + instance_id + " was never launched");
  }
  if (auto s = terminate(cluster_id, instance_id); !s) return s.error();
  std::error_code ec;
  std::filesystem::remove(node_path(cluster_id, instance_id, node::kLifecycleResult), ec);
  if (ec) return local_io_error("remove the lifecycle outcome of " + instance_id);
  // A fresh root: no boot scripts installed, and /run (a tmpfs on a real machine) empty.
  for (const char* dir : {node::kBootScriptsDir, "/run/slurm", "/run/munge"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(node_path(cluster_id, instance_id, dir), ec)) {
      std::filesystem::remove_all(entry.path(), ec);
      if (ec) return local_io_error("clear " + std::string(dir) + " of " + instance_id);
    }
  }
  return boot(cluster_id, instance_id);
}

bool LocalProvider::running(const std::string& cluster_id, const std::string& instance_id) {
  return lock_held(instance_dir(cluster_id, instance_id) / "lock");
}

int LocalProvider::pid(const std::string& cluster_id, const std::string& instance_id) {
  if (!running(cluster_id, instance_id)) return 0;
  return read_pid(instance_dir(cluster_id, instance_id) / "host.pid");
}

Status LocalProvider::terminate(const std::string& cluster_id, const std::string& instance_id) {
  auto dir = instance_dir(cluster_id, instance_id);
  if (!lock_held(dir / "lock")) return {};
  int pid = read_pid(dir / "host.pid");
  if (pid <= 0) return make_error("ProviderError", instance_id + " runs but has no pid file");
  // The lock proves the pid is still ours. SIGKILL to a pid namespace's first process
  // makes the kernel kill every process in the namespace.
  ::kill(pid, SIGKILL);
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    ::waitpid(pid, nullptr, WNOHANG);  // reaps it when we are its parent
    if (!process::alive(pid) && !lock_held(dir / "lock")) {
      ::waitpid(pid, nullptr, WNOHANG);  // it may have turned zombie after the first call
      // The machine's memory goes with it: its memory store's objects too.
      std::error_code ec;
      std::filesystem::remove_all(node::kMemoryStoreArenaPrefix + instance_id, ec);
      log::info("local: terminated {} (host pid {})", instance_id, pid);
      return {};
    }
    std::this_thread::sleep_for(20ms);
  }
  return make_error("ProviderError", "instance " + instance_id + " did not die within 20 s");
}

Status LocalProvider::destroy(const std::string& cluster_id, const std::string& instance_id) {
  if (auto s = terminate(cluster_id, instance_id); !s) return s;
  unmount_local_disk(instance_dir(cluster_id, instance_id) / "local");
  return fs::remove_tree(instance_dir(cluster_id, instance_id));
}

Status LocalProvider::write_file(const std::string& cluster_id, const std::string& instance_id,
                                 const std::string& path_in_node, const std::string& content) {
  auto host = node_path(cluster_id, instance_id, path_in_node);
  if (path_in_node == node::kHostsPath) {
    // /etc/hosts is a bind of a single file: a rename would leave the node on the old
    // inode, so it is rewritten in place (it is derived state, rewritten when it changes).
    int fd = ::open(host.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return local_io_error("open " + host.string());
    bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    ::fsync(fd);
    ::close(fd);
    return ok ? Status{} : Status(local_io_error("write " + host.string()));
  }
  if (auto s = fs::make_dirs(host.parent_path()); !s) return s;
  return fs::atomic_write_file(host, content);
}

process::Output LocalProvider::exec(const std::string& cluster_id, const std::string& instance_id,
                                    const std::vector<std::string>& argv,
                                    std::chrono::milliseconds timeout) {
  int node_pid = pid(cluster_id, instance_id);
  if (node_pid <= 0) {
    process::Output out;
    out.exit_code = 255;
    out.err = "instance " + instance_id + " is not running";
    return out;
  }
  process::Options options;
  options.timeout = timeout;
  return process::run(api::node_exec_argv(node_pid, "", argv), options);
}

std::filesystem::path LocalProvider::lifecycle_log(const std::string& cluster_id,
                                                   const std::string& instance_id) {
  return node_path(cluster_id, instance_id, node::kLifecycleLog);
}

std::string LocalProvider::boot_diagnostics(const std::string& cluster_id,
                                            const std::string& instance_id) {
  std::string tail = fs::tail_lines(instance_dir(cluster_id, instance_id) / "boot.log", 3);
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

std::vector<std::string> LocalProvider::instance_ids(const std::string& cluster_id) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(cluster_dir(cluster_id) / "instances", ec)) {
    if (entry.is_directory()) ids.push_back(entry.path().filename().string());
  }
  return ids;
}

Status LocalProvider::remove_cluster(const std::string& cluster_id) {
  for (const auto& id : instance_ids(cluster_id)) {
    if (running(cluster_id, id)) {
      return make_error("ProviderError", "instance " + id + " of " + cluster_id + " still runs");
    }
  }
  if (auto s = indexes_.release(cluster_dir(cluster_id)); !s) return s;
  return fs::remove_tree(cluster_dir(cluster_id));
}

Result<std::filesystem::path> LocalProvider::resolve_lifecycle_source(
    const std::string& field, const std::string& source_uri, const std::string& on_create) {
  std::string path = source_uri;
  if (path.rfind("s3://", 0) == 0) return s3_lifecycle_->resolve(field, source_uri, on_create);
  if (path.rfind("file://", 0) == 0) path = path.substr(7);
  std::filesystem::path dir(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return make_error("ValidationException",
                      field + ".SourceS3Uri: folder " + path + " does not exist");
  }
  if (!std::filesystem::is_regular_file(dir / on_create, ec)) {
    return make_error("ValidationException", field + ".OnCreate: " + (dir / on_create).string() +
                                                 " is not a file in the source folder");
  }
  return std::filesystem::canonical(dir, ec);
}

}  // namespace endure::provider
