// Auto-resume's plain pieces: Slurm hostlists, the SPANK plugin's option and arguments, the store's auto-resume records and token, the config fields, and the
// cli_filter that makes jobs --no-kill.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller/core/config.h"
#include "slurm/hostlist.h"
#include "slurm/slurm_conf.h"
#include "spank/auto_resume_option.h"
#include "store/store.h"
#include "support/cluster_layouts.h"
#include "support/store_fixture.h"
#include "support/temp_dir.h"
#include "support/text_files.h"

namespace endure {
namespace {

using Hosts = std::vector<std::string>;

using test::contains;

// ---------------------------------------------------------------------------------------
// Hostlist expressions.

Hosts expand_ok(const std::string& expression) {
  auto r = slurm::expand_hostlist(expression);
  EXPECT_TRUE(r.ok()) << expression << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Hosts{};
}

TEST(HostlistTest, PlainNamesAreKeptInOrder) {
  EXPECT_EQ(expand_ok("controller-0"), Hosts{"controller-0"});
  EXPECT_EQ(expand_ok("b,a,c"), (Hosts{"b", "a", "c"}));
}

TEST(HostlistTest, RangeExpands) {
  EXPECT_EQ(expand_ok("worker-[0-3]"), (Hosts{"worker-0", "worker-1", "worker-2", "worker-3"}));
}

TEST(HostlistTest, ListsAndRangesInsideBracketsAndSeveralItems) {
  EXPECT_EQ(expand_ok("worker-[0,2-3],controller-0"),
            (Hosts{"worker-0", "worker-2", "worker-3", "controller-0"}));
}

TEST(HostlistTest, ZeroPaddingIsKept) {
  EXPECT_EQ(expand_ok("n[08-10]"), (Hosts{"n08", "n09", "n10"}));
}

TEST(HostlistTest, SuffixAfterTheBracket) {
  EXPECT_EQ(expand_ok("a[1-2]b"), (Hosts{"a1b", "a2b"}));
}

TEST(HostlistTest, SingleNumberInBrackets) { EXPECT_EQ(expand_ok("w-[7]"), Hosts{"w-7"}); }

TEST(HostlistTest, MalformedExpressionsAreErrorsNamingThem) {
  struct Case {
    const char* name;
    const char* expression;
  };
  for (const auto& c : std::vector<Case>{{"backwards range", "w-[3-1]"},
                                         {"unclosed bracket", "w-[1-"},
                                         {"not a number", "w-[a]"},
                                         {"extra closing bracket", "w-[1]]"},
                                         {"empty item", "a,,b"},
                                         {"empty expression", ""},
                                         {"space", "a b"},
                                         {"lone space", " "}}) {
    SCOPED_TRACE(c.name);
    auto r = slurm::expand_hostlist(c.expression);
    ASSERT_FALSE(r.ok()) << "\"" << c.expression << "\" expanded to " << slurm::join_hostlist(*r);
    EXPECT_TRUE(contains(r.error().message, std::string("\"") + c.expression + "\""))
        << r.error().message;
  }
}

TEST(HostlistTest, ANumberTooLargeIsAnErrorNotAThrow) {
  auto r = slurm::expand_hostlist("n[99999999999999999999]");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "n[99999999999999999999]")) << r.error().message;
}

TEST(HostlistTest, JoinIsCommaSeparatedAndRoundTrips) {
  EXPECT_EQ(slurm::join_hostlist({}), "");
  EXPECT_EQ(slurm::join_hostlist({"a"}), "a");
  EXPECT_EQ(slurm::join_hostlist({"worker-0", "worker-2", "controller-0"}),
            "worker-0,worker-2,controller-0");
  Hosts hosts = expand_ok("worker-[0,2-3],controller-0");
  EXPECT_EQ(expand_ok(slurm::join_hostlist(hosts)), hosts);
}

// ---------------------------------------------------------------------------------------
// The SPANK plugin's option, arguments and supervisor command line.

TEST(SpankOptionTest, AutoResumeAbsentEmptyOrOneIsOn) {
  std::string error;
  EXPECT_EQ(spank::parse_auto_resume(nullptr, &error), 1);
  EXPECT_EQ(spank::parse_auto_resume("", &error), 1);
  EXPECT_EQ(spank::parse_auto_resume("1", &error), 1);
  EXPECT_EQ(error, "");
}

