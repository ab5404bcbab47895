#include "cli/table.h"

#include <algorithm>
#include <ostream>

#include "api/fields.h"

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

// Reply printers.

namespace {

namespace f = api::field;

// "InstanceStatus.Status": a dotted path of wire field names, for find_path and Column.
std::string path(const char* outer, const char* inner) { return std::string(outer) + "." + inner; }

}  // namespace

Column same(const char* name) { return {name, name}; }

void print_cluster_arn(const json& reply, std::ostream& out) {
  out << cell_text(find_path(reply, f::kClusterArn)) << "\n";
}

void print_cluster(const json& reply, std::ostream& out) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (const char* key : {f::kClusterName, f::kClusterArn, f::kClusterStatus, f::kCreationTime,
                          f::kFailureMessage, f::kNodeRecovery}) {
    const json* value = find_path(reply, key);
    bool empty = !value || value->is_null() || (value->is_string() && value->empty());
    if (std::string_view(key) == f::kFailureMessage && empty) continue;
    fields.emplace_back(key, cell_text(value));
  }
  // "Enable, 20 % of memory": absent when the cluster never set it.
  if (const json* tier = find_path(reply, f::kTieredStorageConfig); tier && tier->is_object()) {
    std::string text = cell_text(find_path(*tier, f::kMode));
    if (const json* percent = find_path(*tier, f::kInstanceMemoryAllocationPercentage)) {
      text += ", " + cell_text(percent) + " % of memory";
    }
    fields.emplace_back(f::kTieredStorageConfig, text);
  }
  out << format_fields(fields) << "\n";
  const json* groups = find_path(reply, f::kInstanceGroups);
  out << format_json_table(
      groups ? *groups : json(),
      {same(f::kInstanceGroupName), same(f::kRole), same(f::kInstanceType), same(f::kCurrentCount),
       same(f::kTargetCount), same(f::kCurrentWarmSpares), same(f::kPartitionName),
       {"Scaling", path(f::kActiveOperations, "Scaling")}});
}

void print_clusters(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, f::kClusterSummaries);
  out << format_json_table(list ? *list : json(),
                           {same(f::kClusterName), same(f::kClusterStatus), same(f::kCreationTime),
                            same(f::kClusterId), same(f::kClusterArn)});
}

void print_nodes(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, f::kClusterNodeSummaries);
  out << format_json_table(list ? *list : json(),
                           {same(f::kNodeName),
                            same(f::kInstanceId),
                            same(f::kNodeLogicalId),
                            same(f::kInstanceGroupName),
                            same(f::kInstanceType),
                            {f::kStatus, path(f::kInstanceStatus, f::kStatus)},
                            {f::kMessage, path(f::kInstanceStatus, f::kMessage)},
                            same(f::kLaunchTime)});
}

void print_hosts(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, f::kHostSummaries);
  out << format_json_table(
      list ? *list : json(),
      {same(f::kHostName), same(f::kPoolName), same(f::kAddress), same(f::kPort), same(f::kState),
       same(f::kClusterId), same(f::kInstanceId), same(f::kReason)});
}

void print_host(const json& reply, std::ostream& out) {
  const json* host = find_path(reply, f::kHost);
  print_hosts({{f::kHostSummaries, json::array({host ? *host : json::object()})}}, out);
}

