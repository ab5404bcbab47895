// Prometheus' text exposition format (version 0.0.4), written by hand: Debian 12 packages
// no C++ Prometheus client (no libprometheus-cpp-dev), and the format is a few lines of
// text. A writer appends families to one string; nothing here takes a lock.
//
//   # HELP endure_nodes Nodes by status.
//   # TYPE endure_nodes gauge
//   endure_nodes{cluster="demo",group="worker",status="Running"} 4
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace endure::metrics {

// Label pairs in the order they are written. Names are the program's own (never input);
// values are escaped.
using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

// A histogram with fixed upper bounds (seconds, ascending); +Inf is implied.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds = default_seconds_bounds());
  void observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // counts()[i]: observations <= bounds()[i] and > bounds()[i-1]; the last is above all.
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  std::uint64_t count() const { return count_; }

  // 0.005 s to 600 s: an API call at the low end, a node replacement at the high end.
  static std::vector<double> default_seconds_bounds();

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

class TextWriter {
 public:
  // The # HELP and # TYPE lines of a family; type is gauge, counter or histogram. Every
  // sample of the family follows before the next family starts (the format requires it).
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  // name_bucket{...,le="..."} cumulative, then name_sum and name_count.
  void histogram(std::string_view name, const Labels& labels, const Histogram& h);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void series(std::string_view name, const Labels& labels, std::string_view le);
  std::string out_;
};

// A label value as the format wants it: backslash, double quote and newline escaped.
void append_escaped(std::string& out, std::string_view value);
// A sample value: integers without a fraction, NaN, +Inf and -Inf spelt as the format does.
void append_value(std::string& out, double value);

}  // namespace endure::metrics
