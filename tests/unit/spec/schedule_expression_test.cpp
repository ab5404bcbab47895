// ScheduleExpression: the cron and rate forms a ScheduledUpdateConfig takes, each refusal's
// words, and the next run across month ends, leap days, weekday rules and the year field.
#include "spec/schedule_expression.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace endure::spec {
namespace {

using SeTime = ScheduleExpression::TimePoint;

// y-m-d hh:mm:ss UTC.
SeTime se_utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0, int ss = 0) {
  using namespace std::chrono;
  return sys_days{year{y} / month{m} / day{d}} + hours{hh} + minutes{mm} + seconds{ss};
}

ScheduleExpression se_parse(const std::string& text) {
  Result<ScheduleExpression> parsed = parse_schedule_expression(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
  if (!parsed) std::abort();
  return *parsed;
}

std::optional<SeTime> se_next(const std::string& text, SeTime after) {
  return se_parse(text).next_after(after);
}

std::string se_refusal(const std::string& text) {
  Result<ScheduleExpression> parsed = parse_schedule_expression(text);
  if (parsed) return "(accepted)";
  EXPECT_EQ(parsed.error().code, "ValidationException") << text;
  return parsed.error().message;
}

TEST(ScheduleExpression, AcceptsEachCronFormTheCloudTakes) {
  const char* accepted[] = {
      "cron(0 3 ? * ? *)",      // every day
      "cron(05 07 ? * ? *)",    // two-digit minute and hour
      "cron(59 23 ? * ? *)",    // the top of both ranges
      "cron(0 12 15 * ? *)",    // a day of the month
      "cron(0 12 01 * ? *)",    // ... with a leading zero
      "cron(0 12 31 * ? *)",    // the last day some months have
      "cron(0 12 1 6 ? *)",     // one month
      "cron(0 12 1 06 ? *)",    // ... with a leading zero
      "cron(0 12 1 12 ? *)",    //
      "cron(0 12 1 */3 ? *)",   // every third month from January
      "cron(0 12 1 */12 ? *)",  //
      "cron(0 12 ? * 1 *)",     // day-of-week numbers, 1 (SUN) to 7 (SAT)
      "cron(0 12 ? * 7 *)",     //
      "cron(0 12 ? * SUN *)",   // and names
      "cron(0 12 ? * MON *)",  "cron(0 12 ? * TUE *)", "cron(0 12 ? * WED *)",
      "cron(0 12 ? * THU *)",  "cron(0 12 ? * FRI *)", "cron(0 12 ? * SAT *)",
      "cron(0 12 ? * L *)",     // the last day of the week
      "cron(0 12 ? * 6L *)",    // the month's last Friday
      "cron(0 12 ? * 3#2 *)",   // the month's second Tuesday
      "cron(0 12 ? * 1#5 *)",   // the month's fifth Sunday, where there is one
      "cron(0 12 1 1 ? 2020)",  // a year, 2020 to 2099
      "cron(0 12 1 1 ? 2099)",  //
  };
  for (const char* text : accepted) {
    Result<ScheduleExpression> parsed = parse_schedule_expression(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->kind(), ScheduleExpression::Kind::kCron);
    EXPECT_EQ(parsed->text(), text);
    EXPECT_EQ(parsed->period(), std::chrono::seconds{0});
  }
}

TEST(ScheduleExpression, AcceptsEachRateForm) {
  using std::chrono::seconds;
  const std::pair<const char*, seconds> accepted[] = {
      {"rate(1 minute)", seconds{60}},
      {"rate(5 minutes)", seconds{300}},
      {"rate(1 hour)", seconds{3600}},
      {"rate(12 hours)", seconds{12 * 3600}},
      {"rate(1 day)", seconds{86400}},
      {"rate(7 days)", seconds{7 * 86400}},
      {"rate(999999999 days)", seconds{999999999LL * 86400}},
  };
  for (const auto& [text, period] : accepted) {
    Result<ScheduleExpression> parsed = parse_schedule_expression(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->kind(), ScheduleExpression::Kind::kRate);
    EXPECT_EQ(parsed->text(), text);
    EXPECT_EQ(parsed->period(), period) << text;
  }
}

TEST(ScheduleExpression, DailyRunsAtTheNextWholeMinuteStrictlyAfter) {
  const std::string daily = "cron(0 3 ? * ? *)";
  EXPECT_EQ(se_next(daily, se_utc(2026, 3, 10, 2, 59, 30)), se_utc(2026, 3, 10, 3, 0));
  // Exactly at the run, or a moment past it: the next one is tomorrow's.
  EXPECT_EQ(se_next(daily, se_utc(2026, 3, 10, 3, 0)), se_utc(2026, 3, 11, 3, 0));
  EXPECT_EQ(se_next(daily, se_utc(2026, 3, 10, 3, 0) + std::chrono::milliseconds{500}),
            se_utc(2026, 3, 11, 3, 0));
  // Across a month's end and a year's end.
  EXPECT_EQ(se_next(daily, se_utc(2026, 1, 31, 4, 0)), se_utc(2026, 2, 1, 3, 0));
  EXPECT_EQ(se_next(daily, se_utc(2026, 2, 28, 4, 0)), se_utc(2026, 3, 1, 3, 0));
  EXPECT_EQ(se_next(daily, se_utc(2028, 2, 28, 4, 0)), se_utc(2028, 2, 29, 3, 0));
  EXPECT_EQ(se_next(daily, se_utc(2026, 12, 31, 4, 0)), se_utc(2027, 1, 1, 3, 0));
  EXPECT_EQ(se_next("cron(59 23 ? * ? *)", se_utc(2026, 12, 31, 23, 59)),
            se_utc(2027, 1, 1, 23, 59));
}

TEST(ScheduleExpression, DayOfMonthSkipsMonthsWithoutThatDay) {
  const std::string on_31st = "cron(0 0 31 * ? *)";
  EXPECT_EQ(se_next(on_31st, se_utc(2026, 1, 31, 1, 0)), se_utc(2026, 3, 31));  // no Feb 31
  EXPECT_EQ(se_next(on_31st, se_utc(2026, 3, 31, 1, 0)), se_utc(2026, 5, 31));  // no Apr 31
  EXPECT_EQ(se_next(on_31st, se_utc(2026, 12, 31, 1, 0)), se_utc(2027, 1, 31));
  EXPECT_EQ(se_next("cron(30 6 15 * ? *)", se_utc(2026, 3, 15, 6, 29)), se_utc(2026, 3, 15, 6, 30));
}

TEST(ScheduleExpression, LeapDayComesEveryFourYearsButNotIn2100) {
  const std::string leap_day = "cron(0 0 29 2 ? *)";
  EXPECT_EQ(se_next(leap_day, se_utc(2026, 1, 1)), se_utc(2028, 2, 29));
  EXPECT_EQ(se_next(leap_day, se_utc(2028, 2, 29)), se_utc(2032, 2, 29));
  EXPECT_EQ(se_next(leap_day, se_utc(2096, 3, 1)), se_utc(2104, 2, 29));  // 2100 is no leap year
  EXPECT_EQ(se_next("cron(0 0 29 2 ? 2028)", se_utc(2026, 1, 1)), se_utc(2028, 2, 29));
}

TEST(ScheduleExpression, MonthsOneOrEveryNthFromJanuary) {
  EXPECT_EQ(se_next("cron(0 0 1 6 ? *)", se_utc(2026, 7, 1)), se_utc(2027, 6, 1));
  EXPECT_EQ(se_next("cron(0 0 1 6 ? *)", se_utc(2026, 5, 31, 23, 59)), se_utc(2026, 6, 1));
  const std::string quarterly = "cron(0 0 1 */3 ? *)";  // Jan, Apr, Jul, Oct
  EXPECT_EQ(se_next(quarterly, se_utc(2026, 2, 15)), se_utc(2026, 4, 1));
  EXPECT_EQ(se_next(quarterly, se_utc(2026, 4, 1)), se_utc(2026, 7, 1));
  EXPECT_EQ(se_next(quarterly, se_utc(2026, 10, 2)), se_utc(2027, 1, 1));
  EXPECT_EQ(se_next("cron(0 0 1 */5 ? *)", se_utc(2026, 6, 2)), se_utc(2026, 11, 1));  // 1, 6, 11
}

TEST(ScheduleExpression, DayOfWeekNumbersRunFromSundayAsOneToSaturdayAsSeven) {
  const SeTime wednesday = se_utc(2026, 3, 11);  // Wed 11 March 2026
  EXPECT_EQ(se_next("cron(0 12 ? * 1 *)", wednesday), se_utc(2026, 3, 15, 12));  // Sun
  EXPECT_EQ(se_next("cron(0 12 ? * SUN *)", wednesday), se_utc(2026, 3, 15, 12));
  EXPECT_EQ(se_next("cron(0 12 ? * 2 *)", wednesday), se_utc(2026, 3, 16, 12));  // Mon
  EXPECT_EQ(se_next("cron(0 12 ? * MON *)", wednesday), se_utc(2026, 3, 16, 12));
  EXPECT_EQ(se_next("cron(0 12 ? * 4 *)", wednesday), se_utc(2026, 3, 11, 12));  // Wed, today
  EXPECT_EQ(se_next("cron(0 12 ? * WED *)", se_utc(2026, 3, 11, 12)), se_utc(2026, 3, 18, 12));
  EXPECT_EQ(se_next("cron(0 12 ? * 7 *)", wednesday), se_utc(2026, 3, 14, 12));  // Sat
  EXPECT_EQ(se_next("cron(0 12 ? * SAT *)", wednesday), se_utc(2026, 3, 14, 12));
  EXPECT_EQ(se_next("cron(0 12 ? * L *)", wednesday), se_utc(2026, 3, 14, 12));  // L: Sat
}

TEST(ScheduleExpression, LastAndNthWeekdayOfTheMonth) {
  const std::string last_friday = "cron(0 12 ? * 6L *)";
  EXPECT_EQ(se_next(last_friday, se_utc(2026, 1, 1)), se_utc(2026, 1, 30, 12));
  EXPECT_EQ(se_next(last_friday, se_utc(2026, 1, 31)), se_utc(2026, 2, 27, 12));
  EXPECT_EQ(se_next(last_friday, se_utc(2026, 3, 1)), se_utc(2026, 3, 27, 12));
  const std::string second_tuesday = "cron(0 12 ? * 3#2 *)";
  EXPECT_EQ(se_next(second_tuesday, se_utc(2026, 3, 1)), se_utc(2026, 3, 10, 12));
  EXPECT_EQ(se_next(second_tuesday, se_utc(2026, 3, 10, 12)), se_utc(2026, 4, 14, 12));
  // A fifth Sunday skips the months that have four: 2026's first is 29 March.
  const std::string fifth_sunday = "cron(0 12 ? * 1#5 *)";
  EXPECT_EQ(se_next(fifth_sunday, se_utc(2026, 1, 1)), se_utc(2026, 3, 29, 12));
  EXPECT_EQ(se_next(fifth_sunday, se_utc(2026, 3, 30)), se_utc(2026, 5, 31, 12));
}

TEST(ScheduleExpression, YearFieldEndsTheSchedule) {
  const std::string once = "cron(0 0 1 1 ? 2030)";
  EXPECT_EQ(se_next(once, se_utc(2026, 6, 1)), se_utc(2030, 1, 1));
  EXPECT_EQ(se_next(once, se_utc(2030, 1, 1)), std::nullopt);  // its one run is past
  EXPECT_EQ(se_next("cron(0 0 ? * ? 2099)", se_utc(2099, 12, 31)), std::nullopt);
  EXPECT_EQ(se_next("cron(0 0 ? * ? 2099)", se_utc(2099, 12, 30, 1)), se_utc(2099, 12, 31));
  // With *, the search ends with kLastSearchedYear.
  EXPECT_EQ(se_next("cron(0 0 ? * ? *)", se_utc(2199, 12, 30, 1)), se_utc(2199, 12, 31));
  EXPECT_EQ(se_next("cron(0 0 ? * ? *)", se_utc(2199, 12, 31)), std::nullopt);
  // Before the year comes, the search starts with it.
  EXPECT_EQ(se_next("cron(0 0 ? * SUN 2027)", se_utc(2026, 3, 11)), se_utc(2027, 1, 3));
}

TEST(ScheduleExpression, RateRunsAPeriodAfterTheLastRunOrOnTheAnchorsGrid) {
  const ScheduleExpression every_5 = se_parse("rate(5 minutes)");
  const SeTime anchor = se_utc(2026, 3, 11, 0, 0);
  // One argument: after is the last run.
  EXPECT_EQ(every_5.next_after(se_utc(2026, 3, 11, 0, 12, 30)), se_utc(2026, 3, 11, 0, 17, 30));
  // With an anchor: the grid anchor + k * period, k >= 1.
  EXPECT_EQ(every_5.next_after(se_utc(2026, 3, 11, 0, 12, 30), anchor), se_utc(2026, 3, 11, 0, 15));
  EXPECT_EQ(every_5.next_after(se_utc(2026, 3, 11, 0, 15), anchor), se_utc(2026, 3, 11, 0, 20));
  EXPECT_EQ(every_5.next_after(anchor, anchor), se_utc(2026, 3, 11, 0, 5));
  EXPECT_EQ(every_5.next_after(se_utc(2026, 3, 10), anchor), se_utc(2026, 3, 11, 0, 5));
  const ScheduleExpression daily = se_parse("rate(1 day)");
  EXPECT_EQ(daily.next_after(se_utc(2028, 2, 28, 9), se_utc(2028, 1, 1, 6)),
            se_utc(2028, 2, 29, 6));
  // Past what system_clock holds: no next run rather than an overflow.
  EXPECT_EQ(se_parse("rate(999999999 days)").next_after(se_utc(2026, 1, 1)), std::nullopt);
  // cron takes no anchor.
  EXPECT_EQ(se_parse("cron(0 3 ? * ? *)").next_after(se_utc(2026, 3, 10), anchor),
            se_utc(2026, 3, 10, 3));
}

TEST(ScheduleExpression, RefusesWhatIsNeitherCronNorRate) {
  const std::string forms =
      "must be cron(minutes hours day-of-month month day-of-week year) or rate(value unit)";
  for (const char* text :
       {"", "0 3 ? * ? *", "CRON(0 3 ? * ? *)", "cron 0 3 ? * ? *", "cron(0 3 ? * ? *",
        " cron(0 3 ? * ? *)", "at(2026-03-11T03:00:00)", "Rate(5 minutes)"}) {
    EXPECT_EQ(se_refusal(text), forms) << text;
  }
  EXPECT_EQ(se_refusal("cron(" + std::string(251, '0') + ")"),
            "must be at most 256 characters long");
}

TEST(ScheduleExpression, RefusesCronWithoutSixSingleSpacedFields) {
  const std::string rule =
      "cron(...) must be six fields, one space apart: minutes hours day-of-month month "
      "day-of-week year";
  for (const char* text :
       {"cron(0 3 ? * ?)", "cron(0 3 ? * ? * *)", "cron(0  3 ? * ? *)", "cron( 0 3 ? * ? *)",
        "cron(0 3 ? * ? * )", "cron()", "cron(* * * * *)"}) {
    EXPECT_EQ(se_refusal(text), rule) << text;
  }
}

TEST(ScheduleExpression, RefusesEachFieldWithItsRule) {
  const std::string minute_takes = "; it takes one minute 0-59 (no ranges, lists or steps)";
  const std::string hour_takes = "; it takes one hour 0-23 (no ranges, lists or steps)";
  const std::string dom_takes =
      "; it takes one day 1-31 or ? (? in both day fields means every day)";
  const std::string month_takes = "; it takes one month 1-12, * or */n with n 1-12";
  const std::string dow_takes =
      "; it takes 1-7 (1 is SUN), SUN-SAT, ?, L, nL or n#k with k 1-5 (? in both day fields "
      "means every day)";
  const std::string year_takes = "; it takes one year 2020-2099 or *";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cron(60 3 ? * ? *)", "cron's minutes field: 60 is out of 0-59"},
      {"cron(999 3 ? * ? *)", "cron's minutes field: 999 is out of 0-59"},
      {"cron(0/15 3 ? * ? *)", "cron's minutes field: 0/15 is not accepted" + minute_takes},
      {"cron(* 3 ? * ? *)", "cron's minutes field: * is not accepted" + minute_takes},
      {"cron(0,30 3 ? * ? *)", "cron's minutes field: 0,30 is not accepted" + minute_takes},
      {"cron(005 3 ? * ? *)", "cron's minutes field: 005 is not accepted" + minute_takes},
      {"cron(-1 3 ? * ? *)", "cron's minutes field: -1 is not accepted" + minute_takes},
      {"cron(0 24 ? * ? *)", "cron's hours field: 24 is out of 0-23"},
      {"cron(0 1-5 ? * ? *)", "cron's hours field: 1-5 is not accepted" + hour_takes},
      {"cron(0 */2 ? * ? *)", "cron's hours field: */2 is not accepted" + hour_takes},
      {"cron(0 3 32 * ? *)", "cron's day-of-month field: 32 is out of 1-31"},
      {"cron(0 3 0 * ? *)", "cron's day-of-month field: 0 is out of 1-31"},
      {"cron(0 3 00 * ? *)", "cron's day-of-month field: 00 is out of 1-31"},
      {"cron(0 3 L * ? *)", "cron's day-of-month field: L is not accepted" + dom_takes},
      {"cron(0 3 15W * ? *)", "cron's day-of-month field: 15W is not accepted" + dom_takes},
      {"cron(0 3 * * ? *)", "cron's day-of-month field: * is not accepted" + dom_takes},
      {"cron(0 3 1-15 * ? *)", "cron's day-of-month field: 1-15 is not accepted" + dom_takes},
      {"cron(0 3 1 13 ? *)", "cron's month field: 13 is out of 1-12"},
      {"cron(0 3 1 0 ? *)", "cron's month field: 0 is out of 1-12"},
      {"cron(0 3 1 JAN ? *)", "cron's month field: JAN is not accepted" + month_takes},
      {"cron(0 3 1 1-6 ? *)", "cron's month field: 1-6 is not accepted" + month_takes},
      {"cron(0 3 1 1/3 ? *)", "cron's month field: 1/3 is not accepted" + month_takes},
      {"cron(0 3 1 */13 ? *)", "cron's month field: the step 13 in */13 is out of 1-12"},
      {"cron(0 3 1 */0 ? *)", "cron's month field: the step 0 in */0 is out of 1-12"},
      {"cron(0 3 1 */x ? *)", "cron's month field: */x is not accepted" + month_takes},
      {"cron(0 3 ? * 0 *)", "cron's day-of-week field: 0 is out of 1-7 (1 is SUN, 7 is SAT)"},
      {"cron(0 3 ? * 8 *)", "cron's day-of-week field: 8 is out of 1-7 (1 is SUN, 7 is SAT)"},
      {"cron(0 3 ? * 01 *)", "cron's day-of-week field: 01 is not accepted" + dow_takes},
      {"cron(0 3 ? * 10 *)", "cron's day-of-week field: 10 is out of 1-7 (1 is SUN, 7 is SAT)"},
      {"cron(0 3 ? * mon *)", "cron's day-of-week field: mon is not accepted" + dow_takes},
      {"cron(0 3 ? * MON-FRI *)", "cron's day-of-week field: MON-FRI is not accepted" + dow_takes},
      {"cron(0 3 ? * 2,4 *)", "cron's day-of-week field: 2,4 is not accepted" + dow_takes},
      {"cron(0 3 ? * * *)", "cron's day-of-week field: * is not accepted" + dow_takes},
      {"cron(0 3 ? * FRIL *)", "cron's day-of-week field: FRIL is not accepted" + dow_takes},
      {"cron(0 3 ? * 8L *)",
       "cron's day-of-week field: the 8 in 8L is out of 1-7 (1 is SUN, 7 is SAT)"},
      {"cron(0 3 ? * 0#2 *)",
       "cron's day-of-week field: the 0 in 0#2 is out of 1-7 (1 is SUN, 7 is SAT)"},
      {"cron(0 3 ? * 2#6 *)", "cron's day-of-week field: the 6 in 2#6 is out of 1-5"},
      {"cron(0 3 ? * 2#0 *)", "cron's day-of-week field: the 0 in 2#0 is out of 1-5"},
      {"cron(0 3 ? * ? 2100)", "cron's year field: 2100 is out of 2020-2099"},
      {"cron(0 3 ? * ? 2019)", "cron's year field: 2019 is out of 2020-2099"},
      {"cron(0 3 ? * ? 1970)", "cron's year field: 1970 is out of 2020-2099"},
      {"cron(0 3 ? * ? 02030)", "cron's year field: 02030 is not accepted" + year_takes},
      {"cron(0 3 ? * ? 2026-2027)", "cron's year field: 2026-2027 is not accepted" + year_takes},
      {"cron(0 3 ? * ? ?)", "cron's year field: ? is not accepted" + year_takes},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(se_refusal(text), message) << text;
}

TEST(ScheduleExpression, RefusesBothDayFieldsNamingDays) {
  const std::string rule =
      "cron's day-of-month and day-of-week fields: only one may name days; the other must be ?";
  EXPECT_EQ(se_refusal("cron(0 3 15 * MON *)"), rule);
  EXPECT_EQ(se_refusal("cron(0 3 1 * 6L *)"), rule);
  EXPECT_EQ(se_refusal("cron(0 3 1 * 2#1 *)"), rule);
}

TEST(ScheduleExpression, RefusesADateThatNeverComes) {
  EXPECT_EQ(se_refusal("cron(0 0 30 2 ? *)"), "cron: the fields match no date that exists");
  EXPECT_EQ(se_refusal("cron(0 0 31 4 ? *)"), "cron: the fields match no date that exists");
  EXPECT_EQ(se_refusal("cron(0 0 29 2 ? 2027)"),
            "cron: the fields match no date that exists in 2027");
  // February 2027 has four of each weekday.
  EXPECT_EQ(se_refusal("cron(0 0 ? 2 5#5 2027)"),
            "cron: the fields match no date that exists in 2027");
  EXPECT_EQ(se_refusal("cron(0 0 ? 2 5#5 2024)"), "(accepted)");  // Thu 29 Feb 2024
}

TEST(ScheduleExpression, RefusesEachBrokenRate) {
  const std::string value_rule = " is not a whole number from 1 to 999999999";
  const std::string shape =
      "rate(...) must be a value and a unit, one space apart, as rate(5 minutes)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"rate(0 minutes)", "rate's value: 0" + value_rule},
      {"rate(-5 minutes)", "rate's value: -5" + value_rule},
      {"rate(1.5 hours)", "rate's value: 1.5" + value_rule},
      {"rate(1000000000 days)", "rate's value: 1000000000" + value_rule},
      {"rate(five minutes)", "rate's value: five" + value_rule},
      {"rate(5 weeks)", "rate's unit: weeks is not one of minute, minutes, hour, hours, day, days"},
      {"rate(5 Minutes)",
       "rate's unit: Minutes is not one of minute, minutes, hour, hours, day, days"},
      {"rate(1 hours)", "rate's unit: a value of 1 takes minute, hour or day (singular)"},
      {"rate(1 days)", "rate's unit: a value of 1 takes minute, hour or day (singular)"},
      {"rate(5 hour)", "rate's unit: a value over 1 takes minutes, hours or days (plural)"},
      {"rate(2 minute)", "rate's unit: a value over 1 takes minutes, hours or days (plural)"},
      {"rate(5minutes)", shape},
      {"rate(5  minutes)", shape},
      {"rate(5 minutes )", shape},
      {"rate()", shape},
      {"rate(5)", shape},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(se_refusal(text), message) << text;
}

TEST(ScheduleExpression, TheSameTextIsTheSameSchedule) {
  EXPECT_EQ(se_parse("cron(0 3 ? * SUN *)"), se_parse("cron(0 3 ? * SUN *)"));
  EXPECT_FALSE(se_parse("cron(0 3 ? * SUN *)") == se_parse("cron(0 3 ? * 1 *)"));
}

}  // namespace
}  // namespace endure::spec
