// The node state table: names as the store spells them, every row accepted, everything else
// refused, every state reachable and left, and docs/node-states.md equal to what it renders.
#include "controller/core/node_state.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace endure::controller {
namespace {

// Every (status, stage) pair, whether the table uses it or not.
std::vector<NodeState> every_state() {
  std::vector<NodeState> out;
  for (auto s : all_node_statuses()) {
    for (auto g : all_recovery_stages()) out.push_back({s, g});
  }
  return out;
}

// Every event the tables name, plus none and one they never name.
std::set<std::string> every_event() {
  std::set<std::string> out = {"", "NoSuchEvent"};
  for (const auto& t : node_transitions()) out.insert(t.event);
  for (const auto& t : lifecycle_transitions()) out.insert(t.event);
  return out;
}

// A state as a number, for sets and maps: -1 for a new row.
int code(const std::optional<NodeState>& s) {
  return s ? static_cast<int>(s->status) * 10 + static_cast<int>(s->stage) : -1;
}
NodeState decode(int c) {
  return {static_cast<NodeStatus>(c / 10), static_cast<RecoveryStage>(c % 10)};
}

// The events the table allows for each (from, to).
std::map<std::pair<int, int>, std::set<std::string>> events_by_pair() {
  std::map<std::pair<int, int>, std::set<std::string>> out;
  for (const auto& t : node_transitions()) out[{code(t.from), code(t.to)}].insert(t.event);
  return out;
}

void expect_refused(const Status& s) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "InvalidTransition");
}

TEST(NodeStateNames, EveryValueRoundTripsThroughParse) {
  for (auto v : all_node_statuses()) EXPECT_EQ(parse_node_status(name(v)), v) << name(v);
  for (auto v : all_recovery_stages()) EXPECT_EQ(parse_recovery_stage(name(v)), v) << name(v);
  for (auto v : all_lifecycle_statuses()) EXPECT_EQ(parse_lifecycle_status(name(v)), v);
  for (auto v : all_healths()) EXPECT_EQ(parse_health(name(v)), v) << name(v);
  EXPECT_EQ(all_node_statuses().size(), 8u);
  EXPECT_EQ(all_recovery_stages().size(), 6u);
  EXPECT_EQ(all_lifecycle_statuses().size(), 5u);
  EXPECT_EQ(all_healths().size(), 3u);
}

TEST(NodeStateNames, NamesAreTheStringsTheStoreHolds) {
  EXPECT_STREQ(name(NodeStatus::kDeepHealthCheckInProgress), "DeepHealthCheckInProgress");
  EXPECT_STREQ(name(NodeStatus::kShuttingDown), "ShuttingDown");
  EXPECT_STREQ(name(RecoveryStage::kNone), "");
  EXPECT_STREQ(name(RecoveryStage::kTerminating), "Terminating");
  EXPECT_STREQ(name(LifecycleStatus::kNotStarted), "NotStarted");
  EXPECT_STREQ(name(Health::kUnknown), "Unknown");
  // Case matters and the cloud API's NotFound is never stored.
  EXPECT_FALSE(parse_node_status("running"));
  EXPECT_FALSE(parse_node_status("NotFound"));
  EXPECT_FALSE(parse_node_status(""));
  EXPECT_FALSE(parse_recovery_stage("None"));
  EXPECT_FALSE(parse_lifecycle_status(""));
  EXPECT_FALSE(parse_health("healthy"));
}

TEST(NodeStateNames, AStoredRowReadsAsAState) {
  EXPECT_EQ(parse_node_state("Running", "Requested"),
            (NodeState{NodeStatus::kRunning, RecoveryStage::kRequested}));
  EXPECT_EQ(parse_node_state("Pending", ""), (NodeState{NodeStatus::kPending}));
  EXPECT_FALSE(parse_node_state("Pending", "Later"));
  EXPECT_FALSE(parse_node_state("Creating", ""));
  EXPECT_EQ(to_string({NodeStatus::kRunning, RecoveryStage::kDrained}), "Running/Drained");
  EXPECT_EQ(to_string({NodeStatus::kRunning}), "Running");
}

// One case per row: the table walk.
class EveryNodeTransition : public testing::TestWithParam<size_t> {};

TEST_P(EveryNodeTransition, IsAccepted) {
  const auto& t = node_transitions()[GetParam()];
  Status s = check_transition(t.from, t.to, t.event);
  EXPECT_TRUE(s.ok()) << s.error().message;
}

std::string row_test_name(size_t index, const char* event) {
  return std::to_string(index) + "_" + (*event ? event : "NoEvent");
}