void print_node(const json& reply, std::ostream& out) {
  const json* node = find_path(reply, f::kNodeDetails);
  const json& details = node ? *node : reply;
  static const std::vector<Column> kFields = {
      same(f::kNodeName),
      same(f::kInstanceId),
      same(f::kNodeLogicalId),
      same(f::kInstanceGroupName),
      same(f::kInstanceType),
      same(f::kRole),
      {f::kStatus, path(f::kInstanceStatus, f::kStatus)},
      {f::kMessage, path(f::kInstanceStatus, f::kMessage)},
      same(f::kLaunchTime),
      same(f::kPrivatePrimaryIp),
      same(f::kPrivateDnsHostname),
      same(f::kSlurmdPort),
      same(f::kThreadsPerCore),
      {f::kSourceS3Uri, path(f::kLifeCycleConfig, f::kSourceS3Uri)},
      {f::kOnCreate, path(f::kLifeCycleConfig, f::kOnCreate)},
      {std::string(f::kLifeCycle) + f::kStatus, path(f::kLifeCycle, f::kStatus)},
      {std::string(f::kLifeCycle) + f::kExitCode, path(f::kLifeCycle, f::kExitCode)},
      {f::kLogPath, path(f::kLifeCycle, f::kLogPath)},
  };
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& c : kFields)
    fields.emplace_back(c.header, cell_text(find_path(details, c.path)));
  out << format_fields(fields);

  // LastLines may come as one string or as a list of lines.
  std::vector<std::string> lines;
  if (const json* last = find_path(details, path(f::kLifeCycle, f::kLastLines)); last) {
    if (last->is_string()) {
      std::string text = last->get<std::string>();
      size_t begin = 0;
      while (begin < text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(begin, end - begin));
        begin = end + 1;
      }
    } else if (last->is_array()) {
      for (const auto& l : *last) lines.push_back(cell_text(&l));
    }
  }
  out << f::kLastLines << ":" << (lines.empty() ? " -" : "") << "\n";
  for (const auto& l : lines) out << "  " << l << "\n";
}

void print_events(const json& reply, std::ostream& out) {
  const json* list = find_path(reply, f::kEvents);
  out << format_json_table(list ? *list : json(),
                           {same(f::kEventId), same(f::kEventTime), same(f::kNodeName),
                            same(f::kEventType), same(f::kDescription)});
}

void print_log(const json& reply, std::ostream& out) {
  const json* log = find_path(reply, f::kLog);
  if (!log || !log->is_string()) return;
  out << log->get<std::string>();
  out.flush();
}

void print_batch(const json& reply, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  if (const json* ok = find_path(reply, f::kSuccessful); ok && ok->is_array()) {
    for (const auto& id : *ok) rows.push_back({cell_text(&id), f::kSuccessful, ""});
  }
  if (const json* failed = find_path(reply, f::kFailed); failed && failed->is_array()) {
    for (const auto& e : *failed) {
      rows.push_back({cell_text(find_path(e, f::kNodeId)), cell_text(find_path(e, f::kCode)),
                      cell_text(find_path(e, f::kMessage))});
    }
  }
  out << format_table({f::kNodeId, "Result", f::kMessage}, rows);
}

void print_batch_add(const json& reply, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  if (const json* ok = find_path(reply, f::kSuccessful); ok && ok->is_array()) {
    for (const auto& n : *ok) {
      rows.push_back({cell_text(find_path(n, f::kInstanceGroupName)),
                      cell_text(find_path(n, f::kNodeLogicalId)), cell_text(find_path(n, f::kStatus)),
                      ""});
    }
  }
  if (const json* failed = find_path(reply, f::kFailed); failed && failed->is_array()) {
    for (const auto& e : *failed) {
      rows.push_back({cell_text(find_path(e, f::kInstanceGroupName)),
                      cell_text(find_path(e, f::kFailedCount)) + " not added",
                      cell_text(find_path(e, f::kErrorCode)), cell_text(find_path(e, f::kMessage))});
    }
  }
  out << format_table({f::kInstanceGroupName, f::kNodeLogicalId, f::kStatus, f::kMessage}, rows);
}

void print_health_check(const json& reply, std::ostream& out) {
  std::string nodes;
  if (const json* list = find_path(reply, f::kNodes); list && list->is_array()) {
    for (const auto& n : *list) nodes += (nodes.empty() ? "" : ", ") + cell_text(&n);
  }
  out << "deep health check " << cell_text(find_path(reply, f::kHealthCheckId)) << " on " << nodes
      << " (reservation " << cell_text(find_path(reply, f::kReservation)) << ")\n";
}

void print_fault(const json& reply, std::ostream& out) {
  out << cell_text(find_path(reply, f::kNodeName)) << " ("
      << cell_text(find_path(reply, f::kInstanceId))
      << "): " << cell_text(find_path(reply, f::kDescription)) << "\n";
}

}  // namespace endure::cli
