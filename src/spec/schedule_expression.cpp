#include "spec/schedule_expression.h"

#include <array>
#include <vector>

namespace endure::spec {

namespace {

constexpr std::string_view kScheduleForms =
    "must be cron(minutes hours day-of-month month day-of-week year) or rate(value unit)";
constexpr std::string_view kCronFieldsRule =
    "cron(...) must be six fields, one space apart: minutes hours day-of-month month "
    "day-of-week year";
constexpr std::int64_t kMaxRateValue = 999999999;
constexpr std::array<std::string_view, 7> kScheduleWeekdayNames = {"SUN", "MON", "TUE", "WED",
                                                                   "THU", "FRI", "SAT"};

// What each cron field takes, for the refusals.
constexpr std::string_view kTakesMinute = "one minute 0-59 (no ranges, lists or steps)";
constexpr std::string_view kTakesHour = "one hour 0-23 (no ranges, lists or steps)";
constexpr std::string_view kTakesDayOfMonth =
    "one day 1-31 or ? (? in both day fields means every day)";
constexpr std::string_view kTakesMonth = "one month 1-12, * or */n with n 1-12";
constexpr std::string_view kTakesDayOfWeek =
    "1-7 (1 is SUN), SUN-SAT, ?, L, nL or n#k with k 1-5 (? in both day fields means every "
    "day)";
constexpr std::string_view kTakesYear = "one year 2020-2099 or *";

// s as a number when it is 1 to 9 ASCII digits (no sign, no spaces), else nullopt.
std::optional<std::int64_t> schedule_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  std::int64_t value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool schedule_all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Error cron_out_of(std::string_view field, std::string_view token, std::string_view range) {
  return invalid("cron's " + std::string(field) + " field: " + std::string(token) + " is out of " +
                 std::string(range));
}

Error cron_not_taken(std::string_view field, std::string_view token, std::string_view takes) {
  return invalid("cron's " + std::string(field) + " field: " + std::string(token) +
                 " is not accepted; it takes " + std::string(takes));
}

// A plain number field (minutes, hours, day-of-month, month): one or two digits within
// [lo, hi]. A longer run of digits is out of range when its value is, else refused as a form
// the cloud does not take ("005").
Result<int> cron_number(std::string_view field, std::string_view token, int lo, int hi,
                        std::string_view takes) {
  if (!schedule_all_digits(token)) return cron_not_taken(field, token, takes);
  const auto value = schedule_digits(token);
  const std::string range = std::to_string(lo) + "-" + std::to_string(hi);
  if (!value || *value < lo || *value > hi) return cron_out_of(field, token, range);
  if (token.size() > 2) return cron_not_taken(field, token, takes);
  return static_cast<int>(*value);
}

std::vector<std::string_view> schedule_split_spaces(std::string_view body) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t space = body.find(' ', start);
    out.push_back(body.substr(start, space == std::string_view::npos ? body.npos : space - start));
    if (space == std::string_view::npos) return out;
    start = space + 1;
  }
}

// "SUN".."SAT" -> 0..6.
std::optional<int> schedule_weekday_name(std::string_view token) {
  for (std::size_t i = 0; i < kScheduleWeekdayNames.size(); ++i) {
    if (token == kScheduleWeekdayNames[i]) return static_cast<int>(i);
  }
  return std::nullopt;
}

}  // namespace

bool ScheduleExpression::cron_day_matches(int year, unsigned month, unsigned day) const {
  using namespace std::chrono;
  if (day_of_month_ != 0 && day != static_cast<unsigned>(day_of_month_)) return false;
  if (weekday_rule_ == WeekdayRule::kAny) return true;
  const year_month_day date{std::chrono::year{year}, std::chrono::month{month},
                            std::chrono::day{day}};
  if (static_cast<int>(weekday{sys_days{date}}.c_encoding()) != weekday_) return false;
  switch (weekday_rule_) {
    case WeekdayRule::kEvery:
      return true;
    case WeekdayRule::kLast: {
      const unsigned last = static_cast<unsigned>(
          year_month_day_last{date.year(), month_day_last{date.month()}}.day());
      return day + 7 > last;
    }
    case WeekdayRule::kNth:
      return static_cast<int>((day - 1) / 7 + 1) == nth_;
    case WeekdayRule::kAny:
      break;
  }
  return true;
}

