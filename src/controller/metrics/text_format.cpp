#include "controller/metrics/text_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace endure::metrics {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

std::vector<double> Histogram::default_seconds_bounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

void Histogram::observe(double value) {
  auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[static_cast<std::size_t>(at)] += 1;
  sum_ += value;
  count_ += 1;
}

void append_escaped(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<long long>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);  // shortest round-trip form
  }
}

void TextWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void TextWriter::series(std::string_view name, const Labels& labels, std::string_view le) {
  out_ += name;
  if (labels.empty() && le.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += key;
    out_ += "=\"";
    append_escaped(out_, value);
    out_ += '"';
  }
  if (!le.empty()) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += '}';
}

void TextWriter::sample(std::string_view name, const Labels& labels, double value) {
  series(name, labels, "");
  out_ += ' ';
  append_value(out_, value);
  out_ += '\n';
}

void TextWriter::histogram(std::string_view name, const Labels& labels, const Histogram& h) {
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  std::string le;
  for (std::size_t i = 0; i <= h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    le.clear();
    if (i < h.bounds().size()) {
      append_value(le, h.bounds()[i]);
    } else {
      le = "+Inf";
    }
    series(bucket, labels, le);
    out_ += ' ';
    append_value(out_, static_cast<double>(cumulative));
    out_ += '\n';
  }
  sample(std::string(name) + "_sum", labels, h.sum());
  sample(std::string(name) + "_count", labels, static_cast<double>(h.count()));
}

}  // namespace endure::metrics
