#include "autoresume/supervisor.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "api/messages.h"
#include "api/wire.h"
#include "common/http_client.h"
#include "common/ids.h"
#include "common/process.h"
#include "slurm/hostlist.h"
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
Result<json> call(const HttpClient& client, const char* action, const json& body, double deadline) {
  for (;;) {
    auto r = client.post(std::string(api::kPathPrefix) + action, body);
    if (r || r.error().code == api::kValidationException || r.error().code == api::kUnauthorized ||
        ids::now_seconds() > deadline || g_signalled) {
      return r;
    }
    sleep_seconds(0.5);
  }
}

// call(), with the reply read through its type: a reply that does not read counts as no
// answer.
template <class Reply>
Result<Reply> ask(const HttpClient& client, const char* action, const json& body, double deadline) {
  auto reply = call(client, action, body, deadline);
  if (!reply) return reply.error();
  return Reply::from_json(*reply);
}

// Whether slurmctld answers `scontrol ping` from this node.
bool slurmctld_answers() {
  process::Options options;
  options.timeout = std::chrono::seconds(15);
  auto out = process::run({"scontrol", "ping"}, options);
  return out.exit_code == 0 && out.out.find("is UP") != std::string::npos;
}

// The nodes the job holds now, as squeue lists them; nothing when it does not answer.
std::optional<std::vector<std::string>> job_nodes(long long job_id) {
  process::Options options;
  options.timeout = std::chrono::seconds(15);
  auto out = process::run({"squeue", "-h", "-j", std::to_string(job_id), "-o", "%N"}, options);
  if (out.exit_code != 0) return std::nullopt;
  std::string list = out.out.substr(0, out.out.find_first_of(" \n"));
  auto hosts = slurm::expand_hostlist(list);
  if (!hosts) return std::nullopt;
  return *hosts;
}

// A step that failed while slurmctld was down failed on no node: srun cannot start or follow
// a step without it. Waits until slurmctld answers again (endured starts a slurmctld that
// exited or crashed); false when it does not within the timeout or a signal came.
bool wait_for_slurmctld(double timeout_seconds, double poll_seconds) {
  const double deadline = ids::now_seconds() + timeout_seconds;
  while (!g_signalled && ids::now_seconds() < deadline) {
    if (slurmctld_answers()) return true;
    sleep_seconds(poll_seconds);
  }
  return false;
}

// How often a step is run again for slurmctld outages, which are not counted as resumes.
constexpr int kMaxSlurmctldOutages = 3;

using StepFailedReply = api::AutoResumeStepFailedReply;
using StatusReply = api::AutoResumeStatusReply;

}  // namespace

