#include "autoresume/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "api/wire.h"
#include "common/http_client.h"
#include "common/ids.h"
#include "spank/auto_resume_option.h"

namespace endure::autoresume {
namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_signalled = 0;

// A job cancelled or a user's Ctrl-C reaches srun through us: pass it on, and never re-run.
void forward(int sig) {
  g_signalled = sig;
  if (g_child > 0) ::kill(g_child, sig);
}

void say(const std::string& text) {
  std::fprintf(stderr, "auto_resume: %s\n", text.c_str());
  std::fflush(stderr);
}

void sleep_seconds(double s) {
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(s * 1000)));
}

// Runs srun once; returns its exit status (128+signal when killed).
int run_srun(const SupervisedStep& step, int count, const std::string& reason) {
  pid_t pid = ::fork();
  if (pid < 0) {
    say(std::string("fork: ") + std::strerror(errno));
    return 1;
  }
  if (pid == 0) {
    ::setenv(spank::kSupervisedEnv, "1", 1);
    ::setenv(kCountEnv, std::to_string(count).c_str(), 1);
    ::setenv(kReasonEnv, reason.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : step.srun_argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(step.srun_exe.c_str(), argv.data());
    std::fprintf(stderr, "auto_resume: exec %s: %s\n", step.srun_exe.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  g_child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// POSTs to endured, retrying while it cannot be reached (a restart) until the deadline.
Result<json> call(const HttpClient& client, const char* action, const json& body,
                  double deadline) {
  for (;;) {
    auto r = client.post(std::string(api::kPathPrefix) + action, body);
    if (r || r.error().code == api::kValidationException || r.error().code == api::kUnauthorized ||
        ids::now_seconds() > deadline || g_signalled) {
      return r;
    }
    sleep_seconds(0.5);
  }
}

}  // namespace

Result<SupervisorConfig> SupervisorConfig::from_json(const json& j) {
  SupervisorConfig c;
  if (!j.is_object() || !j.contains("Endpoint") || !j["Endpoint"].is_string() ||
      !j.contains("ClusterName") || !j["ClusterName"].is_string() || !j.contains("Token") ||
      !j["Token"].is_string()) {
    return make_error("InvalidConfig", "auto_resume.json: needs Endpoint, ClusterName and Token strings");
  }
  c.endpoint = j["Endpoint"];
  c.cluster_name = j["ClusterName"];
  c.token = j["Token"];
  c.max_resumes = j.value("MaxResumes", 3);
  return c;
}

int supervise(const SupervisorConfig& config, SupervisedStep step) {
  bool overlapping = false;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT}) {
    ::sigaction(sig, &sa, nullptr);
  }
  auto endpoint = parse_endpoint(config.endpoint);
  if (!endpoint) {
    say("endpoint " + config.endpoint + ": " + endpoint.error().message + "; running without auto-resume");
    return run_srun(step, 0, "");
  }
  HttpClient client(*endpoint, config.token, 10);
  json job = {{"ClusterName", config.cluster_name}, {"JobId", step.job_id}};

  // A requeued job starts again from the job's own count (its batch host was replaced).
  int count = 0;
  std::string reason;
  if (auto s = call(client, api::kAutoResumeStatus, job, ids::now_seconds() + 10); s) {
    count = s->value("ResumeCount", 0);
    if (count > 0) reason = s->value("Reason", "");
  } else {
    say("cannot ask endured (" + s.error().message + "); resume count starts at 0");
  }

  for (;;) {
    double started = ids::now_seconds();
    int code = run_srun(step, count, reason);
    if (g_signalled) return code;
    double failed_at = ids::now_seconds();

    json ask = job;
    ask["Nodes"] = step.nodes;
    ask["StepStartTime"] = started;
    ask["FailedAt"] = failed_at;
    ask["Resumes"] = count;
    ask["ExitStatus"] = code;
    if (code == 0) {
      // srun exits 0 when a node failed after the other tasks had finished: the tasks of
      // that node never did. A fault endured already knows of makes it a failure.
      ask["Succeeded"] = true;
      auto known = call(client, api::kAutoResumeStepFailed, ask, failed_at + 5);
      if (!known || known->value("Decision", "") != "Fault") return 0;
      code = 1;
      ask["ExitStatus"] = code;
      ask.erase("Succeeded");
      say("srun exited 0, but a node of the step failed: " + known->value("Reason", ""));
    }
    Result<json> answer = make_error("Pending", "");
    double deadline = failed_at + config.decide_timeout_seconds;
    while (!g_signalled) {
      answer = call(client, api::kAutoResumeStepFailed, ask, deadline);
      if (!answer || answer->value("Decision", "") != "Pending" || ids::now_seconds() > deadline) break;
      sleep_seconds(config.poll_seconds);
    }
    if (g_signalled) return code;
    if (!answer) {
      say("step failed (exit " + std::to_string(code) + "); endured did not answer (" +
          answer.error().message + "): not re-run");
      return code;
    }
    std::string decision = answer->value("Decision", "");
    std::string why = answer->value("Reason", "");
    if (decision != "Fault" || !answer->value("Resume", false)) {
      say("step failed (exit " + std::to_string(code) + "), not re-run: " +
          (decision == "Pending" ? "no verdict within " +
                                       std::to_string(static_cast<int>(config.decide_timeout_seconds)) + " s"
                                 : why));
      return code;
    }
    int granted = answer->value("ResumeCount", count + 1);
    say("step failed on a node fault (" + why + "): waiting for the replacement; resume " +
        std::to_string(granted) + " of " + std::to_string(answer->value("MaxResumes", config.max_resumes)));
    double ready_deadline = ids::now_seconds() + config.ready_timeout_seconds;
    json status;
    for (;;) {
      auto s = call(client, api::kAutoResumeStatus, job, ready_deadline);
      if (s) status = *s;
      std::string state = s ? s->value("State", "") : "";
      if (state == "Ready" || state == "Failed" || !s || g_signalled ||
          ids::now_seconds() > ready_deadline) {
        break;
      }
      sleep_seconds(config.poll_seconds);
    }
    if (g_signalled) return code;
    if (status.value("State", "") != "Ready") {
      say("not re-run: " + (status.is_object() ? status.value("Message", std::string("no answer"))
                                               : std::string("endured did not answer")));
      return code;
    }
    if (status.value("Overlap", false) && !overlapping) {
      // A step of the failed run still holds the repaired node in Slurm's books.
      step.srun_argv.insert(step.srun_argv.begin() + 1, "--overlap");
      overlapping = true;
      say("a step of the failed run is still listed on the repaired node: re-running with --overlap");
    }
    count = status.value("ResumeCount", granted);
    reason = status.value("Reason", why);
    say(fmt::format("job is whole again {:.1f} s after the failure: re-running the step (resume {})",
                    ids::now_seconds() - failed_at, count));
  }
}

}  // namespace endure::autoresume
