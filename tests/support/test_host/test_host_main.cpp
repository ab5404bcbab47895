// endure-test-host: machines for the host provider's tests, built by the tests, not by
// endure. A test host is a folder that becomes a separate machine when powered on: its own
// pid, mount and uts namespaces, hostname, root-owned /etc, /var, /opt, /root, /tmp and
// local disk (/local), a fresh /run, and its own OpenSSH server (own host keys) listening
// on its own loopback address as its first process; at power-on it runs its boot script
// (/etc/rc.local) first, as a machine without systemd does. The programs in /usr are the
// machine's (what an installed host has); everything endure needs it must bring over SSH.
//
//   endure-test-host build DIR --name N --address A --port P --authorized-key PUB
//   endure-test-host on DIR      power on; returns when sshd accepts connections
//   endure-test-host off DIR     pulled plug: the whole pid namespace killed at once
//   endure-test-host reset DIR   off, then on
//   endure-test-host pull DIR    the plug pulled: off, and on/reset fail (no power, no BMC)
//   endure-test-host plug DIR    the plug back: on/reset work again (the host stays off)
//   endure-test-host freeze DIR  a hung machine: every process of it stopped (SIGSTOP)
//   endure-test-host state DIR   prints on or off
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/process.h"

namespace {

namespace stdfs = std::filesystem;
using namespace std::chrono_literals;

// The folders a host owns, bound over the machine's at power-on.
// /fsx is a mount point of its own, as on a machine whose root is its own.
const char* const kOwnDirs[] = {"etc", "var", "opt", "root", "tmp", "local", "fsx"};

int fail(const std::string& what) {
  std::fprintf(stderr, "endure-test-host: %s\n", what.c_str());
  return 1;
}

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string read_line(const stdfs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// A process's start time (field 22 of its stat), 0 when there is no such process: with the
// pid it names one process for good, as a pid alone does not once pids wrap.
unsigned long long start_time(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close_paren + 2));
  std::string field;
  for (int i = 3; i < 22 && rest >> field; ++i) {
  }
  unsigned long long t = 0;
  rest >> t;
  return t;
}

// The host's first process, when the host is on: power.pid names it with its start time
// (sshd closes every inherited descriptor, so a lock could not say it).
int first_pid(const stdfs::path& dir) {
  std::ifstream in(dir / "power.pid");
  int pid = 0;
  unsigned long long started = 0;
  if (!(in >> pid >> started) || pid <= 0) return 0;
  return endure::process::alive(pid) && start_time(pid) == started ? pid : 0;
}

bool powered(const stdfs::path& dir) { return first_pid(dir) > 0; }

bool accepts(const std::string& address, int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(s);
  return ok;
}

int build(const stdfs::path& dir, const std::string& name, const std::string& address, int port,
          const stdfs::path& authorized_key) {
  if (powered(dir)) return fail(dir.string() + " is on; power it off first");
  std::error_code ec;
  stdfs::remove_all(dir, ec);
  stdfs::create_directories(dir, ec);
  if (ec) return fail("create " + dir.string() + ": " + ec.message());
  ::chmod(dir.c_str(), 0755);
  // The machine's /etc as installed, then this host's own identity and SSH server.
  auto copied = endure::process::run({"cp", "-a", "/etc", (dir / "etc").string()});
  if (copied.exit_code != 0) return fail("copy /etc: " + copied.err);
  for (const char* d :
       {"var/log", "var/lib", "var/spool", "var/tmp", "opt", "root/.ssh", "tmp", "local", "fsx"}) {
    stdfs::create_directories(dir / d, ec);
  }
  ::chmod((dir / "tmp").c_str(), 01777);
  ::chmod((dir / "root").c_str(), 0700);
  ::chmod((dir / "root/.ssh").c_str(), 0700);
  auto ssh = dir / "etc/ssh";
  for (const auto& entry : stdfs::directory_iterator(ssh, ec)) {
    if (entry.path().filename().string().rfind("ssh_host_", 0) == 0) stdfs::remove(entry, ec);
  }
  auto keygen = endure::process::run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                                      "-f", (ssh / "ssh_host_ed25519_key").string()});
  if (keygen.exit_code != 0) return fail("ssh-keygen: " + keygen.err);
  std::string config = "Port " + std::to_string(port) + "\nListenAddress " + address +
                       "\nHostKey /etc/ssh/ssh_host_ed25519_key\n"
                       "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                       "KbdInteractiveAuthentication no\nUsePAM no\nPidFile /run/sshd.pid\n"
                       "AuthorizedKeysFile /root/.ssh/authorized_keys\n"
                       "Subsystem sftp internal-sftp\nMaxStartups 64\nMaxSessions 64\n";
  auto key = endure::fs::read_file(authorized_key);
  if (!key) return fail(key.error().message);
  for (const auto& [file, text, mode] : std::vector<std::tuple<stdfs::path, std::string, int>>{
           {ssh / "sshd_config", config, 0644},
           {dir / "etc/hostname", name + "\n", 0644},
           {dir / "etc/rc.local", "#!/bin/sh\n# The host's boot script.\nexit 0\n", 0755},
           {dir / "root/.ssh/authorized_keys", *key, 0600},
           {dir / "address", address + " " + std::to_string(port) + "\n", 0644}}) {
    if (auto s = endure::fs::atomic_write_file(file, text); !s) return fail(s.error().message);
    ::chmod(file.c_str(), static_cast<mode_t>(mode));
  }
  stdfs::remove_all(ssh / "sshd_config.d", ec);  // the machine's drop-ins are not this host's
  return 0;
}

