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

// Puts the page of list that page names into reply[list_key], and NextToken into reply when
// more entries follow.
void paginate(json& list, const Page& page, json& reply, const char* list_key);

// Keeps the entries of list whose time_key (epoch seconds) lies after request[after] and
// before request[before] (each when present), sorted by it (or by name_key when SortBy is
// NAME; name_key null: SortBy is not this action's), in request's SortOrder (default
// Ascending). A ValidationException naming the field for a bad bound or sort member.
Status filter_and_sort(json& list, const json& request, const char* time_key, const char* after,
                       const char* before, const char* name_key);

}  // namespace endure::controller::aws
