// One bit per GPU. The cluster keeps two of these (free, healthy) in GPU index order, so every
// topology domain's GPUs are one contiguous bit range and range queries are popcounts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace topogang {

class BitMask {
 public:
  BitMask() = default;
  explicit BitMask(size_t size, bool value = false);

  size_t size() const { return size_; }
  bool Test(size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1u; }
  void Set(size_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void Clear(size_t i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  void Assign(size_t i, bool v) { v ? Set(i) : Clear(i); }

  // Sets or clears bits [begin, end).
  void SetRange(size_t begin, size_t end, bool value);
  // Number of set bits in [begin, end).
  size_t CountRange(size_t begin, size_t end) const;
  // Number of indices in [begin, end) set in both masks.
  static size_t CountAndRange(const BitMask& a, const BitMask& b, size_t begin, size_t end);
  // First index >= from and < end set in both a and b, or end if none.
  static size_t FindNextAnd(const BitMask& a, const BitMask& b, size_t from, size_t end);
  size_t Count() const { return CountRange(0, size_); }

  size_t MemoryBytes() const { return words_.capacity() * sizeof(uint64_t); }
  bool operator==(const BitMask& o) const = default;

 private:
  size_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace topogang
