#include "slurm/hostlist.h"

#include <cctype>

namespace endure::slurm {
namespace {

Error bad(const std::string& expression, const std::string& why) {
  return make_error("InvalidHostlist", "hostlist \"" + expression + "\": " + why);
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Expands one bracket body ("0-3,7,09-11") after prefix, appending to out.
Status expand_brackets(const std::string& expression, const std::string& prefix,
                       const std::string& body, const std::string& suffix,
                       std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string part = body.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
    size_t dash = part.find('-');
    std::string lo = dash == std::string::npos ? part : part.substr(0, dash);
    std::string hi = dash == std::string::npos ? part : part.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi)) return bad(expression, "range \"" + part + "\" is not N or N-M");
    if (lo.size() > 9 || hi.size() > 9) return bad(expression, "range \"" + part + "\" is too large");
    long a = std::stol(lo), b = std::stol(hi);
    if (b < a) return bad(expression, "range \"" + part + "\" runs backwards");
    if (b - a > 65536) return bad(expression, "range \"" + part + "\" is too large");
    size_t width = lo.size();
    for (long i = a; i <= b; ++i) {
      std::string n = std::to_string(i);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      out.push_back(prefix + n + suffix);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(const std::string& expression) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  auto flush = [&]() -> Status {
    if (item.empty()) return bad(expression, "empty host name");
    size_t open = item.find('[');
    if (open == std::string::npos) {
      out.push_back(item);
    } else {
      size_t close = item.find(']', open);
      if (close == std::string::npos) return bad(expression, "unclosed '['");
      if (item.find('[', close) != std::string::npos) {
        return bad(expression, "more than one bracket in \"" + item + "\"");
      }
      if (auto s = expand_brackets(expression, item.substr(0, open),
                                   item.substr(open + 1, close - open - 1),
                                   item.substr(close + 1), out);
          !s) {
        return s;
      }
    }
    item.clear();
    return {};
  };
  for (char c : expression) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) return bad(expression, "unbalanced brackets");
    if (c == ',' && depth == 0) {
      if (auto s = flush(); !s) return s.error();
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) return bad(expression, "contains a space");
    item += c;
  }
  if (depth != 0) return bad(expression, "unclosed '['");
  if (auto s = flush(); !s) return s.error();
  return out;
}

std::string join_hostlist(const std::vector<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : ",") + h;
  return out;
}

}  // namespace endure::slurm
