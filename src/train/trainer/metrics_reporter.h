// endure-train's rank 0 reports the lines it prints to endured (ReportTrainingMetrics), so
// that the web console and /metrics show a job's loss, tokens/s, MFU, checkpoint stalls and
// tries without the user running anything. It runs only inside a Slurm job on an endure
// node (the node's job credential file and SLURM_JOB_ID), on a thread of its own: a step
// never waits for endured, and endured being away loses nothing but, after a while, the
// oldest unsent lines.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "common/http_client.h"
#include "common/json.h"

namespace endure::train {

class MetricsReporter {
 public:
  // nullptr when not in a Slurm job on an endure node (no credential file or job id).
  static std::unique_ptr<MetricsReporter> from_environment();
  MetricsReporter(HttpClient client, std::string cluster_name, long long job_id, int resume);
  // Sends what is queued, waiting at most a few seconds for endured.
  ~MetricsReporter();

  // Queues a line, adding its time and this try's auto-resume count.
  void add(json line);

 private:
  void run();
  bool send(std::deque<json>& batch);

  HttpClient client_;  // endured, with the node's job credential
  std::string cluster_name_;
  long long job_id_;
  int resume_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json> queue_;
  bool stopping_ = false;
  bool urgent_ = false;  // a line that goes out now is queued
  std::thread thread_;
};

}  // namespace endure::train
