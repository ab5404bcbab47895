// Request URLs encoded the way SigV4 canonicalises them, so that the URL curl signs and the
// one the server re-derives agree: keys percent-encoded per RFC 3986 ('/' kept), query
// parameters sorted by name, every one with its '='.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "s3/s3_config.h"

namespace endure::s3 {

// Percent-encodes every byte but A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash).
std::string uri_encode(std::string_view text, bool keep_slash);

// ENDPOINT/BUCKET/KEY?QUERY (or BUCKET.ENDPOINT/KEY?QUERY), key and query encoded; an
// empty key addresses the bucket itself (ListObjectsV2, DeleteObjects).
std::string object_url(const S3Config& config, const std::string& bucket, const std::string& key,
                       const std::map<std::string, std::string>& query = {});

}  // namespace endure::s3
