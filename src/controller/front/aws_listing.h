// How the cloud protocol's List actions (ListClusters, ListClusterNodes, ListClusterEvents)
// page, filter and sort what /v1 answers whole: MaxResults and NextToken as the service's
// API model has them, its time bounds (CreationTimeAfter/Before, EventTimeAfter/Before),
// SortBy and SortOrder. A NextToken is the offset of the page's first entry.
#pragma once

#include <cstddef>

#include "common/json.h"
#include "common/result.h"

namespace endure::controller::aws {

// The model's MaxResults ceiling on its List actions, and the page size when none is asked.
inline constexpr int kMaxPageSize = 100;

struct Page {
  size_t offset = 0;
  size_t size = kMaxPageSize;
};

// MaxResults (1 to 100) and NextToken (an offset an earlier reply gave) of a List request;
// a ValidationException naming the field otherwise.
Result<Page> read_page(const json& request);

// What a List action's entries are filtered, sorted and paged by.
struct ListShape {
  const char* list_key;  // the reply's list member
  const char* time_key;  // the entries' time member (epoch seconds)
  const char* after;     // the request's bounds on it, each optional
  const char* before;
  const char* name_key;  // what SortBy NAME sorts by; null: SortBy is not this action's
};

// The reply {list_key: the page, NextToken when more entries follow} of list's entries
// whose time lies within the request's bounds, sorted by it (or by name with SortBy NAME)
// in the request's SortOrder (default Ascending). A ValidationException naming the field
// for a bad bound or sort member.
Result<json> list_reply(json list, const json& request, const Page& page, const ListShape& shape);

}  // namespace endure::controller::aws