INSTANTIATE_TEST_SUITE_P(NodeTable, EveryNodeTransition,
                         testing::Range<size_t>(0, node_transitions().size()),
                         [](const testing::TestParamInfo<size_t>& row) {
                           return row_test_name(row.param, node_transitions()[row.param].event);
                         });

class EveryLifecycleTransition : public testing::TestWithParam<size_t> {};

TEST_P(EveryLifecycleTransition, IsAccepted) {
  const auto& t = lifecycle_transitions()[GetParam()];
  Status s = check_lifecycle_transition(t.from, t.to, t.event);
  EXPECT_TRUE(s.ok()) << s.error().message;
}

INSTANTIATE_TEST_SUITE_P(LifecycleTable, EveryLifecycleTransition,
                         testing::Range<size_t>(0, lifecycle_transitions().size()),
                         [](const testing::TestParamInfo<size_t>& row) {
                           return row_test_name(row.param,
                                                lifecycle_transitions()[row.param].event);
                         });

TEST(NodeTable, RowsAreUniqueExplainedAndNeverRedundant) {
  std::set<std::tuple<int, int, std::string>> seen;
  for (const auto& t : node_transitions()) {
    SCOPED_TRACE(std::string(t.event) + " to " + to_string(t.to));
    EXPECT_TRUE(seen.insert({code(t.from), code(t.to), t.event}).second) << "a duplicate row";
    EXPECT_STRNE(t.why, "");
    // Same state without an event is always allowed: a row for it says nothing.
    EXPECT_FALSE(t.from == t.to && *t.event == '\0');
    if (!t.from) {
      EXPECT_EQ(t.to, NodeState{NodeStatus::kPending});
    }
  }
}

TEST(NodeTable, SameStateWithoutAnEventIsAlwaysAllowed) {
  for (const auto& s : every_state()) EXPECT_TRUE(check_transition(s, s, "").ok()) << to_string(s);
}

TEST(NodeTable, EveryPairNotInTheTableIsRefusedWhateverTheEvent) {
  auto pairs = events_by_pair();
  std::vector<std::optional<NodeState>> froms = {std::nullopt};
  for (const auto& s : every_state()) froms.push_back(s);
  int refused = 0;
  for (const auto& from : froms) {
    for (const auto& to : every_state()) {
      if (from == to || pairs.count({code(from), code(to)})) continue;
      for (const auto& event : every_event()) {
        expect_refused(check_transition(from, to, event));
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 1000);  // the loop really ran over the whole square
}

TEST(NodeTable, ARowsPairWithAnotherEventIsRefused) {
  for (const auto& [pair, allowed] : events_by_pair()) {
    std::optional<NodeState> from;
    if (pair.first >= 0) from = decode(pair.first);
    NodeState to = decode(pair.second);
    for (const auto& event : every_event()) {
      if (allowed.count(event) || (from == to && event.empty())) continue;
      SCOPED_TRACE(to_string(to) + " with " + event);
      expect_refused(check_transition(from, to, event));
    }
  }
}

TEST(NodeTable, ARefusalNamesFromToAndTheEvent) {
  Status s = check_transition(NodeState{NodeStatus::kRunning, RecoveryStage::kDrained},
                              NodeState{NodeStatus::kTerminated}, "NodeRebooting");
  expect_refused(s);
  EXPECT_NE(s.error().message.find("Running/Drained -> Terminated"), std::string::npos);
  EXPECT_NE(s.error().message.find("NodeRebooting"), std::string::npos);
  s = check_transition(std::nullopt, NodeState{NodeStatus::kRunning}, "");
  expect_refused(s);
  EXPECT_NE(s.error().message.find("a new row -> Running"), std::string::npos);
}

// The states the table uses (by code), and each one's successors (self-loops left out).
std::map<int, std::set<int>> successors() {
  std::map<int, std::set<int>> out;
  for (const auto& t : node_transitions()) {
    out[code(t.to)];
    if (t.from && !(*t.from == t.to)) out[code(t.from)].insert(code(t.to));
  }
  return out;
}

TEST(NodeTable, EveryStateIsReachableFromANewRow) {
  auto next = successors();
  std::set<int> reached;
  std::vector<int> todo;
  for (const auto& t : node_transitions()) {
    if (!t.from) todo.push_back(code(t.to));
  }
  while (!todo.empty()) {
    int s = todo.back();
    todo.pop_back();
    if (!reached.insert(s).second) continue;
    for (int n : next[s]) todo.push_back(n);
  }
  for (const auto& [s, _] : next) EXPECT_TRUE(reached.count(s)) << to_string(decode(s));
}

TEST(NodeTable, EveryStateThatIsNotAnEndHasAWayOutAndEveryStateCanEnd) {
  auto next = successors();
  for (const auto& [s, out] : next) {
    if (!is_final(decode(s).status)) {
      EXPECT_FALSE(out.empty()) << to_string(decode(s)) << " is a dead end";
    }
  }
  // Backwards from the ends: every state leads to one.
  std::set<int> ends;
  for (const auto& [s, _] : next) {
    if (is_final(decode(s).status)) ends.insert(s);
  }
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& [s, out] : next) {
      if (ends.count(s)) continue;
      for (int n : out) {
        if (ends.count(n)) grew = ends.insert(s).second || grew;
      }
    }
  }
  for (const auto& [s, _] : next) {
    EXPECT_TRUE(ends.count(s)) << to_string(decode(s)) << " never ends";
  }
}