TEST(SpankOptionTest, AutoResumeZeroIsOff) {
  std::string error;
  EXPECT_EQ(spank::parse_auto_resume("0", &error), 0);
  EXPECT_EQ(error, "");
}

TEST(SpankOptionTest, AutoResumeOtherValuesAreRefused) {
  for (const char* value : {"2", "yes", "-1", "01", " 1"}) {
    SCOPED_TRACE(value);
    std::string error;
    EXPECT_EQ(spank::parse_auto_resume(value, &error), -1);
    EXPECT_TRUE(contains(error, "must be 0 or 1")) << error;
    EXPECT_TRUE(contains(error, value)) << error;
  }
}

TEST(SpankOptionTest, PluginArgsEmptyKeepsTheDefaultSupervisor) {
  spank::PluginArgs args;
  std::string error;
  EXPECT_TRUE(spank::parse_plugin_args({}, &args, &error)) << error;
  EXPECT_EQ(args.supervisor, spank::kDefaultSupervisor);
}

TEST(SpankOptionTest, PluginArgsSupervisorSetsIt) {
  spank::PluginArgs args;
  std::string error;
  EXPECT_TRUE(spank::parse_plugin_args({"supervisor=/x/y"}, &args, &error)) << error;
  EXPECT_EQ(args.supervisor, "/x/y");
}

TEST(SpankOptionTest, PluginArgsRelativeSupervisorIsAnErrorNamingIt) {
  for (const std::string bad : {"supervisor=relative", "supervisor=", "supervisor"}) {
    SCOPED_TRACE(bad);
    spank::PluginArgs args;
    std::string error;
    EXPECT_FALSE(spank::parse_plugin_args({bad}, &args, &error));
    EXPECT_TRUE(contains(error, bad)) << error;
    EXPECT_EQ(args.supervisor, spank::kDefaultSupervisor);
  }
}

TEST(SpankOptionTest, PluginArgsUnknownArgumentIsAnErrorNamingIt) {
  spank::PluginArgs args;
  std::string error;
  EXPECT_FALSE(spank::parse_plugin_args({"supervisor=/x/y", "foo=bar"}, &args, &error));
  EXPECT_TRUE(contains(error, "foo=bar")) << error;
}

TEST(SpankOptionTest, SupervisorArgvLayout) {
  EXPECT_EQ(spank::supervisor_argv("/opt/sup", "/usr/bin/srun",
                                   {"srun", "-N4", "--auto-resume=1", "hostname"}),
            (Hosts{"/opt/sup", "--srun", "/usr/bin/srun", "--", "srun", "-N4", "--auto-resume=1",
                   "hostname"}));
  EXPECT_EQ(spank::supervisor_argv("sup", "EXE", {}), (Hosts{"sup", "--srun", "EXE", "--"}));
}

TEST(SpankOptionTest, SplitCmdline) {
  const std::string raw("srun\0-N4\0--auto-resume=1\0hostname\0", 34);
  auto items = spank::split_cmdline(raw);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items, (Hosts{"srun", "-N4", "--auto-resume=1", "hostname"}));
  EXPECT_TRUE(spank::split_cmdline("").empty());
  EXPECT_EQ(spank::split_cmdline(std::string("a\0b", 3)), (Hosts{"a", "b"}));
}

// ---------------------------------------------------------------------------------------
// The store's auto-resume records and token.

class AutoResumeStoreTest : public test::StoreFixture {};

store::AutoResumeRow make_row(const std::string& cluster, long long job, const std::string& state) {
  store::AutoResumeRow r;
  r.cluster_id = cluster;
  r.job_id = job;
  r.resumes = 2;
  r.state = state;
  r.mode = "Expand";
  r.reason = "worker-1: NodeUnhealthy: xid 79";
  r.nodes = json::array({"worker-1", "worker-3"});
  r.fault_time = 1700000000.25;
  r.ready_time = 1700000123.5;
  r.message = "waiting for worker-1, worker-3";
  return r;
}

std::vector<long long> job_ids(const std::vector<store::AutoResumeRow>& rows) {
  std::vector<long long> out;
  for (const auto& r : rows) out.push_back(r.job_id);
  return out;
}

