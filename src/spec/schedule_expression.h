// A ScheduledUpdateConfig's ScheduleExpression: when an instance group's scheduled software
// update runs, parsed once and asked for its next time.
//
// cron(minutes hours day-of-month month day-of-week year), in UTC, in the form the cloud
// service accepts for HyperPod. The API reference says only "a cron expression" (1 to 256
// characters); the cloud's own schema for the field (CloudFormation's
// AWS::SageMaker::Cluster ScheduledUpdateConfig, ScheduleExpression's Pattern) says which:
//
//   field          takes                                        e.g.
//   minutes        one minute 0-59 (one or two digits)          0, 05, 30
//   hours          one hour 0-23 (one or two digits)            3, 03, 23
//   day-of-month   one day 1-31, or ?                           1, 15, ?
//   month          one month 1-12, *, or */n with n 1-12        6, *, */3 (1, 4, 7, 10)
//   day-of-week    1-7 (1 is SUN, 7 is SAT), SUN..SAT, ?,       MON, 2, ?,
//                  L (the last day of the week, SAT),           L,
//                  nL (the month's last weekday n),             6L (last Friday),
//                  n#k (the month's k-th weekday n, k 1-5)      3#2 (second Tuesday)
//   year           one year 2020-2099, or *                     2027, *
//
// So no ranges (a-b), lists (a,b), steps outside the month (a/n), month names, W, or L in
// day-of-month: EventBridge's cron takes those, HyperPod's does not, and each is refused with
// the rule its field follows. Day-of-month and day-of-week may not both name days (the rule
// of AWS cron, EventBridge's "if you use a value in one, you must use ? in the other"); as
// HyperPod's form has no * for either, ? in both means every day: cron(0 3 ? * ? *) is 03:00
// UTC daily. An expression that matches no date at all (cron(0 0 30 2 ? *)) is refused.
//
// rate(value unit), EventBridge's form, is endure's addition (issue 48 asks for "a cron or a
// rate expression"; the cloud's HyperPod takes only cron): value a whole number from 1 to
// 999999999, unit minute | minutes | hour | hours | day | days, singular for 1 and plural
// otherwise, as EventBridge requires: rate(1 day), rate(12 hours).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace endure::spec {

inline constexpr std::size_t kMaxScheduleExpressionLength = 256;  // the cloud's bound
inline constexpr int kFirstScheduleYear = 2020;  // the cron year field's range, the cloud's
inline constexpr int kLastScheduleYear = 2099;
// With year *, next_after looks no further than the end of this year (the last one AWS cron
// knows, and well inside what system_clock holds).
inline constexpr int kLastSearchedYear = 2199;

class ScheduleExpression {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  enum class Kind { kCron, kRate };

  Kind kind() const { return kind_; }
  // The expression as written: what DescribeCluster echoes.
  const std::string& text() const { return text_; }
  // A rate's period (zero for cron).
  std::chrono::seconds period() const { return period_; }

  // The first time strictly after `after`, or nullopt when there is none.
  // cron: the next whole minute in UTC that the fields match; nullopt past the year field's
  // last year (kLastSearchedYear for *). rate: after + period (a rate counts from its last
  // run: next_after(last_run) is the next run).
  std::optional<TimePoint> next_after(TimePoint after) const;
  // rate: the first anchor + k * period (k >= 1) strictly after `after`: the runs of a rate
  // that started at anchor (when the schedule was set), however late `after` is. cron: the
  // anchor means nothing, as above. nullopt where system_clock cannot hold the answer.
  std::optional<TimePoint> next_after(TimePoint after, TimePoint anchor) const;

  // The same text is the same schedule.
  bool operator==(const ScheduleExpression& other) const { return text_ == other.text_; }

 private:
  friend Result<ScheduleExpression> parse_schedule_expression(std::string_view text);
  ScheduleExpression() = default;

  // A cron day-of-week field.
  enum class WeekdayRule { kAny, kEvery, kLast, kNth };

  bool cron_day_matches(int year, unsigned month, unsigned day) const;
  std::optional<TimePoint> next_cron_after(TimePoint after) const;

  Kind kind_ = Kind::kCron;
  std::string text_;
  std::chrono::seconds period_{0};  // rate
  int minute_ = 0;                  // cron, 0-59
  int hour_ = 0;                    // 0-23
  int day_of_month_ = 0;            // 1-31; 0: ?
  int month_first_ = 1;             // the months month_first_, +month_step_, ... up to 12
  int month_step_ = 1;              // (one month: step 12)
  WeekdayRule weekday_rule_ = WeekdayRule::kAny;
  int weekday_ = 0;  // 0 (SUN) - 6 (SAT), for kEvery, kLast, kNth
  int nth_ = 0;      // 1-5, for kNth
  int year_ = 0;     // 2020-2099; 0: *
};

// Parses a ScheduleExpression (the forms above), or a ValidationException whose message names
// the rule it breaks without a field path ("cron's day-of-month field: 32 is out of 1-31");
// the caller puts the path in front.
Result<ScheduleExpression> parse_schedule_expression(std::string_view text);

}  // namespace endure::spec