TEST(LifecycleTable, EveryOtherChangeIsRefused) {
  std::map<std::pair<LifecycleStatus, LifecycleStatus>, std::set<std::string>> allowed;
  for (const auto& t : lifecycle_transitions()) allowed[{t.from, t.to}].insert(t.event);
  for (auto from : all_lifecycle_statuses()) {
    for (auto to : all_lifecycle_statuses()) {
      for (const auto& event : every_event()) {
        Status s = check_lifecycle_transition(from, to, event);
        bool ok = allowed[{from, to}].count(event) || (from == to && event.empty());
        SCOPED_TRACE(std::string(name(from)) + " -> " + name(to) + " with " + event);
        if (ok) {
          EXPECT_TRUE(s.ok());
        } else {
          expect_refused(s);
        }
      }
    }
  }
}

TEST(LifecycleTable, TheAgentsRulesHold) {
  using L = LifecycleStatus;
  // A terminal outcome is not overwritten by a later report (handle_agent keeps it).
  expect_refused(check_lifecycle_transition(L::kSucceeded, L::kFailed, "LifecycleFailed"));
  expect_refused(check_lifecycle_transition(L::kFailed, L::kSucceeded, "LifecycleSucceeded"));
  // A rebooting node's outcomes are its boot scripts', and it never goes back to InProgress.
  expect_refused(check_lifecycle_transition(L::kRebooting, L::kSucceeded, "LifecycleSucceeded"));
  expect_refused(check_lifecycle_transition(L::kRebooting, L::kInProgress, ""));
  EXPECT_TRUE(check_lifecycle_transition(L::kInProgress, L::kInProgress, "").ok());
}

TEST(LifecycleTable, EveryStatusIsReachableFromNotStarted) {
  std::set<LifecycleStatus> reached = {LifecycleStatus::kNotStarted};
  for (size_t round = 0; round < all_lifecycle_statuses().size(); ++round) {
    for (const auto& t : lifecycle_transitions()) {
      if (reached.count(t.from)) reached.insert(t.to);
    }
  }
  EXPECT_EQ(reached.size(), all_lifecycle_statuses().size());
}

std::string read_docs() {
  std::ifstream in(std::string(ENDURE_SOURCE_DIR) + "/docs/node-states.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text between `<!-- tag:begin -->\n` and `<!-- tag:end -->`.
std::string between_markers(const std::string& docs, const std::string& tag) {
  std::string begin = "<!-- " + tag + ":begin -->\n", end = "<!-- " + tag + ":end -->";
  auto b = docs.find(begin);
  auto e = docs.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return "(no markers " + tag + ")";
  return docs.substr(b + begin.size(), e - b - begin.size());
}

TEST(NodeStateDocs, TheDiagramsAreWhatTheTablesRender) {
  std::string docs = read_docs();
  ASSERT_FALSE(docs.empty()) << "docs/node-states.md is missing";
  EXPECT_EQ(between_markers(docs, "node-states"), "```mermaid\n" + node_state_diagram() + "```\n");
  EXPECT_EQ(between_markers(docs, "lifecycle-states"),
            "```mermaid\n" + lifecycle_diagram() + "```\n");
}

std::string cell(const char* event) { return *event ? event : "(none)"; }

TEST(NodeStateDocs, EveryRowIsInTheTransitionTables) {
  std::string docs = read_docs();
  for (const auto& t : node_transitions()) {
    std::string line = "| " + (t.from ? to_string(*t.from) : std::string("(new row)")) + " | " +
                       to_string(t.to) + " | " + cell(t.event) + " | " + t.why + " |\n";
    EXPECT_NE(docs.find(line), std::string::npos) << "docs/node-states.md lacks: " << line;
  }
  for (const auto& t : lifecycle_transitions()) {
    std::string line = std::string("| ") + name(t.from) + " | " + name(t.to) + " | " +
                       cell(t.event) + " | " + t.why + " |\n";
    EXPECT_NE(docs.find(line), std::string::npos) << "docs/node-states.md lacks: " << line;
  }
}

}  // namespace
}  // namespace endure::controller
