#include "cli/table.h"

#include <algorithm>

namespace endure::cli {
namespace {

// A cell must stay on one line for the columns to line up.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

void pad_to(std::string& line, size_t used, size_t width) {
  if (width > used) line.append(width - used, ' ');
}

void trim_right(std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
}

}  // namespace

const json* find_path(const json& value, std::string_view path) {
  const json* at = &value;
  while (!path.empty()) {
    size_t dot = path.find('.');
    std::string key(path.substr(0, dot));
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return at;
}

std::string cell_text(const json* value) {
  if (value == nullptr || value->is_null()) return "-";
  if (value->is_string()) return value->get<std::string>();
  return value->dump(-1, ' ', false, json::error_handler_t::replace);
}

size_t display_width(std::string_view text) {
  // Every UTF-8 code point has exactly one byte that is not a continuation byte (10xxxxxx).
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string format_table(const std::vector<std::string>& headers,
                         const std::vector<std::vector<std::string>>& rows) {
  if (headers.empty()) return "";
  std::vector<std::vector<std::string>> lines;
  lines.reserve(rows.size() + 1);
  lines.push_back({});
  for (const auto& h : headers) lines.back().push_back(one_line(h));
  for (const auto& row : rows) {
    std::vector<std::string> cells(headers.size());
    for (size_t i = 0; i < cells.size() && i < row.size(); ++i) cells[i] = one_line(row[i]);
    lines.push_back(std::move(cells));
  }

  std::vector<size_t> widths(headers.size(), 0);
  for (const auto& cells : lines) {
    for (size_t i = 0; i < cells.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(cells[i]));
    }
  }

  auto render = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) line += "  ";
      line += cells[i];
      pad_to(line, display_width(cells[i]), widths[i]);
    }
    trim_right(line);
    return line + "\n";
  };

  std::vector<std::string> separator;
  for (size_t w : widths) separator.push_back(std::string(w, '-'));

  std::string out = render(lines[0]) + render(separator);
  for (size_t i = 1; i < lines.size(); ++i) out += render(lines[i]);
  return out;
}

std::string format_json_table(const json& items, const std::vector<Column>& columns) {
  std::vector<std::string> headers;
  for (const auto& c : columns) headers.push_back(c.header);
  std::vector<std::vector<std::string>> rows;
  if (items.is_array()) {
    for (const auto& item : items) {
      std::vector<std::string> row;
      for (const auto& c : columns) row.push_back(cell_text(find_path(item, c.path)));
      rows.push_back(std::move(row));
    }
  }
  return format_table(headers, rows);
}

std::string format_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
  size_t key_width = 0;
  for (const auto& [key, value] : fields) key_width = std::max(key_width, display_width(key));
  std::string out;
  for (const auto& [key, value] : fields) {
    std::string line = key + ":";
    pad_to(line, display_width(key) + 1, key_width + 2);
    line += one_line(value);
    trim_right(line);
    out += line + "\n";
  }
  return out;
}

}  // namespace endure::cli
