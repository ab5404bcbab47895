// Plain-text output for people: aligned tables and key/value blocks, for `--output table`.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"

namespace endure::cli {

// A column of a table built from JSON objects: its header and the dotted path of the field
// it shows in each object (e.g. "InstanceStatus.Status").
struct Column {
  std::string header;
  std::string path;
};

// A column that shows a field under the field's own name.
Column same(const char* name);

// The field at a dotted path inside value, or nullptr when any step is missing or is not
// an object.
const json* find_path(const json& value, std::string_view path);

// How a JSON value reads in a cell: a string as is, a number or boolean as written,
// "-" for null or a missing field (nullptr), anything else as compact JSON.
std::string cell_text(const json* value);

// Width of text on a terminal, counted in UTF-8 code points.
size_t display_width(std::string_view text);

// A header row, a separator line of dashes, then one line per row. Each column is as wide
// as its widest cell, columns are two spaces apart, and lines carry no trailing spaces.
// A row shorter than the header is filled with empty cells; extra cells are dropped.
// Newlines and tabs inside a cell become spaces so that every row stays one line.
// Returns "" when headers is empty; every line, the last included, ends in '\n'.
std::string format_table(const std::vector<std::string>& headers,
                         const std::vector<std::vector<std::string>>& rows);

// format_table over a JSON array of objects, one row per element (a non-array is no rows).
std::string format_json_table(const json& items, const std::vector<Column>& columns);

// "Key:  value" lines with the values aligned one column after the longest key.
// Newlines and tabs inside a value become spaces.
std::string format_fields(const std::vector<std::pair<std::string, std::string>>& fields);

// `--output table` printers of endured's replies, one per reply shape. Headers and paths
// are the wire's field names (api/fields.h). They read the reply as JSON rather than as a
// message type so that a field endured leaves out prints as "-" instead of failing.
void print_cluster_arn(const json& reply, std::ostream& out);   // Create/Update/DeleteCluster
void print_cluster(const json& reply, std::ostream& out);       // DescribeCluster
void print_clusters(const json& reply, std::ostream& out);      // ListClusters
void print_nodes(const json& reply, std::ostream& out);         // ListClusterNodes
void print_node(const json& reply, std::ostream& out);          // DescribeClusterNode
void print_events(const json& reply, std::ostream& out);        // ListClusterEvents
void print_log(const json& reply, std::ostream& out);           // GetClusterNodeLog
void print_batch(const json& reply, std::ostream& out);         // BatchReboot/Replace...
void print_batch_add(const json& reply, std::ostream& out);     // BatchAddClusterNodes
void print_health_check(const json& reply, std::ostream& out);  // StartClusterHealthCheck
void print_hosts(const json& reply, std::ostream& out);         // RegisterHostPools, ListHosts
void print_host(const json& reply, std::ostream& out);          // ReturnHost
void print_fault(const json& reply, std::ostream& out);         // DebugInjectFault

}  // namespace endure::cli