int supervise(const SupervisorConfig& config, SupervisedStep step) {
  bool overlapping = false;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT}) {
    ::sigaction(sig, &sa, nullptr);
  }
  auto endpoint = parse_endpoint(config.endpoint, config.ca_file);
  if (!endpoint) {
    say("endpoint " + config.endpoint + ": " + endpoint.error().message +
        "; running without auto-resume");
    return run_srun(step, 0, "");
  }
  HttpClient client(*endpoint, config.token, 10);
  const json job = api::AutoResumeStatusRequest{config.cluster_name, step.job_id}.to_json();

  // A requeued job starts again from the job's own count (its batch host was replaced).
  int count = 0;
  std::string reason;
  if (auto s = ask<StatusReply>(client, api::kAutoResumeStatus, job, ids::now_seconds() + 10); s) {
    count = s->resume_count;
    if (count > 0) reason = s->reason;
  } else {
    say("cannot ask endured (" + s.error().message + "); resume count starts at 0");
  }

  int slurmctld_outages = 0;
  double started = 0, failed_at = 0;
  int code = 0;
  bool run_step = true;  // false: the last failure is asked about again, not the step re-run
  std::vector<std::string> failure_lacking;  // nodes the job did not hold again, to ask about
  for (;;) {
    if (run_step) {
      started = ids::now_seconds();
      code = run_srun(step, count, reason);
      if (g_signalled) return code;
      failed_at = ids::now_seconds();
    }
    run_step = true;
    if (code != 0 && slurmctld_outages < kMaxSlurmctldOutages && !slurmctld_answers()) {
      ++slurmctld_outages;
      say("step failed (exit " + std::to_string(code) +
          ") while slurmctld does not answer: waiting for it, then running the step again "
          "(not a resume: no node failed)");
      if (!wait_for_slurmctld(config.ready_timeout_seconds, config.slurmctld_poll_seconds)) {
        if (!g_signalled) say("slurmctld did not answer again: not re-run");
        return code;
      }
      continue;
    }

    api::AutoResumeStepFailedRequest failure;
    failure.cluster_name = config.cluster_name;
    failure.job_id = step.job_id;
    failure.nodes = step.nodes;
    failure.step_start_time = started;
    failure.failed_at = failed_at;
    failure.resumes = count;
    failure.exit_status = code;
    if (!failure_lacking.empty()) failure.lacking_nodes = std::exchange(failure_lacking, {});
    if (code == 0) {
      // srun exits 0 when a node failed after the other tasks had finished: the tasks of
      // that node never did. A fault endured already knows of makes it a failure.
      failure.succeeded = true;
      auto known = ask<StepFailedReply>(client, api::kAutoResumeStepFailed, failure.to_json(),
                                        failed_at + 5);
      if (!known || known->decision != "Fault") return 0;
      code = 1;
      failure.exit_status = code;
      failure.succeeded.reset();
      say("srun exited 0, but a node of the step failed: " + known->reason);
    }
    Result<StepFailedReply> answer = make_error("Pending", "");
    double deadline = failed_at + config.decide_timeout_seconds;
    while (!g_signalled) {
      answer =
          ask<StepFailedReply>(client, api::kAutoResumeStepFailed, failure.to_json(), deadline);
      if (!answer || answer->decision != "Pending" || ids::now_seconds() > deadline) break;
      sleep_seconds(config.poll_seconds);
    }
    if (g_signalled) return code;
    if (!answer) {
      say("step failed (exit " + std::to_string(code) + "); endured did not answer (" +
          answer.error().message + "): not re-run");
      return code;
    }
    const std::string& decision = answer->decision;
    const std::string why = answer->reason;
    if (decision != "Fault" || !answer->resume) {
      say("step failed (exit " + std::to_string(code) + "), not re-run: " +
          (decision == "Pending"
               ? "no verdict within " +
                     std::to_string(static_cast<int>(config.decide_timeout_seconds)) + " s"
               : why));
      return code;
    }
    int granted = answer->resume_count;
    say("step failed on a node fault (" + why + "): waiting for the replacement; resume " +
        std::to_string(granted) + " of " + std::to_string(answer->max_resumes));
    double ready_deadline = ids::now_seconds() + config.ready_timeout_seconds;
    std::optional<StatusReply> status;  // the latest answer
    for (;;) {
      auto s = ask<StatusReply>(client, api::kAutoResumeStatus, job, ready_deadline);
      if (s) status = *s;
      std::string state = s ? s->state : "";
      if (state == "Ready" || state == "Failed" || !s || g_signalled ||
          ids::now_seconds() > ready_deadline) {
        break;
      }
      sleep_seconds(config.poll_seconds);
    }
    if (g_signalled) return code;
    if (!status || status->state != "Ready") {
      say("not re-run: " + (status ? status->message : std::string("endured did not answer")));
      return code;
    }
    if (status->overlap.value_or(false) && !overlapping) {
      // A step of the failed run still holds the repaired node in Slurm's books.
      step.srun_argv.insert(step.srun_argv.begin() + 1, "--overlap");
      overlapping = true;
      say("a step of the failed run is still listed on the repaired node: re-running with "
          "--overlap");
    }
    count = status->resume_count;
    reason = status->reason;
    // Nodes that failed at once may reach endured as one fault, the others judged a moment
    // after the step's failure was: the job must hold every node of the step again, or the
    // ones it lacks are asked about as a fault of their own before the step runs.
    if (auto held = job_nodes(step.job_id)) {
      std::vector<std::string> lacking;
      for (const auto& n : step.nodes)
        if (std::find(held->begin(), held->end(), n) == held->end()) lacking.push_back(n);
      if (!lacking.empty()) {
        say("the job does not hold " + slurm::join_hostlist(lacking) +
            " again: asking endured to bring them back before the step runs");
        failure_lacking = lacking;
        run_step = false;
        continue;
      }
    }
    say(fmt::format(
        "job is whole again {:.1f} s after the failure: re-running the step (resume {})",
        ids::now_seconds() - failed_at, count));
  }
}

}  // namespace endure::autoresume
