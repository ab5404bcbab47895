#include "train/ckpt/xxh3_run.h"

// XXH3's own accumulate, scramble and merge, inlined here so that they run the vector code
// this file is built for (x86-64-v3: AVX2); the run is cut into stripes and blocks as
// XXH3_hashLong_internal_loop cuts it.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>

static_assert(XXH_VERSION_NUMBER >= 801, "the stripe functions of xxHash 0.8.1 or later");

namespace endure::ckpt {
namespace {

constexpr size_t kStripe = XXH_STRIPE_LEN;
constexpr size_t kSecretBytes = sizeof(XXH3_kSecret);
constexpr size_t kStripesPerBlock = (kSecretBytes - kStripe) / XXH_SECRET_CONSUME_RATE;
const uint8_t* const kScrambleKey = XXH3_kSecret + kSecretBytes - kStripe;

}  // namespace

void Xxh3Run::reset(size_t length, size_t start) {
  const uint64_t init[XXH_ACC_NB] = XXH3_INIT_ACC;
  std::memcpy(acc_.lane, init, sizeof acc_);
  length_ = length;
  start_ = pos_ = start;
  partial_bytes_ = 0;
  first_stripe_ = stripe_ = (start + kStripe - 1) / kStripe;
  keyed_stripes_ = (length - 1) / kStripe;
  scrambled_stripes_ = (length - 1) / (kStripe * kStripesPerBlock) * kStripesPerBlock;
  if (start > 0) {
    const size_t blocks = keyed_stripes_ / kStripesPerBlock + 1 - first_stripe_ / kStripesPerBlock;
    sums_.assign(blocks, Lanes{});
  }
}

// A block's stripes at a time, through XXH3's own loop, on an accumulator of the stack's
// (which the compiler keeps in registers: the member could alias the input).
void Xxh3Run::stripes(const uint8_t* p, size_t count) {
  const size_t end = std::min(stripe_ + count, keyed_stripes_);
  Lanes acc = acc_;
  while (stripe_ < end) {
    const size_t in_block = stripe_ % kStripesPerBlock;
    const size_t n = std::min(kStripesPerBlock - in_block, end - stripe_);
    const uint8_t* key = XXH3_kSecret + in_block * XXH_SECRET_CONSUME_RATE;
    if (start_ > 0) {
      Lanes& sum = sums_[stripe_ / kStripesPerBlock - first_stripe_ / kStripesPerBlock];
      XXH3_accumulate(sum.lane, p, key, n, XXH3_accumulate_512);
    } else {
      XXH3_accumulate(acc.lane, p, key, n, XXH3_accumulate_512);
      if (in_block + n == kStripesPerBlock && stripe_ + n <= scrambled_stripes_)
        XXH3_scrambleAcc(acc.lane, kScrambleKey);
    }
    stripe_ += n;
    p += n * kStripe;
  }
  acc_ = acc;
}

// The run's last 64 bytes, kept for digest(): those of [pos_, pos_ + bytes) among them.
void Xxh3Run::keep_last(const uint8_t* p, size_t bytes) {
  const size_t last_begin = length_ - kStripe;
  if (pos_ + bytes <= last_begin) return;
  const size_t from = std::max(pos_, last_begin);
  std::memcpy(last_ + (from - last_begin), p + (from - pos_), pos_ + bytes - from);
}

void Xxh3Run::update(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes = std::min(bytes, length_ - pos_);
  keep_last(p, bytes);
  // A tail begun inside a stripe keeps that stripe's bytes for the run it joins.
  if (const size_t whole = first_stripe_ * kStripe; pos_ < whole) {
    const size_t take = std::min(bytes, whole - pos_);
    std::memcpy(head_ + (pos_ - start_), p, take);
    pos_ += take;
    p += take;
    bytes -= take;
  }
  pos_ += bytes;
  if (partial_bytes_ > 0) {
    const size_t take = std::min(bytes, kStripe - partial_bytes_);
    std::memcpy(partial_ + partial_bytes_, p, take);
    partial_bytes_ += take;
    p += take;
    bytes -= take;
    if (partial_bytes_ < kStripe) return;
    stripes(partial_, 1);
    partial_bytes_ = 0;
  }
  stripes(p, bytes / kStripe);
  partial_bytes_ = bytes % kStripe;
  std::memcpy(partial_, p + bytes - partial_bytes_, partial_bytes_);
}

void Xxh3Run::append(const Xxh3Run& tail) {
  // The stripe the tail began in, completed by its head; then the tail's sums, each block
  // mixed as it would have been had this run hashed the tail's stripes itself.
  update(tail.head_, std::min(tail.pos_, tail.first_stripe_ * kStripe) - tail.start_);
  for (size_t b = 0; b < tail.sums_.size(); ++b) {
    const size_t first = std::max(tail.first_stripe_,
                                  (tail.first_stripe_ / kStripesPerBlock + b) * kStripesPerBlock);
    if (first >= tail.stripe_) break;
    for (size_t i = 0; i < XXH_ACC_NB; ++i) acc_.lane[i] += tail.sums_[b].lane[i];
    const size_t block_last = first / kStripesPerBlock * kStripesPerBlock + kStripesPerBlock - 1;
    if (block_last < tail.stripe_ && block_last < scrambled_stripes_)
      XXH3_scrambleAcc(acc_.lane, kScrambleKey);
  }
  if (tail.pos_ > tail.first_stripe_ * kStripe) {
    stripe_ = tail.stripe_;
    pos_ = tail.pos_;
    partial_bytes_ = tail.partial_bytes_;
    std::memcpy(partial_, tail.partial_, partial_bytes_);
  }
  const size_t last_begin = length_ - kStripe, from = std::max(tail.start_, last_begin);
  if (tail.pos_ > from)
    std::memcpy(last_ + (from - last_begin), tail.last_ + (from - last_begin), tail.pos_ - from);
}

uint64_t Xxh3Run::digest() const {
  Lanes acc = acc_;
  XXH3_accumulate_512(acc.lane, last_,
                      XXH3_kSecret + kSecretBytes - kStripe - XXH_SECRET_LASTACC_START);
  return XXH3_mergeAccs(acc.lane, XXH3_kSecret + XXH_SECRET_MERGEACCS_START,
                        static_cast<uint64_t>(length_) * XXH_PRIME64_1);
}

}  // namespace endure::ckpt
