#include "train/trainer/metrics_reporter.h"

#include <chrono>
#include <cstdlib>

#include "api/node_files.h"
#include "api/wire.h"
#include "common/ids.h"

namespace endure::train {
namespace {

constexpr auto kInterval = std::chrono::seconds(1);
constexpr size_t kMaxQueued = 20000;  // about 6 hours of 1 s steps while endured is away
constexpr double kFinalFlushSeconds = 3;

}  // namespace

std::unique_ptr<MetricsReporter> MetricsReporter::from_environment() {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!job || std::atoll(job) <= 0) return nullptr;
  auto config = api::load_auto_resume_config();
  if (!config) return nullptr;
  auto endpoint = parse_endpoint(config->endpoint, config->ca_file);
  if (!endpoint) return nullptr;
  const char* count = std::getenv("ENDURE_AUTO_RESUME_COUNT");
  return std::make_unique<MetricsReporter>(HttpClient(*endpoint, config->token, 5),
                                           config->cluster_name, std::atoll(job),
                                           count ? std::atoi(count) : 0);
}

MetricsReporter::MetricsReporter(HttpClient client, std::string cluster_name, long long job_id,
                                 int resume)
    : client_(std::move(client)),
      cluster_name_(std::move(cluster_name)),
      job_id_(job_id),
      resume_(resume) {
  thread_ = std::thread([this] { run(); });
}

MetricsReporter::~MetricsReporter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MetricsReporter::add(json line) {
  // A try's start, checkpoints and end go out at once (a crash may follow); steps in
  // batches of up to kInterval.
  const bool now = !line.contains("loss");
  line["time"] = ids::now_seconds();
  line["resume"] = resume_;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(line));
    if (queue_.size() > kMaxQueued) queue_.pop_front();
    if (now) urgent_ = true;
  }
  if (now) cv_.notify_all();
}

bool MetricsReporter::send(std::deque<json>& batch) {
  json records = json::array();
  for (size_t i = 0; i < batch.size() && i < static_cast<size_t>(api::kMaxTrainingRecords); ++i) {
    records.push_back(batch[i]);
  }
  auto reply =
      client_.post(std::string(api::kPathPrefix) + api::kReportTrainingMetrics,
                   {{"ClusterName", cluster_name_}, {"JobId", job_id_}, {"Records", records}});
  if (!reply) return false;
  batch.erase(batch.begin(), batch.begin() + static_cast<long>(records.size()));
  return true;
}

void MetricsReporter::run() {
  std::deque<json> pending;  // taken from the queue, not yet accepted
  double deadline = 0;
  for (;;) {
    bool stopping;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kInterval, [this] { return stopping_ || urgent_; });
      stopping = stopping_;
      urgent_ = false;
      while (!queue_.empty()) {
        pending.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (pending.size() > kMaxQueued) pending.erase(pending.begin(), pending.end() - kMaxQueued);
    if (stopping && deadline == 0) deadline = ids::now_seconds() + kFinalFlushSeconds;
    while (!pending.empty() && send(pending)) {
    }
    if (stopping && (pending.empty() || ids::now_seconds() > deadline)) return;
  }
}

}  // namespace endure::train
