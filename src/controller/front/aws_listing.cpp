#include "controller/front/aws_listing.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include "api/fields.h"
#include "api/wire.h"

namespace endure::controller::aws {
namespace {

namespace f = api::field;

// A timestamp member of a request, as the SDKs send it (epoch seconds); absent: nullopt.
Result<std::optional<double>> request_time(const json& request, const char* key) {
  auto it = request.find(key);
  if (it == request.end()) return std::optional<double>();
  if (!it->is_number()) return invalid(std::string(key) + ": must be a timestamp (epoch seconds)");
  return std::optional<double>(it->get<double>());
}

// SortOrder Ascending or Descending, else the default.
Result<bool> descending(const json& request, bool by_default) {
  auto it = request.find("SortOrder");
  if (it == request.end()) return by_default;
  if (*it == "Ascending") return false;
  if (*it == "Descending") return true;
  return invalid("SortOrder: must be Ascending or Descending");
}

// Keeps the page of list that page names; sets NextToken on reply when more follow.
void paginate(json& list, const Page& page, json& reply, const char* list_key) {
  json kept = json::array();
  for (size_t i = page.offset; i < list.size() && kept.size() < page.size; ++i) {
    kept.push_back(list[i]);
  }
  size_t next = page.offset + kept.size();
  reply[list_key] = std::move(kept);
  if (next < list.size()) reply["NextToken"] = std::to_string(next);
}

// Keeps the entries whose time member lies within the request's After/Before bounds, sorted
// by it (or by name_key when SortBy is NAME), in SortOrder.
Status filter_and_sort(json& list, const json& request, const char* time_key, const char* after,
                       const char* before, const char* name_key) {
  auto lo = request_time(request, after);
  if (!lo) return lo.error();
  auto hi = request_time(request, before);
  if (!hi) return hi.error();
  auto desc = descending(request, false);
  if (!desc) return desc.error();
  bool by_name = false;
  if (auto it = request.find("SortBy"); it != request.end() && name_key) {
    if (*it != "CREATION_TIME" && *it != "NAME") {
      return invalid("SortBy: must be CREATION_TIME or NAME");
    }
    by_name = *it == "NAME";
  }
  json kept = json::array();
  for (auto& item : list) {
    double t = item.value(time_key, 0.0);
    if ((*lo && t <= **lo) || (*hi && t >= **hi)) continue;
    kept.push_back(std::move(item));
  }
  auto key = [&](const json& item) {
    return by_name ? json(item.value(name_key, "")) : json(item.value(time_key, 0.0));
  };
  std::stable_sort(kept.begin(), kept.end(), [&](const json& a, const json& b) {
    return *desc ? key(b) < key(a) : key(a) < key(b);
  });
  list = std::move(kept);
  return {};
}

}  // namespace

// MaxResults (1 to 100) and NextToken (an offset this layer gave) of a List request.
Result<Page> read_page(const json& request) {
  Page page;
  if (auto it = request.find(f::kMaxResults); it != request.end()) {
    if (!it->is_number_integer() || it->get<long long>() < 1 ||
        it->get<long long>() > kMaxPageSize) {
      return invalid("MaxResults: must be an integer from 1 to " + std::to_string(kMaxPageSize));
    }
    page.size = it->get<size_t>();
  }
  if (auto it = request.find("NextToken"); it != request.end()) {
    std::string token = it->is_string() ? it->get<std::string>() : "";
    const char* end = token.data() + token.size();
    auto [ptr, ec] = std::from_chars(token.data(), end, page.offset);
    if (token.empty() || ec != std::errc() || ptr != end) {
      return invalid("NextToken: is not a token from an earlier reply of this action");
    }
  }
  return page;
}

Result<json> list_reply(json list, const json& request, const Page& page, const ListShape& shape) {
  if (auto s =
          filter_and_sort(list, request, shape.time_key, shape.after, shape.before, shape.name_key);
      !s) {
    return s.error();
  }
  json reply = json::object();
  paginate(list, page, reply, shape.list_key);
  return reply;
}

}  // namespace endure::controller::aws