TEST_F(AutoResumeStoreTest, AbsentRecordIsNullopt) {
  EXPECT_FALSE(store_->auto_resume("aaaaaaaaaaaa", 42).has_value());
}

TEST_F(AutoResumeStoreTest, PutThenReadBackEveryField) {
  auto row = make_row("aaaaaaaaaaaa", 42, "Waiting");
  row.mode = "Requeue";
  ASSERT_TRUE(store_->put_auto_resume(row).ok());
  reopen();
  auto got = store_->auto_resume("aaaaaaaaaaaa", 42);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->cluster_id, "aaaaaaaaaaaa");
  EXPECT_EQ(got->job_id, 42);
  EXPECT_EQ(got->resumes, 2);
  EXPECT_EQ(got->state, "Waiting");
  EXPECT_EQ(got->mode, "Requeue");
  EXPECT_EQ(got->reason, "worker-1: NodeUnhealthy: xid 79");
  EXPECT_EQ(got->nodes, json::array({"worker-1", "worker-3"}));
  EXPECT_TRUE(got->nodes.is_array());
  EXPECT_DOUBLE_EQ(got->fault_time, 1700000000.25);
  EXPECT_DOUBLE_EQ(got->ready_time, 1700000123.5);
  EXPECT_EQ(got->message, "waiting for worker-1, worker-3");
  // Another job or cluster has no record.
  EXPECT_FALSE(store_->auto_resume("aaaaaaaaaaaa", 43).has_value());
  EXPECT_FALSE(store_->auto_resume("bbbbbbbbbbbb", 42).has_value());
}

TEST_F(AutoResumeStoreTest, PutAgainReplacesTheRecordOfTheSameJob) {
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 42, "Waiting")).ok());
  auto next = make_row("aaaaaaaaaaaa", 42, "Ready");
  next.resumes = 3;
  next.nodes = json::array();
  next.message = "";
  ASSERT_TRUE(store_->put_auto_resume(next).ok());

  auto got = store_->auto_resume("aaaaaaaaaaaa", 42);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->state, "Ready");
  EXPECT_EQ(got->resumes, 3);
  EXPECT_EQ(got->nodes, json::array());
  EXPECT_EQ(got->message, "");
  EXPECT_TRUE(store_->auto_resumes("aaaaaaaaaaaa", "Waiting").empty());
  EXPECT_EQ(job_ids(store_->auto_resumes("aaaaaaaaaaaa", "Ready")), std::vector<long long>{42});
}

TEST_F(AutoResumeStoreTest, ListsOnlyTheStateAndClusterAskedForByJobId) {
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 30, "Waiting")).ok());
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 7, "Waiting")).ok());
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 12, "Ready")).ok());
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 100, "Failed")).ok());
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 9, "Waiting")).ok());
  ASSERT_TRUE(store_->put_auto_resume(make_row("bbbbbbbbbbbb", 8, "Waiting")).ok());

  auto waiting = store_->auto_resumes("aaaaaaaaaaaa", "Waiting");
  EXPECT_EQ(job_ids(waiting), (std::vector<long long>{7, 9, 30}));
  for (const auto& r : waiting) {
    EXPECT_EQ(r.cluster_id, "aaaaaaaaaaaa");
    EXPECT_EQ(r.state, "Waiting");
  }
  EXPECT_EQ(job_ids(store_->auto_resumes("bbbbbbbbbbbb", "Waiting")), std::vector<long long>{8});
  EXPECT_EQ(job_ids(store_->auto_resumes("aaaaaaaaaaaa", "Failed")), std::vector<long long>{100});
  EXPECT_TRUE(store_->auto_resumes("cccccccccccc", "Waiting").empty());
}

TEST_F(AutoResumeStoreTest, SameJobIdInTwoClustersAreTwoRecords) {
  ASSERT_TRUE(store_->put_auto_resume(make_row("aaaaaaaaaaaa", 5, "Waiting")).ok());
  ASSERT_TRUE(store_->put_auto_resume(make_row("bbbbbbbbbbbb", 5, "Failed")).ok());
  auto a = store_->auto_resume("aaaaaaaaaaaa", 5);
  auto b = store_->auto_resume("bbbbbbbbbbbb", 5);
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->state, "Waiting");
  EXPECT_EQ(b->state, "Failed");
}

