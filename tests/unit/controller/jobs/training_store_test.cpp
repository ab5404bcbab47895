// Training records: endure-train's lines filed per job and try, read back as a run's summary
// and its curve, through the store and the TrainingService that answers the API.
#include <gtest/gtest.h>

#include "common/ids.h"
#include "controller/jobs/training_metrics.h"
#include "controller/jobs/training_service.h"
#include "support/store_fixture.h"

namespace endure {
namespace {

using store::ClusterRow;

class TrainingStoreTest : public test::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    ClusterRow c;
    c.id = "aaaaaaaaaaaa";
    c.name = "ml";
    c.arn = "arn:endure:local:cluster/" + c.id;
    c.status = api::ClusterStatus::kInService;
    c.spec = json::object();
    c.provisioning = json::object();
    c.index = 1;
    ASSERT_TRUE(store_->insert_cluster(c).ok());
    cluster_ = c;
  }

  static json step(int s, double time, double loss, int resume = 0) {
    return {{"step", s},   {"loss", loss}, {"tokens_per_s", 1000.0 + s},
            {"mfu", 0.25}, {"time", time}, {"resume", resume}};
  }

  ClusterRow cluster_;
};

TEST_F(TrainingStoreTest, ALineSentTwiceIsFiledOnce) {
  json batch = {{{"start", true}, {"time", 100.0}}, step(1, 101, 3.0), step(2, 102, 2.9)};
  auto first = store_->put_training_records(cluster_.id, 7, batch);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 3);
  auto again = store_->put_training_records(cluster_.id, 7, batch);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  EXPECT_EQ(store_->training_steps(cluster_.id, 7), 2);
  reopen();
  EXPECT_EQ(store_->training_steps(cluster_.id, 7), 2);
}

TEST_F(TrainingStoreTest, AStepRedoneAfterAResumeShowsTheLaterTry) {
  json first = {
      {{"start", true}, {"time", 100.0}}, step(1, 101, 3.0), step(2, 102, 2.9), step(3, 103, 2.8)};
  json second = {{{"start", true},
                  {"resumed_from", 2},
                  {"auto_resume_reason", "worker-1: crash"},
                  {"time", 110.0},
                  {"resume", 1}},
                 step(3, 111, 2.8, 1),
                 step(4, 112, 2.7, 1),
                 {{"checkpoint", 4}, {"stall_ms", 40.0}, {"time", 112.5}, {"resume", 1}},
                 {{"done", true}, {"final_step", 4}, {"time", 113.0}, {"resume", 1}}};
  ASSERT_TRUE(store_->put_training_records(cluster_.id, 7, first).ok());
  ASSERT_TRUE(store_->put_training_records(cluster_.id, 7, second).ok());

  controller::TrainingService service(*store_);
  auto metrics = service.get_metrics({{"ClusterName", "ml"}, {"JobId", 7}});
  ASSERT_TRUE(metrics.ok()) << metrics.error().message;
  const json& points = (*metrics)["Points"];
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[2]["Step"], 3);
  EXPECT_EQ(points[2]["Resume"], 1);  // redone by the second try
  EXPECT_DOUBLE_EQ(points[2]["Time"].get<double>(), 111);
  ASSERT_EQ((*metrics)["Starts"].size(), 2u);
  EXPECT_EQ((*metrics)["Starts"][1]["ResumedFrom"], 2);
  EXPECT_EQ((*metrics)["Starts"][1]["Reason"], "worker-1: crash");
  ASSERT_EQ((*metrics)["Checkpoints"].size(), 1u);
  EXPECT_DOUBLE_EQ((*metrics)["Checkpoints"][0]["StallSeconds"].get<double>(), 0.04);

  auto runs = service.list_runs({{"ClusterName", "ml"}});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ((*runs)["TrainingRuns"].size(), 1u);
  const json& run = (*runs)["TrainingRuns"][0];
  EXPECT_EQ(run["LastStep"], 4);
  EXPECT_EQ(run["Resumes"], 1);
  EXPECT_EQ(run["Status"], "Done");
  EXPECT_DOUBLE_EQ(run["Loss"].get<double>(), 2.7);
}

TEST_F(TrainingStoreTest, ALongRunIsThinnedToMaxPoints) {
  json batch = json::array();
  for (int s = 1; s <= 1000; ++s) batch.push_back(step(s, 100 + s, 3.0));
  ASSERT_TRUE(store_->put_training_records(cluster_.id, 9, batch).ok());
  controller::TrainingService service(*store_);
  auto metrics = service.get_metrics({{"ClusterName", "ml"}, {"JobId", 9}, {"MaxPoints", 100}});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ((*metrics)["Points"].size(), 100u);
}

TEST_F(TrainingStoreTest, BadReportsAreRefusedNamingTheFieldAndChangeNothing) {
  controller::TrainingService service(*store_);
  auto no_time = service.report(
      cluster_, {{"ClusterName", "ml"}, {"JobId", 7}, {"Records", {{{"step", 1}, {"loss", 2.0}}}}});
  ASSERT_FALSE(no_time.ok());
  EXPECT_EQ(no_time.error().message, "Records: each must be an object with a numeric \"time\"");
  auto no_job = service.report(
      cluster_, {{"ClusterName", "ml"}, {"JobId", 0}, {"Records", {step(1, 101, 3.0)}}});
  ASSERT_FALSE(no_job.ok());
  EXPECT_EQ(no_job.error().message, "JobId: must be a positive integer");
  EXPECT_TRUE(store_->training_runs(cluster_.id).empty());
  auto unknown = service.get_metrics({{"ClusterName", "ml"}, {"JobId", 5}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, "ResourceNotFound");
}

TEST_F(TrainingStoreTest, MetricsShowTheNewestStepOfALiveRun) {
  const double now = ids::now_seconds();
  json batch = {{{"start", true}, {"time", now - 5}, {"resume", 1}},
                step(41, now - 2, 2.5, 1),
                {{"checkpoint", 40}, {"stall_ms", 30.0}, {"time", now - 1}, {"resume", 1}}};
  ASSERT_TRUE(store_->put_training_records(cluster_.id, 7, batch).ok());
  metrics::TextWriter out;
  controller::training_families (*store_)(out);
  const std::string& text = out.text();
  EXPECT_NE(text.find("# TYPE endure_train_loss gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("endure_train_loss{cluster=\"ml\",job=\"7\"} 2.5\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("endure_train_step{cluster=\"ml\",job=\"7\"} 41\n"), std::string::npos);
  EXPECT_NE(text.find("endure_train_resumes_total{cluster=\"ml\",job=\"7\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("endure_train_checkpoint_stall_seconds{cluster=\"ml\",job=\"7\"} 0.03\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("endure_train_running{cluster=\"ml\",job=\"7\"} 1\n"), std::string::npos);
}

TEST(TrainingStatus, RunningUntilAMinuteOfSilenceUnlessItEnded) {
  store::TrainingRun run;
  run.last_time = 1000;
  EXPECT_STREQ(name(controller::training_status(run, 1030)), "Running");
  EXPECT_STREQ(name(controller::training_status(run, 1061)), "Idle");
  run.end_kind = "stopped";
  EXPECT_STREQ(name(controller::training_status(run, 1030)), "Stopped");
}

}  // namespace
}  // namespace endure
