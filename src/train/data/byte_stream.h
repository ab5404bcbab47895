// A file read as a stream of bytes, decompressing zstd on the way (one idea: what a JSONL
// reader reads from, whatever the compression).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>

#include "common/result.h"

namespace endure::data {

class ByteStream {
 public:
  // zstd when the file starts with the zstd magic number; a file named *.zst must.
  static Result<std::unique_ptr<ByteStream>> open(const std::filesystem::path& path);
  virtual ~ByteStream() = default;

  // Reads up to n bytes into buf: how many were read, 0 at the end. A truncated or corrupt
  // zstd stream fails with "ValidationException".
  virtual Result<size_t> read(char* buf, size_t n) = 0;
  virtual bool compressed() const = 0;
};

// The 4 bytes every zstd frame starts with (RFC 8878), little-endian 0xFD2FB528.
inline constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};

bool has_zst_suffix(const std::filesystem::path& path);

}  // namespace endure::data
