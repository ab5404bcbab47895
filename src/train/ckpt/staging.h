// The memory save() copies into. Either anonymous memory, or a file in the memory tier's
// folder (a tmpfs such as /dev/shm) mapped shared, so that the copy is itself the
// in-memory checkpoint and outlives the process. Either way it is allocated and touched
// once and reused: first-touch page faults cost more than the copy on this kind of machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "common/result.h"

namespace endure::ckpt {

class StagingSlot {
 public:
  StagingSlot() = default;
  // file empty: anonymous memory.
  explicit StagingSlot(std::filesystem::path file) : file_(std::move(file)) {}
  StagingSlot(StagingSlot&& other) noexcept;
  StagingSlot& operator=(StagingSlot&&) = delete;
  ~StagingSlot();

  // Makes the slot exactly `bytes` long (a file slot's file too), keeping its pages.
  Status resize(size_t bytes);
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& file() const { return file_; }

 private:
  void unmap();
  std::filesystem::path file_;
  int fd_ = -1;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
};

}  // namespace endure::ckpt