bool is_hex48(const std::string& s) {
  return s.size() == 48 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

TEST_F(AutoResumeStoreTest, TokenIsStableAcrossCallsAndReopenAndPerCluster) {
  auto first = store_->auto_resume_token("aaaaaaaaaaaa");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(is_hex48(*first)) << *first;

  auto again = store_->auto_resume_token("aaaaaaaaaaaa");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, *first);

  auto other = store_->auto_resume_token("bbbbbbbbbbbb");
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_TRUE(is_hex48(*other)) << *other;
  EXPECT_NE(*other, *first);

  reopen();
  auto after = store_->auto_resume_token("aaaaaaaaaaaa");
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(*after, *first);
  auto other_after = store_->auto_resume_token("bbbbbbbbbbbb");
  ASSERT_TRUE(other_after.ok()) << other_after.error().message;
  EXPECT_EQ(*other_after, *other);
}

// ---------------------------------------------------------------------------------------
// config.json's auto-resume fields.

TEST(AutoResumeConfigTest, MaxResumesApplied) {
  controller::Config c;
  auto s = c.apply_json({{"AutoResumeMaxResumes", 5}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(c.auto_resume_max_resumes, 5);
  ASSERT_TRUE(c.apply_json({{"AutoResumeMaxResumes", 0}}).ok());
  EXPECT_EQ(c.auto_resume_max_resumes, 0);
  ASSERT_TRUE(c.apply_json({{"AutoResumeMaxResumes", 100}}).ok());
  EXPECT_EQ(c.auto_resume_max_resumes, 100);
}

TEST(AutoResumeConfigTest, MaxResumesBadValuesRefusedNamingTheField) {
  struct Case {
    const char* name;
    json value;
  };
  for (const auto& c : std::vector<Case>{{"negative", -1},
                                         {"above 100", 101},
                                         {"string", "3"},
                                         {"fraction", 2.5},
                                         {"wraps to 1 as a 32-bit int", 4294967297LL}}) {
    SCOPED_TRACE(c.name);
    controller::Config config;
    const int before = config.auto_resume_max_resumes;
    auto s = config.apply_json({{"AutoResumeMaxResumes", c.value}});
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(contains(s.error().message, "AutoResumeMaxResumes")) << s.error().message;
    EXPECT_EQ(config.auto_resume_max_resumes, before);
  }
}

TEST(AutoResumeConfigTest, TimeoutApplied) {
  controller::Config c;
  auto s = c.apply_json({{"AutoResumeTimeoutSeconds", 60}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(c.auto_resume_timeout_seconds, 60);
}

TEST(AutoResumeConfigTest, TimeoutZeroRefusedNamingTheField) {
  controller::Config c;
  const int before = c.auto_resume_timeout_seconds;
  auto s = c.apply_json({{"AutoResumeTimeoutSeconds", 0}});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "AutoResumeTimeoutSeconds")) << s.error().message;
  EXPECT_EQ(c.auto_resume_timeout_seconds, before);
}

// ---------------------------------------------------------------------------------------
// The cli_filter that makes jobs --no-kill, and slurm.conf loading it.

TEST(AutoResumeSlurmConfTest, CliFilterDefaultsToNoKill) {
  const std::string lua = slurm::render_cli_filter();
  EXPECT_TRUE(contains(lua, "options[\"no-kill\"]")) << lua;
  for (const char* fn : {"function slurm_cli_setup_defaults(", "function slurm_cli_pre_submit(",
                         "function slurm_cli_post_submit("}) {
    EXPECT_TRUE(contains(lua, fn)) << fn;
  }
}

TEST(AutoResumeSlurmConfTest, SlurmConfLoadsTheLuaCliFilter) {
  auto layout = test::layout_of({{"controller", "local.c1", 1}, {"worker", "local.c2", 2}},
                                {{"worker", "dev"}});
  ASSERT_FALSE(layout.nodes.empty());
  const std::string conf = slurm::render_slurm_conf(layout);
  bool found = false;
  size_t start = 0;
  while (start <= conf.size()) {
    size_t end = conf.find('\n', start);
    if (end == std::string::npos) end = conf.size();
    if (conf.substr(start, end - start) == "CliFilterPlugins=cli_filter/lua") found = true;
    start = end + 1;
  }
  EXPECT_TRUE(found) << conf;
}

}  // namespace
}  // namespace endure