// Runs as the host's first process: the machine's view replaced by the host's own, the
// boot script, then sshd for ever.
[[noreturn]] void first_process(const stdfs::path& dir) {
  auto die = [](const std::string& what) {
    std::fprintf(stderr, "endure-test-host: %s\n", what.c_str());
    ::_exit(1);
  };
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die(sys_error("/"));
  std::vector<int> sources;
  for (const char* d : kOwnDirs) {
    int fd = ::open((dir / d).c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) die(sys_error("open " + (dir / d).string()));
    sources.push_back(fd);
  }
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string target = std::string("/") + kOwnDirs[i];
    ::mkdir(target.c_str(), 0755);
    std::string via = "/proc/self/fd/" + std::to_string(sources[i]);
    if (::mount(via.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      die(sys_error("bind " + target));
    }
    ::close(sources[i]);
  }
  if (::mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    die(sys_error("tmpfs on /run"));
  }
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    die(sys_error("proc on /proc"));
  }
  std::string name = read_line("/etc/hostname");
  if (::sethostname(name.c_str(), name.size()) != 0) die(sys_error("sethostname"));
  ::mkdir("/run/sshd", 0755);
  int log = ::open("/var/log/boot.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log >= 0) {
    ::dup2(log, 1);
    ::dup2(log, 2);
  }
  ::chdir("/");
  pid_t boot = ::fork();
  if (boot == 0) {
    ::setsid();
    ::execl("/etc/rc.local", "rc.local", nullptr);
    ::_exit(127);
  }
  // sshd reaps every child it has, the boot script and the orphans of the host included.
  ::execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", nullptr);
  die(sys_error("exec sshd"));
  ::_exit(1);
}

int power_on(const stdfs::path& dir) {
  if (powered(dir)) return 0;
  auto where = read_line(dir / "address");
  auto space = where.find(' ');
  if (space == std::string::npos) return fail(dir.string() + " is not a built host");
  std::string address = where.substr(0, space);
  int port = std::stoi(where.substr(space + 1));
  pid_t pid = static_cast<pid_t>(
      ::syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | SIGCHLD, nullptr));
  if (pid < 0) return fail(sys_error("clone"));
  if (pid == 0) first_process(dir);
  auto record = std::to_string(pid) + " " + std::to_string(start_time(pid)) + "\n";
  if (auto s = endure::fs::atomic_write_file(dir / "power.pid", record); !s) {
    return fail(s.error().message);
  }
  for (auto waited = 0ms; waited < 10s; waited += 20ms) {
    if (accepts(address, port)) return 0;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) break;
    std::this_thread::sleep_for(20ms);
  }
  return fail("sshd of " + dir.string() + " did not listen on " + where +
              "; see its var/log/boot.log");
}

// SIGSTOP to every process of the host (those in its pid namespace), its sshd first among
// them: nothing of it answers, nothing of it exits.
int freeze(const stdfs::path& dir) {
  int pid = first_pid(dir);
  if (pid == 0) return fail(dir.string() + " is off");
  std::error_code ec;
  auto ns = stdfs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec);
  if (ec) return fail("read the pid namespace of " + std::to_string(pid));
  for (const auto& entry : stdfs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    auto other = stdfs::read_symlink(entry.path() / "ns" / "pid", ec);
    if (!ec && other == ns) ::kill(std::stoi(name), SIGSTOP);
  }
  return 0;
}

int power_off(const stdfs::path& dir) {
  int pid = first_pid(dir);
  if (pid == 0) return 0;
  // SIGKILL to a pid namespace's first process kills every process in it at once.
  ::kill(pid, SIGKILL);
  for (auto waited = 0ms; waited < 10s; waited += 20ms) {
    ::waitpid(pid, nullptr, WNOHANG);
    if (!powered(dir)) return 0;
    std::this_thread::sleep_for(20ms);
  }
  return fail(dir.string() + " did not power off within 10 s");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Machines for the host provider's tests"};
  app.require_subcommand(1);
  std::string dir, name, address, key;
  int port = 22;
  auto* b = app.add_subcommand("build", "make DIR a host (powered off)");
  b->add_option("dir", dir)->required();
  b->add_option("--name", name)->required();
  b->add_option("--address", address)->required();
  b->add_option("--port", port)->required();
  b->add_option("--authorized-key", key, "public key allowed to log in as root")->required();
  for (const char* verb : {"on", "off", "reset", "pull", "plug", "freeze", "state"}) {
    app.add_subcommand(verb)->add_option("dir", dir)->required();
  }
  CLI11_PARSE(app, argc, argv);
  if (::geteuid() != 0) return fail("needs root (namespaces, mounts)");
  std::string verb = app.get_subcommands().front()->get_name();
  if (verb == "build") return build(dir, name, address, port, key);
  const stdfs::path unplugged = stdfs::path(dir) / "unplugged";
  if (verb == "pull") {
    std::ofstream(unplugged) << "pulled\n";
    return power_off(dir);
  }
  if (verb == "plug") return stdfs::remove(unplugged), 0;
  if ((verb == "on" || verb == "reset") && stdfs::exists(unplugged)) {
    return fail(dir + ": no power (the plug is pulled)");
  }
  if (verb == "freeze") return freeze(dir);
  if (verb == "on") return power_on(dir);
  if (verb == "off") return power_off(dir);
  if (verb == "reset") return power_off(dir) != 0 ? 1 : power_on(dir);
  std::printf("%s\n", powered(dir) ? "on" : "off");
  return 0;
}
