#include "topology/bitmask.h"

#include <bit>

namespace topogang {
namespace {

// Mask of bits [lo, hi) within one 64-bit word; 0 <= lo < hi <= 64.
inline uint64_t WordMask(size_t lo, size_t hi) {
  uint64_t upper = hi == 64 ? ~uint64_t{0} : ((uint64_t{1} << hi) - 1);
  return upper & ~((uint64_t{1} << lo) - 1);
}

template <typename WordFn>
size_t CountWords(size_t begin, size_t end, WordFn word) {
  if (begin >= end) return 0;
  size_t first = begin >> 6, last = (end - 1) >> 6;
  if (first == last) return std::popcount(word(first) & WordMask(begin & 63, ((end - 1) & 63) + 1));
  size_t n = std::popcount(word(first) & WordMask(begin & 63, 64));
  for (size_t w = first + 1; w < last; ++w) n += std::popcount(word(w));
  n += std::popcount(word(last) & WordMask(0, ((end - 1) & 63) + 1));
  return n;
}

}  // namespace

BitMask::BitMask(size_t size, bool value)
    : size_(size), words_((size + 63) / 64, value ? ~uint64_t{0} : 0) {
  if (value && (size & 63)) words_.back() = WordMask(0, size & 63);
}

void BitMask::SetRange(size_t begin, size_t end, bool value) {
  for (size_t i = begin; i < end;) {
    size_t w = i >> 6, lo = i & 63;
    size_t hi = std::min<size_t>(64, lo + (end - i));
    uint64_t m = WordMask(lo, hi);
    if (value) {
      words_[w] |= m;
    } else {
      words_[w] &= ~m;
    }
    i += hi - lo;
  }
}

size_t BitMask::CountRange(size_t begin, size_t end) const {
  return CountWords(begin, end, [this](size_t w) { return words_[w]; });
}

size_t BitMask::CountAndRange(const BitMask& a, const BitMask& b, size_t begin, size_t end) {
  return CountWords(begin, end, [&](size_t w) { return a.words_[w] & b.words_[w]; });
}

size_t BitMask::FindNextAnd(const BitMask& a, const BitMask& b, size_t from, size_t end) {
  while (from < end) {
    size_t w = from >> 6;
    uint64_t bits = (a.words_[w] & b.words_[w]) & ~((uint64_t{1} << (from & 63)) - 1);
    if (bits) {
      size_t i = (w << 6) + std::countr_zero(bits);
      return i < end ? i : end;
    }
    from = (w + 1) << 6;
  }
  return end;
}

}  // namespace topogang
