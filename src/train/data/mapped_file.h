// A file mapped read-only into memory: the loader reads shards in place, never copying
// them to the heap, and the page cache is shared with every other reader of the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>

#include "common/result.h"

namespace endure::data {

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

}  // namespace endure::data