std::optional<ScheduleExpression::TimePoint> ScheduleExpression::next_cron_after(
    TimePoint after) const {
  using namespace std::chrono;
  // Cron fires on whole minutes; the first candidate is the minute after `after`'s.
  const auto start = floor<minutes>(after) + minutes{1};
  const sys_days start_day = floor<days>(start);
  const minutes start_time = start - start_day;
  const minutes fire_time = hours{hour_} + minutes{minute_};
  const year_month_day first{start_day};

  int y = static_cast<int>(first.year());
  unsigned m = static_cast<unsigned>(first.month());
  unsigned d = static_cast<unsigned>(first.day());
  bool first_day = true;  // only the first day is cut short by start_time
  if (year_ != 0 && y < year_) {
    y = year_;
    m = 1;
    d = 1;
    first_day = false;
  }
  const int last_year = year_ != 0 ? year_ : kLastSearchedYear;
  for (; y <= last_year; ++y, m = 1, d = 1, first_day = false) {
    for (; m <= 12; ++m, d = 1, first_day = false) {
      if (static_cast<int>(m) < month_first_ ||
          (static_cast<int>(m) - month_first_) % month_step_ != 0) {
        continue;
      }
      const unsigned last = static_cast<unsigned>(
          year_month_day_last{std::chrono::year{y}, month_day_last{std::chrono::month{m}}}.day());
      for (; d <= last; ++d, first_day = false) {
        if (first_day && fire_time < start_time) continue;
        if (cron_day_matches(y, m, d)) {
          return sys_days{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}} +
                 fire_time;
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<ScheduleExpression::TimePoint> ScheduleExpression::next_after(TimePoint after) const {
  return next_after(after, after);
}

std::optional<ScheduleExpression::TimePoint> ScheduleExpression::next_after(
    TimePoint after, TimePoint anchor) const {
  using namespace std::chrono;
  if (kind_ == Kind::kCron) return next_cron_after(after);
  // Counted in whole seconds, where neither the count nor anchor + k * period can overflow
  // unnoticed: a rate of 999999999 days is far past what system_clock holds.
  const std::int64_t period = period_.count();
  std::int64_t k = 1;
  if (after >= anchor) k = floor<seconds>(after - anchor).count() / period + 1;
  const std::int64_t anchor_s = floor<seconds>(anchor.time_since_epoch()).count();
  const std::int64_t limit_s = duration_cast<seconds>(TimePoint::duration::max()).count() - 1;
  if (k > (limit_s - anchor_s) / period || k > limit_s / period) return std::nullopt;
  return anchor + duration_cast<TimePoint::duration>(seconds{k * period});
}

Result<ScheduleExpression> parse_schedule_expression(std::string_view text) {
  using namespace std::chrono;
  if (text.size() > kMaxScheduleExpressionLength) {
    return invalid("must be at most " + std::to_string(kMaxScheduleExpressionLength) +
                   " characters long");
  }
  ScheduleExpression out;
  out.text_ = std::string(text);
  const bool is_cron = text.starts_with("cron(") && text.ends_with(")");
  const bool is_rate = text.starts_with("rate(") && text.ends_with(")");
  if (!is_cron && !is_rate) return invalid(std::string(kScheduleForms));
  const std::string_view body = text.substr(5, text.size() - 6);
  const std::vector<std::string_view> parts = schedule_split_spaces(body);

  if (is_rate) {
    out.kind_ = ScheduleExpression::Kind::kRate;
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return invalid("rate(...) must be a value and a unit, one space apart, as rate(5 minutes)");
    }
    const auto value = schedule_digits(parts[0]);
    if (!value || *value < 1 || *value > kMaxRateValue) {
      return invalid("rate's value: " + std::string(parts[0]) +
                     " is not a whole number from 1 to " + std::to_string(kMaxRateValue));
    }
    const std::string_view unit = parts[1];
    std::int64_t unit_seconds = 0;
    if (unit == "minute" || unit == "minutes") {
      unit_seconds = 60;
    } else if (unit == "hour" || unit == "hours") {
      unit_seconds = 3600;
    } else if (unit == "day" || unit == "days") {
      unit_seconds = 86400;
    } else {
      return invalid("rate's unit: " + std::string(unit) +
                     " is not one of minute, minutes, hour, hours, day, days");
    }
    const bool plural = unit.ends_with("s");
    if (*value == 1 && plural) {
      return invalid("rate's unit: a value of 1 takes minute, hour or day (singular)");
    }
    if (*value != 1 && !plural) {
      return invalid("rate's unit: a value over 1 takes minutes, hours or days (plural)");
    }
    out.period_ = seconds{*value * unit_seconds};
    return out;
  }

  if (parts.size() != 6) return invalid(std::string(kCronFieldsRule));
  for (std::string_view part : parts) {
    if (part.empty()) return invalid(std::string(kCronFieldsRule));
  }
  const std::string_view minute = parts[0], hour = parts[1], dom = parts[2], month = parts[3],
                         dow = parts[4], year = parts[5];

  auto minute_value = cron_number("minutes", minute, 0, 59, kTakesMinute);
  if (!minute_value) return minute_value.error();
  out.minute_ = *minute_value;

  auto hour_value = cron_number("hours", hour, 0, 23, kTakesHour);
  if (!hour_value) return hour_value.error();
  out.hour_ = *hour_value;

  if (dom != "?") {
    auto day = cron_number("day-of-month", dom, 1, 31, kTakesDayOfMonth);
    if (!day) return day.error();
    out.day_of_month_ = *day;
  }

  if (month == "*") {
    out.month_first_ = 1;
    out.month_step_ = 1;
  } else if (month.starts_with("*/")) {
    const std::string_view step = month.substr(2);
    if (!schedule_all_digits(step)) return cron_not_taken("month", month, kTakesMonth);
    const auto n = schedule_digits(step);
    if (!n || *n < 1 || *n > 12) {
      return invalid("cron's month field: the step " + std::string(step) + " in " +
                     std::string(month) + " is out of 1-12");
    }
    if (step.size() > 2) return cron_not_taken("month", month, kTakesMonth);
    out.month_first_ = 1;
    out.month_step_ = static_cast<int>(*n);
  } else {
    auto m = cron_number("month", month, 1, 12, kTakesMonth);
    if (!m) return m.error();
    out.month_first_ = *m;
    out.month_step_ = 12;
  }

  // Day-of-week, 1 (SUN) to 7 (SAT) as EventBridge numbers them; kept as 0 to 6.
  using Rule = ScheduleExpression::WeekdayRule;
  const std::string weekday_range = "1-7 (1 is SUN, 7 is SAT)";
  auto weekday_digit = [&](char c) -> std::optional<int> {
    if (c < '1' || c > '7') return std::nullopt;
    return c - '1';
  };
  if (dow == "?") {
    out.weekday_rule_ = Rule::kAny;
  } else if (dow == "L") {
    out.weekday_rule_ = Rule::kEvery;  // the last day of the week: every Saturday
    out.weekday_ = 6;
  } else if (auto named = schedule_weekday_name(dow)) {
    out.weekday_rule_ = Rule::kEvery;
    out.weekday_ = *named;
  } else if (schedule_all_digits(dow)) {
    const auto value = schedule_digits(dow);
    if (!value || *value < 1 || *value > 7) return cron_out_of("day-of-week", dow, weekday_range);
    if (dow.size() != 1) return cron_not_taken("day-of-week", dow, kTakesDayOfWeek);
    out.weekday_rule_ = Rule::kEvery;
    out.weekday_ = *weekday_digit(dow[0]);
  } else if (dow.size() == 2 && dow[1] == 'L' && schedule_all_digits(dow.substr(0, 1))) {
    if (!weekday_digit(dow[0])) {
      return invalid("cron's day-of-week field: the " + std::string(1, dow[0]) + " in " +
                     std::string(dow) + " is out of " + weekday_range);
    }
    out.weekday_rule_ = Rule::kLast;
    out.weekday_ = *weekday_digit(dow[0]);
  } else if (dow.size() == 3 && dow[1] == '#' && schedule_all_digits(dow.substr(0, 1)) &&
             schedule_all_digits(dow.substr(2, 1))) {
    if (!weekday_digit(dow[0])) {
      return invalid("cron's day-of-week field: the " + std::string(1, dow[0]) + " in " +
                     std::string(dow) + " is out of " + weekday_range);
    }
    if (dow[2] < '1' || dow[2] > '5') {
      return invalid("cron's day-of-week field: the " + std::string(1, dow[2]) + " in " +
                     std::string(dow) + " is out of 1-5");
    }
    out.weekday_rule_ = Rule::kNth;
    out.weekday_ = *weekday_digit(dow[0]);
    out.nth_ = dow[2] - '0';
  } else {
    return cron_not_taken("day-of-week", dow, kTakesDayOfWeek);
  }

  if (year != "*") {
    if (!schedule_all_digits(year)) return cron_not_taken("year", year, kTakesYear);
    const auto y = schedule_digits(year);
    if (!y || *y < kFirstScheduleYear || *y > kLastScheduleYear) {
      return cron_out_of("year", year, "2020-2099");
    }
    if (year.size() != 4) return cron_not_taken("year", year, kTakesYear);
    out.year_ = static_cast<int>(*y);
  }

  if (out.day_of_month_ != 0 && out.weekday_rule_ != Rule::kAny) {
    return invalid(
        "cron's day-of-month and day-of-week fields: only one may name days; the other must "
        "be ?");
  }
  // A day that never comes (day 30 of month 2, day 29 of month 2 in 2027) would leave the
  // group without its updates and no one told: refused here.
  if (!out.next_cron_after(sys_days{std::chrono::year{1970} / 1 / 1})) {
    return invalid("cron: the fields match no date that exists" +
                   (out.year_ != 0 ? " in " + std::string(year) : std::string()));
  }
  return out;
}

}  // namespace endure::spec
