// XXH3-64 of a run of bytes whose length is known at the start, fed in order in pieces of
// any size: libxxhash's XXH3_64bits of the whole, bit for bit, hashing whole stripes where
// the caller holds them (XXH3's streaming state copies every piece under 256 bytes into its
// buffer first, and holds the last bytes back).
//
// A run may also be hashed from the middle, by a second writer, while the first writes
// the part before: XXH3 adds up each stripe's term, which depends on the stripe's bytes
// and its place alone, and mixes the sum once a block, so the second part is kept as a sum
// per block, which the first part's run takes on, block by block, once it reaches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace endure::ckpt {

class Xxh3Run {
 public:
  // Starts over on a run of `length` bytes, fed from byte `start` on: from 0, the run
  // itself; from further on, a tail that a run reaching `start` takes on with append().
  // REQUIRES: length > kMinLength, start < length.
  void reset(size_t length, size_t start = 0);
  // The next `bytes` bytes (those past the run's end are ignored).
  void update(const void* data, size_t bytes);
  size_t start() const { return start_; }
  // Where the bytes fed so far end.
  size_t end() const { return pos_; }
  // Takes on a tail of the same length that begins where this run ends.
  // REQUIRES: start() == 0, tail.start() == end().
  void append(const Xxh3Run& tail);
  // XXH3_64bits of the run. REQUIRES: start() == 0, end() == the length given to reset().
  uint64_t digest() const;

  // Runs this short are hashed whole by XXH3_64bits, which has no stripes for them.
  static constexpr size_t kMinLength = 240;

 private:
  struct alignas(64) Lanes {
    uint64_t lane[8];
  };
  void stripes(const uint8_t* p, size_t count);
  void keep_last(const uint8_t* p, size_t bytes);

  Lanes acc_;
  std::vector<Lanes> sums_;  // a tail's: the terms of its stripes, by block from its first
  uint8_t head_[64];         // a tail's bytes before its first whole stripe
  uint8_t partial_[64];      // a stripe's first bytes, until the rest comes
  uint8_t last_[64];         // the run's last stripe, which XXH3 takes once more, with its own key
  size_t length_ = 0;
  size_t start_ = 0;
  size_t pos_ = 0;
  size_t partial_bytes_ = 0;
  size_t first_stripe_ = 0;       // the first whole stripe fed
  size_t stripe_ = 0;             // the next stripe's index
  size_t keyed_stripes_ = 0;      // stripes taken in order: those wholly before the last byte
  size_t scrambled_stripes_ = 0;  // stripes in blocks followed by a scramble
};

}  // namespace endure::ckpt
