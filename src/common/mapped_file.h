// A file mapped read-only into memory: the data loader reads token shards in place and a
// checkpoint's node-local copy is written out without a copy on the heap; the page cache
// is shared with every other reader of the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>

#include "common/result.h"

namespace endure::fs {

class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile(const unsigned char* data, size_t size) : data_(data), size_(size) {}
  const unsigned char* data_;
  size_t size_;
};

}  // namespace endure::fs
