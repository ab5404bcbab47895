#include "s3/prefix_fetch.h"

#include <stdlib.h>

#include <algorithm>
#include <system_error>

#include "common/error_codes.h"
#include "common/fs.h"
#include "s3/http_transport.h"
#include "s3/parallel.h"

namespace endure::s3 {

namespace sfs = std::filesystem;

std::string relative_path_for(const std::string& prefix, const std::string& key) {
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) return "";
  std::string rel = key.substr(prefix.size());
  if (rel.back() == '/') return "";
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    if (!fs::is_plain_file_name(rel.substr(start, end - start))) return "";
    start = end + 1;
  }
  return rel;
}

Result<PrefixListing> list_prefix(S3Client& client, const S3Uri& uri) {
  PrefixListing out;
  out.bucket = uri.bucket;
  out.prefix = uri.key;
  if (!out.prefix.empty() && out.prefix.back() != '/') out.prefix += '/';
  auto listed = client.list_objects(uri.bucket, out.prefix);
  if (!listed) return listed.error();
  std::string summary = out.bucket + "\n" + out.prefix + "\n";
  for (auto& o : *listed) {
    // Folder markers (zero-byte "dir/" keys some tools write) hold nothing to copy.
    if (o.key.back() == '/') continue;
    std::string rel = relative_path_for(out.prefix, o.key);
    if (rel.empty()) {
      return make_error(errors::kValidationException,
                        "s3://" + uri.bucket + "/" + o.key +
                            ": a key under the prefix must be a relative path without "
                            "empty, '.' or '..' parts, to stay inside the copied folder");
    }
    summary += o.key + "\n" + std::to_string(o.size) + "\n" + o.etag + "\n";
    out.files.push_back(std::move(rel));
    out.objects.push_back(std::move(o));
  }
  if (out.objects.empty()) {
    return make_error("NoSuchKey", "ListObjectsV2 " + S3Uri{uri.bucket, out.prefix}.str() +
                                       ": no object under the prefix");
  }
  out.digest = sha256_hex(summary);
  return out;
}

Result<FetchedPrefix> fetch_listing(S3Client& client, const PrefixListing& listing,
                                    const sfs::path& cache_root) {
  FetchedPrefix out;
  out.files = listing.files;
  out.digest = listing.digest;
  out.dir = cache_root / listing.digest;
  std::error_code ec;
  if (sfs::is_directory(out.dir, ec)) {
    out.reused = true;
    return out;
  }
  if (auto st = fs::make_dirs(cache_root, 0700); !st) return st.error();
  std::string temp = (cache_root / ".fetch-XXXXXX").string();
  if (::mkdtemp(temp.data()) == nullptr) {
    return make_error("IOError", "cannot make a temp folder in " + cache_root.string());
  }
  sfs::permissions(temp, sfs::perms(0755), ec);
  auto discard = [&](const Error& e) -> Error {
    (void)fs::remove_tree(temp);
    return e;
  };
  // Folders first, from one thread; then the objects in parallel.
  for (const auto& rel : listing.files) {
    if (auto st = fs::make_dirs((sfs::path(temp) / rel).parent_path()); !st) {
      return discard(st.error());
    }
  }
  Status fetched =
      parallel_for(listing.objects.size(), client.config().parallelism, [&](size_t i) -> Status {
        const ObjectInfo& o = listing.objects[i];
        sfs::path file = sfs::path(temp) / listing.files[i];
        Status st = client.download_to_file(listing.bucket, o.key, file);
        std::error_code size_ec;
        if (st && sfs::file_size(file, size_ec) != o.size) {
          return make_error("IncompleteBody", "s3://" + listing.bucket + "/" + o.key +
                                                  ": the object changed while it was "
                                                  "copied");
        }
        return st;
      });
  if (fetched) fetched = fs::sync_dir(temp);
  if (!fetched) return discard(fetched.error());
  if (::rename(temp.c_str(), out.dir.c_str()) != 0) {
    // Another fetch of the same listing won the race: its snapshot holds the same objects.
    (void)fs::remove_tree(temp);
    if (!sfs::is_directory(out.dir, ec)) {
      return make_error("IOError", "cannot rename " + temp + " to " + out.dir.string());
    }
    out.reused = true;
    return out;
  }
  if (auto st = fs::sync_dir(cache_root); !st) return st.error();
  return out;
}

Result<FetchedPrefix> fetch_prefix(S3Client& client, const S3Uri& uri,
                                   const sfs::path& cache_root) {
  auto listing = list_prefix(client, uri);
  if (!listing) return listing.error();
  return fetch_listing(client, *listing, cache_root);
}

Result<FetchedPrefix> fetch_lifecycle_scripts(S3Client& client, const std::string& field,
                                              const std::string& source_uri,
                                              const std::string& on_create,
                                              const sfs::path& cache_root) {
  auto uri = parse_s3_uri(source_uri, field + ".SourceS3Uri");
  if (!uri) return uri.error();
  auto listing = list_prefix(client, *uri);
  if (!listing) {
    Error e = listing.error();
    e.message = field + ".SourceS3Uri: " + e.message;
    return e;
  }
  if (std::find(listing->files.begin(), listing->files.end(), on_create) == listing->files.end()) {
    return make_error(errors::kValidationException, field + ".OnCreate: s3://" + uri->bucket + "/" +
                                                        listing->prefix + on_create +
                                                        " is not an object under " + source_uri);
  }
  auto fetched = fetch_listing(client, *listing, cache_root);
  if (!fetched) {
    Error e = fetched.error();
    e.message = field + ".SourceS3Uri: " + e.message;
    return e;
  }
  return fetched;
}

}  // namespace endure::s3
