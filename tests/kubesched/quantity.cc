#include "tests/kubesched/quantity.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace topogang::kubesched {
namespace {

using int128 = __int128;
constexpr int128 kCap = static_cast<int128>(std::numeric_limits<int64_t>::max());

// Parses text and returns ceil(|q| * 10^extra_exp10) with q's sign, saturated.
absl::StatusOr<int64_t> Parse(absl::string_view text, int extra_exp10) {
  auto bad = [&] { return absl::InvalidArgumentError(absl::StrCat("bad quantity '", text, "'")); };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  int128 mantissa = 0;
  int exp10 = 0;
  bool inexact = false;  // digits dropped beyond what the mantissa holds
  int digits = 0, kept = 0;
  auto take = [&](char c, bool fraction) {
    ++digits;
    if (kept < 36) {
      mantissa = mantissa * 10 + (c - '0');
      if (mantissa != 0) ++kept;
      if (fraction) --exp10;
    } else if (!fraction) {
      ++exp10;  // an integer digit we cannot hold: scale instead
      inexact |= c != '0';
    } else {
      inexact |= c != '0';
    }
  };
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') take(text[i++], false);
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') take(text[i++], true);
  }
  if (digits == 0) return bad();
  // Suffix.
  absl::string_view suffix = text.substr(i);
  int binary_shift = 0;
  if (suffix.empty()) {
  } else if (suffix == "m") {
    exp10 -= 3;
  } else if (suffix == "k") {
    exp10 += 3;
  } else if (suffix == "M") {
    exp10 += 6;
  } else if (suffix == "G") {
    exp10 += 9;
  } else if (suffix == "T") {
    exp10 += 12;
  } else if (suffix == "P") {
    exp10 += 15;
  } else if (suffix == "E") {
    exp10 += 18;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    const absl::string_view units = "KMGTPE";
    size_t k = units.find(suffix[0]);
    if (k == absl::string_view::npos) return bad();
    binary_shift = 10 * static_cast<int>(k + 1);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    size_t j = 1;
    bool neg_exp = false;
    if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) neg_exp = suffix[j++] == '-';
    if (j >= suffix.size()) return bad();
    int e = 0;
    for (; j < suffix.size(); ++j) {
      if (suffix[j] < '0' || suffix[j] > '9') return bad();
      e = std::min(e * 10 + (suffix[j] - '0'), 1000);
    }
    exp10 += neg_exp ? -e : e;
  } else {
    return bad();
  }
  exp10 += extra_exp10;
  int128 v = mantissa;
  bool saturated = false;
  for (int s = 0; s < binary_shift && v != 0; ++s) {
    v *= 2;
    if (v > kCap) saturated = true, v = kCap;
  }
  for (; exp10 > 0 && v != 0 && !saturated; --exp10) {
    v *= 10;
    if (v > kCap) saturated = true, v = kCap;
  }
  for (; exp10 < 0 && v != 0; ++exp10) {
    if (v % 10 != 0) inexact = true;
    v /= 10;
  }
  if (inexact && !saturated && v < kCap) ++v;  // round up, as Quantity.Value() does
  int64_t out = static_cast<int64_t>(v);
  return negative ? -out : out;
}

}  // namespace

absl::StatusOr<int64_t> ParseQuantityMilli(absl::string_view text) { return Parse(text, 3); }
absl::StatusOr<int64_t> ParseQuantityValue(absl::string_view text) { return Parse(text, 0); }

}  // namespace topogang::kubesched
