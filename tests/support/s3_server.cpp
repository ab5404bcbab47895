#include "support/s3_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/fs.h"

namespace endure::test {

namespace {

namespace sfs = std::filesystem;
using Clock = std::chrono::steady_clock;

sfs::path tool_dir() { return sfs::path(ENDURE_SOURCE_DIR) / "tools" / "s3rver"; }

bool answers(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// Waits for pid to exit, up to timeout; true when it did (and was reaped).
bool reap(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

std::string S3Server::unavailable_reason() {
  const char* setup = " (run scripts/setup.sh, which installs it with npm)";
  if (!sfs::exists(tool_dir() / "node_modules" / "@20minutes" / "s3rver" / "package.json")) {
    return "the S3 test server is not installed in " + (tool_dir() / "node_modules").string() +
           setup;
  }
  if (::system("node --version >/dev/null 2>&1") != 0)
    return std::string("node is not on the PATH") + setup;
  return "";
}

S3Server::S3Server(std::vector<std::string> buckets) : buckets_(std::move(buckets)) {}

S3Server::~S3Server() { stop(); }

Status S3Server::start() {
  if (pid_ > 0) return make_error("S3Server", "already running");
  if (!dir_.ok()) return make_error("S3Server", "no temp folder");
  std::string port_file = dir_.str("port");
  std::error_code ec;
  sfs::remove(port_file, ec);
  // s3rver's continuation tokens are DES-encrypted, a cipher OpenSSL 3 keeps in its legacy
  // provider: without it every paginated listing fails with a 500.
  std::vector<std::string> args = {"node",
                                   "--openssl-legacy-provider",
                                   (tool_dir() / "serve.js").string(),
                                   "--dir",
                                   dir_.str("data"),
                                   "--port-file",
                                   port_file,
                                   "--port",
                                   std::to_string(port_),
                                   "--access-key",
                                   kAccessKey,
                                   "--secret-key",
                                   kSecretKey};
  for (const auto& b : buckets_) {
    args.push_back("--bucket");
    args.push_back(b);
  }
  std::string log = dir_.str("server.log");
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return make_error("S3Server", "fork failed");
  if (pid == 0) {
    // The server dies with the test process, whatever way that ends.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("node", argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return make_error("S3Server", "the server exited at start: " + log_tail());
    }
    auto text = fs::read_file(port_file);
    if (text && !text->empty() && text->back() == '\n') {
      port_ = std::stoi(*text);
      if (answers(port_)) return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  return make_error("S3Server", "the server did not answer within 20 s: " + log_tail());
}

void S3Server::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(pid_, std::chrono::seconds(5));
  pid_ = -1;
}

void S3Server::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (!reap(pid_, std::chrono::seconds(5))) {
    ::kill(pid_, SIGKILL);
    reap(pid_, std::chrono::seconds(5));
  }
  pid_ = -1;
}

s3::S3Config S3Server::config() const {
  s3::S3Config c;
  c.endpoint_url = endpoint_url();
  c.region = "us-east-1";
  c.path_style = true;
  c.credentials = {kAccessKey, kSecretKey, ""};
  c.retry.max_attempts = 3;
  c.retry.base_delay = std::chrono::milliseconds(20);
  c.retry.max_delay = std::chrono::milliseconds(200);
  c.connect_timeout = std::chrono::milliseconds(2000);
  c.stall_timeout = std::chrono::milliseconds(10000);
  return c;
}

std::string S3Server::log_tail() const { return fs::tail_lines(dir_.str("server.log"), 20); }

}  // namespace endure::test
